"""The operator's reputation table as plain values and plain text (``lamarck reputation``).

Pure: rows in, text or JSON-shaped dicts out. The node builds the rows from the reputation
book, the registry (principals) and the store (records accepted / rejected); the CLI and
``OperatorService`` print or serve what these functions return.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from lamarck.proto.timefmt import format_ts
from lamarck.reputation.scores import PeerBand

__all__ = [
    "UNKNOWN",
    "ReputationRow",
    "SortKey",
    "global_text",
    "render_table",
    "row_to_obj",
    "select_rows",
]

#: How a global trust nobody has an opinion on is shown (never as 0).
UNKNOWN = "unknown"


def global_text(value: float | None, digits: int = 4) -> str:
    """A global trust as the operator reads it: ``digits`` decimals, or "unknown"."""
    return UNKNOWN if value is None else f"{value:.{digits}f}"


class SortKey(StrEnum):
    """Columns the table can be sorted by (``--sort``)."""

    SCORE = "score"
    GLOBAL = "global"
    PAIRWISE = "pairwise"
    PEER = "peer"
    LAST_SEEN = "last_seen"


@dataclass(frozen=True, slots=True)
class ReputationRow:
    """Everything the table shows about one peer."""

    peer: str
    principal: str
    band: PeerBand
    score: float
    parts: Mapping[str, float] = field(default_factory=dict)
    predictions: int = 0
    correct: int = 0
    # Accuracy weighted by the confidence of each prediction; None with no predictions.
    weighted_accuracy: float | None = None
    pairwise: float = 0.5
    # None: nobody (this node, or a summary it holds) has judged the peer: shown "unknown".
    global_trust: float | None = None
    accepted: int = 0
    rejected: Mapping[str, int] = field(default_factory=dict)
    votes_right: int = 0
    votes_wrong: int = 0
    # Expertise level per domain (only domains with reality events).
    domains: Mapping[str, float] = field(default_factory=dict)
    expert_domains: tuple[str, ...] = ()
    last_seen: datetime | None = None


def _sort_value(row: ReputationRow, key: SortKey) -> Any:
    if key is SortKey.PEER:
        return row.peer
    if key is SortKey.LAST_SEEN:
        return row.last_seen.timestamp() if row.last_seen else -math.inf
    if key is SortKey.GLOBAL:
        return -math.inf if row.global_trust is None else row.global_trust
    if key is SortKey.PAIRWISE:
        return row.pairwise
    return row.score


def select_rows(
    rows: Iterable[ReputationRow], *, sort: SortKey = SortKey.SCORE, domain: str = ""
) -> list[ReputationRow]:
    """Rows with expertise in ``domain`` (all if ""), sorted (highest first; peer: A..Z)."""
    chosen = [r for r in rows if not domain or domain in r.domains]
    descending = sort is not SortKey.PEER
    # Ties broken by peer id so the same book always prints the same table.
    chosen.sort(key=lambda r: r.peer)
    chosen.sort(key=lambda r: _sort_value(r, sort), reverse=descending)
    return chosen


def _parts_text(parts: Mapping[str, float]) -> str:
    shown = [f"{name.split('_')[0]}={value:+.3f}" for name, value in sorted(parts.items()) if value]
    return " ".join(shown) or "-"


def _rejected_text(rejected: Mapping[str, int]) -> str:
    total = sum(rejected.values())
    if not total:
        return "0"
    detail = ",".join(f"{reason}:{n}" for reason, n in sorted(rejected.items()) if n)
    return f"{total} ({detail})"


def _cells(row: ReputationRow, domain: str) -> list[str]:
    accuracy = "-" if row.weighted_accuracy is None else f"{row.weighted_accuracy:.2f}"
    domains = domain and f"{domain}:{row.domains.get(domain, 0.0):.2f}"
    return [
        row.peer,
        row.principal or "-",
        row.band.value,
        f"{row.score:.3f}",
        _parts_text(row.parts),
        accuracy,
        f"{row.correct}/{row.predictions}",
        f"{row.pairwise:.2f}",
        global_text(row.global_trust),
        str(row.accepted),
        _rejected_text(row.rejected),
        f"{row.votes_right}/{row.votes_wrong}",
        domains or (",".join(row.expert_domains) or "-"),
        format_ts(row.last_seen) if row.last_seen else "never",
    ]


_HEADER = [
    "PEER",
    "PRINCIPAL",
    "BAND",
    "SCORE",
    "PARTS",
    "W.ACC",
    "CORRECT/PRED",
    "PAIRWISE",
    "GLOBAL",
    "ACCEPTED",
    "REJECTED",
    "VOTES R/W",
    "EXPERT IN",
    "LAST SEEN",
]


def render_table(
    rows: Iterable[ReputationRow], *, sort: SortKey = SortKey.SCORE, domain: str = ""
) -> str:
    """The table as aligned plain text, one line per peer, header first."""
    lines: Sequence[list[str]] = [_HEADER] + [
        _cells(r, domain) for r in select_rows(rows, sort=sort, domain=domain)
    ]
    widths = [max(len(line[k]) for line in lines) for k in range(len(_HEADER))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def row_to_obj(row: ReputationRow) -> dict[str, Any]:
    """One row as a JSON-shaped dict (``--json``)."""
    return {
        "peer": row.peer,
        "principal": row.principal,
        "band": row.band.value,
        "score": row.score,
        "parts": dict(row.parts),
        "weighted_accuracy": row.weighted_accuracy,
        "predictions": row.predictions,
        "correct": row.correct,
        "pairwise_trust": row.pairwise,
        "global_trust": row.global_trust,  # null: unknown
        "records_accepted": row.accepted,
        "records_rejected": dict(row.rejected),
        "votes_right": row.votes_right,
        "votes_wrong": row.votes_wrong,
        "domains": dict(row.domains),
        "expert_domains": list(row.expert_domains),
        "last_seen": format_ts(row.last_seen) if row.last_seen else None,
    }
