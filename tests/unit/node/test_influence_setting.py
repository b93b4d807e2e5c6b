"""The node setting that bounds the share of plan-time prompts an unverified lesson enters."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.learning.influence import InfluenceParams
from lamarck.node.config import load_settings
from lamarck.node.params import node_params


def test_the_gate_is_on_by_default_offering_hints_in_every_prompt(tmp_path: Path) -> None:
    # docs/trust.md, "Influence follows evidence": chosen from the fleet's measurements (the
    # cost within 10 % of before the gate at 1, not at 0.25; no more poisoned decisions).
    settings = load_settings(home=tmp_path)
    assert settings.unverified_plan_share == 1.0
    assert node_params(settings).learning.influence == InfluenceParams(unverified_plan_share=1.0)
    assert InfluenceParams().unverified_plan_share == 1.0


@pytest.mark.parametrize("share", [0.0, 0.25, 1.0])
def test_the_share_reaches_the_lesson_rules(tmp_path: Path, share: float) -> None:
    params = node_params(load_settings(home=tmp_path, unverified_plan_share=share))
    assert params.learning.influence.unverified_plan_share == share


def test_the_share_is_read_from_the_homes_config_file(tmp_path: Path) -> None:
    # How a fleet (or an operator) sets it for a node without a flag.
    (tmp_path / "lamarck.toml").write_text("unverified_plan_share = 0.5\n")
    assert node_params(load_settings(home=tmp_path)).learning.influence.unverified_plan_share == 0.5


@pytest.mark.parametrize("bad", [-0.1, 1.5, "many"])
def test_a_share_outside_zero_one_is_refused_naming_the_field(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, unverified_plan_share=bad)
    assert err.value.details["field"] == "unverified_plan_share"


def test_the_gate_is_on_by_default_and_off_only_when_asked(tmp_path: Path) -> None:
    assert node_params(load_settings(home=tmp_path)).learning.influence.gate is True
    off = node_params(load_settings(home=tmp_path, influence_gate=False))
    assert off.learning.influence.gate is False
