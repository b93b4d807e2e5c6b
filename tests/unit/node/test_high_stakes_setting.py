"""The node settings for what makes an imported lesson high-stakes reach the import rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.consensus.params import DESTRUCTIVE_PATTERNS
from lamarck.errors import ConfigError
from lamarck.node.config import load_settings
from lamarck.node.params import node_params


def test_a_node_holds_the_issues_high_stakes_rule_by_default(tmp_path: Path) -> None:
    high = node_params(load_settings(home=tmp_path)).importing.high_stakes
    assert high.confidence_threshold == 0.8
    assert high.critical_domains == frozenset({"security", "safety", "compliance"})
    assert high.critical_tags == frozenset({"irreversible", "destructive"})
    assert high.destructive_patterns == DESTRUCTIVE_PATTERNS


def test_the_settings_reach_the_rule_the_decision_runs(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text(
        "high_stakes_confidence = 0.5\n"
        'high_stakes_domains = ["Payments"]\n'
        'high_stakes_tags = ["prod"]\n'
        'high_stakes_patterns = ["kubectl\\\\s+delete"]\n'
    )
    params = node_params(load_settings(home=tmp_path))
    high = params.importing.high_stakes
    assert high.confidence_threshold == 0.5
    assert high.critical_domains == frozenset({"payments"})
    assert high.critical_tags == frozenset({"prod"})
    assert high.destructive_patterns == (r"kubectl\s+delete",)


def test_a_threshold_out_of_range_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, high_stakes_confidence=1.0)
    assert err.value.details["field"] == "high_stakes_confidence"


def test_a_pattern_that_does_not_compile_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text('high_stakes_patterns = ["("]\n')
    with pytest.raises(ConfigError, match="destructive_patterns"):
        node_params(load_settings(home=tmp_path))
