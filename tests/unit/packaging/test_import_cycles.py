"""The library's packages import each other without cycles.

setup.py ``ROOTS`` maps top-level folders into ``lamarck.*``; the graph is built (grimp) over a
copy of the sources laid out as the installed package. No two top-level packages import each
other, directly or round a loop, and neither do the sub-packages of any package.
The layers themselves are ``make lint``'s import-linter contract (pyproject.toml).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _roots() -> dict[str, str]:
    """setup.py's ROOTS, read without running setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "ROOTS" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, dict)
            return {str(k): str(v) for k, v in value.items()}
    raise AssertionError("setup.py has no ROOTS")


_DUMP = """
import json, sys
import grimp
g = grimp.build_graph("lamarck", cache_dir=None)
json.dump({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}, sys.stdout)
"""

Graph = dict[str, list[str]]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    """Every module of lamarck and the lamarck modules it imports (grimp, in a child process:
    this one has lamarck imported from the editable install, whose remapping hides folders)."""
    site = tmp_path_factory.mktemp("site")
    # Shortest package first: lamarck/ is copied before the folders mapped inside it.
    for package, folder in sorted(_roots().items(), key=lambda kv: kv[0].count(".")):
        shutil.copytree(
            ROOT / folder,
            site.joinpath(*package.split(".")),
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "v1"),
            dirs_exist_ok=True,
        )
    out = subprocess.run(
        [sys.executable, "-c", _DUMP],
        check=True,
        capture_output=True,
        text=True,
        cwd=site,
        env={**os.environ, "PYTHONPATH": str(site)},
    ).stdout
    loaded: Graph = json.loads(out)
    return loaded


def _child(parent: str, module: str) -> str | None:
    """The child of ``parent`` that holds ``module`` (``None``: outside ``parent``)."""
    if not module.startswith(parent + "."):
        return None
    return parent + "." + module[len(parent) + 1 :].split(".")[0]


def _cycles(graph: Graph, parent: str) -> list[frozenset[str]]:
    """The strongly connected groups (of 2 or more) among ``parent``'s children."""
    edges: dict[str, set[str]] = {}
    for module, imports in graph.items():
        a = _child(parent, module)
        if a is None:
            continue
        for imported in imports:
            b = _child(parent, imported)
            if b is not None and b != a:
                edges.setdefault(a, set()).add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(frozenset(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _packages(graph: Graph) -> list[str]:
    return sorted({m.rsplit(".", 1)[0] for m in graph if "." in m})


def test_top_level_packages_form_no_cycle(graph: Graph) -> None:
    assert _cycles(graph, "lamarck") == []


def test_sub_packages_form_no_cycle(graph: Graph) -> None:
    """A cycle among a package's children that takes in a sub-package (modules of one folder
    that import each other are that folder's own business)."""
    packages = set(_packages(graph))
    found = {p: [sorted(c) for c in _cycles(graph, p) if c & packages] for p in sorted(packages)}
    assert {p: c for p, c in found.items() if c} == {}


def test_the_graph_covers_every_root(graph: Graph) -> None:
    """The copy holds every mapped folder (a wrong layout would pass the cycle tests empty)."""
    packages = _packages(graph)
    for package in _roots():
        assert package in packages
    assert "lamarck.node.daemon" in graph
    assert "lamarck.policy.decision" in graph
