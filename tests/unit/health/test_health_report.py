"""The health report over stores built to hit each figure, each warning and the healthy case."""

from __future__ import annotations

from datetime import datetime

import pytest

from lamarck.domain.rows import Category, LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.health.figures import HealthReport, Severity
from lamarck.health.inputs import HealthInputs
from lamarck.health.params import HealthParams
from lamarck.health.report import health_report


def codes(report: HealthReport) -> set[str]:
    """The codes of the report's warnings."""
    return {f.code for f in report.warnings}


def healthy_store(store) -> None:
    """A node that tests its beliefs, updates at once, uses what it knows, predicts well."""
    for i in range(6):
        lid = store.lesson(f"h{i}", confidence=0.8, used_days_ago=2.0)
        store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=5)
    for i in range(4):
        lid = store.lesson(f"w{i}", confidence=0.4, used_days_ago=1.0)
        store.test(lid, "confirmed", before=0.5, after=0.65, days_ago=4)
        store.test(lid, "contradicted", before=0.65, after=0.4, days_ago=3)
    for i in range(10):
        store.predict(0.9, correct=i != 0)


# -- the whole report -------------------------------------------------------------------------


def test_an_empty_node_is_healthy_and_every_rate_says_no_data(store) -> None:
    report = store.report()
    assert report.healthy
    assert report.distribution.total == 0
    assert report.retention.rate is None
    assert report.predictions.accuracy is None and report.predictions.calibration is None
    assert report.validation.contradiction_rate is None
    assert report.usefulness.rate is None
    assert report.velocity.responsive_share is None
    assert all(b.rate is None and b.attempts == 0 for b in report.transfer)


def test_a_node_that_tests_updates_and_predicts_well_is_healthy_with_strengths(store) -> None:
    healthy_store(store)
    report = store.report()
    assert report.warnings == ()
    assert report.healthy
    assert {f.code for f in report.strengths} == {"high_prediction_accuracy", "well_calibrated"}
    assert report.validation.total == 14
    assert report.validation.contradiction_rate == pytest.approx(4 / 14)
    assert report.velocity.responsive_share == 1.0


def test_the_report_refuses_a_naive_now(store) -> None:
    with pytest.raises(InvalidRecord) as err:
        health_report(HealthInputs(), HealthParams(), datetime(2026, 1, 1))
    assert err.value.reason == "naive_timestamp"


# -- warning: no external validation ---------------------------------------------------------


def test_live_lessons_never_tested_by_reality_raise_the_critical_self_confirmation_warning(
    store,
) -> None:
    store.lesson("a", confidence=0.9)
    store.lesson("b", confidence=0.6)
    report = store.report()
    [warning] = report.warnings
    assert warning.code == "no_external_validation"
    assert warning.severity is Severity.CRITICAL
    assert "self-confirming hallucination" in warning.message


def test_validations_older_than_the_window_do_not_count_as_external_validation(store) -> None:
    lid = store.lesson("a", confidence=0.8, created_days_ago=200)
    store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=120)
    assert "no_external_validation" in codes(store.report())
    assert "no_external_validation" not in codes(store.report(HealthParams(window_days=150)))


def test_confirmations_without_an_outcome_are_claims_not_external_validation(store) -> None:
    lid = store.lesson("a", confidence=0.8)
    store.test(lid, "confirmed", before=0.65, after=0.8, with_outcome=False)
    report = store.report()
    assert report.validation.total == 0
    assert "no_external_validation" in codes(report)


def test_only_retired_lessons_and_no_validation_raise_no_self_confirmation_warning(store) -> None:
    store.lesson("a", confidence=0.1, status=LessonStatus.RETIRED)
    assert store.report().warnings == ()


# -- warning: low contradiction rate ---------------------------------------------------------


def test_beliefs_only_ever_confirmed_warn_that_risky_beliefs_go_untested(store) -> None:
    lid = store.lesson("a", confidence=0.8)
    for _ in range(10):
        store.test(lid, "confirmed", before=0.8, after=0.8)
    report = store.report()
    assert report.validation.contradiction_rate == 0.0
    assert codes(report) == {"low_contradiction_rate"}


def test_too_few_validations_raise_no_contradiction_rate_warning(store) -> None:
    lid = store.lesson("a", confidence=0.8)
    for _ in range(9):
        store.test(lid, "confirmed", before=0.8, after=0.8)
    assert store.report().warnings == ()


