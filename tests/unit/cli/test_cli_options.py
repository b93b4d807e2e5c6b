"""Options every command shares, as ``--help`` shows them."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from lamarck.node.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    "command", [["node", "start"], ["node", "status"], ["lessons", "list"], ["keys", "show"]]
)
def test_home_help_shows_its_real_default(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "--home" in ln)
    text = re.sub(r"\s+", " ", line)
    assert "(default: $LAMARCK_HOME if set, else ~/.lamarck)" in text
