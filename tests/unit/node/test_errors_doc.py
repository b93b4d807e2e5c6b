"""docs/errors.md stays the one faithful table of typed error → gRPC status → reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lamarck import errors
from lamarck.node.api.status import REASON_OVERRIDES, STATUS_TABLE

DOC = Path(__file__).resolve().parents[3] / "docs" / "errors.md"
_CELL = re.compile(r"`([^`]*)`")


def _rows(section: str) -> dict[str, list[str]]:
    """Table rows of a ``## section``: first cell's code text → every cell's code text."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    end = text.find("\n## ", start + 1)
    rows: dict[str, list[str]] = {}
    for line in text[start : end if end != -1 else None].splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = [_CELL.findall(c) for c in cells]
        rows[names[0][0]] = [n[0] if n else "" for n in names[:4]]
    return rows


def test_every_class_of_the_status_table_is_documented_with_its_code_and_reason() -> None:
    rows = _rows("By error class")
    for cls, code in STATUS_TABLE:
        assert cls.__name__ in rows, f"{cls.__name__} is missing from docs/errors.md"
        _, parent, documented_code, default_reason = rows[cls.__name__]
        assert documented_code == code.name, cls.__name__
        assert default_reason == cls.default_reason, cls.__name__
        assert parent == cls.__mro__[1].__name__, cls.__name__
    assert set(rows) == {cls.__name__ for cls, _ in STATUS_TABLE}, "a stale row in the doc"


def test_table_order_in_the_doc_is_the_matching_order() -> None:
    # The first matching class wins, so the order is part of the contract people read.
    assert list(_rows("By error class")) == [cls.__name__ for cls, _ in STATUS_TABLE]


def test_every_reason_override_is_documented_with_its_code() -> None:
    rows = _rows("Reasons with their own status")
    assert set(rows) == set(REASON_OVERRIDES)
    for reason, code in REASON_OVERRIDES.items():
        assert rows[reason][1] == code.name, reason


@pytest.mark.parametrize("name", errors.__all__)
def test_every_public_error_class_is_in_the_status_table(name: str) -> None:
    cls = getattr(errors, name)
    assert any(cls is table_cls for table_cls, _ in STATUS_TABLE), name