# -- warning: slow to update -----------------------------------------------------------------


def test_contradictions_that_leave_confidence_unchanged_warn_slow_to_update(store) -> None:
    for i in range(3):
        lid = store.lesson(f"s{i}", confidence=0.6)
        store.test(lid, "confirmed", before=0.6, after=0.6, days_ago=3)
        store.test(lid, "contradicted", before=0.6, after=0.6, days_ago=2)
    report = store.report()
    assert report.velocity.contradictions == 3
    assert report.velocity.updated == 0
    assert report.velocity.judged == 3
    assert report.velocity.responsive_share == 0.0
    assert "slow_to_update" in codes(report)


def test_an_update_a_day_and_a_half_later_is_timed_and_not_responsive(store) -> None:
    lid = store.lesson("a", confidence=0.6)
    store.test(lid, "contradicted", before=0.6, after=0.6, days_ago=3)
    store.event(lid, "version", days_ago=1.5, before=0.6, after=0.45)
    velocity = store.report().velocity
    assert velocity.updated == 1
    assert velocity.mean_hours == pytest.approx(36.0)
    assert velocity.slowest_hours == pytest.approx(36.0)
    assert velocity.responsive_share == 0.0


def test_a_retirement_answers_a_contradiction_even_without_a_confidence_change(store) -> None:
    lid = store.lesson("a", confidence=0.3)
    store.test(lid, "contradicted", before=0.3, after=0.3, days_ago=2)
    store.event(lid, "retired", days_ago=2, hours_ago=-5, before=0.3, after=0.3)
    velocity = store.report().velocity
    assert velocity.mean_hours == pytest.approx(5.0)
    assert velocity.responsive_share == 1.0


def test_a_young_unanswered_contradiction_is_not_judged_yet(store) -> None:
    lid = store.lesson("a", confidence=0.6)
    store.test(lid, "contradicted", before=0.6, after=0.6, days_ago=0, hours_ago=2)
    velocity = store.report().velocity
    assert (velocity.contradictions, velocity.updated, velocity.judged) == (1, 0, 0)
    assert velocity.responsive_share is None


def test_a_context_mismatch_is_not_a_contradiction_to_update_on(store) -> None:
    for i in range(3):
        lid = store.lesson(f"m{i}", confidence=0.6)
        store.test(lid, "contradicted", before=0.6, after=0.6, days_ago=2, similarity=0.5)
    report = store.report()
    assert report.velocity.contradictions == 0
    assert report.validation.context_mismatch == 3
    assert "slow_to_update" not in codes(report)


# -- warning: unused knowledge ---------------------------------------------------------------


def test_confident_lessons_unused_for_months_warn_of_dead_weight(store) -> None:
    for i in range(3):
        store.lesson(f"old{i}", confidence=0.85, created_days_ago=300, used_days_ago=100)
    store.lesson("stale", confidence=0.85, created_days_ago=300, used_days_ago=45)
    store.lesson("fresh", confidence=0.85, used_days_ago=1)
    lid = store.lesson("tested", confidence=0.6)
    store.test(lid, "confirmed", before=0.5, after=0.6)
    report = store.report()
    usefulness = report.usefulness
    assert (usefulness.high_confidence, usefulness.unused, usefulness.stale) == (5, 3, 1)
    assert usefulness.rate == pytest.approx(0.4)
    assert usefulness.mean_days_since_use == pytest.approx((300 + 45 + 1) / 5)
    assert codes(report) == {"unused_knowledge"}


def test_a_never_used_lesson_counts_its_idle_time_from_arrival(store) -> None:
    store.lesson("imported", confidence=0.8, created_days_ago=95, used_days_ago=None)
    assert store.report().usefulness.unused == 1


def test_few_confident_lessons_raise_no_usefulness_warning(store) -> None:
    for i in range(4):
        store.lesson(f"old{i}", confidence=0.85, created_days_ago=300, used_days_ago=100)
    lid = store.lesson("tested", confidence=0.6)
    store.test(lid, "confirmed", before=0.5, after=0.6)
    assert "unused_knowledge" not in codes(store.report())


# -- warnings: prediction accuracy and calibration -------------------------------------------


