"""The export's command line: the 8-bit weights' file is optional, the full one is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.node import onnx_export


def _fake_export(model_dir: Path, out: Path) -> None:
    del model_dir
    out.write_bytes(b"full")


def test_a_failed_8_bit_file_leaves_the_full_one_and_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An onnxruntime without the quantizer (or one that cannot quantize the graph) must not
    fail the export: exit 0, the full file written, the 8-bit one absent and the reason on
    stderr (the embedder then runs queries on the full weights)."""

    def no_quantizer(source: Path, out: Path) -> None:
        out.write_bytes(b"half written")
        raise ImportError("No module named 'onnx_ir'")

    monkeypatch.setattr(onnx_export, "export", _fake_export)
    monkeypatch.setattr(onnx_export, "quantize_weights", no_quantizer)
    full, eight = tmp_path / "m.onnx", tmp_path / "m.w8.onnx"
    assert onnx_export.main(["model", str(full), str(eight)]) == 0
    assert full.read_bytes() == b"full"
    assert not eight.exists()
    assert "no 8-bit weights: ImportError" in capsys.readouterr().err


def test_without_a_third_path_no_8_bit_file_is_attempted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MODEL_DIR OUT``: the full file only; a wrong argument count is a usage error."""

    def must_not_run(source: Path, out: Path) -> None:
        raise AssertionError("quantized without being asked")

    monkeypatch.setattr(onnx_export, "export", _fake_export)
    monkeypatch.setattr(onnx_export, "quantize_weights", must_not_run)
    assert onnx_export.main(["model", str(tmp_path / "m.onnx")]) == 0
    assert onnx_export.main(["model"]) == 2
