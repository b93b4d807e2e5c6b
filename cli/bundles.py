"""``lamarck export [FILE|-]`` and ``lamarck import FILE``: lessons as JSON Lines bundles.

A bundle is one signed memory record per line, exactly the bytes that were signed, so it can
be diffed, reviewed and re-verified anywhere; importing one runs every line through the
node's fail-closed import checks.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from lamarck.cli.connect import client_for
from lamarck.cli.lessons import CategoryChoice, StatusOption, statuses_from
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, key_value_table, print_table
from lamarck.errors import CliError

__all__ = ["export", "import_", "register"]

# Bundles of more lines than this get a progress line per call on stderr.
_PROGRESS_FROM = 100


def _write_atomically(path: Path, data: bytes) -> None:
    # Written aside and renamed: an interrupted export never leaves half a bundle under the
    # name a later import would read.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise CliError(f"cannot write {path}: {e.strerror or e}", reason="unwritable") from e


def export(
    file: Annotated[
        str, typer.Argument(metavar="[FILE|-]", help="Where to write the bundle; - is stdout.")
    ] = "-",
    status: StatusOption = None,
    scope: Annotated[
        str | None, typer.Option(metavar="global|project:HEX", help="Only this exact scope.")
    ] = None,
    category: Annotated[
        CategoryChoice | None, typer.Option(help="Operation or situation lessons.")
    ] = None,
    min_confidence: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="Only lessons at least this confident.")
    ] = None,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export lessons as a bundle: JSON Lines of signed records."""
    if as_json and file == "-":
        # stdout carries either the bundle or the JSON summary, never both.
        raise typer.BadParameter("--json needs a FILE: with - the bundle itself is stdout")
    statuses = statuses_from(status)
    with client_for(resolve_home(home)) as client:
        bundle = client.export_bundle(
            statuses=statuses,
            scope=scope,
            category=category,
            min_confidence=min_confidence,
        )
    records = sum(1 for line in bundle.splitlines() if line.strip())
    if file == "-":
        sys.stdout.buffer.write(bundle)
        sys.stdout.buffer.flush()
        return
    path = Path(file).expanduser()
    _write_atomically(path, bundle)
    summary = {"path": str(path), "records": records, "bytes": len(bundle)}
    if as_json:
        emit_json(summary)
    else:
        key_value_table("exported", summary)


def _read_bundle(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}", reason="unreadable") from e


def import_(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="A bundle (JSON Lines of signed records).",
            exists=True,
            dir_okay=False,
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Run every check, store nothing.")
    ] = False,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import a bundle through the node's fail-closed checks; one verdict per line.

    Refused lines are reported, not fatal: the command fails only if the import could not run.
    """
    data = _read_bundle(file)

    def progress(done: int, total: int) -> None:
        # On stderr, so stdout (and --json) holds only the result; only for a long bundle.
        if total > done or done > _PROGRESS_FROM:
            print(f"import: {done}/{total} lines acknowledged", file=sys.stderr, flush=True)

    with client_for(resolve_home(home)) as client:
        # Several calls, each within the deadline: a long bundle never fails on a deadline
        # meant for one call, and what was acknowledged stays acknowledged.
        result = client.import_bundle(
            data, dry_run=dry_run, source_label=file.name, progress=progress
        )
    counts = Counter(a.status for a in result.acks)
    summary: dict[str, Any] = {
        "file": str(file),
        "dry_run": dry_run,
        "records": len(result.acks),
        "counts": dict(sorted(counts.items())),
        "acks": [
            {
                "line": a.index + 1,
                "status": a.status,
                "reason": a.reason,
                "record_hash": a.record_hash,
            }
            for a in result.acks
        ],
    }
    if as_json:
        emit_json(summary)
        return
    title = "import (dry run: nothing stored)" if dry_run else "import"
    key_value_table(
        title,
        {
            "file": str(file),
            "records": len(result.acks),
            **{status: count for status, count in sorted(counts.items())},
        },
    )
    refused = [a for a in result.acks if a.status != "accepted"]
    if refused:
        print_table(
            "lines not accepted",
            ["line", "status", "reason"],
            ((a.index + 1, a.status, a.reason) for a in refused),
        )


def register(root: typer.Typer) -> None:
    """Add ``export`` and ``import`` to the root app."""
    root.command("export")(export)
    root.command("import")(import_)
