"""The report renders to text, JSON (read back unchanged) and flat gauge values."""

from __future__ import annotations

import json

import pytest

from lamarck.domain.rows import LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.health.render import (
    JSON_VERSION,
    gauge_values,
    render_text,
    report_from_json,
    report_to_json,
)


def busy_store(store) -> None:
    """A store with something in every section and one warning."""
    lid = store.lesson("a", confidence=0.8, created_days_ago=60)
    store.test(lid, "confirmed", before=0.65, after=0.8, days_ago=50, similarity=0.95)
    store.test(lid, "contradicted", before=0.8, after=0.55, days_ago=2, similarity=0.8)
    store.test(lid, "contradicted", before=0.55, after=0.5, days_ago=1, similarity=0.4)
    store.lesson("b", confidence=0.3, status=LessonStatus.RETIRED)
    for i in range(10):
        store.predict(0.75, correct=i < 4)


def test_json_is_plain_json_and_reads_back_to_the_same_report(store) -> None:
    busy_store(store)
    report = store.report()
    text = json.dumps(report_to_json(report))
    data = json.loads(text)
    assert data["version"] == JSON_VERSION
    assert data["generated_at"] == "2026-03-01T12:00:00Z"
    assert data["warnings"][0]["code"] == "low_prediction_accuracy"
    assert data["validation"]["overconfident_lessons"] == ["a"]
    assert report_from_json(data) == report


def test_an_empty_report_round_trips_with_its_nulls(store) -> None:
    report = store.report()
    data = json.loads(json.dumps(report_to_json(report)))
    assert data["predictions"]["accuracy"] is None
    assert data["healthy"] is True
    assert report_from_json(data) == report


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.pop("retention"),
        lambda d: d["retention"].pop("rate"),
        lambda d: d["retention"].update(extra=1),
        lambda d: d.update(version=99),
        lambda d: d["warnings"].append({"code": "x", "severity": "loud", "message": "m"}),
        lambda d: d.update(generated_at="yesterday"),
        lambda d: d.update(transfer=[1]),
    ],
)
def test_a_damaged_json_report_is_refused_as_one_invalid_record(store, damage) -> None:
    data = json.loads(json.dumps(report_to_json(store.report())))
    damage(data)
    with pytest.raises(InvalidRecord) as err:
        report_from_json(data)
    assert err.value.reason in ("bad_health_json", "bad_timestamp")


def test_gauges_hold_every_figure_with_data_and_leave_out_the_rest(store) -> None:
    busy_store(store)
    gauges = gauge_values(store.report())
    assert gauges["distribution_total"] == 1.0
    assert gauges["distribution_high"] == 1.0
    assert gauges["retention_retired"] == 1.0
    assert gauges["validation_total"] == 3.0
    assert gauges["validation_overconfident_errors"] == 1.0
    assert gauges["predictions_accuracy"] == pytest.approx(0.4)
    assert gauges["calibration_bucket_70_count"] == 10.0
    assert gauges["transfer_different_rate"] == 0.0
    assert gauges["velocity_responsive_share"] == 1.0
    assert gauges["warning_low_prediction_accuracy"] == 1.0
    assert gauges["healthy"] == 0.0
    assert "compound_rate" not in gauges  # no data: not exported as 0
    assert all(isinstance(v, float) for v in gauges.values())


def test_text_shows_the_figures_and_names_each_warning(store) -> None:
    busy_store(store)
    text = render_text(store.report())
    assert "Health report at 2026-03-01T12:00:00Z (window 90 days)" in text
    assert "prediction accuracy   40.0% of 10 resolved" in text
    assert "overconfident errors  1" in text
    assert "WARNING: Low prediction accuracy" in text
    assert "healthy" not in text.split("Assessment")[1]


def test_text_of_a_node_without_validation_says_critical(store) -> None:
    store.lesson("a", confidence=0.9)
    text = render_text(store.report())
    assert "CRITICAL: No external validations: risk of self-confirming hallucination" in text
    assert "n/a" in text
