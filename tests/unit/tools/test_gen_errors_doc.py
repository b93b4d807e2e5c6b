"""docs/errors.md is generated from the code: the committed file must be what it generates."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "gen_errors_doc.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_errors_doc", TOOL)
    assert spec is not None and spec.loader is not None, f"{TOOL} is missing"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_errors_doc_is_what_the_code_generates() -> None:
    # Stale after any new reason, override or status change: run `make errors-doc`.
    assert _tool().main(["--check"]) == 0


def test_a_stale_doc_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _tool()
    stale = tmp_path / "errors.md"
    stale.write_text(tool.render().replace("content_too_large", "content_too_long"))
    monkeypatch.setattr(tool, "DOC", stale)
    assert tool.main(["--check"]) == 1


def test_one_name_for_content_over_the_limit_in_code_and_doc() -> None:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert "`content_too_large`" in text and "content_too_long" not in text


def test_every_reason_override_needs_a_note_saying_when() -> None:
    tool = _tool()
    from lamarck.node.api.status import REASON_OVERRIDES

    assert set(REASON_OVERRIDES) <= set(tool.OVERRIDE_NOTES)
