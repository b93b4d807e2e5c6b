"""The agent's explicit predictions reach the node with the outcome and are read back."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from lamarck.agent.recorder import RunRecorder
from lamarck.domain.rows import OutcomeRow
from lamarck.learning.params import LearningParams
from lamarck.learning.predictions import recorded_prediction, recorded_predictions
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.lessons.predictions import load_recorded_predictions
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.reputation.transfer import TransferParams

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PROJECT = "ab" * 32
LESSON = "0b9c2d3e-4a5b-4c6d-8e7f-0123456789ab"


def row(record: dict[str, object], *, passed: bool = True, n: int = 1) -> OutcomeRow:
    """A stored outcome row holding ``record``."""
    return OutcomeRow(f"o{n}", "s", 0, PROJECT, passed, True, NOW, record)


def test_a_prediction_resolves_against_whether_the_run_passed() -> None:
    found = recorded_prediction(
        row({"prediction": {"expected": "fail", "confidence": 0.7}, "in_play": [LESSON]})
    )
    assert found is not None
    assert (found.subject, found.predicted_success, found.confidence) == (LESSON, False, 0.7)
    assert found.actual_success and not found.correct and found.at == NOW


def test_the_subject_falls_back_to_the_first_operation_then_the_outcome() -> None:
    pred = {"expected": "pass", "confidence": 0.5}
    op = recorded_prediction(row({"prediction": pred, "approach": [{"operation_key": "a"}]}))
    bare = recorded_prediction(row({"prediction": pred}))
    assert op is not None and op.subject == "a" and op.correct
    assert bare is not None and bare.subject == "outcome:o1"


def test_outcomes_without_a_usable_prediction_are_skipped() -> None:
    rows = [
        row({}, n=1),
        row({"prediction": {"expected": "maybe", "confidence": 0.5}}, n=2),
        row({"prediction": {"expected": "pass", "confidence": True}}, n=3),
        row({"prediction": {"expected": "pass", "confidence": 1.5}}, n=4),
        row({"prediction": {"expected": "pass", "confidence": 1}}, n=5),
    ]
    assert [p.outcome_id for p in recorded_predictions(rows)] == ["o5"]


async def test_a_recorded_run_stores_its_prediction_for_the_health_report() -> None:
    clock = FixedClock(NOW)
    store = InMemoryLessonStore(dim=32)
    service = LessonService(
        store,
        HashingEmbedder(32),
        clock,
        LearningParams(),
        rng=random.Random(1),
        transfer=TransferParams(),
    )
    runs = (("pass", True), ("pass", False), ("fail", False))
    for seed, (expected, passes) in enumerate(runs):
        rec = RunRecorder(
            session_id=f"s-{expected}-{passes}",
            goal="make the suite pass",
            project=PROJECT,
            clock=clock,
            rng=random.Random(seed),
        )
        rec.predict(expected, 0.8)  # type: ignore[arg-type]
        rec.check("test", passed=passes, operation="shell:pytest", target="suite")
        await service.record_outcome(rec.finish().outcome)
        clock.advance(60)
    rec = RunRecorder(
        session_id="quiet", goal="g", project=PROJECT, clock=clock, rng=random.Random(9)
    )
    rec.check("test", passed=True)
    await service.record_outcome(rec.finish().outcome)
    found = await load_recorded_predictions(store)
    assert [(p.predicted_success, p.actual_success) for p in found] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    assert [p.correct for p in found] == [True, False, True]
    assert all(p.confidence == 0.8 and p.subject == "shell:pytest" for p in found)
    assert len(await load_recorded_predictions(store, limit=2)) == 2
