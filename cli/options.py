"""Options every command shares: ``--home`` (or ``--node``) and ``--json``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lamarck.cli.connect import fleet_node_home
from lamarck.node.config import default_home

__all__ = ["HomeOption", "JsonOption", "resolve_home"]

HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        "--node",
        help="The node's home directory, or the name of a running fleet's node (node1) "
        "(default: $LAMARCK_HOME if set, else ~/.lamarck).",
        show_default=False,
        file_okay=False,
    ),
]

JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print JSON on stdout (for scripts) instead of tables."),
]


def resolve_home(home: Path | None) -> Path:
    """The home given on the command line, else ``$LAMARCK_HOME``, else ``~/.lamarck``.

    A bare name that is no directory here (``--node node1``) names a node of the fleet that
    runs in ``$LAMARCK_FLEET_DIR`` (default ``~/.lamarck-fleet``).
    """
    # Resolved at call time, not as the option's default: the environment may change
    # between import and run (tests, wrappers), and --help should not print a user's path.
    if home is not None and len(home.parts) == 1 and not home.expanduser().is_dir():
        return fleet_node_home(home.name)
    return (home if home is not None else default_home()).expanduser()
