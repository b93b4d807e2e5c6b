"""``lamarck.operator``: the Python SDK for a node's OperatorService (quarantine review).

An operator writes::

    from lamarck.operator import OperatorClient

    with OperatorClient.from_home("~/.lamarck") as op:
        for entry in op.list_quarantine():
            print(entry.id, entry.reasons, entry.content_preview)
        op.approve(entry.id, note="checked with the team")

``AsyncOperatorClient`` is the same API for asyncio; each call is written once there and
``OperatorClient`` runs it over a blocking channel (see :class:`lamarck.client.ServiceClient`).
Results are frozen dataclasses; states are lower-case strings (``"pending"``, ``"approved"``,
``"rejected"``). Addresses and the typed errors are those of :mod:`lamarck.client`; the
bearer token is the operator's (``<home>/operator.token``, found through ``node.json`` by
``from_home``), never the agent token: an unknown id raises ``NotFound``, deciding a decided row
``ConflictError`` (reason ``already_decided``), approving a record whose stored bytes no longer
verify ``VerificationError``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lamarck.client import AsyncServiceClient, ServiceClient, blocking
from lamarck.errors import InvalidRecord, LamarckError, NotFound
from lamarck.proto.timefmt import parse_ts
from lamarck.proto.v1 import operator_pb2, operator_pb2_grpc
from lamarck.reputation.scores import PeerBand
from lamarck.reputation.table import ReputationRow

__all__ = [
    "QUARANTINE_STATES",
    "AsyncOperatorClient",
    "BulkFailure",
    "BulkResult",
    "Decision",
    "OperatorClient",
    "PeerReputation",
    "QuarantineEntry",
    "QuarantinePage",
    "QuarantineRecord",
    "Rejection",
    "ReputationEventEntry",
    "ReputationTable",
]

#: The states a quarantined record can be in (``None`` in a filter means all of them).
QUARANTINE_STATES = ("pending", "approved", "rejected")

_STATE_TO_PB = {
    "pending": operator_pb2.QUARANTINE_STATE_PENDING,
    "approved": operator_pb2.QUARANTINE_STATE_APPROVED,
    "rejected": operator_pb2.QUARANTINE_STATE_REJECTED,
}
_STATE_FROM_PB = {v: k for k, v in _STATE_TO_PB.items()}


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    """One quarantined record as an operator reviews it."""

    id: str
    content_hash: str
    source_node_id: str
    reasons: tuple[str, ...]
    received_at: datetime
    state: str
    content_preview: str
    record_id: str
    # The operator's decision: when, by whom, with which note (None / "" while pending).
    decided_at: datetime | None = None
    decided_by: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class QuarantinePage:
    """One page of the quarantine and the token of the next ("" on the last page)."""

    entries: tuple[QuarantineEntry, ...]
    next_page_token: str


@dataclass(frozen=True, slots=True)
class QuarantineRecord:
    """A quarantined row with the exact signed bytes held (the record's canonical JSON)."""

    entry: QuarantineEntry
    record_json: bytes
    #: The quorum asked about the record, as JSON ("" when none was): state, votes,
    #: certificate.
    quorum_json: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """A row after an operator's decision; ``lesson_id`` is the stored lesson on approve."""

    entry: QuarantineEntry
    lesson_id: str


@dataclass(frozen=True, slots=True)
class BulkFailure:
    """A row a bulk decision could not decide (it stays pending), with the typed error's
    reason and message."""

    id: str
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class BulkResult:
    """What a bulk decision did: the rows decided, oldest first, and those it could not."""

    decisions: tuple[Decision, ...]
    failed: tuple[BulkFailure, ...]


#: Polls of a bulk job in a row that may end on the deadline before the node is deemed gone.
BULK_POLL_RETRIES = 3


@dataclass(frozen=True, slots=True)
class Rejection:
    """One refused record in the node's rejection log."""

    source_node_id: str
    reason: str
    content_hash: str
    received_at: datetime
    detail: str


@dataclass(frozen=True, slots=True)
class ReputationTable:
    """The node's reputation table: whose view, when, and one row per peer (in the order
    asked for)."""

    observer_node_id: str
    computed_at: datetime
    # When global trust was last recomputed (None: not yet).
    global_trust_computed_at: datetime | None
    rows: tuple[ReputationRow, ...]


@dataclass(frozen=True, slots=True)
class ReputationEventEntry:
    """One event of a peer's history: what happened, who established it, and why."""

    at: datetime
    kind: str
    # reality, operator, other_agent, documentation, internal, or protocol.
    source: str
    weight: float
    record_hash: str
    domain: str
    detail: str


@dataclass(frozen=True, slots=True)
class PeerReputation:
    """One peer's row and its events, newest first."""

    row: ReputationRow
    events: tuple[ReputationEventEntry, ...]


def _reputation_row(r: operator_pb2.ReputationRow) -> ReputationRow:
    return ReputationRow(
        peer=r.peer,
        principal=r.principal,
        band=PeerBand(r.band),
        score=r.score,
        parts=dict(r.parts),
        predictions=r.predictions,
        correct=r.correct,
        weighted_accuracy=r.weighted_accuracy if r.HasField("weighted_accuracy") else None,
        pairwise=r.pairwise_trust,
        global_trust=r.global_trust if r.HasField("global_trust") else None,
        accepted=r.records_accepted,
        rejected=dict(r.records_rejected),
        votes_right=r.votes_right,
        votes_wrong=r.votes_wrong,
        domains=dict(r.domains),
        expert_domains=tuple(r.expert_domains),
        last_seen=parse_ts(r.last_seen) if r.last_seen else None,
    )


def _reputation_table(r: operator_pb2.ReputationTableResponse) -> ReputationTable:
    at = r.global_trust_computed_at
    return ReputationTable(
        observer_node_id=r.observer_node_id,
        computed_at=parse_ts(r.computed_at),
        global_trust_computed_at=parse_ts(at) if at else None,
        rows=tuple(_reputation_row(x) for x in r.rows),
    )


def _event_entry(e: operator_pb2.ReputationEventEntry) -> ReputationEventEntry:
    return ReputationEventEntry(
        at=parse_ts(e.at),
        kind=e.kind,
        source=e.source,
        weight=e.weight,
        record_hash=e.record_hash,
        domain=e.domain,
        detail=e.detail,
    )


def _peer_reputation(r: operator_pb2.PeerReputationResponse) -> PeerReputation:
    events = tuple(_event_entry(e) for e in r.events)
    return PeerReputation(_reputation_row(r.row), events)


def _entry(e: operator_pb2.QuarantineEntry) -> QuarantineEntry:
    return QuarantineEntry(
        id=e.id,
        content_hash=e.content_hash,
        source_node_id=e.source_node_id,
        reasons=tuple(e.reasons),
        received_at=parse_ts(e.received_at),
        state=_STATE_FROM_PB.get(e.state, "unspecified"),
        content_preview=e.content_preview,
        record_id=e.record_id,
        decided_at=parse_ts(e.decided_at) if e.decided_at else None,
        decided_by=e.decided_by,
        note=e.note,
    )


def _rejection(r: operator_pb2.RejectionEntry) -> Rejection:
    return Rejection(
        source_node_id=r.source_node_id,
        reason=r.reason,
        content_hash=r.content_hash,
        received_at=parse_ts(r.received_at),
        detail=r.detail,
    )


def _list_request(
    state: str | None, page_size: int, page_token: str
) -> operator_pb2.ListQuarantineRequest:
    if state is None:
        pb_state = operator_pb2.QUARANTINE_STATE_UNSPECIFIED
    elif state in _STATE_TO_PB:
        pb_state = _STATE_TO_PB[state]
    else:
        raise InvalidRecord(
            f"unknown quarantine state {state!r} (one of {', '.join(QUARANTINE_STATES)})",
            reason="bad_state",
        )
    return operator_pb2.ListQuarantineRequest(
        state=pb_state, page_size=page_size, page_token=page_token
    )


def _decide_request(
    quarantine_id: str, approve: bool, note: str
) -> operator_pb2.DecideQuarantineRequest:
    decision = (
        operator_pb2.QUARANTINE_DECISION_APPROVE
        if approve
        else operator_pb2.QUARANTINE_DECISION_REJECT
    )
    return operator_pb2.DecideQuarantineRequest(id=quarantine_id, decision=decision, note=note)


def _page(r: operator_pb2.ListQuarantineResponse) -> QuarantinePage:
    return QuarantinePage(tuple(_entry(e) for e in r.entries), r.next_page_token)


def _shown(r: operator_pb2.ShowQuarantineResponse) -> QuarantineRecord:
    return QuarantineRecord(_entry(r.entry), bytes(r.record_json), r.quorum_json)


def _decided(r: operator_pb2.DecideQuarantineResponse) -> Decision:
    return Decision(_entry(r.entry), r.lesson_id)


class AsyncOperatorClient(AsyncServiceClient):
    """OperatorService for asyncio; use as ``async with AsyncOperatorClient(address) as op``."""

    stub_type = operator_pb2_grpc.OperatorServiceStub
    # The operator's credential, never the agent's: the node refuses OperatorService calls
    # that carry the agent token (PERMISSION_DENIED, ``operator_credential_required``).
    token_file = "operator.token"
    token_field = "operator_token_file"

    async def list_page(
        self, state: str | None = "pending", *, page_size: int = 0, page_token: str = ""
    ) -> QuarantinePage:
        """One page of quarantined rows in ``state`` (every state for ``None``), oldest first."""
        request = _list_request(state, page_size, page_token)
        return _page(await self._unary("ListQuarantine", request))

    async def list_quarantine(self, state: str | None = "pending") -> list[QuarantineEntry]:
        """Every quarantined row in ``state``, oldest first (follows the pages)."""
        out: list[QuarantineEntry] = []
        token = ""
        while True:
            page = await self.list_page(state, page_token=token)
            out.extend(page.entries)
            if not page.next_page_token:
                return out
            token = page.next_page_token

    async def show(self, quarantine_id: str) -> QuarantineRecord:
        """One row and the exact signed bytes held."""
        request = operator_pb2.ShowQuarantineRequest(id=quarantine_id)
        return _shown(await self._unary("ShowQuarantine", request))

    async def approve(self, quarantine_id: str, *, note: str = "") -> Decision:
        """Re-verify the held record, store it as an import, mark the row approved."""
        request = _decide_request(quarantine_id, True, note)
        return _decided(await self._unary("DecideQuarantine", request))

    async def reject(self, quarantine_id: str, *, note: str = "") -> Decision:
        """Mark the row rejected; nothing is stored."""
        request = _decide_request(quarantine_id, False, note)
        return _decided(await self._unary("DecideQuarantine", request))

    async def decide_bulk(
        self,
        reason: str,
        *,
        approve: bool,
        source: str = "",
        note: str = "",
        progress: Callable[[int, int], None] | None = None,
    ) -> BulkResult:
        """Approve (for ``tainted_source``: release) or reject every pending row held for
        ``reason``, of ``source`` when given.

        The node runs the work as its own job, to completion whatever happens to this
        client; this call polls it (``progress(done, total)`` after each reply) until it is
        finished. A poll that ends on its deadline is tried again, and a job the node forgot
        (it restarted) is started again: that decides only the rows still pending.
        """
        decision = _decide_request("", approve, note).decision
        job_id = ""
        decisions: list[Decision] = []
        got = 0  # entries received from the current job
        misses = 0
        while True:
            request = operator_pb2.DecideQuarantineBulkRequest(
                reason=reason,
                source_node_id=source,
                decision=decision,
                note=note,
                job_id=job_id,
                after=got,
            )
            try:
                r = await self._unary("DecideQuarantineBulk", request)
            except NotFound as e:
                if not job_id or e.reason != "unknown_job":
                    raise
                job_id, got = "", 0  # forgotten: a new job takes what is left
                continue
            except LamarckError as e:
                misses += 1
                if e.reason != "deadline_exceeded" or misses > BULK_POLL_RETRIES:
                    raise
                continue  # the job goes on at the node; poll it (or join it) again
            misses = 0
            if r.job_id != job_id:
                job_id, got = r.job_id, 0
            decisions.extend(
                Decision(_entry(e), i) for e, i in zip(r.entries, r.lesson_ids, strict=True)
            )
            got += len(r.entries)
            if progress is not None:
                progress(r.done, r.total)
            if r.finished:
                failed = tuple(BulkFailure(f.id, f.reason, f.detail) for f in r.failed)
                return BulkResult(tuple(decisions), failed)

    async def rejections(self, limit: int = 0) -> list[Rejection]:
        """The rejection log, newest first (``limit`` 0: the node's default)."""
        request = operator_pb2.ListRejectionsRequest(limit=limit)
        r = await self._unary("ListRejections", request)
        return [_rejection(x) for x in r.entries]

    async def reputation(self, sort: str = "score", domain: str = "") -> ReputationTable:
        """The node's reputation table, sorted by ``sort`` (score, global, pairwise, peer,
        last_seen), only peers with expertise in ``domain`` if given."""
        request = operator_pb2.ReputationTableRequest(sort=sort, domain=domain)
        return _reputation_table(await self._unary("GetReputation", request))

    async def peer_reputation(self, node_id: str, *, limit: int = 0) -> PeerReputation:
        """One peer's row and its events with reasons, newest first (``NotFound`` for a peer
        the node has no row for; ``limit`` 0: the node's default)."""
        request = operator_pb2.PeerReputationRequest(node_id=node_id, limit=limit)
        return _peer_reputation(await self._unary("GetPeerReputation", request))

    async def reset_reputation(self, node_id: str, *, note: str) -> PeerReputation:
        """Reset a peer's score to an admitted newcomer's (lifting a graylisting); ``note``
        (required) is kept in its history. The row after the reset and the one event added
        (``NotFound`` for a peer the node has no row for)."""
        request = operator_pb2.ResetReputationRequest(node_id=node_id, note=note)
        r = await self._unary("ResetReputation", request)
        return PeerReputation(_reputation_row(r.row), (_event_entry(r.event),))

    async def health(self) -> dict[str, Any]:
        """The node's health report as JSON (``lamarck.health.render.report_from_json``
        reads it back)."""
        r = await self._unary("GetHealth", operator_pb2.GetHealthRequest())
        return _json_object(r.report_json, "health report")

    async def status(self) -> dict[str, Any]:
        """The node's status as JSON (``lamarck.node.api.node_status.status_to_json``)."""
        r = await self._unary("GetStatus", operator_pb2.GetStatusRequest())
        return _json_object(r.status_json, "status")


def _json_object(text: str, what: str) -> dict[str, Any]:
    """A JSON object the node sent, or ``InvalidRecord``."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InvalidRecord(f"the node's {what} is not JSON: {e}", reason="bad_json") from e
    if not isinstance(data, dict):
        raise InvalidRecord(f"the node's {what} is not a JSON object", reason="bad_json")
    return data


class OperatorClient(ServiceClient[AsyncOperatorClient]):
    """OperatorService, blocking; use as ``with OperatorClient(address) as op`` (same API).

    Every call is :class:`AsyncOperatorClient`'s, run over a blocking channel.
    """

    async_type = AsyncOperatorClient

    list_page = blocking(AsyncOperatorClient.list_page)
    list_quarantine = blocking(AsyncOperatorClient.list_quarantine)
    show = blocking(AsyncOperatorClient.show)
    approve = blocking(AsyncOperatorClient.approve)
    reject = blocking(AsyncOperatorClient.reject)
    decide_bulk = blocking(AsyncOperatorClient.decide_bulk)
    rejections = blocking(AsyncOperatorClient.rejections)
    reputation = blocking(AsyncOperatorClient.reputation)
    peer_reputation = blocking(AsyncOperatorClient.peer_reputation)
    reset_reputation = blocking(AsyncOperatorClient.reset_reputation)
    health = blocking(AsyncOperatorClient.health)
    status = blocking(AsyncOperatorClient.status)

    def iter_quarantine(self, state: str | None = "pending") -> Iterator[QuarantineEntry]:
        """Every quarantined row in ``state``, oldest first, a page at a time."""
        token = ""
        while True:
            page = self.list_page(state, page_token=token)
            yield from page.entries
            if not page.next_page_token:
                return
            token = page.next_page_token
