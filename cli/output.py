"""Printing results: rich tables for people, JSON for scripts.

With ``--json`` stdout carries exactly one JSON document and nothing else, so
``lamarck ... --json | jq`` always works; everything for people goes through rich.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["console", "emit_json", "key_value_table", "print_table"]

# Wide enough for a uuid, a node id and a lesson sentence side by side when the output is
# not a terminal (a pipe, a test runner), where rich would otherwise assume 80 columns.
_PIPE_WIDTH = 160


def console() -> Console:
    """A rich console on the current stdout (looked up per call: tests swap stdout)."""
    probe = Console(highlight=False)
    if probe.is_terminal or os.environ.get("COLUMNS"):
        return probe
    return Console(highlight=False, width=_PIPE_WIDTH)


def _cell(value: Any) -> Text:
    # Text, not str: a lesson saying "[x]" must not be read as rich markup.
    return Text("" if value is None else str(value))


def emit_json(value: Any) -> None:
    """Print ``value`` as one JSON document on stdout."""
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def key_value_table(title: str, rows: Mapping[str, Any]) -> None:
    """Print a two-column table of ``rows`` (field, value)."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in rows.items():
        table.add_row(key, _cell(value))
    console().print(table)


def print_table(
    title: str,
    columns: Iterable[str],
    rows: Iterable[Iterable[Any]],
    *,
    no_wrap: Iterable[str] = (),
) -> None:
    """Print a table; columns named in ``no_wrap`` (ids) are never folded."""
    keep = set(no_wrap)
    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(name, no_wrap=name in keep, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(cell) for cell in row))
    console().print(table)
