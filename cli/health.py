"""``lamarck health [--json]``: the node's health report (Lamarckian memory's dashboard).

The running node computes the report from its store (``OperatorService.GetHealth``); this
prints it as text, or as its JSON (``lamarck.health.render.report_to_json``).

Exit codes: 0 when the report raised no critical warning (plain warnings still exit 0: they
are advice), 2 (``EXIT_CRITICAL``) when a critical one is raised (today: "no external
validations", the risk of self-confirming hallucination), so a cron job or a probe can alert
on it; 1 when no node answers, as every command.
"""

from __future__ import annotations

import typer

from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json
from lamarck.cli.quarantine import operator_for
from lamarck.health.figures import Severity
from lamarck.health.render import render_text, report_from_json

__all__ = ["EXIT_CRITICAL", "health", "register"]

#: Exit code when the report raises a critical warning.
EXIT_CRITICAL = 2


def health(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show the node's health report: calibration, external validation, transfer, usefulness,
    update velocity and the warnings. Exits 2 when a critical warning is raised."""
    with operator_for(resolve_home(home)) as op:
        data = op.health()
    report = report_from_json(data)
    if as_json:
        emit_json(data)
    else:
        typer.echo(render_text(report), nl=False)
        variables = data.get("variables") or {}
        if variables:
            typer.echo("\nContext variables (what a difference in them does to a lesson):")
            for name, v in sorted(variables.items()):
                how = "learned" if v.get("learned") else "assumed"
                held, failed = v.get("correct", 0), v.get("incorrect", 0)
                typer.echo(
                    f"  {name:<16} {v.get('class', '?'):<11} {how}"
                    f" ({held} held, {failed} failed across a difference)"
                )
    if any(f.severity is Severity.CRITICAL for f in report.warnings):
        raise typer.Exit(code=EXIT_CRITICAL)


def register(root: typer.Typer) -> None:
    """Add ``health`` to the root app."""
    root.command(name="health")(health)
