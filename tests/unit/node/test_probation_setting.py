"""The node setting for how many reality-judged interactions end a source's probation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.node.config import load_settings
from lamarck.node.params import node_params


def test_a_node_puts_new_sources_on_probation_for_five_judged_interactions(
    tmp_path: Path,
) -> None:
    params = node_params(load_settings(home=tmp_path))
    assert params.importing.transfer.probation.interactions == 5
    assert params.importing.transfer.probation.new_source_claim == 0.5


def test_the_setting_reaches_the_transfer_rule(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text("probation_interactions = 0\n")
    params = node_params(load_settings(home=tmp_path))
    assert params.importing.transfer.probation.interactions == 0


@pytest.mark.parametrize("bad", [-1, "many"])
def test_a_negative_count_is_refused_naming_the_field(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, probation_interactions=bad)
    assert err.value.details["field"] == "probation_interactions"
