"""What a node can truthfully say about itself: ``lamarck node status``, the
console's overview, ``OperatorService.GetStatus`` and the status gauges.

The network side (registry admission, live peers, last sync, outbox) lives in
``lamarck.node.sharing``; it is read through one async callable returning a
:class:`NetworkSnapshot` (``NetworkSource``), so this module needs nothing of Sharing's
insides. Reputation is read through :class:`ReputationSource`. The store gives quarantine and
rejections; the import counters are the process's own (``lamarck.node.metrics``).

The rule deciding whether the peer service may say SERVING is :func:`peer_serving`: only
while the node is in its network (admitted now, or admitted before and the registry is
unreachable, so it serves from its peer cache). A refused node, one never admitted, or one
without a registry is NOT_SERVING for the peer service, and ``admission`` says why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from lamarck.health.figures import Finding
from lamarck.node.store.recall_index import RecallIndexState, RecallIndexStatus
from lamarck.proto.labels import with_label
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.table import ReputationRow

__all__ = [
    "STATUS_JSON_VERSION",
    "Admission",
    "AdmissionState",
    "CatchUpProgress",
    "NetworkSnapshot",
    "NetworkSource",
    "NodeStatus",
    "ReputationSource",
    "ReputationTop",
    "build_status",
    "peer_serving",
    "status_rows",
    "status_to_json",
]

#: Version of ``status_to_json``'s shape.
STATUS_JSON_VERSION = 1


class AdmissionState(StrEnum):
    """Where the node stands with its network's registry."""

    #: Registered: the registry admitted this node and lists it as live.
    ADMITTED = "admitted"
    #: Admitted before, but the registry did not answer the last round: serving from the cache.
    DEGRADED = "degraded"
    #: Not registered yet (first round pending, or the registry never answered).
    PENDING = "pending"
    #: The registry refused this node (revoked, key pinned elsewhere, no admission material).
    REFUSED = "refused"
    #: No registry at all (none configured and the embedded one could not start).
    NO_REGISTRY = "no_registry"


@dataclass(frozen=True, slots=True)
class Admission:
    """The node's admission: its state, under which mode, by what, from which registry.

    ``by`` names what admits it (``enrollment token``, ``endorsement``, ``open admission``);
    ``registry`` where it asked (a Redis URL without credentials and the namespace, or
    ``embedded``); ``reason`` and ``message`` the refusal's typed reason and text.
    """

    state: AdmissionState
    mode: str = ""
    by: str = ""
    registry: str = ""
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class CatchUpProgress:
    """A running pull from one peer (a catch-up, when long): records imported so far out of
    those its pages offered so far, since ``started``."""

    peer: str
    started: datetime
    imported: int
    offered: int


@dataclass(frozen=True, slots=True)
class NetworkSnapshot:
    """The network side's facts at one moment (built by ``lamarck.node.sharing``'s
    ``NetworkStatus.network_snapshot``)."""

    admission: Admission
    live_peers: tuple[str, ...] = ()
    #: Peer id -> when the last anti-entropy Sync with it completed.
    last_sync: Mapping[str, datetime] = field(default_factory=dict)
    #: Undelivered outbox rows, and when the oldest of them was enqueued.
    outbox_depth: int = 0
    outbox_oldest: datetime | None = None
    incognito: bool = False
    #: The Sync pulls running now, with how far each got.
    catching_up: tuple[CatchUpProgress, ...] = ()


#: The network side's facts, read on each status (``NetworkStatus.network_snapshot``).
NetworkSource = Callable[[], Awaitable[NetworkSnapshot]]


class ReputationSource(Protocol):
    """The reputation book as the operator reads it: the table, and one peer's history.

    The daemon adapts ``PostgresReputation`` to it (principals read from the registry).
    """

    async def rows(self) -> list[ReputationRow]:
        """One row per peer (score and parts P0..., band, pairwise and global trust...)."""
        ...

    async def history(self, node_id: str) -> list[ReputationEvent]:
        """The events about ``node_id``, newest first."""
        ...


