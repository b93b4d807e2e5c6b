"""`lamarck fleet status` of a fleet that stopped, and how a node names its database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.node.daemon import database_where

runner = CliRunner()


def _exited_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


def test_status_of_a_stopped_fleet_says_stopped_without_a_supervisor_placeholder(
    tmp_path: Path,
) -> None:
    state = {"supervisor_pid": _exited_pid(), "state": "running", "nodes": []}
    (tmp_path / "fleet.json").write_text(json.dumps(state))
    # Wide enough for the line whatever tmp_path's length (pytest-xdist adds a directory).
    result = runner.invoke(app, ["fleet", "status", "--dir", str(tmp_path)], env={"COLUMNS": "400"})
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    assert first.endswith(": stopped"), first
    assert "None" not in result.stdout


def test_a_database_url_is_named_by_database_and_host_never_its_password() -> None:
    assert database_where("postgresql://lamarck:s3cret@db:5432/lamarck") == (
        "PostgreSQL database lamarck at db:5432"
    )
    socket = "postgresql://postgres@/node1?host=/fleet/postgres/pgdata"
    assert database_where(socket) == "PostgreSQL database node1 at /fleet/postgres/pgdata"
    assert "s3cret" not in database_where("postgres://u:s3cret@h/x?sslmode=require")
