"""``health_report``: Lamarckian memory's health dashboard as a pure function of stored values.

Values in (``HealthInputs``: lessons, the lesson event log, predictions), an explicit ``now``
and ``HealthParams``; a ``HealthReport`` out. Each figure's exact definition is on its type in
``lamarck.health.figures``; the assessment (warnings and strengths) is in ``assess``.
Only lessons of category ``lesson`` are measured: situations are facts about the environment,
not beliefs that predict an outcome.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from lamarck.domain.rows import Category, LessonEvent, LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.health.figures import (
    Adaptation,
    CalibrationBucket,
    CompoundLearning,
    ConfidenceDistribution,
    Finding,
    HealthReport,
    PredictionFigures,
    Retention,
    Severity,
    TransferBucket,
    UpdateVelocity,
    Usefulness,
    ValidationFigures,
)
from lamarck.health.inputs import (
    HealthInputs,
    MeasuredLesson,
    Prediction,
    Validation,
    ValidationResult,
    validations_from_events,
)
from lamarck.health.params import HealthParams
from lamarck.learning.ranking import idle_days

__all__ = [
    "adaptation",
    "assess",
    "compound_learning",
    "distribution",
    "health_report",
    "prediction_figures",
    "retention",
    "transfer_success",
    "update_velocity",
    "usefulness",
    "validation_figures",
]

_LIVE = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)
# Events that take a belief out of (some) use: an answer to a contradiction even when the
# confidence itself did not move.
_WITHDRAWING_KINDS = frozenset({"retired", "superseded", "demoted"})
# The events that give a lesson its first confidence here.
_BIRTH_KINDS = frozenset({"created", "imported"})
_SECONDS_PER_DAY = 86_400.0
_SECONDS_PER_HOUR = 3_600.0


def _days(delta: timedelta) -> float:
    """A duration in fractional days."""
    return delta.total_seconds() / _SECONDS_PER_DAY


def _rate(part: int, whole: int) -> float | None:
    """``part / whole``, or ``None`` when there is nothing to divide by."""
    return part / whole if whole else None


def _mean(values: Sequence[float]) -> float | None:
    """The arithmetic mean, or ``None`` for no values."""
    return sum(values) / len(values) if values else None


def _by_lesson(events: Iterable[LessonEvent], now: datetime) -> dict[str, list[LessonEvent]]:
    """Events up to ``now`` grouped per lesson, each list in time order (ties in input order)."""
    out: dict[str, list[LessonEvent]] = defaultdict(list)
    for event in events:
        if event.at <= now:
            out[event.lesson_id].append(event)
    for items in out.values():
        items.sort(key=lambda e: e.at)  # stable: ties keep append order
    return out


def _lessons(rows: Iterable[MeasuredLesson]) -> list[MeasuredLesson]:
    """The rows the report measures: beliefs, not situations."""
    return [r for r in rows if r.category is Category.LESSON]


def _born_high(events: Sequence[LessonEvent], p: HealthParams) -> bool:
    """True when the lesson's first event here gave it a confidence above high.

    Such a lesson (an import arriving confident) measures its source, not this node's
    learning: adaptation and compound learning leave it out.
    """
    for event in events:
        if event.kind in _BIRTH_KINDS:
            return event.confidence_after is not None and event.confidence_after > p.high_confidence
    return False


def _first_high(events: Sequence[LessonEvent], p: HealthParams) -> datetime | None:
    """When a reality confirmation first lifted the lesson above high confidence, if ever."""
    for event in events:
        if (
            event.kind == "confirmed"
            and event.outcome_id
            and event.confidence_after is not None
            and event.confidence_after > p.high_confidence
        ):
            return event.at
    return None


def _learned_high(
    row: MeasuredLesson, events: Mapping[str, Sequence[LessonEvent]], p: HealthParams
) -> datetime | None:
    """``_first_high`` for a lesson not born high; ``None`` for one that was."""
    mine = events.get(row.id, ())
    return None if _born_high(mine, p) else _first_high(mine, p)


def distribution(rows: Sequence[MeasuredLesson], p: HealthParams) -> ConfidenceDistribution:
    """Live lessons by confidence band (see ``ConfidenceDistribution``)."""
    live = [r for r in _lessons(rows) if r.status in _LIVE]
    high = sum(1 for r in live if r.confidence > p.high_confidence)
    low = sum(1 for r in live if r.confidence <= p.low_confidence)
    return ConfidenceDistribution(len(live), high, len(live) - high - low, low)


def retention(rows: Sequence[MeasuredLesson], p: HealthParams, now: datetime) -> Retention:
    """Retained, retired and stale lessons (see ``Retention``)."""
    lessons = _lessons(rows)
    live = [r for r in lessons if r.status in _LIVE]
    retired = sum(1 for r in lessons if r.status is LessonStatus.RETIRED)
    retained = sum(1 for r in live if r.confidence > p.retained_above)
    stale = sum(1 for r in live if idle_days(now, r.last_used, r.created_at) > p.stale_days)
    return Retention(len(live), retained, retired, stale, _rate(retained, len(live) + retired))


def _context_key(row: MeasuredLesson) -> tuple[str, str]:
    """The context a lesson was learned in, as (domain, environment), normalised."""
    ctx = row.context or {}
    return (
        str(ctx.get("domain") or "").strip().lower(),
        str(ctx.get("environment") or "").strip().lower(),
    )


def adaptation(
    rows: Sequence[MeasuredLesson], events: Mapping[str, Sequence[LessonEvent]], p: HealthParams
) -> Adaptation:
    """Time from a context's first lesson to its first high-confidence one (see ``Adaptation``)."""
    groups: dict[tuple[str, str], list[MeasuredLesson]] = defaultdict(list)
    for row in _lessons(rows):
        groups[_context_key(row)].append(row)
    times: list[float] = []
    for members in groups.values():
        start = min(r.created_at for r in members)
        reached = [t for r in members if (t := _learned_high(r, events, p)) is not None]
        if reached:
            times.append(max(0.0, _days(min(reached) - start)))
    median = statistics.median(times) if times else None
    return Adaptation(len(groups), len(times), _mean(times), median)