@dataclass(frozen=True, slots=True)
class ReputationTop:
    """One row of the reputation top in the status."""

    node_id: str
    score: float
    band: str


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """Everything ``lamarck node status`` shows beyond ``node.json``."""

    node_id: str
    generated_at: datetime
    network: NetworkSnapshot | None
    quarantine_pending: Mapping[str, int]
    quarantine_total: int
    imports: Mapping[str, Mapping[str, int]]
    rejections: Mapping[str, int]
    warnings: tuple[Finding, ...] = ()
    reputation_top: tuple[ReputationTop, ...] = ()
    #: Where recall searches (None: a store without the index, the in-memory adapter).
    recall_index: RecallIndexState | None = None
    #: Node id -> human label of every node known (this one included): shown beside ids.
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def peer_serving(self) -> bool:
        """Whether the peer service may report SERVING (see :func:`peer_serving`)."""
        return peer_serving(self.network)


def peer_serving(network: NetworkSnapshot | None) -> bool:
    """True while the node is in its network: admitted, or admitted and degraded."""
    if network is None:
        return False
    return network.admission.state in (AdmissionState.ADMITTED, AdmissionState.DEGRADED)


def build_status(
    *,
    node_id: str,
    now: datetime,
    network: NetworkSnapshot | None,
    pending_reasons: Mapping[tuple[str, ...], int],
    rejection_reasons: Sequence[str],
    imports: Mapping[str, Mapping[str, int]],
    warnings: Sequence[Finding] = (),
    reputation: Sequence[ReputationRow] = (),
    top: int = 0,
    recall_index: RecallIndexState | None = None,
    labels: Mapping[str, str] | None = None,
) -> NodeStatus:
    """The status from plain values: the pending quarantine rows per set of reasons, the rejection
    log's reasons, import counts by result and reason, the health warnings, the
    reputation book (its ``top`` highest scores, ties by id), the recall index's state and
    the nodes' human labels by id."""
    held: Counter[str] = Counter()
    for reasons, count in pending_reasons.items():
        for reason in set(reasons):
            held[reason] += count
    best = sorted(reputation, key=lambda r: (-r.score, r.peer))[:top]
    return NodeStatus(
        node_id=node_id,
        generated_at=now,
        network=network,
        quarantine_pending=dict(sorted(held.items())),
        quarantine_total=sum(pending_reasons.values()),
        imports={k: dict(sorted(v.items())) for k, v in sorted(imports.items())},
        rejections=dict(sorted(Counter(rejection_reasons).items())),
        warnings=tuple(warnings),
        reputation_top=tuple(ReputationTop(r.peer, r.score, r.band.value) for r in best),
        recall_index=recall_index,
        labels=dict(sorted((labels or {}).items())),
    )


def _network_json(network: NetworkSnapshot, now: datetime) -> dict[str, Any]:
    """The network part of the status as JSON."""
    a = network.admission
    oldest = network.outbox_oldest
    return {
        "admission": {
            "state": a.state.value,
            "mode": a.mode,
            "by": a.by,
            "registry": a.registry,
            "reason": a.reason,
            "message": a.message,
        },
        "live_peers": list(network.live_peers),
        "last_sync": {peer: format_ts(at) for peer, at in sorted(network.last_sync.items())},
        "outbox": {
            "depth": network.outbox_depth,
            "oldest_at": format_ts(oldest) if oldest else None,
            "oldest_age_s": max(0.0, (now - oldest).total_seconds()) if oldest else None,
        },
        "incognito": network.incognito,
        "catching_up": [
            {
                "peer": c.peer,
                "started_at": format_ts(c.started),
                "imported": c.imported,
                "offered": c.offered,
                "records_per_s": round(c.imported / max((now - c.started).total_seconds(), 1.0), 1),
            }
            for c in sorted(network.catching_up, key=lambda c: c.peer)
        ],
    }


def status_to_json(status: NodeStatus) -> dict[str, Any]:
    """The status as a JSON-ready dict (``GetStatus`` carries it as text)."""
    now = status.generated_at
    return {
        "version": STATUS_JSON_VERSION,
        "node_id": status.node_id,
        "node_label": status.labels.get(status.node_id, ""),
        "labels": dict(status.labels),
        "generated_at": format_ts(now),
        "peer_serving": status.peer_serving,
        "network": _network_json(status.network, now) if status.network else None,
        "quarantine": {"pending": status.quarantine_total, "by_reason": status.quarantine_pending},
        "imports": {k: dict(v) for k, v in status.imports.items()},
        "rejections": dict(status.rejections),
        "warnings": [
            {"code": f.code, "severity": f.severity.value, "message": f.message}
            for f in status.warnings
        ],
        "reputation_top": [
            {"node_id": r.node_id, "score": r.score, "band": r.band} for r in status.reputation_top
        ],
        "recall_index": (
            None
            if (index := status.recall_index) is None
            else {"state": index.status.value, "lessons": index.lessons, "max_rows": index.max_rows}
        ),
    }


