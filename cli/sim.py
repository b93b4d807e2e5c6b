"""``lamarck sim``: the network simulator over the shipped cores."""

from __future__ import annotations

from typing import Annotated

import typer

from lamarck.sim.params import SimParams
from lamarck.sim.state import SimCores
from lamarck.sim.suite import calibration_lines, run_suite

__all__ = ["register", "sim"]


def sim(
    nodes: Annotated[
        list[int] | None, typer.Option("--nodes", "-n", help="Network sizes (repeat).")
    ] = None,
    byzantine: Annotated[
        list[float] | None, typer.Option("--byzantine", "-b", help="Byzantine shares (repeat).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 1,
    lessons: Annotated[int, typer.Option(help="Honest lessons per run.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON line only.")] = False,
    gate: Annotated[
        bool,
        typer.Option(
            "--gate/--no-gate",
            help="Run the influence gate (as a node does); --no-gate shows every lesson as advice.",
        ),
    ] = True,
) -> None:
    """Simulate lamarck networks (default N = 100 and 1,000; shares 0, 10 and 30 %)."""
    cores = SimCores()
    result = run_suite(
        nodes or [100, 1000],
        byzantine if byzantine is not None else [0.0, 0.1, 0.3],
        seed=seed,
        base=SimParams(lessons=lessons, influence_gate=gate),
        cores=cores,
        progress=(lambda _m: None) if as_json else lambda m: typer.echo(m, err=True),
    )
    if as_json:
        typer.echo(result.json_line())
        return
    for line in calibration_lines(result.calibration, cores.gossip.fanout):
        typer.echo(line)
    typer.echo(result.table())


def register(app: typer.Typer) -> None:
    """Add ``sim`` to the root app."""
    app.command("sim")(sim)
