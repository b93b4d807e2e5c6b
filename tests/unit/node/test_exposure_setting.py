"""Issue 12 §3.2: the node setting that sets how cautiously unproven imports are exposed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.node.config import load_settings
from lamarck.node.learning.exposure import ExposureParams
from lamarck.node.params import node_params


def test_a_nodes_default_share_is_one_until_recall_tests_expect_caution(tmp_path: Path) -> None:
    # The rule's own default (1) turns it off; a node runs with the measured 0.25
    # (docs/trust.md, "Exposure before proof").
    settings = load_settings(home=tmp_path)
    assert settings.exposure_plan_share == 1.0
    assert node_params(settings).learning.exposure == ExposureParams(plan_share=1.0)


@pytest.mark.parametrize("share", [0.0, 0.25, 1.0])
def test_the_share_reaches_the_lesson_rules(tmp_path: Path, share: float) -> None:
    params = node_params(load_settings(home=tmp_path, exposure_plan_share=share))
    assert params.learning.exposure.plan_share == share


def test_the_share_is_read_from_the_homes_config_file(tmp_path: Path) -> None:
    # How a fleet (or an operator) sets it for a node without a flag.
    (tmp_path / "lamarck.toml").write_text("exposure_plan_share = 0.5\n")
    assert node_params(load_settings(home=tmp_path)).learning.exposure.plan_share == 0.5


@pytest.mark.parametrize("bad", [-0.1, 1.5, "many"])
def test_a_share_outside_zero_one_is_refused_naming_the_field(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, exposure_plan_share=bad)
    assert err.value.details["field"] == "exposure_plan_share"
