"""The embedder gives a batch's memory back: no arena by default, a heap trim after batches."""

from __future__ import annotations

import pytest

from lamarck.errors import ConfigError
from lamarck.node.minilm_onnx import OnnxParams


def test_onnx_runs_without_its_memory_arena_unless_asked() -> None:
    assert OnnxParams().memory_arena is False
    assert OnnxParams(memory_arena=True).memory_arena is True


def test_onnx_params_refuse_a_memory_arena_that_is_not_a_bool() -> None:
    with pytest.raises(ConfigError, match="memory_arena"):
        OnnxParams(memory_arena="yes")  # type: ignore[arg-type]
