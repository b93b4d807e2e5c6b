"""``lamarck schema memory|outcome|vote``: print a record kind's JSON Schema."""

from __future__ import annotations

from typing import Annotated

import typer

from lamarck.cli.options import HomeOption, JsonOption
from lamarck.cli.output import emit_json
from lamarck.proto.schema import SchemaKind, json_schema

__all__ = ["register", "schema"]


def schema(
    kind: Annotated[SchemaKind, typer.Argument(help="The record kind.", show_default=False)],
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the JSON Schema (draft 2020-12) of a record kind."""
    # A schema is JSON for people and scripts alike; --home and --json are accepted so every
    # command takes the same options, and change nothing here.
    del home, as_json
    emit_json(json_schema(kind))


def register(app: typer.Typer) -> None:
    """Add ``schema`` to the root app."""
    app.command("schema")(schema)
