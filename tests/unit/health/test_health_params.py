"""Every window and threshold of the health report is validated; bad values name the field."""

from __future__ import annotations

import dataclasses
import math

import pytest

from lamarck.errors import ConfigError
from lamarck.health.params import HealthParams


def test_defaults_are_the_seed_numbers() -> None:
    p = HealthParams()
    assert (p.high_confidence, p.low_confidence, p.retained_above) == (0.7, 0.4, 0.5)
    assert (p.identical_above, p.similar_above) == (0.9, 0.7)
    assert (p.stale_days, p.unused_days, p.responsive_hours) == (30.0, 90.0, 24.0)
    assert (p.min_contradiction_rate, p.min_responsive_share, p.min_usefulness_rate) == (
        0.1,
        0.7,
        0.6,
    )
    assert (p.min_accuracy, p.strong_accuracy, p.min_calibration, p.strong_calibration) == (
        0.6,
        0.8,
        0.6,
        0.8,
    )


def test_params_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        HealthParams().window_days = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "field",
    ["window_days", "stale_days", "unused_days", "compound_horizon_days", "responsive_hours"],
)
@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_a_window_must_be_a_finite_positive_duration(field: str, bad: float) -> None:
    with pytest.raises(ConfigError) as err:
        HealthParams(**{field: bad})
    assert err.value.details["field"] == field
    assert field in str(err.value)


@pytest.mark.parametrize(
    "field", ["high_confidence", "low_confidence", "retained_above", "identical_above"]
)
@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, math.nan])
def test_a_confidence_line_lies_strictly_inside_zero_and_one(field: str, bad: float) -> None:
    with pytest.raises(ConfigError) as err:
        HealthParams(**{field: bad})
    assert err.value.details["field"] == field


@pytest.mark.parametrize(
    "field", ["min_contradiction_rate", "min_responsive_share", "min_usefulness_rate"]
)
@pytest.mark.parametrize("bad", [1.01, -0.01, math.inf])
def test_a_rate_threshold_lies_in_the_unit_interval(field: str, bad: float) -> None:
    with pytest.raises(ConfigError) as err:
        HealthParams(**{field: bad})
    assert err.value.details["field"] == field


@pytest.mark.parametrize(
    "field",
    [
        "calibration_bins",
        "min_compound_lessons",
        "min_predictions",
        "min_validations",
        "min_contradictions",
        "min_high_confidence",
    ],
)
@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_a_count_is_an_integer_of_at_least_one(field: str, bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        HealthParams(**{field: bad})
    assert err.value.details["field"] == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"stale_days": 90.0, "unused_days": 90.0}, "unused_days"),
        ({"low_confidence": 0.7, "high_confidence": 0.7}, "low_confidence"),
        ({"similar_above": 0.95, "identical_above": 0.9}, "similar_above"),
        ({"min_accuracy": 0.9, "strong_accuracy": 0.8}, "min_accuracy"),
        ({"min_calibration": 0.9, "strong_calibration": 0.8}, "min_calibration"),
    ],
)
def test_ordered_thresholds_must_keep_their_order(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        HealthParams(**kwargs)
    assert err.value.details["field"] == field
    assert err.value.reason == "invalid_params"


def test_a_number_given_as_text_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        HealthParams(window_days="90")  # type: ignore[arg-type]
    assert err.value.details["field"] == "window_days"
