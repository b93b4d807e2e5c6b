"""`lamarck registry peers` tells a stopped node from a running node whose Redis is down."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.proto.keys import init_keys

runner = CliRunner()


def _error_line(home: Path) -> str:
    result = runner.invoke(app, ["registry", "peers", "--home", str(home)])
    assert result.exit_code == 1, result.output
    [line] = result.stderr.strip().splitlines()
    return line


def test_a_running_node_whose_embedded_redis_is_down_is_not_told_to_start(
    tmp_path: Path,
) -> None:
    home = tmp_path / "a"
    init_keys(home)
    # A live pid in node.json: the node runs (this test process stands in for it).
    (home / "node.json").write_text(json.dumps({"pid": os.getpid()}))
    line = _error_line(home)
    assert line.startswith("lamarck: registry_down: ")
    assert "start the node" not in line and "is running" in line


def test_a_stopped_node_is_told_to_start(tmp_path: Path) -> None:
    home = tmp_path / "b"
    init_keys(home)
    line = _error_line(home)
    assert line.startswith("lamarck: registry_not_running: ")
    assert "start the node" in line
