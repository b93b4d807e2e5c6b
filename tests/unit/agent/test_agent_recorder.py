"""The run recorder derives outcomes by the node's rules: never optimistic, never more lenient."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.agent import RunParams, RunRecorder, derive_outcome, parse_run
from lamarck.agent.run import run_json_schema, shipped_run_schema
from lamarck.errors import ConfigError, InvalidRecord
from lamarck.learning.mechanical import MechanicalLesson
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome

PROJECT = "ab" * 32
BAD, GOOD = "shell:pytest tests/", "shell:pytest"
LESSON = "6f1c1c8e-7d1b-4c86-9a53-3c0e6c7c2f11"


def recorder(**kwargs: Any) -> tuple[RunRecorder, FixedClock]:
    clock = FixedClock()
    options: dict[str, Any] = {
        "session_id": "s-1",
        "goal": "make the test suite pass",
        "project": PROJECT,
        "clock": clock,
        "rng": random.Random(7),
    }
    options.update(kwargs)
    return RunRecorder(**options), clock


def test_failed_then_passing_pytest_is_passed_and_teaches_prefer_b_over_a() -> None:
    rec, clock = recorder()
    rec.check("test", passed=False, operation=BAD, target="suite")
    clock.advance(4.5)
    rec.check("test", passed=True, operation=GOOD, target="suite")
    result = rec.finish()
    assert result.outcome.passed and result.outcome.footer_passed()
    assert result.lessons == (MechanicalLesson(prefer=GOOD, avoid=BAD, target="suite"),)
    assert result.nothing_learned == ""
    # What the node parses is what the recorder built (the node's model refuses optimism).
    again = Outcome.from_json(result.outcome_json())
    assert again == result.outcome
    assert again.wall_s == 4.5 and again.created_at == "2026-01-01T00:00:04.500000Z"
    assert [s.outcome for s in again.approach] == ["failed", "ok"]


def test_defaults_are_filled_schema_version_ids_and_timestamps() -> None:
    rec, _ = recorder()
    rec.check("lint", passed=True)
    outcome = rec.finish().outcome
    assert outcome.schema_version == "1.0" and outcome.kind == "outcome"
    assert outcome.id == rec.finish().outcome.id  # finish is idempotent
    other, _ = recorder()
    other.check("lint", passed=True)
    assert other.finish().outcome.id == outcome.id  # same seed, same id: reproducible
    assert outcome.turn_index == 0 and outcome.tokens == 0


def test_a_check_before_the_last_mutation_is_stale_and_the_run_fails() -> None:
    rec, _ = recorder()
    rec.check("test", passed=True, operation=GOOD)
    rec.tool_call("edit", "ok", target="app.py", mutates=True)
    result = rec.finish()
    assert not result.outcome.passed
    assert result.outcome.checks[0].mutated_after
    assert result.nothing_learned == "check_stale"


def test_a_refused_edit_changed_nothing_so_the_check_stays_fresh() -> None:
    rec, _ = recorder()
    rec.check("test", passed=True)
    rec.tool_call("edit", "refused", target="app.py", mutates=True)
    assert rec.finish().outcome.passed


def test_an_explicit_mutation_makes_earlier_checks_stale_until_rerun() -> None:
    rec, _ = recorder()
    rec.check("build", passed=True)
    rec.mutation("setup.py")
    rec.check("build", passed=True)
    result = rec.finish()
    assert result.outcome.passed
    assert [c.mutated_after for c in result.outcome.checks] == [True, False]


def test_a_refused_check_did_not_run_and_proves_nothing() -> None:
    rec, _ = recorder()
    rec.check("test", passed=True, refused=True, operation=GOOD)
    result = rec.finish()
    assert not result.outcome.passed
    assert result.outcome.checks[0].ran is False
    assert result.outcome.approach[0].outcome == "refused"
    assert result.nothing_learned == "check_not_run"


def test_only_the_latest_run_of_a_check_counts_either_way() -> None:
    rec, _ = recorder()
    rec.check("test", passed=True, label="unit")
    rec.check("test", passed=False, label="unit")
    result = rec.finish()
    assert not result.outcome.passed and result.nothing_learned == "check_failed"


def test_no_check_means_nothing_verified() -> None:
    rec, _ = recorder()
    rec.tool_call(BAD, "failed", target="suite")
    rec.tool_call(GOOD, "ok", target="suite")
    result = rec.finish()
    assert not result.outcome.passed and result.lessons == ()
    assert result.nothing_learned == "no_check_ran"


def test_claim_not_ok_is_recorded_but_teaches_nothing() -> None:
    rec, _ = recorder()
    rec.check("test", passed=False, operation=BAD, target="suite")
    rec.check("test", passed=True, operation=GOOD, target="suite")
    result = rec.finish(claim_ok=False)
    assert result.outcome.passed and not result.outcome.claim_ok
    assert result.lessons == () and result.nothing_learned == "claim_not_ok"


def test_a_passing_run_without_a_failed_then_ok_pair_says_so() -> None:
    rec, _ = recorder()
    rec.check("test", passed=True, operation=GOOD, target="suite")
    assert rec.finish().nothing_learned == "no_failed_then_ok_pair"


def test_an_injected_step_is_left_out_of_the_approach() -> None:
    rec, _ = recorder()
    rec.tool_call("web:fetch", "ok", target="docs", injected_instruction=True)
    rec.check("test", passed=True)
    outcome = rec.finish().outcome
    assert outcome.approach == () and outcome.steps == 1


def test_lessons_in_play_and_prediction_are_kept() -> None:
    class Recalled:
        id = LESSON

    rec, _ = recorder()
    rec.lessons_in_play([Recalled(), LESSON])
    rec.predict("pass", 0.8)
    rec.check("test", passed=False)
    result = rec.finish()
    assert result.outcome.in_play == (LESSON,)
    assert result.run.prediction is not None and result.run.prediction.confidence == 0.8
    assert result.prediction_correct is False


def test_a_bad_prediction_or_kind_is_refused_as_invalid_record() -> None:
    rec, _ = recorder()
    with pytest.raises(InvalidRecord):
        rec.predict("pass", 1.5)
    with pytest.raises(InvalidRecord):
        rec.check("deploy", passed=True)  # type: ignore[arg-type]


def test_recording_after_finish_is_refused() -> None:
    rec, _ = recorder()
    rec.check("test", passed=True)
    rec.finish()
    with pytest.raises(InvalidRecord) as caught:
        rec.tool_call("x", "ok")
    assert caught.value.reason == "finished"


def test_the_goal_digest_keeps_the_first_goal_chars() -> None:
    rec, _ = recorder(goal="x" * 900, params=RunParams(goal_chars=50))
    rec.check("test", passed=True)
    assert rec.finish().outcome.goal_digest == "x" * 50


def test_run_params_are_validated() -> None:
    with pytest.raises(ConfigError):
        RunParams(goal_chars=0)
    with pytest.raises(ConfigError):
        RunParams(goal_chars=10_000)


def test_the_run_json_round_trips_and_derives_the_same_outcome() -> None:
    rec, clock = recorder()
    rec.check("test", passed=False, operation=BAD, target="suite")
    rec.check("test", passed=True, operation=GOOD, target="suite")
    finished = rec.finish()
    run = parse_run(finished.run.model_dump_json(exclude_none=True))
    assert run == finished.run
    again = derive_outcome(run, now=clock.now(), params=RunParams())
    assert again.outcome == finished.outcome


def test_a_minimal_hand_written_run_gets_every_default() -> None:
    raw = json.dumps(
        {
            "session_id": "hook-1",
            "goal": "fix it",
            "events": [{"type": "check", "kind": "test", "result": "passed"}],
        }
    )
    run = parse_run(raw)
    result = derive_outcome(
        run,
        now=FixedClock().now(),
        outcome_id="0d6f4c1e-2b9a-4f5e-8c3d-1a2b3c4d5e6f",
        project=PROJECT,
        params=RunParams(),
    )
    assert result.outcome.passed and result.outcome.project == PROJECT


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{", "malformed"),
        ('{"kind": "outcome"}', "not_a_run"),
        ('{"session_id": "s", "goal": "g", "events": [{"type": "nap"}]}', "malformed"),
        ('{"session_id": "s", "goal": "g", "surprise": 1}', "malformed"),
    ],
)
def test_a_bad_run_is_refused_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(InvalidRecord) as caught:
        parse_run(raw)
    assert caught.value.reason == reason


def test_a_run_without_project_or_id_cannot_become_an_outcome() -> None:
    run = parse_run('{"session_id": "s", "goal": "g"}')
    with pytest.raises(InvalidRecord) as caught:
        derive_outcome(run, now=FixedClock().now(), outcome_id=LESSON, params=RunParams())
    assert caught.value.reason == "no_project"


def test_the_shipped_schema_is_the_generated_one() -> None:
    assert shipped_run_schema() == json.loads(json.dumps(run_json_schema()))


_events = st.lists(
    st.one_of(
        st.tuples(
            st.just("tool"),
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["ok", "failed", "refused"]),
            st.sampled_from(["", "t1", "t2"]),
            st.booleans(),
        ),
        st.tuples(
            st.just("check"),
            st.sampled_from(["test", "lint", "build"]),
            st.sampled_from(["passed", "failed", "refused"]),
            st.sampled_from(["", "t1"]),
            st.sampled_from(["", "a", "b"]),
        ),
        st.tuples(st.just("mutation")),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(events=_events, claim_ok=st.booleans())
def test_any_recorded_run_is_accepted_by_the_node_model_and_never_optimistic(
    events: list[tuple[Any, ...]], claim_ok: bool
) -> None:
    rec, _ = recorder()
    for event in events:
        if event[0] == "tool":
            _, op, result, target, mutates = event
            rec.tool_call(op, result, target=target, mutates=mutates)
        elif event[0] == "check":
            _, kind, result, target, op = event
            rec.check(
                kind,
                passed=result == "passed",
                refused=result == "refused",
                target=target,
                operation=op,
            )
        else:
            rec.mutation()
    outcome = rec.finish(claim_ok=claim_ok).outcome
    parsed = Outcome.from_json(outcome.to_json())  # the node's own validation
    # Exactly the footer's verdict: never more optimistic, never more pessimistic.
    assert parsed.passed == parsed.footer_passed()
