"""Options every command shares, as ``--help`` shows them."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from lamarck.cli import app

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


def _all_commands() -> list[list[str]]:
    """Every command path of the CLI, the root included."""
    import typer

    paths: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


@pytest.mark.parametrize("command", _all_commands(), ids=lambda p: " ".join(p) or "lamarck")
def test_help_reads_as_written(command: list[str]) -> None:
    """No sentence loses its default to markup (``address .``), no raw reST backticks, and a
    flag shows no value type (``--json <bool>``)."""
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    for line in result.output.splitlines():
        assert not re.search(r"\w \.(\s|$)", line), line
        assert "``" not in line, line
        assert "<bool>" not in line, line


def test_help_keeps_defaults_written_in_brackets() -> None:
    result = runner.invoke(app, ["mcp", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    text = re.sub(r"\s+", " ", result.output)
    assert "the port [default: 7702; 0 picks one]" in text
