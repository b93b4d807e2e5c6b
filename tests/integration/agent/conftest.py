"""Fixtures for the agent-side tests: one real node (from the node tests' fixture) per module.

The node process machinery lives in ``tests/integration/node/conftest.py``; it is loaded by
path (test directories are not packages) rather than copied.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_FIXTURE_FILE = Path(__file__).resolve().parents[1] / "node" / "conftest.py"


def _node_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lamarck_agent_node_fixture", _FIXTURE_FILE)
    if spec is None or spec.loader is None:
        raise AssertionError(f"the node process fixture is missing: {_FIXTURE_FILE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


fixtures = _node_fixtures()


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A running node on loopback, shared by the module's tests and stopped at the end."""
    running = fixtures.start_node(tmp_path_factory.mktemp("agent-node"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """A directory outside git standing for the agent's project checkout."""
    path = tmp_path / "checkout"
    path.mkdir()
    return path