def test_predictions_mostly_wrong_warn_low_accuracy(store) -> None:
    for i in range(10):
        store.predict(0.5, correct=i < 4)
    report = store.report()
    assert report.predictions.accuracy == pytest.approx(0.4)
    assert "low_prediction_accuracy" in codes(report)


def test_right_predictions_made_with_little_confidence_warn_poor_calibration(store) -> None:
    for _ in range(10):
        store.predict(0.15, correct=True)
    report = store.report()
    assert report.predictions.accuracy == 1.0
    assert report.predictions.calibration == pytest.approx(0.15)
    assert codes(report) == {"poor_calibration"}
    assert {f.code for f in report.strengths} == {"high_prediction_accuracy"}


def test_too_few_predictions_raise_no_accuracy_or_calibration_warning(store) -> None:
    for _ in range(9):
        store.predict(0.95, correct=False)
    assert store.report().warnings == ()


def test_calibration_is_the_count_weighted_gap_between_confidence_and_accuracy(store) -> None:
    for i in range(4):
        store.predict(0.8, correct=i < 3)  # 0.8 claimed, 0.75 right
    for i in range(2):
        store.predict(0.3, correct=i < 1)  # 0.3 claimed, 0.5 right
    store.predictions.append(
        type(store.predictions[0])("op", True, 0.9, store.ago(1), actual_success=None)
    )
    figures = store.report().predictions
    assert (figures.total, figures.resolved, figures.correct) == (7, 6, 4)
    assert figures.calibration == pytest.approx(1 - (4 / 6 * 0.05 + 2 / 6 * 0.2))
    low, high = figures.buckets
    assert (low.lo, low.hi, low.count, low.accuracy) == pytest.approx((0.3, 0.4, 2, 0.5))
    assert (high.lo, high.count, high.mean_confidence) == pytest.approx((0.8, 4, 0.8))


def test_a_prediction_at_full_confidence_lands_in_the_last_bin(store) -> None:
    store.predict(1.0, correct=True)
    [bucket] = store.report().predictions.buckets
    assert (bucket.lo, bucket.hi) == pytest.approx((0.9, 1.0))


def test_a_predicted_failure_that_happens_is_a_correct_prediction(store) -> None:
    store.predict(0.7, correct=True, predicted=False)
    assert store.report().predictions.correct == 1


# -- distribution and retention --------------------------------------------------------------


def test_live_lessons_are_banded_high_above_point_seven_and_low_at_or_below_point_four(
    store,
) -> None:
    for lid, conf in (("a", 0.71), ("b", 0.7), ("c", 0.41), ("d", 0.4), ("e", 0.1)):
        store.lesson(lid, confidence=conf)
    store.lesson("claimed", confidence=0.3, status=LessonStatus.CLAIMED)
    store.lesson("gone", confidence=0.9, status=LessonStatus.SUPERSEDED)
    store.lesson("retired", confidence=0.1, status=LessonStatus.RETIRED)
    store.lesson("situation", confidence=0.9, category=Category.SITUATION)
    d = store.report().distribution
    assert (d.total, d.high, d.medium, d.low) == (6, 1, 2, 3)


def test_retention_counts_believed_lessons_against_live_and_retired_but_not_superseded(
    store,
) -> None:
    store.lesson("kept", confidence=0.8)
    store.lesson("weak", confidence=0.5, used_days_ago=40)
    store.lesson("retired", confidence=0.1, status=LessonStatus.RETIRED)
    store.lesson("replaced", confidence=0.6, status=LessonStatus.SUPERSEDED)
    r = store.report().retention
    assert (r.live, r.retained, r.retired, r.stale) == (2, 1, 1, 1)
    assert r.rate == pytest.approx(1 / 3)


# -- adaptation and compound learning --------------------------------------------------------


def test_adaptation_is_the_time_from_a_contexts_first_lesson_to_its_first_confident_one(
    store,
) -> None:
    prod = {"domain": "deploy", "environment": "Production"}
    store.lesson("first", context=prod, created_days_ago=20)
    late = store.lesson(
        "second", context={"domain": "deploy", "environment": "production"}, created_days_ago=18
    )
    store.test(late, "confirmed", before=0.65, after=0.8, days_ago=16)
    store.lesson("other", context={"domain": "billing"}, created_days_ago=5)
    store.lesson(
        "born-high",
        context={"domain": "imports"},
        born=0.8,
        birth_kind="imported",
        confidence=0.9,
        created_days_ago=5,
    )
    store.test("born-high", "confirmed", before=0.8, after=0.9, days_ago=4)
    a = store.report().adaptation
    assert (a.contexts, a.adapted) == (3, 1)
    assert a.mean_days == pytest.approx(4.0)
    assert a.median_days == pytest.approx(4.0)


