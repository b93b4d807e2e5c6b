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

from lamarck.proto.labels import with_label
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.scores import PeerBand

__all__ = [
    "ID_PREFIX",
    "UNKNOWN",
    "ReputationRow",
    "SortKey",
    "global_text",
    "named_parts",
    "part_name",
    "parts_text",
    "peer_text",
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


def part_name(key: str) -> str:
    """A score part as an operator reads it: ``p1_reality_confirmed`` -> ``reality confirmed``."""
    code, _, name = key.partition("_")
    return name.replace("_", " ") if code[:1] == "p" and code[1:].isdigit() and name else key


def named_parts(parts: Mapping[str, float], top: int | None = None) -> list[tuple[str, float]]:
    """The parts that move the score, named, largest effect first (``top``: only that many);
    zero parts are left out, ties in name order."""
    moving = sorted(((part_name(k), v) for k, v in parts.items() if v), key=lambda kv: kv[0])
    moving.sort(key=lambda kv: -abs(kv[1]))
    return moving if top is None else moving[:top]


def parts_text(parts: Mapping[str, float], top: int | None = None) -> str:
    """``reality confirmed +0.125, replay -0.050`` (``-`` when nothing moves the score)."""
    return ", ".join(f"{name} {value:+.3f}" for name, value in named_parts(parts, top)) or "-"


def _rejected_text(rejected: Mapping[str, int]) -> str:
    total = sum(rejected.values())
    if not total:
        return "0"
    detail = ",".join(f"{reason}:{n}" for reason, n in sorted(rejected.items()) if n)
    return f"{total} ({detail})"


def _cells(row: ReputationRow, domain: str, labels: Mapping[str, str]) -> list[str]:
    accuracy = "-" if row.weighted_accuracy is None else f"{row.weighted_accuracy:.2f}"
    domains = domain and f"{domain}:{row.domains.get(domain, 0.0):.2f}"
    return [
        peer_text(row.peer, labels, short=False),
        row.principal or "-",
        row.band.value,
        f"{row.score:.3f}",
        parts_text(row.parts),
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


_NARROW_HEADER = [
    "PEER",
    "BAND",
    "SCORE",
    "GLOBAL",
    "ACC",
    "REJ",
    "VOTES R/W",
    "TOP PARTS",
]
#: Characters of a node id the narrow table keeps (``lmk1`` and enough to be told apart;
#: ``reputation show`` takes such a prefix).
ID_PREFIX = 12
#: Score parts the narrow table names: the largest effects.
TOP_PARTS = 2


def peer_text(peer: str, labels: Mapping[str, str], *, short: bool) -> str:
    """A peer as the operator knows it: its label beside its id (shortened when ``short``)."""
    return with_label(peer, labels.get(peer, ""), width=ID_PREFIX if short else 0)


def _narrow_cells(row: ReputationRow, labels: Mapping[str, str]) -> list[str]:
    return [
        peer_text(row.peer, labels, short=True),
        row.band.value,
        f"{row.score:.3f}",
        global_text(row.global_trust, 3),
        str(row.accepted),
        str(sum(row.rejected.values())),
        f"{row.votes_right}/{row.votes_wrong}",
        parts_text(row.parts, TOP_PARTS),
    ]


def _aligned(lines: Sequence[list[str]], width: int | None) -> str:
    widths = [max(len(line[k]) for line in lines) for k in range(len(lines[0]))]
    out = []
    for line in lines:
        text = "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        if width is not None and len(text) > width:
            text = text[: width - 1] + "…"  # only the last column (the parts) is ever cut
        out.append(text)
    return "\n".join(out)


def render_table(
    rows: Iterable[ReputationRow],
    *,
    sort: SortKey = SortKey.SCORE,
    domain: str = "",
    wide: bool = False,
    labels: Mapping[str, str] | None = None,
    width: int = 120,
) -> str:
    """The table as aligned plain text, one line per peer, header first.

    By default the columns an operator scans, within ``width`` characters: the peer (its
    label, if known, and the start of its id), band, score, global trust, records accepted
    (ACC) and rejected (REJ), votes, and the score parts with the largest effect, named.
    ``wide``: every column (principal, all parts, accuracy, predictions, pairwise trust,
    rejections by reason, expertise, last seen), however wide.
    """
    names = labels or {}
    chosen = select_rows(rows, sort=sort, domain=domain)
    if wide:
        lines: Sequence[list[str]] = [_HEADER] + [_cells(r, domain, names) for r in chosen]
        return _aligned(lines, None)
    return _aligned([_NARROW_HEADER] + [_narrow_cells(r, names) for r in chosen], width)


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
