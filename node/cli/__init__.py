"""The operator CLI, ``lamarck``: typer commands over the node's home and its agent API.

Each command group lives in its own module and is registered here; later groups (peers,
reputation, quarantine, fleet) join the same way. Every command takes ``--home`` and
``--json``; failures print one line, ``error: <reason>: <message>``, on stderr and exit 2
(usage or configuration) or 1 (anything else) — see ``lamarck.node.cli.errors``.
"""

from __future__ import annotations

from collections.abc import Sequence

import typer

from lamarck.node.cli import (
    agent_cmds,
    bundles,
    fleet,
    health,
    keys,
    lessons,
    node,
    outcomes,
    quarantine,
    registry,
    reputation,
    schema,
    sim,
)
from lamarck.node.cli.errors import LamarckGroup

__all__ = ["app", "main"]

app = typer.Typer(
    name="lamarck",
    cls=LamarckGroup,
    help="lamarck: a network where AI agents share signed lessons.",
    no_args_is_help=True,
    # Failures are reported by LamarckGroup as one line; never a rich traceback.
    pretty_exceptions_enable=False,
    add_completion=False,
)

for _module in (
    node,
    keys,
    lessons,
    outcomes,
    bundles,
    quarantine,
    health,
    registry,
    reputation,
    schema,
    agent_cmds,
    fleet,
    sim,
):
    _module.register(app)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point: run ``lamarck`` and return its exit code."""
    code: int = app(args=list(argv) if argv is not None else None, standalone_mode=False)
    return code
