"""Lamarckian memory context similarity: critical variables cap it at 0.3, others weigh in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lamarck.learning.context_match import context_similarity, critical_differences
from lamarck.learning.params import ContextParams

P = ContextParams()
BASE = {"domain": "python", "environment": "linux", "tools": ["pytest", "git"], "scale": "small"}


def test_identical_contexts_are_fully_similar() -> None:
    assert context_similarity(BASE, dict(BASE), P) == 1.0


def test_differing_critical_variable_caps_similarity_at_0_3() -> None:
    for dim in ("domain", "environment"):
        other = {**BASE, dim: "something-else"}
        assert context_similarity(BASE, other, P) <= 0.3
        assert critical_differences(BASE, other, P) == [dim]


def test_authentication_inside_constraints_is_a_critical_variable() -> None:
    a = {**BASE, "constraints": {"authentication": "oauth"}}
    b = {**BASE, "constraints": {"authentication": "none"}}
    assert context_similarity(a, b, P) <= 0.3


def test_tools_compare_as_sets_and_minor_dims_weigh_less() -> None:
    fewer_tools = {**BASE, "tools": ["pytest"]}
    other_scale = {**BASE, "scale": "large"}
    s_tools = context_similarity(BASE, fewer_tools, P)
    s_scale = context_similarity(BASE, other_scale, P)
    assert 0.3 < s_tools < 1.0 and 0.3 < s_scale < 1.0
    with_users = {**BASE, "users": "team"}
    other_users = {**BASE, "users": "public"}
    assert context_similarity(with_users, other_users, P) > s_scale


def test_missing_dimension_is_no_information_not_a_difference() -> None:
    assert context_similarity(BASE, {}, P) == 1.0
    assert context_similarity(BASE, {"domain": "python"}, P) == 1.0
    assert context_similarity({"domain": "Python "}, {"domain": "python"}, P) == 1.0


@given(
    a=st.dictionaries(
        st.sampled_from(["domain", "environment", "tools", "scale", "timing", "users"]),
        st.sampled_from(["x", "y", "z"]),
    ),
    b=st.dictionaries(
        st.sampled_from(["domain", "environment", "tools", "scale", "timing", "users"]),
        st.sampled_from(["x", "y", "z"]),
    ),
)
def test_similarity_is_symmetric_and_in_unit_interval(a: dict[str, str], b: dict[str, str]) -> None:
    s = context_similarity(a, b, P)
    assert 0.0 <= s <= 1.0
    assert s == pytest.approx(context_similarity(b, a, P))