def _recall_index_row(index: Mapping[str, Any]) -> str:
    """Where recall searches, in words."""
    state, lessons, most = index["state"], index["lessons"], index["max_rows"]
    if state == RecallIndexStatus.ON:
        return f"in memory: {lessons} lessons (up to {most})"
    if state == RecallIndexStatus.NOT_READ:
        return f"not read yet: the next recall reads it (up to {most} lessons)"
    if state == RecallIndexStatus.OUTGROWN:
        return f"in Postgres: more than {most} lessons, the index gave its memory back"
    return "in Postgres: the index is off (max_rows 0)"


def _counts(counts: Mapping[str, Any]) -> str:
    """``a 3, b 1`` or ``-``."""
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


def _quarantine_row(pending: int, by_reason: Mapping[str, int]) -> str:
    """``3 pending (reason n, ...)``; when a record's several reasons make the reasons add up
    to more than the records, the row says so instead of leaving the sums to disagree."""
    if not pending:
        return "0 pending"
    several = sum(by_reason.values()) > pending
    note = "; a record can be held for several reasons, each counted" if several else ""
    record = "record" if pending == 1 else "records"
    return f"{pending} {record} pending (by reason: {_counts(by_reason)}{note})"


def status_rows(status: Mapping[str, Any]) -> dict[str, str]:
    """``status_to_json``'s dict as labelled one-line facts (the CLI's table, the console's
    overview)."""
    rows: dict[str, str] = {}
    labels: Mapping[str, str] = status.get("labels") or {}  # absent from an older node's

    def peer(node_id: str) -> str:
        return with_label(node_id, labels.get(node_id, ""))

    network = status.get("network")
    if network is None:
        rows["admission"] = "no network side (sharing not started)"
    else:
        a = network["admission"]
        why = f": {a['reason']} ({a['message']})" if a["reason"] else ""
        by = f" by {a['by']}" if a["by"] else ""
        rows["admission"] = f"{a['state']}{why} (mode {a['mode'] or '-'}{by})"
        rows["registry"] = a["registry"] or "-"
        peers = network["live_peers"]
        rows["live peers"] = f"{len(peers)}" + (
            f": {', '.join(peer(p) for p in peers)}" if peers else ""
        )
        rows["last sync"] = _counts({peer(p): at for p, at in network["last_sync"].items()})
        outbox = network["outbox"]
        age = outbox["oldest_age_s"]
        rows["outbox"] = f"{outbox['depth']} undelivered" + (
            f", oldest {age:.0f} s" if age is not None else ""
        )
        if network["incognito"]:
            rows["incognito"] = "yes: shares nothing"
        pulls = network.get("catching_up") or []  # absent from an older node's status
        if pulls:
            rows["catching up"] = "; ".join(
                f"from {peer(c['peer'])}: {c['imported']} of {c['offered']} offered so far"
                f" ({c['records_per_s']:.0f} records/s since {c['started_at']})"
                for c in pulls
            )
    quarantine = status["quarantine"]
    rows["quarantine"] = _quarantine_row(quarantine["pending"], quarantine["by_reason"])
    rows["imports"] = (
        "; ".join(f"{result}: {_counts(reasons)}" for result, reasons in status["imports"].items())
        or "-"
    )
    rows["rejections"] = _counts(status["rejections"])
    rows["warnings"] = (
        "; ".join(f"{w['severity']}: {w['message']}" for w in status["warnings"]) or "none"
    )
    rows["reputation top"] = (
        ", ".join(
            f"{peer(r['node_id'])} {r['score']:.3f} ({r['band']})" for r in status["reputation_top"]
        )
        or "-"
    )
    index = status.get("recall_index")  # absent from an older node's status
    if index:
        rows["recall search"] = _recall_index_row(index)
    return rows