def compound_learning(
    rows: Sequence[MeasuredLesson],
    events: Mapping[str, Sequence[LessonEvent]],
    p: HealthParams,
    now: datetime,
) -> CompoundLearning:
    """Early against late time to high confidence (see ``CompoundLearning``)."""
    cutoff = now - timedelta(days=p.compound_horizon_days)
    eligible = sorted(
        (
            r
            for r in _lessons(rows)
            if r.created_at <= cutoff and not _born_high(events.get(r.id, ()), p)
        ),
        key=lambda r: (r.created_at, r.id),
    )
    half = len(eligible) // 2

    def reach_days(members: Sequence[MeasuredLesson]) -> list[float]:
        out: list[float] = []
        for r in members:
            t = _first_high(events.get(r.id, ()), p)
            if t is not None and _days(t - r.created_at) <= p.compound_horizon_days:
                out.append(max(0.0, _days(t - r.created_at)))
        return out

    early, late = reach_days(eligible[:half]), reach_days(eligible[half:])
    early_days, late_days = _mean(early), _mean(late)
    rate: float | None = None
    enough = min(len(early), len(late)) >= p.min_compound_lessons
    if enough and early_days is not None and late_days is not None and early_days > 0:
        rate = (early_days - late_days) / early_days
    return CompoundLearning(len(eligible), early_days, late_days, rate)


def _in_window(at: datetime, p: HealthParams, now: datetime) -> bool:
    """True for a time in (now - window_days, now]."""
    return now - timedelta(days=p.window_days) < at <= now


def prediction_figures(
    predictions: Sequence[Prediction], p: HealthParams, now: datetime
) -> PredictionFigures:
    """Accuracy and calibration of the window's predictions (see ``PredictionFigures``)."""
    recent = [x for x in predictions if _in_window(x.at, p, now)]
    resolved = [x for x in recent if x.resolved]
    correct = sum(1 for x in resolved if x.correct)
    bins: list[list[Prediction]] = [[] for _ in range(p.calibration_bins)]
    for x in resolved:
        bins[min(int(x.confidence * p.calibration_bins), p.calibration_bins - 1)].append(x)
    buckets: list[CalibrationBucket] = []
    error = 0.0
    for i, members in enumerate(bins):
        if not members:
            continue
        mean_conf = sum(x.confidence for x in members) / len(members)
        acc = sum(1 for x in members if x.correct) / len(members)
        error += len(members) / len(resolved) * abs(mean_conf - acc)
        lo, hi = i / p.calibration_bins, (i + 1) / p.calibration_bins
        buckets.append(CalibrationBucket(lo, hi, len(members), mean_conf, acc))
    calibration = 1.0 - error if resolved else None
    return PredictionFigures(
        len(recent),
        len(resolved),
        correct,
        _rate(correct, len(resolved)),
        calibration,
        tuple(buckets),
    )


