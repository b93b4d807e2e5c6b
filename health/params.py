"""Every window and threshold of the health report, as one frozen, validated object.

The defaults are Lamarckian memory's numbers ("Measuring Evolutionary Fitness", "External Validity
Metrics", ``SystemHealthDashboard``); where the seed gives two numbers for one thing, or none,
the field's comment says which was chosen and why. Validation runs on construction, names the
field and the rule, and refuses NaN and infinities, so a bad configuration cannot exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lamarck.errors import ConfigError

__all__ = ["HealthParams", "refresh_spacing_s"]


def _number(name: str, value: float) -> None:
    """Refuse non-numbers, NaN and infinities, naming the field."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"invalid {name}: must be a number", reason="invalid_params", field=name)
    if not math.isfinite(value):
        raise ConfigError(f"invalid {name}: must be finite", reason="invalid_params", field=name)


def _open_unit(name: str, value: float) -> None:
    """Check a threshold lies strictly inside (0, 1)."""
    _number(name, value)
    if not 0.0 < value < 1.0:
        raise ConfigError(
            f"invalid {name}: must be in (0, 1), got {value}", reason="invalid_params", field=name
        )


def _unit(name: str, value: float) -> None:
    """Check a rate threshold lies in [0, 1]."""
    _number(name, value)
    if not 0.0 <= value <= 1.0:
        raise ConfigError(
            f"invalid {name}: must be in [0, 1], got {value}", reason="invalid_params", field=name
        )


def _positive(name: str, value: float) -> None:
    """Check a duration is a finite number above zero."""
    _number(name, value)
    if value <= 0.0:
        raise ConfigError(
            f"invalid {name}: must be > 0, got {value}", reason="invalid_params", field=name
        )


