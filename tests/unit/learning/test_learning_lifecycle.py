"""Lifecycle: one rule maps a lesson's confidence, evidence and status to its visible state."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.learning.knowledge_params import LifecycleParams
from lamarck.learning.lifecycle import LifecycleState, state_of
from tests.factories import lesson_row

NOW = datetime(2026, 3, 1, tzinfo=UTC)
P = LifecycleParams()


def row(**over: Any) -> LessonRow:
    return lesson_row(**{"content": "c", "operation": "op", "at": NOW, "evidence": ("o1",), **over})


@pytest.mark.parametrize(
    ("over", "state"),
    [
        ({"status": LessonStatus.CLAIMED, "evidence": (), "confidence": 0.3}, "hypothesis"),
        ({"evidence": (), "imported_from": "lmk1src", "confidence": 0.7}, "hypothesis"),
        ({}, "tested"),  # born from one outcome
        ({"evidence": ("o1", "o2"), "confirmations": 1, "confidence": 0.65}, "verified"),
        ({"evidence": ("o1", "o2"), "confirmations": 1, "confidence": 0.55}, "tested"),
        ({"evidence": ("o1", "o2", "o3"), "confirmations": 2, "confidence": 0.8}, "established"),
        ({"evidence": ("o1", "o2", "o3"), "confirmations": 2, "confidence": 0.7}, "verified"),
        ({"evidence": (), "confirmations": 70, "confidence": 0.9}, "established"),  # capped list
        ({"evidence": (), "contradictions": 1, "confidence": 0.25}, "tested"),
        ({"status": LessonStatus.SUPERSEDED, "confidence": 0.9}, "deprecated"),
        ({"status": LessonStatus.RETIRED}, "deprecated"),
    ],
)
def test_state_follows_confidence_evidence_and_status(over: dict[str, Any], state: str) -> None:
    assert state_of(row(**over), P) is LifecycleState(state)


def test_a_contradiction_that_lowers_confidence_drops_an_established_lesson_a_rung() -> None:
    established = row(evidence=("o1", "o2", "o3"), confirmations=2, confidence=0.8)
    assert state_of(established, P) is LifecycleState.ESTABLISHED
    hit = row(evidence=("o1", "o2", "o3"), confirmations=2, contradictions=1, confidence=0.55)
    assert state_of(hit, P) is LifecycleState.TESTED
