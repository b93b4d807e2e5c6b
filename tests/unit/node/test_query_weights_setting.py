"""The node setting that chooses the weights MiniLM's recall queries run on."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.node.config import load_settings
from lamarck.node.params import embedder_params, node_params


def test_queries_run_on_8_bit_weights_by_default(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path)
    assert settings.query_weights == "8bit"
    assert embedder_params(settings).onnx.query_weights_8bit
    assert node_params(settings).embedding.onnx.query_weights_8bit


def test_full_weights_reach_the_embedders_params(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text('query_weights = "full"\n')
    settings = load_settings(home=tmp_path)
    assert not embedder_params(settings).onnx.query_weights_8bit
    assert not node_params(settings).embedding.onnx.query_weights_8bit


@pytest.mark.parametrize("bad", ["4bit", "", 8])
def test_other_weights_are_refused_naming_the_field(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, query_weights=bad)
    assert err.value.details["field"] == "query_weights"
