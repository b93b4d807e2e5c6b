"""``lamarck fleet up|status|down`` as a user runs them: real processes, real cleanup."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lamarck.fleet.launcher import pid_alive

pytestmark = pytest.mark.integration

#: Bound on a small fleet becoming ready (nodes start, then one peer-list refresh of 10 s).
READY_TIMEOUT_S = 240.0
_POLL_S = 0.2

#: ``fleet_up_process`` (conftest.py): ``(directory, *args, **popen) -> (process, base_port)``.
FleetUp = Callable[..., tuple[subprocess.Popen[bytes], int]]


def _lamarck(*args: str) -> list[str]:
    return [sys.executable, "-m", "lamarck.cli", *args]


def _state(d: Path) -> dict[str, Any]:
    try:
        value: dict[str, Any] = json.loads((d / "fleet.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return value


def _await_running(d: Path, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, "fleet up exited early"
        state = _state(d)
        if state.get("state") == "running":
            return state
        time.sleep(_POLL_S)  # a bounded poll of the supervisor's own file
    raise AssertionError("fleet never reported running")


def _owned_pids(d: Path, state: dict[str, Any]) -> list[int]:
    pids = [n["pid"] for n in state["nodes"]]
    for f in (d / "registry" / "redis" / "redis.pid", d / "postgres" / "pgdata" / "postmaster.pid"):
        if f.exists():
            pids.append(int(f.read_text().split()[0]))
    return pids


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_ctrl_c_stops_every_node_the_registry_and_postgres(
    tmp_path: Path, fleet_up_process: FleetUp
) -> None:
    d = tmp_path / "fleet"
    proc, base = fleet_up_process(
        d,
        "--nodes",
        "2",
        "--agents",
        "2",
        "--rounds",
        "1",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # Started as nohup or a test runner's worker may start it: SIGINT ignored, which a
        # Python process keeps; Ctrl-C must stop the fleet all the same.
        preexec_fn=_ignore_sigint,
    )
    state = _await_running(d, proc)
    pids = _owned_pids(d, state)
    assert len(pids) == 4 and all(pid_alive(p) for p in pids)

    status = subprocess.run(
        _lamarck("fleet", "status", "--dir", str(d), "--json"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stderr
    assert [n["node"] for n in json.loads(status.stdout)["nodes"]] == ["node1", "node2"]

    again = subprocess.run(
        _lamarck("fleet", "up", "--nodes", "2", "--dir", str(d), "--base-port", str(base + 50)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2 and "fleet_running" in again.stderr

    busy = subprocess.run(
        _lamarck(
            "fleet",
            "up",
            "--nodes",
            "2",
            "--dir",
            str(tmp_path / "other"),
            "--base-port",
            str(base),
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert busy.returncode == 2 and "port_busy" in busy.stderr

    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, _ = proc.communicate(timeout=120)
    assert b"fleet stopped" in out
    assert [p for p in pids if pid_alive(p)] == []
    assert _state(d)["state"] == "stopped"


def test_fleet_down_from_another_terminal_stops_a_fleet_and_up_reports_figures(
    tmp_path: Path, fleet_up_process: FleetUp
) -> None:
    d = tmp_path / "fleet"
    proc, _ = fleet_up_process(
        d,
        "--nodes",
        "3",
        "--byzantine",
        "1",
        "--agents",
        "6",
        "--rounds",
        "3",
        "--json",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + READY_TIMEOUT_S
    line = b""
    assert proc.stdout is not None
    while not line.startswith(b"{") and time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, "fleet up closed its output before printing its figures"
    figures = json.loads(line)
    assert figures["shared_turns"] == figures["isolated_turns"] > 0
    assert figures["shared_repeated_known_mistakes"] <= figures["isolated_repeated_known_mistakes"]
    state = _state(d)
    pids = _owned_pids(d, state)
    down = subprocess.run(
        _lamarck("fleet", "down", "--dir", str(d)), capture_output=True, text=True, timeout=180
    )
    assert down.returncode == 0 and "supervisor" in down.stdout
    proc.wait(timeout=30)
    assert [p for p in pids if pid_alive(p)] == []
