"""``lamarck quarantine list|show|approve|reject|rejections``: the operator's review desk.

Records the import pipeline would not believe on its own wait here. Approving
re-verifies the held signed bytes on the node and stores the record as an import; rejecting
only marks the row (nothing is deleted). ``rejections`` prints the log of refused records.
``show`` prints the quorum asked about a high-stakes record (its votes and certificate);
``release`` / ``reject --reason R [--source ID]`` decide every row held for one reason (the
lessons of a revoked or graylisted source, ``tainted_source``) in bulk: the node runs that as
a job to completion whatever happens to the command, which prints its progress on stderr; run
it again after an interruption and it decides what is left.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from lamarck.cli.connect import running_node
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, key_value_table, print_table
from lamarck.node.api.quorum_view import certificate_state, parse_quorum
from lamarck.operator import BulkResult, Decision, OperatorClient, QuarantineEntry, Rejection
from lamarck.proto.timefmt import format_ts

__all__ = [
    "StateChoice",
    "app",
    "approve",
    "decision_json",
    "entry_json",
    "list_quarantine",
    "operator_for",
    "print_quorum",
    "register",
    "reject",
    "rejection_json",
    "rejections",
    "release",
    "show",
]

StateChoice = Literal["pending", "approved", "rejected", "all"]

app = typer.Typer(
    name="quarantine",
    help="Review records held in quarantine: list, show, approve, reject.",
    no_args_is_help=True,
)

_IdArgument = Annotated[str, typer.Argument(metavar="ID", help="The quarantine row's id.")]
_NoteOption = Annotated[
    str, typer.Option("--note", help="Why (written to the node's log with the decision).")
]


def operator_for(home: Path) -> OperatorClient:
    """An OperatorService client to the node running on ``home`` (checked alive first)."""
    running_node(home)
    return OperatorClient.from_home(home)


def entry_json(entry: QuarantineEntry) -> dict[str, Any]:
    """A quarantine row as plain JSON (timestamps RFC 3339)."""
    return {
        "id": entry.id,
        "state": entry.state,
        "record_id": entry.record_id,
        "source_node_id": entry.source_node_id,
        "reasons": list(entry.reasons),
        "received_at": format_ts(entry.received_at),
        "content_hash": entry.content_hash,
        "content_preview": entry.content_preview,
        "decided_at": format_ts(entry.decided_at) if entry.decided_at else None,
        "decided_by": entry.decided_by or None,
        "note": entry.note or None,
    }


def print_quorum(quorum: dict[str, Any] | None) -> None:
    """Print the quorum's state, counts, certificate state and each vote."""
    if quorum is None:
        typer.echo("quorum: never asked")
        return
    counts = quorum.get("counts") or {}
    facts: dict[str, Any] = {
        "state": quorum.get("state", ""),
        "rounds": quorum.get("rounds", 0),
        "reason": quorum.get("reason", ""),
        "next attempt": quorum.get("next_at") or "-",
        "validate / contradict / abstain": (
            f"{counts.get('validate', 0)} / {counts.get('contradict', 0)} / "
            f"{counts.get('abstain', 0)}"
        ),
        "accept at / reject at": f"{counts.get('accept_at', '-')} / {counts.get('reject_at', '-')}",
        "certificate": certificate_state(quorum),
    }
    key_value_table("quorum", facts)
    votes = quorum.get("votes") or []
    if votes:
        print_table(
            f"{len(votes)} vote(s)",
            ["voter", "verdict", "confidence", "evidence", "at", "counted"],
            (
                (
                    v.get("voter_id", ""),
                    v.get("verdict", ""),
                    v.get("confidence", ""),
                    ", ".join(v.get("outcome_ids", [])),
                    v.get("created_at", ""),
                    "yes" if v.get("counted") else f"no ({v.get('ignored', '')})",
                )
                for v in votes
            ),
            no_wrap=("voter",),
        )


def decision_json(decision: Decision) -> dict[str, Any]:
    """A decided row, with the stored lesson's id on approve (else null)."""
    return {**entry_json(decision.entry), "lesson_id": decision.lesson_id or None}


def rejection_json(row: Rejection) -> dict[str, Any]:
    """A rejection log row as plain JSON."""
    return {
        "received_at": format_ts(row.received_at),
        "source_node_id": row.source_node_id,
        "reason": row.reason,
        "content_hash": row.content_hash,
        "detail": row.detail,
    }