def validation_figures(validations: Sequence[Validation], p: HealthParams) -> ValidationFigures:
    """Confirmation, contradiction and mismatch rates (see ``ValidationFigures``)."""
    total = len(validations)
    confirmed = sum(1 for v in validations if v.result is ValidationResult.CONFIRMED)
    contradicted = [v for v in validations if v.result is ValidationResult.CONTRADICTED]
    mismatch = total - confirmed - len(contradicted)
    overconfident = [
        v
        for v in contradicted
        if v.confidence_before is not None and v.confidence_before > p.high_confidence
    ]
    return ValidationFigures(
        total=total,
        confirmed=confirmed,
        contradicted=len(contradicted),
        context_mismatch=mismatch,
        confirmation_rate=_rate(confirmed, total),
        contradiction_rate=_rate(len(contradicted), total),
        context_mismatch_rate=_rate(mismatch, total),
        external_error_detection=_rate(len(contradicted), confirmed + len(contradicted)),
        overconfident_errors=len(overconfident),
        overconfident_lessons=tuple(sorted({v.lesson_id for v in overconfident})),
    )


def transfer_success(
    validations: Sequence[Validation], p: HealthParams
) -> tuple[TransferBucket, ...]:
    """Success rate of reality tests by context-similarity bucket (see ``TransferBucket``)."""
    tallies = {"identical": [0, 0], "similar": [0, 0], "different": [0, 0]}
    for v in validations:
        if v.similarity is None:
            continue
        if v.similarity > p.identical_above:
            name = "identical"
        elif v.similarity > p.similar_above:
            name = "similar"
        else:
            name = "different"
        tallies[name][0] += 1
        tallies[name][1] += v.result is ValidationResult.CONFIRMED
    return tuple(
        TransferBucket(name, attempts, successes, _rate(successes, attempts))
        for name, (attempts, successes) in tallies.items()
    )


def usefulness(rows: Sequence[MeasuredLesson], p: HealthParams, now: datetime) -> Usefulness:
    """Unused high-confidence knowledge (see ``Usefulness``)."""
    high = [r for r in _lessons(rows) if r.status in _LIVE and r.confidence > p.high_confidence]
    idle = [idle_days(now, r.last_used, r.created_at) for r in high]
    unused = sum(1 for d in idle if d > p.unused_days)
    stale = sum(1 for d in idle if p.stale_days < d <= p.unused_days)
    rate = 1.0 - unused / len(high) if high else None
    return Usefulness(len(high), stale, unused, rate, _mean(idle))


def _answer(contradiction: Validation, events: Sequence[LessonEvent]) -> LessonEvent | None:
    """The first event at or after ``contradiction`` that updates the contradicted belief."""
    before = contradiction.confidence_before
    for event in events:
        if event.at < contradiction.at:
            continue
        if event.kind in _WITHDRAWING_KINDS:
            return event
        after = event.confidence_after
        if after is not None and before is not None and after < before:
            return event
    return None


def update_velocity(
    contradictions: Sequence[Validation],
    events: Mapping[str, Sequence[LessonEvent]],
    p: HealthParams,
    now: datetime,
) -> UpdateVelocity:
    """Hours from each contradiction to the belief's update (see ``UpdateVelocity``)."""
    hours: list[float] = []
    judged = responsive = 0
    for c in contradictions:
        answer = _answer(c, events.get(c.lesson_id, ()))
        took = None if answer is None else (answer.at - c.at).total_seconds() / _SECONDS_PER_HOUR
        if took is not None:
            hours.append(took)
        age = (now - c.at).total_seconds() / _SECONDS_PER_HOUR
        if took is not None and took <= p.responsive_hours:
            judged += 1
            responsive += 1
        elif age >= p.responsive_hours:
            judged += 1
    return UpdateVelocity(
        contradictions=len(contradictions),
        updated=len(hours),
        judged=judged,
        mean_hours=_mean(hours),
        median_hours=statistics.median(hours) if hours else None,
        slowest_hours=max(hours) if hours else None,
        responsive_share=_rate(responsive, judged),
    )


