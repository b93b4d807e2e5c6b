"""Real fleets for the fleet tests: one way to start one, on a port range that is free.

A fleet listens on ``base_port`` .. ``base_port + 3 * nodes``; another process (or another
fleet's ephemeral metrics and console ports) may hold one of them, and the fleet then refuses
to start (``ConfigError``, reason ``port_busy``) before it starts anything. Every start here
picks a base port, and on ``port_busy`` picks another range, up to ``PORT_TRIES`` times.

Fixtures:

* ``module_fleet`` — module scope factory: ``module_fleet(nodes=3, byzantine=1)`` starts a
  ``Fleet`` (``FleetSpec`` fields as keywords) and returns it once it runs; every fleet it
  started is stopped at the module's end. Use it like this::

      @pytest.fixture(scope="module")
      def fleet(module_fleet: Callable[..., Fleet]) -> Fleet:
          return module_fleet(nodes=3)

* ``fleet_up_process`` — function scope factory for ``lamarck fleet up`` as a user runs it:
  ``fleet_up_process(directory, "--nodes", "2", stdout=subprocess.PIPE)`` starts the command
  with ``--dir directory --base-port B`` added (its own session, so a test can send it
  SIGINT) and returns ``(process, B)`` once the supervisor is past its port check. At teardown
  a supervisor still running gets SIGTERM (killed, then ``lamarck fleet down``, if it hangs).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet.supervisor import FLEET_FILE, Fleet, FleetSpec

#: How many port ranges a start tries before the test fails.
PORT_TRIES = 5
#: Bound on ``lamarck fleet up`` getting past its port check (imports, then the check).
PORT_CHECK_TIMEOUT_S = 60.0
#: Bound on ``lamarck fleet down`` at teardown.
DOWN_TIMEOUT_S = 120.0
_POLL_S = 0.2


def free_base_port() -> int:
    """A base port taken from one the kernel just handed out: likely free, not certain (the
    retry on ``port_busy`` covers the rest)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    # Below 50000, so that base + 3 * nodes stays a valid port for any fleet size here.
    return 20000 + port % 30000


@pytest.fixture(scope="module")
def module_fleet() -> Iterator[Callable[..., Fleet]]:
    """``start(**spec) -> Fleet``, a running fleet; all are stopped at the module's end.

    Fleets live outside pytest's tmp dir (as ``pg_tmp_path``: its embedded Postgres runs as
    another user when the suite runs as root)."""
    started: list[Fleet] = []
    root = Path(tempfile.mkdtemp(prefix="lamarck-fleet-test-"))

    def start(**spec: Any) -> Fleet:
        for _ in range(PORT_TRIES):
            directory = Path(tempfile.mkdtemp(prefix="fleet", dir=root)) / "f"
            fleet = Fleet(FleetSpec(directory=directory, base_port=free_base_port(), **spec))
            try:
                # On any failure ``up`` stops what it started; port_busy comes before that.
                fleet.up(print)
            except ConfigError as e:
                if e.reason != "port_busy":
                    raise
                continue
            started.append(fleet)
            return fleet
        raise AssertionError(f"no free port range for a fleet after {PORT_TRIES} tries")

    try:
        yield start
    finally:
        for fleet in reversed(started):
            fleet.stop(print)
        shutil.rmtree(root, ignore_errors=True)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "lamarck.cli", *args]


def _past_port_check(directory: Path, process: subprocess.Popen[bytes]) -> bool:
    """Wait until the supervisor claimed ``directory`` (True: its ports were free) or exited
    (False); bounded."""
    deadline = time.monotonic() + PORT_CHECK_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            state = json.loads((directory / FLEET_FILE).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            state = None
        # The supervisor writes its own pid there right after the port check.
        if isinstance(state, dict) and state.get("supervisor_pid") == process.pid:
            return True
        time.sleep(_POLL_S)  # a bounded poll of the supervisor's own file
    raise AssertionError(f"lamarck fleet up did not claim {directory} in time")


@pytest.fixture
def fleet_up_process() -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], int]]]:
    """``start(directory, *args, **popen) -> (process, base_port)`` for ``lamarck fleet up``."""
    started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(directory: Path, *args: str, **popen: Any) -> tuple[subprocess.Popen[bytes], int]:
        for _ in range(PORT_TRIES):
            base = free_base_port()
            argv = _cli("fleet", "up", *args, "--dir", str(directory), "--base-port", str(base))
            process = subprocess.Popen(argv, start_new_session=True, **popen)
            started.append((process, directory))
            if _past_port_check(directory, process):
                return process, base
            out, err = process.communicate(timeout=DOWN_TIMEOUT_S)
            said = (out or b"") + (err or b"")
            if b"port_busy" not in said:
                raise AssertionError(f"lamarck fleet up exited with {process.returncode}: {said!r}")
        raise AssertionError(f"no free port range for lamarck fleet up after {PORT_TRIES} tries")

    try:
        yield start
    finally:
        for process, directory in started:
            if process.poll() is None:
                _stop_supervisor(process, directory)


def _stop_supervisor(process: subprocess.Popen[bytes], directory: Path) -> None:
    """SIGTERM, as ``lamarck fleet down`` sends: the supervisor stops what it started, even
    mid-start. One that does not exit in time is killed, and ``lamarck fleet down`` stops
    the nodes it left (their own sessions outlive it)."""
    process.terminate()
    try:
        process.communicate(timeout=DOWN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=DOWN_TIMEOUT_S)
        subprocess.run(
            _cli("fleet", "down", "--dir", str(directory)), timeout=DOWN_TIMEOUT_S, check=False
        )
