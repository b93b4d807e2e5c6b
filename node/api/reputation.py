"""The reputation table as the node serves it: rows from the book, principals from the
registry, records accepted / rejected from the store; wire forms; Prometheus gauges.

``NodeReputation`` reads, on each call, the book (``PostgresReputation``: scores, pairwise and
global trust, predictions, votes, expertise, last seen), the registry's principals of the
peers it names, and the store's import tallies, and builds the rows with the pure
``lamarck.reputation.book.table_rows``. ``OperatorService.GetReputation`` /
``GetPeerReputation`` serve it (to operators only: ``PeerService.GetReputation`` tells a peer
nothing); ``lamarck reputation`` prints it. ``recompute_global_trust`` is what the node's
timer runs: EigenTrust, then the per-peer gauges.

The import tallies: imported lessons per source are counted by the store; rejections from the
rejection log's newest ``TALLY_MAX_ROWS`` rows (an operator's read, not a hot path), past which
the counts say "at least" (``ImportTallies.truncated``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol, runtime_checkable

from lamarck.errors import RegistryError
from lamarck.node import metrics
from lamarck.node.store.port import EventLog, ImportedLessons
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import operator_pb2
from lamarck.reputation.book import ReputationBook
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.global_trust import GlobalTrust
from lamarck.reputation.table import ReputationRow

__all__ = [
    "TALLY_MAX_ROWS",
    "GlobalTrustBook",
    "GlobalTrustClock",
    "HasBook",
    "ImportTallies",
    "NodeReputation",
    "ReputationTable",
    "TableBook",
    "TallyReads",
    "event_source",
    "event_to_pb",
    "publish_metrics",
    "recompute_global_trust",
    "row_to_pb",
    "store_tallies",
]

_log = logging.getLogger(__name__)

#: Rejection log rows read to count the refusals per source and reason.
TALLY_MAX_ROWS = 50_000


class TableBook(Protocol):
    """What the table needs of the book (``PostgresReputation`` answers it)."""

    @property
    def book(self) -> ReputationBook:
        """The in-memory book (for when global trust was last recomputed)."""
        ...

    def rows(
        self,
        *,
        principal_of: Mapping[str, str],
        accepted: Mapping[str, int] | None = None,
        rejected: Mapping[str, Mapping[str, int]] | None = None,
        peers: Sequence[str] = (),
    ) -> list[ReputationRow]:
        """The operator table's rows."""
        ...

    async def history(self, node_id: str, limit: int = 100) -> list[ReputationEvent]:
        """``node_id``'s events, newest first."""
        ...


@runtime_checkable
class HasBook(Protocol):
    """A reputation adapter exposing its in-memory book (``PostgresReputation``)."""

    @property
    def book(self) -> ReputationBook:
        """The in-memory book."""
        ...


@runtime_checkable
class GlobalTrustBook(Protocol):
    """A book that recomputes global trust (``PostgresReputation``)."""

    def recompute_global_trust(
        self, now: datetime, summaries: Mapping[str, Mapping[str, float]] | None = None
    ) -> GlobalTrust:
        """EigenTrust over this node's own row and peers' verified summaries, anchored in the
        pre-trusted peers."""
        ...

    def rows(
        self,
        *,
        principal_of: Mapping[str, str],
        accepted: Mapping[str, int] | None = None,
        rejected: Mapping[str, Mapping[str, int]] | None = None,
        peers: Sequence[str] = (),
    ) -> list[ReputationRow]:
        """The operator table's rows."""
        ...


@runtime_checkable
class GlobalTrustClock(Protocol):
    """A table that says when global trust was last recomputed (``NodeReputation``)."""

    @property
    def global_trust_at(self) -> datetime | None:
        """When global trust was last recomputed (``None``: never)."""
        ...


@runtime_checkable
class ReputationTable(Protocol):
    """The table as ``OperatorService`` serves it."""

    async def rows(self) -> list[ReputationRow]:
        """One row per peer, sorted by id."""
        ...

    async def history(self, node_id: str, limit: int = 100) -> list[ReputationEvent]:
        """``node_id``'s events, newest first."""
        ...


@dataclass(frozen=True, slots=True)
class ImportTallies:
    """Records imported per source, and refused per source and reason."""

    accepted: Mapping[str, int] = field(default_factory=dict)
    rejected: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # True when the rejection log had more than TALLY_MAX_ROWS rows: its counts are lower bounds.
    truncated: bool = False


class TallyReads(ImportedLessons, EventLog, Protocol):
    """The store's parts the import tallies read: imports per source and the rejection log."""


