"""Variable importance: learned from predictions across a difference; the fixed list until then."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lamarck.errors import InvalidRecord
from lamarck.learning.context_match import context_similarity
from lamarck.learning.knowledge_params import VariableParams
from lamarck.learning.params import ContextParams
from lamarck.learning.variables import (
    Importance,
    VariableImportanceLearner,
    VariableStats,
    differing_variables,
)

P = VariableParams()
CTX = ContextParams()
BASE = {"domain": "ci", "environment": "linux", "tools": ["pytest"], "users": "team"}


def learn(var_ctx: dict[str, Any], outcomes: list[bool]) -> VariableImportanceLearner:
    learner = VariableImportanceLearner()
    for held in outcomes:
        learner = learner.observe(BASE, var_ctx, held=held, context=CTX)
    return learner


def test_fixed_list_holds_before_three_observations() -> None:
    learner = learn({**BASE, "environment": "windows"}, [True, True])
    assert learner.learned("environment", P) is None
    assert learner.importance("environment", P, CTX) is Importance.CRITICAL
    assert learner.importance("tools", P, CTX) is Importance.IMPORTANT
    assert learner.importance("users", P, CTX) is Importance.MINOR
    assert learner.importance("constraints.region", P, CTX) is None


@pytest.mark.parametrize(
    ("wrong", "total", "expected"),
    [
        (8, 10, Importance.CRITICAL),  # 0.8 > 0.7
        (7, 10, Importance.IMPORTANT),  # 0.7 is not above 0.7
        (5, 10, Importance.IMPORTANT),
        (3, 10, Importance.MINOR),
        (2, 10, Importance.NEGLIGIBLE),  # 0.2 is not above 0.2
        (0, 3, Importance.NEGLIGIBLE),
    ],
)
def test_class_follows_the_error_rate_bands(wrong: int, total: int, expected: Importance) -> None:
    learner = learn({**BASE, "environment": "windows"}, [False] * wrong + [True] * (total - wrong))
    assert learner.learned("environment", P) is expected


def test_critical_variable_that_never_breaks_a_prediction_stops_capping_similarity() -> None:
    other = {**BASE, "environment": "windows"}
    assert context_similarity(BASE, other, CTX) == CTX.critical_cap
    learner = learn(other, [True] * 5)
    assert learner.importance("environment", P, CTX) is Importance.NEGLIGIBLE
    assert learner.similarity(BASE, other, P, CTX) == 1.0
    assert learner.adjusted_confidence(0.6, BASE, other, P, CTX) == pytest.approx(0.6)


def test_a_learned_critical_constraint_caps_similarity() -> None:
    here = {**BASE, "constraints": {"region": "eu"}}
    there = {**BASE, "constraints": {"region": "us"}}
    assert differing_variables(here, there, CTX) == ("constraints.region",)
    learner = VariableImportanceLearner()
    assert learner.similarity(here, there, P, CTX) == 1.0  # unknown until learned
    for _ in range(4):
        learner = learner.observe(here, there, held=False, context=CTX)
    assert learner.importance("constraints.region", P, CTX) is Importance.CRITICAL
    assert learner.similarity(here, there, P, CTX) == CTX.critical_cap


def test_only_variables_that_differ_are_charged() -> None:
    learner = learn({**BASE, "users": "ops"}, [False, False, False])
    assert set(learner.stats) == {"users"}
    assert learner.stats["users"] == VariableStats(correct=0, incorrect=3)
    assert learn(dict(BASE), [False]).stats == {}


_values = st.sampled_from(["a", "b", "c"])
_contexts = st.fixed_dictionaries(
    {},
    optional={
        "domain": _values,
        "environment": _values,
        "tools": st.lists(_values, max_size=3),
        "scale": _values,
        "users": _values,
        "timing": _values,
        "constraints": st.fixed_dictionaries({}, optional={"authentication": _values}),
    },
)


@given(_contexts, _contexts)
def test_with_nothing_learned_similarity_equals_the_fixed_rule(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    learner = VariableImportanceLearner()
    assert learner.similarity(a, b, P, CTX) == pytest.approx(context_similarity(a, b, CTX))


@given(st.lists(_contexts, min_size=1, max_size=4), _contexts)
def test_one_run_context_read_once_scores_as_similarity_does(
    lessons: list[dict[str, Any]], run: dict[str, Any]
) -> None:
    # What recall uses: the run's variables read once, every candidate scored against them.
    learner = learn({**BASE, "environment": "windows", "users": "ops"}, [False, False, True])
    to = learner.similarity_to(run, P, CTX)
    for lesson in lessons:
        assert to(lesson) == learner.similarity(lesson, run, P, CTX)


@pytest.mark.parametrize("run", [None, {}, {"tools": []}, {"constraints": {}}])
def test_a_run_that_states_no_variable_shares_none_with_any_lesson(
    run: dict[str, Any] | None,
) -> None:
    learner = VariableImportanceLearner()
    to = learner.similarity_to(run, P, CTX)
    assert to(BASE) == to(None) == context_similarity(BASE, run, CTX) == 1.0


def test_state_round_trips_through_json_and_refuses_garbage() -> None:
    learner = learn({**BASE, "environment": "windows", "users": "ops"}, [True, False, False])
    again = VariableImportanceLearner.from_json(learner.to_json())
    assert again == learner
    assert again.classes(P, CTX)["environment"] is Importance.IMPORTANT
    for bad in (None, {"version": 2}, {"version": 1, "variables": {"x": {"correct": -1}}}):
        with pytest.raises(InvalidRecord):
            VariableImportanceLearner.from_json(bad)
