"""Exposure before proof: unproven imported lessons in a share of plan-time prompts only."""

from __future__ import annotations

import random

import pytest

from lamarck.errors import ConfigError
from lamarck.node.learning.exposure import ExposureParams, plan_time_exposed, unproven_here


def test_only_imported_lessons_without_a_local_confirmation_are_unproven() -> None:
    assert unproven_here("lmk1peer", 0)
    assert not unproven_here("lmk1peer", 1)
    assert not unproven_here(None, 0)


def test_a_proven_lesson_is_always_exposed() -> None:
    assert plan_time_exposed(False, 0.99, ExposureParams(plan_share=0.0))


def test_an_unproven_lesson_enters_about_the_configured_share_of_prompts() -> None:
    params = ExposureParams(plan_share=0.2)
    rng = random.Random(11)
    shown = sum(plan_time_exposed(True, rng.random(), params) for _ in range(10_000))
    assert 1800 <= shown <= 2200


def test_a_zero_share_keeps_it_to_decision_time() -> None:
    params = ExposureParams(plan_share=0.0)
    assert not any(plan_time_exposed(True, d / 100, params) for d in range(100))


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_the_share_is_validated(bad: float) -> None:
    with pytest.raises(ConfigError):
        ExposureParams(plan_share=bad)
