"""Lamarckian memory's learning loop over a fake node: eight phases, explicit predictions,
calibration."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from lamarck.agent.loop import (
    ActContext,
    ActReport,
    Engagement,
    LearningLoop,
    LoopParams,
    Phase,
    Task,
    assess,
    engage,
    hypothesize,
)
from lamarck.agent.run import RunParams
from lamarck.client import Lesson, LessonChange, OutcomeResult, RecallResult
from lamarck.errors import ConfigError
from lamarck.learning.params import ContextParams
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome

PROJECT = "cd" * 32
CTX = {"domain": "python", "environment": "linux", "tools": ["pytest"]}
P = LoopParams()
CP = ContextParams()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def lesson(n: int, confidence: float, context: Mapping[str, Any] | None = None) -> Lesson:
    return Lesson(
        id=str(uuid.UUID(int=n, version=4)),
        version=1,
        content=f"lesson {n}",
        confidence=confidence,
        status="active",
        scope=f"project:{PROJECT}",
        operation="shell:pytest",
        category="operation",
        memory_type="ac",
        access_level="public",
        origin="local",
        source_node_id="",
        tags=(),
        evidence_outcome_ids=(),
        success_count=0,
        failure_count=0,
        created_at=T0,
        updated_at=T0,
        superseded_by="",
        situation=None,
        context=dict(context if context is not None else CTX),
        imported_from=(),
        original_confidence=None,
        record_json=b"{}",
    )


class FakeNode:
    """Recall returns the lessons it holds; RecordOutcome moves the ones in play."""

    def __init__(self, lessons: Sequence[Lesson] = ()) -> None:
        self.lessons = list(lessons)
        self.outcomes: list[Outcome] = []
        self.recalls: list[dict[str, Any]] = []

    def recall(
        self,
        task: str,
        context: Mapping[str, Any] | None = None,
        *,
        session_id: str = "",
        turn_index: int = 0,
        project_digest: str = "",
        limit: int = 0,
    ) -> RecallResult:
        self.recalls.append({"task": task, "session_id": session_id, "project": project_digest})
        return RecallResult(tuple(self.lessons[:limit]), "Lessons:\n- run pytest from the root")

    def record_outcome(self, outcome: Outcome | Mapping[str, Any] | bytes | str) -> OutcomeResult:
        assert isinstance(outcome, Outcome)
        self.outcomes.append(outcome)
        kind = "confirmed" if outcome.passed else "contradicted"
        changes = [LessonChange(i, kind, 2, 0.5, 0.6, "active") for i in outcome.in_play]
        results = [s.outcome for s in outcome.approach]
        if outcome.passed and "failed" in results:
            changes.append(LessonChange("new-lesson", "created", 1, 0.0, 0.5, "active"))
        return OutcomeResult(outcome.id, False, tuple(changes))


def make_loop(node: FakeNode, seed: int = 1) -> LearningLoop:
    return LearningLoop(
        node,
        project=PROJECT,
        params=P,
        context_params=CP,
        run_params=RunParams(),
        clock=FixedClock(T0),
        rng=random.Random(seed),
    )


def fix_the_test(ctx: ActContext) -> ActReport:
    """Fails from tests/, passes from the root."""
    ctx.recorder.check("test", passed=False, operation="shell:pytest tests/", target="suite")
    ctx.recorder.check("test", passed=True, operation="shell:pytest", target="suite")
    return ActReport()


def break_it(ctx: ActContext) -> None:
    ctx.recorder.check("test", passed=False, operation="shell:pytest", target="suite")


# -- the phases -------------------------------------------------------------------------------


def test_a_task_goes_through_the_eight_phases_in_order() -> None:
    report = make_loop(FakeNode([lesson(1, 0.8)])).run(
        Task("fix the test", CTX), fix_the_test, session_id="s1"
    )
    assert report.phases == tuple(Phase)
    assert [p.value for p in report.phases] == [
        "remember",
        "assess",
        "engage",
        "hypothesize",
        "act",
        "observe",
        "update",
        "extract",
    ]


class HintingNode(FakeNode):
    """Recall shows one advice lesson and one unverified hint (never assessed)."""

    def __init__(self, advice: Lesson, hint: Lesson) -> None:
        super().__init__([advice])
        self.hint = hint

    def recall(self, task: str, context: Any = None, **kw: Any) -> RecallResult:
        return RecallResult((self.lessons[0],), "Lessons:", (0.5,), (self.hint,))


def test_an_unverified_hint_reaches_act_labelled_and_is_never_a_basis() -> None:
    advice, hint = lesson(1, 0.4), lesson(2, 0.95)
    seen: list[ActContext] = []

    def act(ctx: ActContext) -> ActReport:
        seen.append(ctx)
        return fix_the_test(ctx)

    report = make_loop(HintingNode(advice, hint)).run(
        Task("fix the test", CTX), act, session_id="s1"
    )
    [ctx] = seen
    assert ctx.hints == (hint,)
    assert [a.lesson.id for a in report.assessments] == [advice.id]
    assert hint.id not in report.hypothesis.basis


def test_remember_asks_the_node_for_the_task_in_this_session_and_project() -> None:
    node = FakeNode()
    make_loop(node).run(Task("fix the test", CTX), fix_the_test, session_id="s7")
    assert node.recalls == [{"task": "fix the test", "session_id": "s7", "project": PROJECT}]


def test_the_prediction_is_recorded_before_the_agent_acts() -> None:
    seen: list[Any] = []

    def act(ctx: ActContext) -> None:
        seen.append(ctx.recorder.run().prediction)
        fix_the_test(ctx)

    report = make_loop(FakeNode([lesson(1, 0.8)])).run(Task("t", CTX), act, session_id="s")
    assert seen[0] is not None and seen[0].expected == "pass"
    assert seen[0].confidence == pytest.approx(0.8)
    assert report.result.run.prediction == seen[0]


def test_update_records_the_derived_outcome_with_the_lessons_in_play_minus_dismissed() -> None:
    one, two = lesson(1, 0.8), lesson(2, 0.7)
    node = FakeNode([one, two])

    def act(ctx: ActContext) -> ActReport:
        fix_the_test(ctx)
        return ActReport(dismissed=(two.id,))

    report = make_loop(node).run(Task("t", CTX), act, session_id="s")
    (outcome,) = node.outcomes
    assert outcome.passed and outcome.project == PROJECT
    assert outcome.in_play == (one.id,)
    assert report.update.ids("confirmed") == [one.id]


def test_extract_reports_what_the_node_learned() -> None:
    report = make_loop(FakeNode()).run(Task("t", CTX), fix_the_test, session_id="s")
    assert report.extracted.created == ("new-lesson",)
    assert report.extracted.nothing_learned == ""


def test_extract_says_why_nothing_was_learned() -> None:
    report = make_loop(FakeNode()).run(Task("t", CTX), break_it, session_id="s")
    assert report.extracted.created == ()
    assert report.extracted.nothing_learned == "check_failed"


def test_observe_compares_reality_with_the_prediction() -> None:
    loop = make_loop(FakeNode([lesson(1, 0.9)]))
    wrong = loop.run(Task("t", CTX), break_it, session_id="a")
    assert wrong.observation.expected == "pass" and wrong.observation.actual == "fail"
    assert not wrong.observation.match and not wrong.observation.unexpected_success

    def doubt(_: Sequence[Any]) -> Any:
        return hypothesize([], params=LoopParams(prior_pass=0.2))

    surprise = loop.run(Task("t", CTX), fix_the_test, session_id="b", hypothesis=doubt)
    assert surprise.observation.unexpected_success


def test_same_seed_and_clock_give_the_same_outcome() -> None:
    a, b = FakeNode(), FakeNode()
    make_loop(a, seed=5).run(Task("t", CTX), fix_the_test, session_id="s")
    make_loop(b, seed=5).run(Task("t", CTX), fix_the_test, session_id="s")
    assert a.outcomes[0].to_json() == b.outcomes[0].to_json()


# -- ASSESS -----------------------------------------------------------------------------------


def test_assess_caps_a_lesson_whose_critical_context_differs_and_marks_it_untransferable() -> None:
    same = lesson(1, 0.8)
    windows = lesson(2, 0.9, {**CTX, "environment": "windows"})
    faint = lesson(3, 0.2)
    out = assess([windows, same, faint], CTX, params=P, context_params=CP)
    assert [a.lesson.id for a in out] == [same.id, windows.id]  # faint is below min_confidence
    assert out[0].confidence == pytest.approx(0.8) and out[0].transferable
    assert out[1].critical_differences == ("environment",)
    assert out[1].confidence <= 0.9 * CP.critical_cap + 1e-9
    assert not out[1].transferable


def test_a_lesson_that_does_not_transfer_is_an_assumption_not_a_basis() -> None:
    windows = lesson(2, 0.9, {**CTX, "environment": "windows"})
    h = hypothesize(assess([windows], CTX, params=P, context_params=CP), params=P)
    assert h.basis == () and h.confidence == pytest.approx(P.prior_pass)
    assert "environment" in h.assumptions[0]
    assert "I expect the run to pass" in h.text


# -- ENGAGE -----------------------------------------------------------------------------------


def test_engage_asks_a_present_collaborator_when_unsure_or_about_preferences() -> None:
    with_user = Task("t", collaborative=True, user_available=True)
    assert engage(with_user, 0.5, params=P) is Engagement.ASK
    prefs = Task("t", collaborative=True, user_available=True, involves_preferences=True)
    assert engage(prefs, 0.99, params=P) is Engagement.ASK


def test_engage_tests_cheaply_then_searches_then_proceeds() -> None:
    assert engage(Task("t"), 0.65, params=P) is Engagement.TEST
    risky = Task("t", low_risk=False, has_documentation=True)
    assert engage(risky, 0.4, params=P) is Engagement.SEARCH
    assert engage(risky, 0.6, params=P) is Engagement.PROCEED
    assert engage(Task("t"), 0.9, params=P) is Engagement.PROCEED


# -- EXTRACT: calibration and variable importance --------------------------------------------------


def test_calibration_counts_accuracy_and_brier_over_runs() -> None:
    loop = make_loop(FakeNode([lesson(1, 0.8)]))
    loop.run(Task("t", CTX), fix_the_test, session_id="a")
    loop.run(Task("t", CTX), break_it, session_id="b")
    assert loop.calibration.predictions == 2
    assert loop.calibration.accuracy == pytest.approx(0.5)
    assert loop.calibration.brier == pytest.approx(((0.8 - 1) ** 2 + (0.8 - 0) ** 2) / 2)


def test_a_variable_that_keeps_coming_with_wrong_predictions_becomes_critical() -> None:
    lesson_ctx = {**CTX, "tools": ["pytest", "tox"]}
    loop = make_loop(FakeNode([lesson(1, 0.9, lesson_ctx)]))
    assert loop.importance.importance("tools") == "minor"
    for n in range(3):
        loop.run(Task("t", CTX), break_it, session_id=f"s{n}")
    assert loop.importance.importance("tools") == "critical"
    assert loop.importance.importance("domain") == "minor"  # never differed


# -- params -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("recall_limit", 0),
        ("min_confidence", float("nan")),
        ("ask_below", 1.5),
        ("prior_pass", -0.1),
        ("importance_min_observations", 0),
    ],
)
def test_loop_params_refuse_out_of_range_values(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=field):
        LoopParams(**{field: value})


def test_loop_params_refuse_error_rate_bands_out_of_order() -> None:
    with pytest.raises(ConfigError, match="important_error_rate"):
        LoopParams(important_error_rate=0.8)
