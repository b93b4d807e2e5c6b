"""The values the health report reads: stored rows and events, predictions, validations.

``HealthInputs`` is what the edge loads from the store (lessons, the lesson event log, the
predictions the SDK's run recorder records). ``Validation`` is one external test of a lesson,
derived from the event log by ``validations_from_events``:

* An event counts as an external validation only when it is a ``confirmed`` or ``contradicted``
  event that cites a stored outcome (``outcome_id``). That is reality testing the lesson (seed
  validation hierarchy: "Physical Reality Test" first); an event without an outcome is somebody
  saying so, and claims are not evidence.
* A ``contradicted`` event whose context similarity is at most ``similar_above`` is a
  *context mismatch*, not a contradiction: the lesson failed somewhere else than where it was
  learned (seed principle 2, "treat context mismatch as information, not invalidation"; the
  learning rule moves it by the small different-context step for the same reason).
* The similarity is read from the event's reason, which the lesson service writes as
  ``similarity=<2 decimals>``. An event without it has unknown similarity: a failure of unknown
  context counts as a contradiction (the more alarming reading, so nothing is explained away)
  and the use counts in no transfer bucket.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from lamarck.domain.rows import Category, LessonEvent, LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.health.params import HealthParams

__all__ = [
    "HealthInputs",
    "MeasuredLesson",
    "Prediction",
    "Validation",
    "ValidationResult",
    "predictions_from_validations",
    "similarity_of",
    "validations_from_events",
]

# The lesson service writes ``similarity=0.87`` into the reason of confirmed and contradicted
# events (node/lessons/service.py); ASCII digits only.
_SIMILARITY_RE = re.compile(r"(?:^|[\s,;])similarity=([0-9]+(?:\.[0-9]+)?)(?![0-9.])", re.ASCII)

_VALIDATION_KINDS = frozenset({"confirmed", "contradicted"})


def _aware(name: str, at: datetime) -> None:
    """Refuse a naive time: every time in the report is UTC-aware."""
    if at.tzinfo is None:
        raise InvalidRecord(f"{name} must be timezone-aware (UTC)", reason="naive_timestamp")


def _probability(name: str, value: float, reason: str) -> None:
    """Refuse a value outside [0, 1], NaN or infinite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRecord(f"{name} must be a number", reason=reason)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidRecord(f"{name} must be in [0, 1], got {value!r}", reason=reason)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A prediction the agent made before acting, and what really happened.

    ``subject`` is the lesson id the prediction rests on, or the operation when no lesson did.
    ``confidence`` is the probability the agent gave to its prediction coming true (for a
    prediction resting on a lesson, the lesson's confidence when it was recalled).
    ``actual_success`` is ``None`` until the outcome is known; unresolved predictions count in
    no accuracy or calibration figure.
    """

    subject: str
    predicted_success: bool
    confidence: float
    at: datetime
    actual_success: bool | None = None

    def __post_init__(self) -> None:
        if not self.subject:
            raise InvalidRecord("a prediction needs a subject", reason="bad_prediction")
        _probability("Prediction.confidence", self.confidence, "bad_prediction")
        _aware("Prediction.at", self.at)

    @property
    def resolved(self) -> bool:
        """True once the real outcome is known."""
        return self.actual_success is not None

    @property
    def correct(self) -> bool:
        """True when resolved and the prediction matched reality."""
        return self.actual_success is not None and self.actual_success == self.predicted_success


class ValidationResult(StrEnum):
    """How an external test of a lesson went (seed ``AdversarialValidationTracker``)."""

    CONFIRMED = "confirmed"
    CONTRADICTED = "contradicted"
    CONTEXT_MISMATCH = "context_mismatch"


@dataclass(frozen=True, slots=True)
class Validation:
    """One external test of a lesson: when, how it went, and what the lesson claimed then.

    ``confidence_before`` is the lesson's confidence when it was tested (``None`` if the event
    did not record it); ``similarity`` the context similarity between the lesson and the run
    (``None`` when unknown); ``validator`` who tested it (``reality`` for an outcome).
    """

    lesson_id: str
    at: datetime
    result: ValidationResult
    confidence_before: float | None = None
    similarity: float | None = None
    validator: str = "reality"
    outcome_id: str = ""

    def __post_init__(self) -> None:
        _aware("Validation.at", self.at)
        if self.confidence_before is not None:
            _probability("Validation.confidence_before", self.confidence_before, "bad_validation")
        if self.similarity is not None:
            _probability("Validation.similarity", self.similarity, "bad_validation")


class MeasuredLesson(Protocol):
    """What the report reads of a lesson: the store's ``LessonFacts`` (how the node loads the
    whole store) or a whole ``LessonRow``."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> LessonStatus: ...
    @property
    def confidence(self) -> float: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def last_used(self) -> datetime | None: ...
    @property
    def context(self) -> dict[str, Any]: ...
    @property
    def category(self) -> Category: ...


@dataclass(frozen=True, slots=True)
class HealthInputs:
    """Everything the report reads, as plain values loaded by the edge.

    ``lessons``: every stored lesson, whatever its status (retention needs the retired).
    ``events``: the lesson event log for those lessons, in append order.
    ``predictions``: the run recorder's predictions.
    """

    lessons: Sequence[MeasuredLesson] = ()
    events: Sequence[LessonEvent] = ()
    predictions: Sequence[Prediction] = ()


def similarity_of(event: LessonEvent) -> float | None:
    """The context similarity an event's reason records, or ``None`` when it records none."""
    match = _SIMILARITY_RE.search(event.reason)
    if match is None:
        return None
    value = float(match.group(1))
    return value if 0.0 <= value <= 1.0 else None


def validations_from_events(
    events: Sequence[LessonEvent], params: HealthParams
) -> list[Validation]:
    """The external validations among ``events`` (see the module docstring), in input order."""
    out: list[Validation] = []
    for event in events:
        if event.kind not in _VALIDATION_KINDS or not event.outcome_id:
            continue
        similarity = similarity_of(event)
        if event.kind == "confirmed":
            result = ValidationResult.CONFIRMED
        elif similarity is not None and similarity <= params.similar_above:
            result = ValidationResult.CONTEXT_MISMATCH
        else:
            result = ValidationResult.CONTRADICTED
        before = event.confidence_before
        out.append(
            Validation(
                lesson_id=event.lesson_id,
                at=event.at,
                result=result,
                confidence_before=before if before is not None and 0 <= before <= 1 else None,
                similarity=similarity,
                outcome_id=event.outcome_id,
            )
        )
    return out


def predictions_from_validations(validations: Sequence[Validation]) -> list[Prediction]:
    """The implicit prediction in each reality test: the lesson in play predicted success.

    A lesson recalled at confidence c and then put to a real outcome is the claim "this works,
    with probability c"; a confirmation makes it true, a contradiction or a context mismatch
    false (the lesson was used there and did not hold). The edge may feed these to the report
    when the run recorder has recorded no explicit predictions, so calibration measures the
    stored confidences themselves; a validation without a recorded confidence is skipped.
    """
    return [
        Prediction(
            subject=v.lesson_id,
            predicted_success=True,
            confidence=v.confidence_before,
            at=v.at,
            actual_success=v.result is ValidationResult.CONFIRMED,
        )
        for v in validations
        if v.confidence_before is not None
    ]