def _count(name: str, value: int) -> None:
    """Check a count is an integer of at least one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"invalid {name}: must be an integer >= 1, got {value!r}",
            reason="invalid_params",
            field=name,
        )


def _rule(ok: bool, name: str, rule: str) -> None:
    """Raise ``ConfigError`` naming ``name`` and the cross-field ``rule`` when ``ok`` is false."""
    if not ok:
        raise ConfigError(f"invalid {name}: {rule}", reason="invalid_params", field=name)


@dataclass(frozen=True, slots=True)
class HealthParams:
    """Windows (days, hours) and thresholds (confidences, rates, sample sizes) of the report."""

    # -- windows ----------------------------------------------------------------------------
    # Predictions, external validations and contradictions count only when they happened in
    # (now - window_days, now]. The seed keeps every observation forever; a window makes "no
    # external validation" mean "none lately", which is the drift the seed warns about (a node
    # validated two years ago and never since is self-confirming today). Positive, days.
    window_days: float = 90.0
    # A live lesson not used (recalled or attributed) for more than this many days is stale
    # (seed: 30, in both ``measure_retention`` and ``measure_knowledge_usefulness``). Positive.
    stale_days: float = 30.0
    # A high-confidence lesson not used for more than this many days is unused dead weight
    # (seed: 90). Positive, above stale_days.
    unused_days: float = 90.0
    # Compound learning compares lessons over the same observation span: only lessons created
    # at least this many days before now count, and only a rise to high confidence within this
    # many days of creation counts as reaching it. Without it the late half, younger, shows only
    # its fast risers and learning always looks like it accelerates. Positive, days.
    compound_horizon_days: float = 30.0
    # Fewest lessons that reached high confidence in each half (early, late) before the
    # compound rate is computed (the seed needs 5 lessons in all). Integer >= 1.
    min_compound_lessons: int = 3
    # A contradiction answered by a confidence change within this many hours is "responsive"
    # (seed: 24). Positive, hours.
    responsive_hours: float = 24.0

    # -- confidence bands -------------------------------------------------------------------
    # High band: confidence > high_confidence (default 0.7). The same line decides adaptation
    # (first rise above it), knowledge usefulness (lessons above it) and overconfident errors
    # (a genuine contradiction of a lesson above it), as in the seed. In (low_confidence, 1).
    high_confidence: float = 0.7
    # Low band: confidence <= low_confidence (default 0.4); medium is between. In (0, high).
    low_confidence: float = 0.4
    # Retention counts a live lesson as retained above this (seed:
    # ``confidence > 0.5``). In (0, 1).
    retained_above: float = 0.5

    # -- context similarity buckets (seed ``measure_transfer_success``) --------------------
    # identical: similarity > identical_above; similar: in (similar_above, identical_above];
    # different: <= similar_above. A failure in the different bucket is a context mismatch, not
    # a contradiction (seed principle "context mismatch is information, not invalidation").
    # The seed's 0.9 and 0.7 are also the learning rule's ``ConfidenceParams.very_similar`` and
    # ``somewhat_similar`` defaults; the wiring should build these from those so both agree.
    identical_above: float = 0.9
    similar_above: float = 0.7

    # -- calibration ------------------------------------------------------------------------
    # Equal-width confidence bins over [0, 1] (the seed's ``round(confidence, 1)`` is 11 bins
    # of uneven width, the end ones half-wide). Integer >= 1.
    calibration_bins: int = 10

    # -- warnings ---------------------------------------------------------------------------
    # Below this contradiction rate, beliefs are probably not being put at risk (default 0.1).
    min_contradiction_rate: float = 0.1
    # Below this share of contradictions answered within responsive_hours: slow to update
    # (default 0.7). [0, 1].
    min_responsive_share: float = 0.7
    # Below this usefulness rate: too much unused knowledge (seed's assessment 0.6; its printout
    # says 0.7, but the assessment is the verdict). [0, 1].
    min_usefulness_rate: float = 0.6
    # Prediction accuracy below this warns; at or above strong_accuracy is a strength
    # (default 0.6 / 0.8). 0 <= min_accuracy <= strong_accuracy <= 1.
    min_accuracy: float = 0.6
    strong_accuracy: float = 0.8
    # Calibration score (1 - expected calibration error) below this warns; at or above
    # strong_calibration is a strength (default 0.6 / 0.8). Same ordering as accuracy.
    min_calibration: float = 0.6
    strong_calibration: float = 0.8
    # Fewest observations in the window before a rate may raise a warning or a strength: the
    # seed warns on any count, so one wrong prediction of a new node read as "beliefs don't
    # match reality". Integers >= 1.
    min_predictions: int = 10
    min_validations: int = 10
    min_contradictions: int = 3
    min_high_confidence: int = 5

    # -- serving ----------------------------------------------------------------------------
    # The node status shows the warnings of a report computed at most this many seconds ago
    # (the report reads every lesson and its events: at 100k lessons, seconds). The node sets
    # it to its health refresh interval, so a status call reads the refresh's report; 0
    # computes a report for every status. Seconds, >= 0.
    status_warnings_max_age_s: float = 0.0
    # Most of the time (and so of one core) the periodic report may take, in (0, 1]: a
    # refresh that took t seconds waits at least t * (1 - share) / share before the next, so
    # the report, which grows with the store, never takes more (at 100k lessons, seconds
    # every 30 s did). A status reuses a report that old too (``refresh_spacing_s``).
    refresh_max_share: float = 0.05

    def __post_init__(self) -> None:
        for name in (
            "window_days",
            "stale_days",
            "unused_days",
            "compound_horizon_days",
            "responsive_hours",
        ):
            _positive(name, getattr(self, name))
        _rule(self.unused_days > self.stale_days, "unused_days", "must be > stale_days")
        age = self.status_warnings_max_age_s
        _rule(
            isinstance(age, int | float) and math.isfinite(age) and age >= 0,
            "status_warnings_max_age_s",
            "must be a finite number >= 0",
        )
        share = self.refresh_max_share
        _rule(
            isinstance(share, int | float) and 0 < share <= 1,
            "refresh_max_share",
            "must be a number in (0, 1]",
        )
        for name in ("high_confidence", "low_confidence", "retained_above"):
            _open_unit(name, getattr(self, name))
        _rule(
            self.low_confidence < self.high_confidence,
            "low_confidence",
            "must be < high_confidence",
        )
        for name in ("identical_above", "similar_above"):
            _open_unit(name, getattr(self, name))
        _rule(
            self.similar_above < self.identical_above,
            "similar_above",
            "must be < identical_above",
        )
        for name in (
            "min_contradiction_rate",
            "min_responsive_share",
            "min_usefulness_rate",
            "min_accuracy",
            "strong_accuracy",
            "min_calibration",
            "strong_calibration",
        ):
            _unit(name, getattr(self, name))
        _rule(
            self.min_accuracy <= self.strong_accuracy, "min_accuracy", "must be <= strong_accuracy"
        )
        _rule(
            self.min_calibration <= self.strong_calibration,
            "min_calibration",
            "must be <= strong_calibration",
        )
        for name in (
            "calibration_bins",
            "min_compound_lessons",
            "min_predictions",
            "min_validations",
            "min_contradictions",
            "min_high_confidence",
        ):
            _count(name, getattr(self, name))


def refresh_spacing_s(interval_s: float, took_s: float, max_share: float) -> float:
    """Seconds between the start of a periodic report that took ``took_s`` and the next: at
    least ``interval_s``, and long enough that reports take at most ``max_share`` of the
    time (``took_s / spacing <= max_share``)."""
    return max(interval_s, took_s / max_share)
