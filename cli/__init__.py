"""The operator CLI, ``lamarck``: typer commands over the node's home and its agent API.

Each command group lives in its own module and is registered here; later groups (peers,
reputation, quarantine, fleet) join the same way. Every command takes ``--home`` and
``--json``; failures print one line, ``lamarck: <reason>: <message>``, on stderr and exit 2
(usage or configuration) or 1 (anything else) — see ``lamarck.cli.errors``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
import typer.core

from lamarck.cli import (
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
from lamarck.cli.errors import LamarckGroup

__all__ = ["app", "main"]


def _flag_type_hidden(option: typer.core.TyperOption, ctx: Any) -> str | None:
    """The type column of an option's help: empty for an on/off flag (no value to type)."""
    if option.is_flag:
        return None
    return option.display_type(ctx)


# typer prints every flag's type as ``<bool>`` (``--json <bool>``), which reads as if the flag
# took a value; a flag takes none.
typer.core.TyperOption.display_type_rich = _flag_type_hidden  # type: ignore[method-assign,assignment]

app = typer.Typer(
    name="lamarck",
    cls=LamarckGroup,
    help="lamarck: a network where AI agents share signed lessons.",
    no_args_is_help=True,
    # Failures are reported by LamarckGroup as one line; never a rich traceback.
    pretty_exceptions_enable=False,
    # Help texts are Markdown: ``code`` renders as code and "[default: x]" stays text (rich
    # markup would read it as a tag and drop it, leaving "Peer API address .").
    rich_markup_mode="markdown",
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
