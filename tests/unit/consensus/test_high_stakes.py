"""The high-stakes rule: confidence > 0.8, a critical domain, a dangerous tag or operation."""

from __future__ import annotations

import pytest
from consensus_helpers import record

from lamarck.consensus.high_stakes import HighStakesRule
from lamarck.consensus.params import HighStakesParams
from lamarck.errors import ConfigError

RULE = HighStakesRule(HighStakesParams())


def test_an_ordinary_lesson_is_not_high_stakes() -> None:
    assert not RULE(record(confidence=0.8))
    assert RULE.reasons(record()) == ()


def test_confidence_strictly_above_the_threshold_is_high_stakes() -> None:
    assert RULE.reasons(record(confidence=0.81)) == ("high_confidence",)


@pytest.mark.parametrize("domain", ["security", "Safety", "compliance"])
def test_critical_domains_are_high_stakes(domain: str) -> None:
    assert RULE.reasons(record(domain=domain)) == ("critical_domain",)


@pytest.mark.parametrize("tag", ["irreversible", "DESTRUCTIVE"])
def test_dangerous_tags_are_high_stakes(tag: str) -> None:
    assert RULE.reasons(record(tags=(tag,))) == ("critical_tag",)


def test_content_naming_a_destructive_operation_is_high_stakes() -> None:
    lesson = record(content="Clean the build cache with rm -rf build/ before packaging.")
    assert RULE.reasons(lesson) == ("destructive_operation",)
    assert not HighStakesRule(HighStakesParams(destructive_patterns=()))(lesson)


def test_high_stakes_params_are_validated() -> None:
    with pytest.raises(ConfigError):
        HighStakesParams(confidence_threshold=float("nan"))
    with pytest.raises(ConfigError):
        HighStakesParams(confidence_threshold=1.0)
    with pytest.raises(ConfigError):
        HighStakesParams(critical_domains=frozenset({"Security"}))
    with pytest.raises(ConfigError):
        HighStakesParams(destructive_patterns=("(",))
