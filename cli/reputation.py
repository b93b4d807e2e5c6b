"""``lamarck reputation [--json] [--sort KEY] [--domain D]``, ``lamarck reputation show PEER``
and ``lamarck reputation reset PEER --note TEXT``.

The table is this node's view of every peer it knows: principal, band, score and its labelled
parts, weighted accuracy, predictions / correct, pairwise and global trust, records accepted
and rejected by reason, votes right / wrong, domains with expertise, last seen
(``lamarck.reputation.table``). ``show`` prints one peer's row and its event history with
who established each event and why. ``reset`` puts a peer's score back to an admitted
newcomer's (lifting a graylisting), the note kept in its history as an ``operator_reset``
event; what reality judged of its lessons stays. All go through the node's
``OperatorService``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from lamarck.cli.connect import known_labels
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, key_value_table, print_table
from lamarck.cli.quarantine import operator_for
from lamarck.errors import NotFound
from lamarck.operator import (
    OperatorClient,
    PeerReputation,
    ReputationEventEntry,
    ReputationTable,
)
from lamarck.proto.labels import resolve_peer
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.table import (
    SortKey,
    global_text,
    parts_text,
    peer_text,
    render_table,
    row_to_obj,
)

__all__ = ["app", "event_json", "register", "reset", "show", "table", "table_json"]

app = typer.Typer(
    name="reputation",
    help="Whom this node believes: the reputation table, or one peer's history (show PEER).",
    invoke_without_command=True,
)

_SortOption = Annotated[
    SortKey, typer.Option("--sort", help="Sort by this column (highest first; peer: A to Z).")
]
_DomainOption = Annotated[
    str, typer.Option("--domain", help="Only peers with expertise in this domain.")
]
_WideOption = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Every column (principal, all score parts, accuracy, pairwise trust, rejections"
        " by reason, expertise, last seen) and whole ids, however wide.",
    ),
]


def table_json(table: ReputationTable, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The table as plain JSON: whose view, when, and the rows (each with its ``label``)."""
    at = table.global_trust_computed_at
    names = labels or {}
    return {
        "observer_node_id": table.observer_node_id,
        "observer_label": names.get(table.observer_node_id, ""),
        "computed_at": format_ts(table.computed_at),
        "global_trust_computed_at": format_ts(at) if at else None,
        "peers": [{**row_to_obj(r), "label": names.get(r.peer, "")} for r in table.rows],
    }


def event_json(event: ReputationEventEntry) -> dict[str, Any]:
    """One history event as plain JSON."""
    return {
        "at": format_ts(event.at),
        "kind": event.kind,
        "source": event.source,
        "weight": event.weight,
        "record_hash": event.record_hash or None,
        "domain": event.domain or None,
        "detail": event.detail,
    }


@app.callback()
def table(
    ctx: typer.Context,
    sort: _SortOption = SortKey.SCORE,
    domain: _DomainOption = "",
    wide: _WideOption = False,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the reputation table (no subcommand), one line per peer, in 120 columns."""
    if ctx.invoked_subcommand is not None:
        return
    where = resolve_home(home)
    with operator_for(where) as op:
        shown = op.reputation(sort.value, domain)
    labels = known_labels(where)
    if as_json:
        emit_json(table_json(shown, labels))
        return
    typer.echo(render_table(shown.rows, sort=sort, domain=domain, wide=wide, labels=labels))
    at = shown.global_trust_computed_at
    peers = "1 peer" if len(shown.rows) == 1 else f"{len(shown.rows)} peers"
    typer.echo(
        f"{peers} as seen by {peer_text(shown.observer_node_id, labels, short=False)};"
        f" global trust computed {format_ts(at) if at else 'not yet'}"
    )
    if not wide:
        typer.echo("--wide: every column; reputation show PEER: why a peer stands where it does")


def _rounded(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value


def _show_text(shown: PeerReputation, labels: dict[str, str]) -> None:
    facts = {k: _rounded(v) for k, v in row_to_obj(shown.row).items()}
    facts["peer"] = peer_text(shown.row.peer, labels, short=False)
    facts["global_trust"] = global_text(shown.row.global_trust, 3)
    facts["parts"] = parts_text(shown.row.parts)
    facts["domains"] = ", ".join(f"{d}:{v:.2f}" for d, v in sorted(shown.row.domains.items()))
    facts["expert_domains"] = ", ".join(shown.row.expert_domains)
    facts["records_rejected"] = ", ".join(
        f"{reason}:{n}" for reason, n in sorted(shown.row.rejected.items())
    )
    key_value_table(f"reputation of {facts['peer']}", facts)
    print_table(
        f"{len(shown.events)} event(s), newest first",
        ["at", "kind", "source", "weight", "domain", "record", "why"],
        (
            (
                format_ts(e.at),
                e.kind,
                e.source,
                f"{e.weight:.2f}",
                e.domain,
                e.record_hash[:16],
                e.detail,
            )
            for e in shown.events
        ),
        no_wrap=("at", "kind"),
    )


def peer_reputation(
    op: OperatorClient, peer: str, labels: dict[str, str], limit: int
) -> PeerReputation:
    """The row and history of the peer ``peer`` names: its id, its label (``node3``: the
    one node labelled so; a label two nodes share is ``ambiguous_label``), or the start of its
    id as the table shows it (``lmk1abcdefgh…``)."""
    if peer in labels.values():
        return op.peer_reputation(resolve_peer(peer, labels), limit=limit)
    try:
        return op.peer_reputation(peer, limit=limit)
    except NotFound:
        start = peer.rstrip("…")
        matches = [r.peer for r in op.reputation(SortKey.PEER.value, "").rows]
        matches = [i for i in matches if i.startswith(start)]
        if len(matches) != 1:
            raise NotFound(
                f"no peer {peer}" if not matches else f"{peer} starts {len(matches)} peers' ids",
                reason="not_found",
            ) from None
        return op.peer_reputation(matches[0], limit=limit)


@app.command()
def show(
    peer: Annotated[
        str,
        typer.Argument(
            metavar="PEER",
            help="The peer: its node id, the start of it, or its label (node3).",
        ),
    ],
    limit: Annotated[int, typer.Option(min=1, help="At most this many events.")] = 100,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """One peer's row and its event history with reasons, newest first."""
    where = resolve_home(home)
    labels = known_labels(where)
    with operator_for(where) as op:
        shown = peer_reputation(op, peer, labels, limit)
    if as_json:
        emit_json(
            {
                **row_to_obj(shown.row),
                "label": labels.get(shown.row.peer, ""),
                "events": [event_json(e) for e in shown.events],
            }
        )
        return
    _show_text(shown, labels)


@app.command()
def reset(
    peer: Annotated[str, typer.Argument(metavar="PEER", help="The peer's node id.")],
    note: Annotated[
        str, typer.Option("--note", help="Why (kept in the peer's history). Required.")
    ],
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reset a peer's score to a newcomer's, lifting a graylisting; the note stays in its
    history."""
    with operator_for(resolve_home(home)) as op:
        after = op.reset_reputation(peer, note=note)
    if as_json:
        emit_json({**row_to_obj(after.row), "events": [event_json(e) for e in after.events]})
        return
    row = after.row
    typer.echo(f"reset {row.peer}: score {row.score:.3f}, band {row.band.value}")
    for e in after.events:
        typer.echo(f"{format_ts(e.at)} {e.kind} ({e.source}): {e.detail}")


def register(root: typer.Typer) -> None:
    """Add the ``reputation`` group to the root app."""
    root.add_typer(app)