def test_later_lessons_reaching_confidence_faster_give_a_positive_compound_rate(store) -> None:
    for i in range(3):  # early half: 10 days to high confidence
        lid = store.lesson(f"e{i}", created_days_ago=200 - i)
        store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=190 - i)
    for i in range(3):  # late half: 2 days
        lid = store.lesson(f"l{i}", created_days_ago=100 - i)
        store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=98 - i)
    lid = store.lesson("young", created_days_ago=3)  # too young to be compared
    store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=2.9)
    c = store.report().compound
    assert c.eligible == 6
    assert (c.early_days, c.late_days) == pytest.approx((10.0, 2.0))
    assert c.rate == pytest.approx(0.8)


def test_a_rise_after_the_horizon_does_not_count_and_too_few_risers_give_no_rate(store) -> None:
    for i in range(3):
        lid = store.lesson(f"e{i}", created_days_ago=200 - i)
        store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=190 - i)
    for i in range(3):
        lid = store.lesson(f"l{i}", created_days_ago=100 - i)
        store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=60 - i)  # 40 days later
    c = store.report().compound
    assert c.early_days == pytest.approx(10.0)
    assert c.late_days is None
    assert c.rate is None


# -- adversarial validation and transfer -----------------------------------------------------


def test_validation_rates_split_confirmations_contradictions_and_context_mismatches(store) -> None:
    lid = store.lesson("a", confidence=0.6)
    store.test(lid, "confirmed", before=0.5, after=0.65)
    store.test(lid, "confirmed", before=0.65, after=0.8)
    store.test(lid, "contradicted", before=0.8, after=0.55, similarity=0.95)  # overconfident
    store.test(lid, "contradicted", before=0.55, after=0.5, similarity=0.6)  # mismatch
    store.test(lid, "contradicted", before=0.75, after=0.7, similarity=0.6)  # mismatch, not error
    store.test(lid, "contradicted", before=0.7, after=0.5, similarity=None)  # unknown: error
    v = store.report().validation
    assert (v.total, v.confirmed, v.contradicted, v.context_mismatch) == (6, 2, 2, 2)
    assert v.confirmation_rate == pytest.approx(2 / 6)
    assert v.contradiction_rate == pytest.approx(2 / 6)
    assert v.context_mismatch_rate == pytest.approx(2 / 6)
    assert v.external_error_detection == pytest.approx(2 / 4)
    assert v.overconfident_errors == 1
    assert v.overconfident_lessons == ("a",)


def test_transfer_success_is_bucketed_identical_similar_and_different(store) -> None:
    lid = store.lesson("a", confidence=0.6)
    store.test(lid, "confirmed", before=0.5, after=0.6, similarity=0.95)
    store.test(lid, "confirmed", before=0.5, after=0.6, similarity=0.91)
    store.test(lid, "confirmed", before=0.5, after=0.6, similarity=0.9)  # similar, edge
    store.test(lid, "contradicted", before=0.6, after=0.5, similarity=0.8)
    store.test(lid, "confirmed", before=0.5, after=0.6, similarity=0.7)  # different, edge
    store.test(lid, "contradicted", before=0.6, after=0.55, similarity=0.3)
    store.test(lid, "contradicted", before=0.6, after=0.55, similarity=0.2)
    store.test(lid, "confirmed", before=0.5, after=0.6, similarity=None)  # no bucket
    buckets = {b.name: b for b in store.report().transfer}
    assert (buckets["identical"].attempts, buckets["identical"].rate) == (2, 1.0)
    assert (buckets["similar"].attempts, buckets["similar"].rate) == (2, 0.5)
    assert (buckets["different"].attempts, buckets["different"].successes) == (3, 1)
    assert buckets["different"].rate == pytest.approx(1 / 3)


def test_events_after_now_are_ignored(store) -> None:
    lid = store.lesson("a", confidence=0.8)
    store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=-1)
    report = store.report()
    assert report.validation.total == 0
    assert "no_external_validation" in codes(report)
