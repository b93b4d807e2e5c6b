"""Every learning number lives in validated, frozen params; bad values name the field."""

from __future__ import annotations

import dataclasses
import math

import pytest

from lamarck.errors import ConfigError
from lamarck.learning.params import (
    ConfidenceParams,
    ContextParams,
    LearningParams,
    LessonParams,
    SecretParams,
)


def test_defaults_are_the_design_numbers() -> None:
    p = LearningParams()
    c = p.confidence
    assert (c.birth, c.claimed, c.confirm_step, c.contradict_step) == (0.5, 0.3, 0.15, 0.25)
    assert (c.floor, c.ceiling, c.unused_decay, c.retire_below) == (0.05, 0.95, 0.02, 0.2)
    assert (c.very_similar, c.somewhat_similar, c.staleness_per_day) == (0.9, 0.7, 0.001)
    assert c.generalisation_step > c.confirm_step
    lp = p.lesson
    assert (lp.max_active_per_scope, lp.recall_limit, lp.prompt_token_budget) == (200, 5, 300)
    assert lp.promotion_projects == 2
    assert p.context.critical_cap == 0.3
    assert set(p.context.critical_dims) == {"domain", "environment", "authentication"}


def test_params_are_frozen() -> None:
    p = ConfidenceParams()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.birth = 0.9  # type: ignore[misc]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_naming_the_field(bad: float) -> None:
    with pytest.raises(ConfigError, match="confirm_step"):
        ConfidenceParams(confirm_step=bad)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"floor": 0.96}, "floor"),
        ({"claimed": 0.1}, "claimed"),
        ({"claimed": 0.6}, "claimed"),
        ({"generalisation_step": 0.1}, "generalisation_step"),
        ({"generalisation_step": 0.5}, "generalisation_step"),
        ({"different_failure_factor": 0.9}, "different_failure_factor"),
        ({"somewhat_similar": 0.95}, "very_similar"),
        ({"contradict_step": 0.0}, "contradict_step"),
        ({"unused_window_days": 0.0}, "unused_window_days"),
    ],
)
def test_confidence_params_reject_out_of_range_values(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=field) as info:
        ConfidenceParams(**kwargs)
    assert info.value.details["field"] == field


def test_lesson_params_refuse_single_project_promotion_and_small_pool() -> None:
    with pytest.raises(ConfigError, match="promotion_projects"):
        LessonParams(promotion_projects=1)
    with pytest.raises(ConfigError, match="candidate_pool"):
        LessonParams(candidate_pool=3)
    with pytest.raises(ConfigError, match="recall_limit"):
        LessonParams(recall_limit=True)  # type: ignore[arg-type]


def test_context_and_secret_params_validate() -> None:
    with pytest.raises(ConfigError, match="critical_cap"):
        ContextParams(critical_cap=1.0)
    with pytest.raises(ConfigError, match="critical_dims"):
        ContextParams(critical_dims=())
    with pytest.raises(ConfigError, match="min_char_classes"):
        SecretParams(min_char_classes=5)


def test_learning_params_docstring_explains_how_the_rule_sets_combine() -> None:
    doc = LearningParams.__doc__ or ""
    assert "generalisation" in doc and "adaptive memory" in doc and "Lamarckian memory" in doc