async def store_tallies(store: TallyReads, max_rows: int = TALLY_MAX_ROWS) -> ImportTallies:
    """Count imported lessons (every version) per source and rejections per source and reason.

    The imports are counted by the store (exact); the rejection log's newest ``max_rows``."""
    accepted = await store.imported_per_source()
    rows = await store.list_rejections(max_rows)
    truncated = len(rows) >= max_rows
    rejected: dict[str, dict[str, int]] = {}
    for row in rows:
        by_reason = rejected.setdefault(row.source_node_id, {})
        by_reason[row.reason] = by_reason.get(row.reason, 0) + 1
    return ImportTallies(accepted, rejected, truncated)


Principals = Callable[[Sequence[str]], Awaitable[Mapping[str, str]]]


class NodeReputation:
    """The node's reputation table: book + registry principals + store tallies, per call.

    ``principals`` is the registry's ``principals`` (``None``: no registry, the column is
    empty); ``peers`` lists live peers so a peer with no events yet still has a row;
    ``tallies`` counts the store's imports and rejections. A registry outage leaves the
    principal column empty rather than failing the table.
    """

    def __init__(
        self,
        book: TableBook,
        *,
        principals: Callable[[], Principals | None] | None = None,
        peers: Callable[[], Awaitable[Sequence[str]]] | None = None,
        tallies: Callable[[], Awaitable[ImportTallies]] | None = None,
        history_limit: int = 100,
    ) -> None:
        self._book = book
        self._principals = principals or (lambda: None)
        self._peers = peers
        self._tallies = tallies
        self._history_limit = history_limit

    async def rows(self) -> list[ReputationRow]:
        """One row per peer the book, the tallies or the live peers name, sorted by id."""
        tallies = await self._tallies() if self._tallies is not None else ImportTallies()
        peers = list(await self._peers()) if self._peers is not None else []
        rows = self._book.rows(
            principal_of={}, peers=peers, accepted=tallies.accepted, rejected=tallies.rejected
        )
        principal_of = await self._principal_map([r.peer for r in rows])
        return [replace(r, principal=principal_of.get(r.peer, "")) for r in rows]

    @property
    def global_trust_at(self) -> datetime | None:
        """When the book last recomputed global trust (``None``: never)."""
        return self._book.book.global_trust_at

    async def history(self, node_id: str, limit: int = 0) -> list[ReputationEvent]:
        """``node_id``'s events, newest first (``limit`` 0: this table's default)."""
        return await self._book.history(node_id, limit or self._history_limit)

    async def _principal_map(self, names: Sequence[str]) -> Mapping[str, str]:
        lookup = self._principals()
        if lookup is None or not names:
            return {}
        try:
            return await lookup(names)
        except RegistryError as e:
            _log.warning("principals unavailable for the reputation table: %s", e)
            return {}


def row_to_pb(row: ReputationRow) -> operator_pb2.ReputationRow:
    """A table row in its wire form."""
    pb = operator_pb2.ReputationRow(
        peer=row.peer,
        principal=row.principal,
        band=row.band.value,
        score=row.score,
        parts=dict(row.parts),
        predictions=row.predictions,
        correct=row.correct,
        pairwise_trust=row.pairwise,
        records_accepted=row.accepted,
        records_rejected=dict(row.rejected),
        votes_right=row.votes_right,
        votes_wrong=row.votes_wrong,
        domains=dict(row.domains),
        expert_domains=list(row.expert_domains),
        last_seen=format_ts(row.last_seen) if row.last_seen else "",
    )
    if row.weighted_accuracy is not None:
        pb.weighted_accuracy = row.weighted_accuracy
    if row.global_trust is not None:  # unset: nobody has judged the peer yet
        pb.global_trust = row.global_trust
    return pb


def event_source(event: ReputationEvent) -> str:
    """Who established ``event`` (the validation hierarchy's level), or ``protocol``."""
    source = event.kind.source
    return "protocol" if source is None else source.value


def event_to_pb(event: ReputationEvent) -> operator_pb2.ReputationEventEntry:
    """One history event in its wire form."""
    return operator_pb2.ReputationEventEntry(
        at=format_ts(event.at),
        kind=event.kind.value,
        source=event_source(event),
        weight=event.weight,
        record_hash=event.record_hash,
        domain=event.domain,
        detail=event.detail,
    )


def publish_metrics(rows: Sequence[ReputationRow]) -> None:
    """Set the per-peer reputation gauges from ``rows`` (bounded: see ``metrics``)."""
    metrics.apply_reputation(
        [(r.peer, r.score, r.band.value, r.global_trust) for r in rows],
    )


def recompute_global_trust(
    book: GlobalTrustBook,
    now: datetime,
    summaries: Mapping[str, Mapping[str, float]] | None = None,
) -> GlobalTrust:
    """What the node's timer runs: recompute global trust over this node's row and the
    peers' ``summaries`` (by signer, in good standing), then refresh the gauges."""
    result = book.recompute_global_trust(now, summaries)
    if not result.converged:
        _log.warning(
            "global trust did not converge in %d iterations (residual %.3g)",
            result.iterations,
            result.residual,
        )
    publish_metrics(book.rows(principal_of={}))
    return result
