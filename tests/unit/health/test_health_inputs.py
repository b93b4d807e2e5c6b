"""Predictions are validated values; external validations are read from the event log."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from lamarck.domain.rows import LessonEvent
from lamarck.errors import InvalidRecord
from lamarck.health.inputs import (
    Prediction,
    ValidationResult,
    predictions_from_validations,
    similarity_of,
    validations_from_events,
)
from lamarck.health.params import HealthParams

AT = datetime(2026, 2, 1, tzinfo=UTC)


def event(
    kind: str, reason: str = "", outcome_id: str = "o1", before: float | None = 0.6
) -> LessonEvent:
    """A loop event about lesson ``L``."""
    return LessonEvent("L", AT, kind, "loop", before, 0.5, reason=reason, outcome_id=outcome_id)


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf])
def test_a_prediction_confidence_outside_zero_one_is_refused(bad: float) -> None:
    with pytest.raises(InvalidRecord) as err:
        Prediction("op", True, bad, AT)
    assert err.value.reason == "bad_prediction"


def test_a_prediction_needs_a_subject_and_an_aware_time() -> None:
    with pytest.raises(InvalidRecord):
        Prediction("", True, 0.5, AT)
    with pytest.raises(InvalidRecord) as err:
        Prediction("op", True, 0.5, datetime(2026, 2, 1))
    assert err.value.reason == "naive_timestamp"


def test_an_unresolved_prediction_is_neither_correct_nor_resolved() -> None:
    p = Prediction("op", False, 0.5, AT)
    assert not p.resolved and not p.correct
    assert Prediction("op", False, 0.5, AT, actual_success=False).correct


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("similarity=0.87", 0.87),
        ("x, similarity=1.00", 1.0),
        ("similarity=0", 0.0),
        ("", None),
        ("similarity=1.5", None),
        ("dissimilarity=0.3", None),
        ("similarity=abc", None),
    ],
)
def test_the_similarity_is_read_from_the_reason_the_service_writes(
    reason: str, expected: float | None
) -> None:
    assert similarity_of(event("confirmed", reason)) == expected


def test_only_reality_tests_citing_an_outcome_are_validations() -> None:
    events = [
        event("confirmed", "similarity=0.95"),
        event("confirmed", "similarity=0.95", outcome_id=""),
        event("created"),
        event("imported"),
        event("retired"),
        event("contradicted", "similarity=0.95"),
        event("contradicted", "similarity=0.70"),
        event("contradicted", "similarity=0.71"),
        event("contradicted", ""),
    ]
    results = [v.result for v in validations_from_events(events, HealthParams())]
    assert results == [
        ValidationResult.CONFIRMED,
        ValidationResult.CONTRADICTED,
        ValidationResult.CONTEXT_MISMATCH,
        ValidationResult.CONTRADICTED,
        ValidationResult.CONTRADICTED,
    ]


def test_a_validation_keeps_the_tested_confidence_similarity_and_outcome() -> None:
    [v] = validations_from_events([event("contradicted", "similarity=0.80")], HealthParams())
    assert (v.lesson_id, v.confidence_before, v.similarity, v.outcome_id) == ("L", 0.6, 0.8, "o1")
    assert v.validator == "reality"
    [unknown] = validations_from_events([event("confirmed", before=None)], HealthParams())
    assert unknown.confidence_before is None and unknown.similarity is None


def test_each_reality_test_is_an_implicit_prediction_of_success_at_the_lessons_confidence() -> None:
    events = [
        event("confirmed", "similarity=0.95", before=0.8),
        event("contradicted", "similarity=0.95", before=0.7),
        event("contradicted", "similarity=0.20", before=0.6),
        event("confirmed", before=None),
    ]
    predictions = predictions_from_validations(validations_from_events(events, HealthParams()))
    assert [(p.subject, p.confidence, p.actual_success) for p in predictions] == [
        ("L", 0.8, True),
        ("L", 0.7, False),
        ("L", 0.6, False),
    ]
    assert all(p.predicted_success and p.at == AT for p in predictions)
