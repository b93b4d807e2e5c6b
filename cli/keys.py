"""``lamarck keys init|show|rotate``: the node's identity key in ``<home>/keys``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, key_value_table
from lamarck.errors import ConfigError
from lamarck.node.lock import HomeLock
from lamarck.proto.clock import SystemClock
from lamarck.proto.keys import init_keys, rotate_keys, show_keys

__all__ = ["app", "init", "register", "rotate", "show"]

app = typer.Typer(
    name="keys",
    help="The node's identity key: create, show, rotate.",
    no_args_is_help=True,
)


def _show(home: Path) -> dict[str, Any]:
    info = show_keys(home)
    return {
        "node_id": info.node_id,
        "public_key": info.public_key,
        "path": str(info.path),
        "rotations": info.rotations,
        "original_node_id": info.original_node_id,
    }


@app.command()
def init(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Create the node's first key (PKCS#8 PEM, mode 0600); refuses to overwrite one."""
    where = resolve_home(home)
    init_keys(where)
    facts = _show(where)
    if as_json:
        emit_json(facts)
    else:
        key_value_table("created identity key", facts)


@app.command()
def show(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show the current key's node id and public key (refuses a key others can read)."""
    facts = _show(resolve_home(home))
    if as_json:
        emit_json(facts)
    else:
        key_value_table("identity key", facts)


@app.command()
def rotate(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Replace the key; writes a rotation record signed by the old key naming the new one."""
    where = resolve_home(home)
    # A running node holds the old key in memory and would go on signing with it: rotate
    # only while no node runs, and hold the home's lock so none starts half-way.
    lock = HomeLock(where)
    try:
        lock.acquire()
    except ConfigError as e:
        raise ConfigError(
            f"stop the node before rotating its key: {e.args[0]}", reason="node_running"
        ) from e
    try:
        new, record = rotate_keys(where, SystemClock().now())
        facts = _show(where)
    finally:
        lock.release()
    number = facts["rotations"]
    result = {
        "node_id": record["node_id"],
        "old_public_key": record["old_public_key"],
        "new_public_key": new.public_key_b64,
        "new_node_id": new.node_id,
        "rotation": number,
        "record_path": str(Path(facts["path"]).parent / f"rotation.{number}.json"),
        "record": record,
    }
    if as_json:
        emit_json(result)
    else:
        key_value_table("rotated identity key", {k: v for k, v in result.items() if k != "record"})


def register(root: typer.Typer) -> None:
    """Add the ``keys`` group to the root app."""
    root.add_typer(app)
