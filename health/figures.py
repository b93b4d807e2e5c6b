"""The health report's figures, as frozen values (``report.py`` computes them).

Every rate is ``None`` when its denominator is zero: "no data" is not "0 %" (the seed returns
0.0 for an empty tracker, which then reads as a failing node). Durations are fractional days or
hours, not the seed's whole days (a lesson that rose in 6 hours did not take 0 days).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

__all__ = [
    "Adaptation",
    "CalibrationBucket",
    "CompoundLearning",
    "ConfidenceDistribution",
    "Finding",
    "HealthReport",
    "PredictionFigures",
    "Retention",
    "Severity",
    "TransferBucket",
    "UpdateVelocity",
    "Usefulness",
    "ValidationFigures",
]


@dataclass(frozen=True, slots=True)
class ConfidenceDistribution:
    """Live lessons (active or claimed) by confidence band (seed "Memory Distribution").

    high: confidence > ``high_confidence``; medium: in (``low_confidence``, ``high_confidence``];
    low: <= ``low_confidence``. Superseded and retired lessons are history, not memory in use.
    """

    total: int
    high: int
    medium: int
    low: int


@dataclass(frozen=True, slots=True)
class Retention:
    """How much knowledge persists and stays believed (seed ``measure_retention``).

    ``retained``: live lessons with confidence > ``retained_above``. ``retired``: lessons taken
    out of use (by evidence, a person, or their source). ``stale``: live lessons not used for
    more than ``stale_days``. ``rate`` = retained / (live + retired): the seed divides by every
    memory; here a superseded lesson is left out, because its newer version is counted instead
    and replacing knowledge with better knowledge is not losing it.
    """

    live: int
    retained: int
    retired: int
    stale: int
    rate: float | None


@dataclass(frozen=True, slots=True)
class Adaptation:
    """How quickly the node comes to trust something in a new context (seed
    ``measure_adaptation``).

    Lessons are grouped by context (domain, environment: the seed's whole-context key splits
    a context by every tool list). A group's adaptation time is from its first lesson's
    creation to the first reality confirmation that lifts any of its lessons above
    ``high_confidence`` (the event log says when; the seed used ``updated_at``, which moves on
    every later change). ``contexts`` counts groups, ``adapted`` those that got there.
    """

    contexts: int
    adapted: int
    mean_days: float | None
    median_days: float | None


@dataclass(frozen=True, slots=True)
class CompoundLearning:
    """Whether learning accelerates (seed ``measure_compound_learning``).

    Lessons created at least ``compound_horizon_days`` ago, born at or below high confidence,
    are split by creation order into an early and a late half. Each half's time to high
    confidence is the mean, over its lessons that reached it within the horizon, of the days
    from creation to the first reality confirmation above ``high_confidence``.
    ``rate`` = (early - late) / early: positive when later lessons are learned faster. ``None``
    when either half has fewer than ``min_compound_lessons`` such lessons, or early is zero.
    """

    eligible: int
    early_days: float | None
    late_days: float | None
    rate: float | None


@dataclass(frozen=True, slots=True)
class CalibrationBucket:
    """One confidence bin of resolved predictions: [lo, hi) (the last bin includes 1.0)."""

    lo: float
    hi: float
    count: int
    mean_confidence: float
    accuracy: float


@dataclass(frozen=True, slots=True)
class PredictionFigures:
    """Prediction accuracy and calibration (seed ``PredictionTracker``), over the window.

    ``accuracy`` = correct / resolved. ``calibration`` = 1 - expected calibration error: the
    count-weighted mean, over confidence bins, of |mean confidence - accuracy|. The seed takes
    the unweighted mean over bins of |bin label - accuracy|, so one stray prediction in an empty
    bin weighs as much as a thousand in a full one; weighting by count and using the bin's mean
    confidence measures what was actually claimed.
    """

    total: int
    resolved: int
    correct: int
    accuracy: float | None
    calibration: float | None
    buckets: tuple[CalibrationBucket, ...]


@dataclass(frozen=True, slots=True)
class ValidationFigures:
    """Adversarial validation (seed ``AdversarialValidationTracker``), over the window.

    Counts of external validations (reality confirmations, contradictions, context mismatches;
    see ``lamarck.health.inputs``) and their rates over ``total``.
    ``external_error_detection`` = contradicted / (confirmed + contradicted): how often reality
    catches an error when it rules on one (mismatches excluded, as in the seed).
    ``overconfident_errors`` counts genuine contradictions of a lesson whose confidence was above
    ``high_confidence`` when tested; ``overconfident_lessons`` names those lessons (sorted).
    """

    total: int
    confirmed: int
    contradicted: int
    context_mismatch: int
    confirmation_rate: float | None
    contradiction_rate: float | None
    context_mismatch_rate: float | None
    external_error_detection: float | None
    overconfident_errors: int
    overconfident_lessons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TransferBucket:
    """Reality tests of lessons in one context-similarity bucket (seed
    ``measure_transfer_success``): ``identical`` (> identical_above), ``similar``
    (similar_above, identical_above], ``different`` (<= similar_above). A success is a
    confirmation; a contradiction or a context mismatch is a failed transfer."""

    name: str
    attempts: int
    successes: int
    rate: float | None


@dataclass(frozen=True, slots=True)
class Usefulness:
    """High-confidence knowledge that is never used is dead weight (seed
    ``measure_knowledge_usefulness``).

    Over live lessons with confidence > ``high_confidence``: days since last use (recalled into a
    prompt or attributed an outcome; since arrival when never used). ``stale``: more than
    ``stale_days`` and at most ``unused_days``; ``unused``: more than ``unused_days``.
    ``rate`` = 1 - unused / high_confidence.
    """

    high_confidence: int
    stale: int
    unused: int
    rate: float | None
    mean_days_since_use: float | None


@dataclass(frozen=True, slots=True)
class UpdateVelocity:
    """How fast a contradicted belief changes (seed ``UpdateVelocityTracker``), over the window.

    For each genuine contradiction (not a context mismatch) of a lesson at confidence c, the
    update is the first event on that lesson at or after it that lowers its confidence below c,
    or retires, supersedes or demotes it (the contradiction's own event counts: the learning
    rule usually updates at once). ``updated`` counts contradictions answered by now; the hour
    figures are over those. ``responsive_share`` = answered within ``responsive_hours`` /
    judged, where judged are those answered in time plus those older than
    ``responsive_hours`` (answered late or not at all). The seed only timed updates that
    happened, so a node that never updates would look perfect; a contradiction still younger
    than the window and unanswered cannot be judged yet and is left out.
    """

    contradictions: int
    updated: int
    judged: int
    mean_hours: float | None
    median_hours: float | None
    slowest_hours: float | None
    responsive_share: float | None


class Severity(StrEnum):
    """How loud a finding is: a critical or plain warning, or a strength."""

    CRITICAL = "critical"
    WARNING = "warning"
    STRENGTH = "strength"


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding of the assessment: a stable ``code`` for machines, a sentence for people."""

    code: str
    severity: Severity
    message: str


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Every figure of the report, its warnings and strengths, at ``generated_at``."""

    generated_at: datetime
    window_days: float
    distribution: ConfidenceDistribution
    retention: Retention
    adaptation: Adaptation
    compound: CompoundLearning
    predictions: PredictionFigures
    validation: ValidationFigures
    transfer: tuple[TransferBucket, ...]
    usefulness: Usefulness
    velocity: UpdateVelocity
    warnings: tuple[Finding, ...]
    strengths: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        """True when the assessment raised no warning."""
        return not self.warnings
