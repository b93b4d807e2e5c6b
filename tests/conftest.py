"""Suite-wide hooks. Under pytest-xdist (``make test`` runs two workers) the integration
services each worker ran against are printed once in the controller's terminal summary: the
workers' own summaries (tests/integration/conftest.py) are not shown."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: tests/integration/conftest.py's WORKER_OUTPUT_KEY (test directories are not packages).
_WORKER_OUTPUT_KEY = "lamarck_integration_services"
_SEEN_KEY = pytest.StashKey[dict[str, str]]()


def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker starts with ``COLUMNS=80`` and ``LINES=24`` in its environment,
    which the CLI reads as a terminal's width (its tables would wrap at 80 columns, as no
    single-process run does): drop them there."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A worker finished: keep what it said it ran against."""
    said = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT_KEY)
    if said:
        node.config.stash.setdefault(_SEEN_KEY, {})[node.gateway.id] = said


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The services the workers used, one line per worker."""
    seen = terminalreporter.config.stash.get(_SEEN_KEY, {})
    if seen:
        terminalreporter.write_sep("-", "integration services")
        for worker, said in sorted(seen.items()):
            terminalreporter.write_line(f"integration services ({worker}): {said}")


@pytest.fixture
def pg_tmp_path() -> Iterator[Path]:
    """A fresh directory for homes that run an embedded Postgres, removed afterwards.

    Not under pytest's tmp dir: as root, Postgres runs as the user ``pgserver``, and pytest
    resets /tmp/pytest-of-root to 0700 mid-session, which locks initdb and pg_ctl out.
    """
    path = Path(tempfile.mkdtemp(prefix="lamarck-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
