"""A lesson's lifecycle state (Lamarckian memory "Memory Lifecycle"), by one pure rule.

    hypothesis → tested → verified → established → deprecated

* **deprecated**: superseded (by a newer version, a merge or a conflict's winner) or retired;
  kept as history.
* **hypothesis**: a claim without evidence here (``claimed``, or an imported lesson this node
  has not yet seen an outcome about: a source's word is a claim, not evidence).
* **tested**: at least one outcome observed here, not yet verified.
* **verified**: ``verified_min_successes`` successes and ``verified_min_confidence`` (0.6).
* **established**: ``established_min_successes`` successes and ``established_min_confidence``
  (0.8).

Successes are the outcomes behind a lesson's evidence (its birth outcome and every
confirmation): ``max(len(evidence), confirmations)``, since the evidence list is capped.
Confidence already carries the contradictions, so a contradicted lesson falls back a rung.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.learning.knowledge_params import LifecycleParams

__all__ = ["LifecycleFacts", "LifecycleState", "facts_of", "lifecycle_state", "state_of"]


class LifecycleState(StrEnum):
    """Where a lesson stands (design sources: Lamarckian memory)."""

    HYPOTHESIS = "hypothesis"
    TESTED = "tested"
    VERIFIED = "verified"
    ESTABLISHED = "established"
    DEPRECATED = "deprecated"


@dataclass(frozen=True, slots=True)
class LifecycleFacts:
    """What the rule reads of a lesson."""

    status: LessonStatus
    confidence: float
    successes: int
    failures: int


def facts_of(row: LessonRow) -> LifecycleFacts:
    """The facts of a stored lesson."""
    return LifecycleFacts(
        status=row.status,
        confidence=row.confidence,
        successes=max(len(row.evidence), row.confirmations),
        failures=row.contradictions,
    )


def lifecycle_state(facts: LifecycleFacts, p: LifecycleParams) -> LifecycleState:
    """The one rule mapping a lesson's facts to its state."""
    if facts.status in (LessonStatus.SUPERSEDED, LessonStatus.RETIRED):
        return LifecycleState.DEPRECATED
    if facts.status is LessonStatus.CLAIMED or facts.successes + facts.failures == 0:
        return LifecycleState.HYPOTHESIS
    if (
        facts.successes >= p.established_min_successes
        and facts.confidence >= p.established_min_confidence
    ):
        return LifecycleState.ESTABLISHED
    if (
        facts.successes >= p.verified_min_successes
        and facts.confidence >= p.verified_min_confidence
    ):
        return LifecycleState.VERIFIED
    return LifecycleState.TESTED


def state_of(row: LessonRow, p: LifecycleParams) -> LifecycleState:
    """The lifecycle state of a stored lesson."""
    return lifecycle_state(facts_of(row), p)
