"""A test module never imports another test module: shared rows, harnesses and fixtures live
in helper modules (``*_factories``, ``*_harness``, ``*_helpers``, ``agent_node``) or a
``conftest.py``, so running one module never collects another's tests."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]


def _imported(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return names


def test_no_test_module_imports_another() -> None:
    offenders = [
        f"{path.relative_to(TESTS)} imports {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for name in _imported(ast.parse(path.read_text("utf-8")))
        if name.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert offenders == []