def assess(
    report: HealthReport, p: HealthParams
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """The seed's health assessment over ``report``: (warnings, strengths).

    A rate raises a warning or strength only over at least its ``min_*`` observations in the
    window. "No external validation" needs live lessons: a node that believes nothing cannot
    drift into confident error, and a new empty node should not open on a critical warning.
    """
    warnings: list[Finding] = []
    strengths: list[Finding] = []
    val, vel, use, pred = report.validation, report.velocity, report.usefulness, report.predictions
    if val.total == 0 and report.distribution.total > 0:
        warnings.append(
            Finding(
                "no_external_validation",
                Severity.CRITICAL,
                "No external validations: risk of self-confirming hallucination",
            )
        )
    elif (
        val.total >= p.min_validations
        and val.contradiction_rate is not None
        and val.contradiction_rate < p.min_contradiction_rate
    ):
        warnings.append(
            Finding(
                "low_contradiction_rate",
                Severity.WARNING,
                "Very low contradiction rate: risky beliefs may not be tested",
            )
        )
    if (
        vel.judged >= p.min_contradictions
        and vel.responsive_share is not None
        and vel.responsive_share < p.min_responsive_share
    ):
        warnings.append(
            Finding(
                "slow_to_update",
                Severity.WARNING,
                "Slow to update when contradicted: wrong beliefs may be defended",
            )
        )
    if (
        use.high_confidence >= p.min_high_confidence
        and use.rate is not None
        and use.rate < p.min_usefulness_rate
    ):
        warnings.append(
            Finding(
                "unused_knowledge",
                Severity.WARNING,
                "Too much unused high-confidence knowledge: accumulating dead weight",
            )
        )
    if pred.resolved >= p.min_predictions and pred.accuracy is not None:
        if pred.accuracy < p.min_accuracy:
            warnings.append(
                Finding(
                    "low_prediction_accuracy",
                    Severity.WARNING,
                    "Low prediction accuracy: beliefs do not match reality",
                )
            )
        elif pred.accuracy >= p.strong_accuracy:
            strengths.append(
                Finding("high_prediction_accuracy", Severity.STRENGTH, "High prediction accuracy")
            )
    if pred.resolved >= p.min_predictions and pred.calibration is not None:
        if pred.calibration < p.min_calibration:
            warnings.append(
                Finding(
                    "poor_calibration",
                    Severity.WARNING,
                    "Poor calibration: confidence does not match accuracy",
                )
            )
        elif pred.calibration >= p.strong_calibration:
            strengths.append(
                Finding("well_calibrated", Severity.STRENGTH, "Well-calibrated confidence")
            )
    return tuple(warnings), tuple(strengths)


def health_report(inputs: HealthInputs, params: HealthParams, now: datetime) -> HealthReport:
    """The health report of a node's stored values at ``now`` (UTC-aware)."""
    if now.tzinfo is None:
        raise InvalidRecord("now must be timezone-aware (UTC)", reason="naive_timestamp")
    events = _by_lesson(inputs.events, now)
    recent = [
        v for v in validations_from_events(inputs.events, params) if _in_window(v.at, params, now)
    ]
    contradictions = [v for v in recent if v.result is ValidationResult.CONTRADICTED]
    draft = HealthReport(
        generated_at=now,
        window_days=params.window_days,
        distribution=distribution(inputs.lessons, params),
        retention=retention(inputs.lessons, params, now),
        adaptation=adaptation(inputs.lessons, events, params),
        compound=compound_learning(inputs.lessons, events, params, now),
        predictions=prediction_figures(inputs.predictions, params, now),
        validation=validation_figures(recent, params),
        transfer=transfer_success(recent, params),
        usefulness=usefulness(inputs.lessons, params, now),
        velocity=update_velocity(contradictions, events, params, now),
        warnings=(),
        strengths=(),
    )
    warnings, strengths = assess(draft, params)
    return dataclasses.replace(draft, warnings=warnings, strengths=strengths)
