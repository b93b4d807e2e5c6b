"""Confidence arithmetic: birth, attributed success and failure by context band, decay, retirement.

Pure functions of (confidence, similarity, params); see ``LearningParams`` for how adaptive memory's
attributed steps and Lamarckian memory's context-weighted steps combine.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from lamarck.learning.params import ConfidenceParams

__all__ = [
    "Band",
    "Confirmed",
    "Contradicted",
    "Decayed",
    "apply_event",
    "band_for",
    "clamp",
    "confirm",
    "contradict",
    "decay_unused",
    "failure_step",
    "initial_confidence",
    "should_retire",
    "success_step",
]


class Band(StrEnum):
    """How alike the run's context is to the lesson's (Lamarckian memory's three bands)."""

    SAME = "same"
    SIMILAR = "similar"
    DIFFERENT = "different"


def clamp(value: float, p: ConfidenceParams) -> float:
    """Keep confidence within [floor, ceiling]: never certain either way."""
    return min(p.ceiling, max(p.floor, value))


def band_for(similarity: float, p: ConfidenceParams) -> Band:
    """Place a context similarity in [0, 1] in its band."""
    if similarity > p.very_similar:
        return Band.SAME
    if similarity > p.somewhat_similar:
        return Band.SIMILAR
    return Band.DIFFERENT


def initial_confidence(has_evidence: bool, p: ConfidenceParams) -> float:
    """Birth confidence for a lesson with evidence; the claimed level for one without."""
    return p.birth if has_evidence else p.claimed


def success_step(similarity: float, p: ConfidenceParams) -> float:
    """How much an attributed success adds, by context band (always positive)."""
    band = band_for(similarity, p)
    if band is Band.SAME:
        return p.confirm_step
    if band is Band.SIMILAR:
        return p.confirm_step * p.similar_success_factor
    # A success far from where the lesson was learned shows it generalises: the larger step.
    return p.generalisation_step


def failure_step(similarity: float, p: ConfidenceParams) -> float:
    """How much an attributed failure removes, by context band (a positive magnitude)."""
    band = band_for(similarity, p)
    if band is Band.SAME:
        return p.contradict_step
    if band is Band.SIMILAR:
        return p.contradict_step * p.similar_failure_factor
    # A failure elsewhere says the context differs, not that the lesson is wrong here.
    return p.contradict_step * p.different_failure_factor


def confirm(confidence: float, similarity: float, p: ConfidenceParams) -> float:
    """Confidence after an attributed success."""
    return clamp(confidence + success_step(similarity, p), p)


def contradict(confidence: float, similarity: float, p: ConfidenceParams) -> float:
    """Confidence after an attributed failure."""
    return clamp(confidence - failure_step(similarity, p), p)


def decay_unused(confidence: float, idle_days: float, p: ConfidenceParams) -> float:
    """Confidence after a reconcile pass in which the lesson was not used.

    ``idle_days`` is the time since the lesson was last used or touched (the previous decay
    touches it, so staleness accumulates linearly in time, never counted twice).
    """
    staleness = p.staleness_per_day * max(0.0, idle_days)
    return clamp(confidence - p.unused_decay - staleness, p)


def should_retire(confidence: float, p: ConfidenceParams) -> bool:
    """A lesson below the retirement level leaves every active query (it is kept)."""
    return confidence < p.retire_below


@dataclass(frozen=True, slots=True)
class Confirmed:
    """An attributed success in a context of the given similarity."""

    similarity: float = 1.0


@dataclass(frozen=True, slots=True)
class Contradicted:
    """An attributed failure in a context of the given similarity."""

    similarity: float = 1.0


@dataclass(frozen=True, slots=True)
class Decayed:
    """A reconcile pass in which the lesson was unused, after ``idle_days`` idle."""

    idle_days: float = 0.0


def apply_event(
    confidence: float, event: Confirmed | Contradicted | Decayed, p: ConfidenceParams
) -> float:
    """Apply one confidence event; the single entry point the service uses."""
    if isinstance(event, Confirmed):
        return confirm(confidence, event.similarity, p)
    if isinstance(event, Contradicted):
        return contradict(confidence, event.similarity, p)
    return decay_unused(confidence, event.idle_days, p)
