"""The one set of params field checks: each failure names the field and the rule."""

from __future__ import annotations

import math

import pytest

from lamarck.errors import ConfigError
from lamarck.learning import params as learning_params
from lamarck.params_checks import (
    check_finite,
    check_int,
    check_patterns,
    check_positive_int,
    check_range,
    check_rule,
)


def reason(call: object) -> tuple[str, str]:
    """The (field, message) of the ``ConfigError`` a zero-argument ``call`` raises."""
    with pytest.raises(ConfigError) as err:
        call()  # type: ignore[operator]
    assert err.value.reason == "invalid_params"
    return err.value.details["field"], str(err.value)


def test_numbers_must_be_finite_and_not_bools() -> None:
    check_finite("x", 0.5)
    for bad in (math.nan, math.inf, True, "1"):
        field, _ = reason(lambda bad=bad: check_finite("x", bad))
        assert field == "x"


def test_ranges_say_which_interval() -> None:
    check_range("p", 1.0, 0.0, 1.0)
    assert (
        "must be in (0.0, 1.0]" in reason(lambda: check_range("p", 0.0, 0.0, 1.0, lo_open=True))[1]
    )
    assert (
        "must be in [0.0, 1.0)" in reason(lambda: check_range("p", 1.0, 0.0, 1.0, hi_open=True))[1]
    )


def test_integers_refuse_bools_and_out_of_bounds() -> None:
    check_int("n", 3, 1, 3)
    check_positive_int("n", 1)
    assert "must be an integer in [1, 3]" in reason(lambda: check_int("n", 4, 1, 3))[1]
    assert "must be an integer >= 1" in reason(lambda: check_positive_int("n", True))[1]


def test_patterns_must_compile_and_rules_name_the_field() -> None:
    check_patterns("pats", [r"\d+"])
    assert reason(lambda: check_patterns("pats", []))[0] == "pats"
    assert "does not compile" in reason(lambda: check_patterns("pats", ["("]))[1]
    assert reason(lambda: check_rule(False, "f", "must hold"))[1].endswith("invalid f: must hold")


def test_the_learning_params_use_the_shared_checks() -> None:
    assert learning_params._in_range is check_range
    field, message = reason(lambda: learning_params.ConfidenceParams(birth=math.nan))
    assert field == "birth" and "finite" in message