@app.command("list")
def list_quarantine(
    state: Annotated[StateChoice, typer.Option(help="Only rows in this state.")] = "pending",
    limit: Annotated[int, typer.Option(min=1, help="At most this many rows.")] = 100,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """List quarantined records, oldest first."""
    entries: list[QuarantineEntry] = []
    with operator_for(resolve_home(home)) as op:
        for entry in op.iter_quarantine(None if state == "all" else state):
            entries.append(entry)
            if len(entries) >= limit:
                break
    if as_json:
        emit_json([entry_json(e) for e in entries])
        return
    print_table(
        f"{len(entries)} quarantined record(s) ({state})",
        ["id", "state", "received", "source", "reasons", "content"],
        (
            (
                e.id,
                e.state,
                format_ts(e.received_at),
                e.source_node_id,
                ", ".join(e.reasons),
                e.content_preview,
            )
            for e in entries
        ),
        no_wrap=("id", "received"),
    )


@app.command()
def show(quarantine_id: _IdArgument, home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show one quarantined record: why it is held, and the signed record itself."""
    with operator_for(resolve_home(home)) as op:
        shown = op.show(quarantine_id)
    try:
        record: Any = json.loads(shown.record_json)
    except ValueError:
        # Held bytes that do not parse are shown as text: the operator should see them.
        record = shown.record_json.decode("utf-8", errors="replace")
    quorum = parse_quorum(shown.quorum_json)
    if as_json:
        emit_json({**entry_json(shown.entry), "record": record, "quorum": quorum})
        return
    facts = entry_json(shown.entry)
    facts["reasons"] = ", ".join(shown.entry.reasons)
    del facts["content_preview"]
    if shown.entry.decided_at is None:
        for key in ("decided_at", "decided_by", "note"):
            del facts[key]
    if isinstance(record, dict):
        facts["content"] = record.get("content", "")
        facts["confidence (claimed)"] = record.get("confidence", "")
        lesson = record.get("lesson") or {}
        facts["operation"] = lesson.get("operation", "")
        facts["scope"] = lesson.get("scope", "")
    key_value_table(f"quarantine {shown.entry.id}", facts)
    print_quorum(quorum)
    text = record if isinstance(record, str) else json.dumps(record, indent=2, ensure_ascii=False)
    typer.echo(text)


def _decided(verb: str, decision: Decision, as_json: bool) -> None:
    if as_json:
        emit_json(decision_json(decision))
        return
    line = f"{verb} {decision.entry.id}"
    if decision.lesson_id:
        line += f": stored as lesson {decision.lesson_id}"
    typer.echo(line)


@app.command()
def approve(
    quarantine_id: _IdArgument,
    note: _NoteOption = "",
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Approve: the node re-verifies the signed record and stores it as an import."""
    with operator_for(resolve_home(home)) as op:
        decision = op.approve(quarantine_id, note=note)
    _decided("approved", decision, as_json)


_ReasonOption = Annotated[
    str, typer.Option("--reason", help="Every pending row held for this reason (bulk).")
]
_SourceOption = Annotated[
    str, typer.Option("--source", help="With --reason: only rows of this source node.")
]


def _bulk_progress(verb: str) -> Any:
    def progress(done: int, total: int) -> None:
        # On stderr, so stdout (and --json) holds only the result.
        print(f"{verb}: {done}/{total} row(s) done", file=sys.stderr, flush=True)

    return progress


def _bulk(verb: str, result: BulkResult, as_json: bool) -> None:
    if as_json:
        emit_json(
            {
                "decided": [decision_json(d) for d in result.decisions],
                "failed": [
                    {"id": f.id, "reason": f.reason, "detail": f.detail} for f in result.failed
                ],
            }
        )
        return
    typer.echo(f"{verb} {len(result.decisions)} row(s)")
    for decision in result.decisions:
        line = f"  {decision.entry.id} ({decision.entry.source_node_id})"
        if decision.lesson_id:
            line += f": lesson {decision.lesson_id}"
        typer.echo(line)
    if result.failed:
        typer.echo(f"{len(result.failed)} row(s) could not be decided (still pending):")
        for failure in result.failed:
            typer.echo(f"  {failure.id}: {failure.reason}: {failure.detail}")


@app.command()
def reject(
    quarantine_id: Annotated[
        str, typer.Argument(metavar="[ID]", help="The quarantine row's id (or use --reason).")
    ] = "",
    note: _NoteOption = "",
    reason: _ReasonOption = "",
    source: _SourceOption = "",
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reject: the row is marked rejected and kept as history; nothing is stored. With
    ``--reason`` (and ``--source``), every pending row held for it."""
    if bool(quarantine_id) == bool(reason):
        raise typer.BadParameter("give either a quarantine ID or --reason")
    with operator_for(resolve_home(home)) as op:
        if reason:
            result = op.decide_bulk(
                reason, approve=False, source=source, note=note, progress=_bulk_progress("reject")
            )
            _bulk("rejected", result, as_json)
            return
        decision = op.reject(quarantine_id, note=note)
    _decided("rejected", decision, as_json)


@app.command()
def release(
    reason: _ReasonOption,
    source: _SourceOption = "",
    note: _NoteOption = "",
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Release in bulk every pending row held for ``--reason`` (of ``--source``): lessons
    taken out as ``tainted_source`` are active again; other rows are approved as one by one."""
    with operator_for(resolve_home(home)) as op:
        result = op.decide_bulk(
            reason, approve=True, source=source, note=note, progress=_bulk_progress("release")
        )
    _bulk("released", result, as_json)


@app.command()
def rejections(
    limit: Annotated[int, typer.Option(min=1, help="At most this many rows.")] = 50,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """The log of records the import pipeline refused, newest first."""
    with operator_for(resolve_home(home)) as op:
        rows = op.rejections(limit)
    if as_json:
        emit_json([rejection_json(r) for r in rows])
        return
    print_table(
        f"{len(rows)} rejection(s)",
        ["received", "source", "reason", "hash", "detail"],
        (
            (format_ts(r.received_at), r.source_node_id, r.reason, r.content_hash[:16], r.detail)
            for r in rows
        ),
        no_wrap=("received", "reason"),
    )


def register(root: typer.Typer) -> None:
    """Add the ``quarantine`` group to the root app."""
    root.add_typer(app)
