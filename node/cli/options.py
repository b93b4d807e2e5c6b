"""Options every command shares: ``--home`` and ``--json``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lamarck.node.config import default_home

__all__ = ["HomeOption", "JsonOption", "resolve_home"]

HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        # No square brackets: the help is rich markup, where "[default: ...]" is a tag and
        # vanishes from the output.
        help="The node's home directory (default: $LAMARCK_HOME if set, else ~/.lamarck).",
        show_default=False,
        file_okay=False,
    ),
]

JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print JSON on stdout (for scripts) instead of tables."),
]


def resolve_home(home: Path | None) -> Path:
    """The home given on the command line, else ``$LAMARCK_HOME``, else ``~/.lamarck``."""
    # Resolved at call time, not as the option's default: the environment may change
    # between import and run (tests, wrappers), and --help should not print a user's path.
    return (home if home is not None else default_home()).expanduser()
