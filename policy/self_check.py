"""Would a peer running this node's own import rules refuse what this node is about to sign?

A node must never publish a record its own pipeline would refuse: every peer would reject it
and blame this node (a lesson whose evidence is dated 2999 costs its author reputation on
every honest node). :func:`own_record_refusal` answers the question for a signed record by
running the same stages a receiving peer runs, in the same order and with the same
parameters: (1) size and schema, (2) signature and hash, and the record's dates against the
skew (``SignedMemory.verify``), then the pure decision (``decide_import``: timestamps, access,
the anti-poisoning filters) over :class:`StrangerView` — a peer that has never seen the record
or its author, which is how the record first arrives anywhere. Stages that depend on what a
particular peer holds (duplicates, rollbacks, its reputation of us) are not ours to predict.
A quarantine is not a refusal: the receiving operator decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lamarck.errors import InvalidRecord, VerificationError
from lamarck.policy.chain import build_policy
from lamarck.policy.decision import (
    ImportOutcome,
    ImportParams,
    ImportPolicy,
    Incoming,
    decide_import,
)
from lamarck.policy.filters import (
    Corroboration,
    DeclaredTool,
    EstablishedLesson,
    KnownVersion,
    SourceStats,
)
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.reputation.transfer import TrackRecord

__all__ = ["StrangerView", "own_record_refusal"]


@dataclass(frozen=True, slots=True)
class StrangerView:
    """A receiving peer that knows nothing of the record or its author yet.

    ``recipient`` is the peer's id (a ``private`` record must name it); ``reputation`` the
    score a newly admitted author has there.
    """

    recipient: str
    initial_reputation: float

    @property
    def self_node_id(self) -> str:
        """The receiving peer's id."""
        return self.recipient

    def reputation(self, node_id: str) -> float:
        """A new author's score."""
        return self.initial_reputation

    def track_record(self, node_id: str) -> TrackRecord:
        """A new author's record: nothing judged yet (on probation)."""
        return TrackRecord()

    def corroboration(self, record: MemoryV2) -> Corroboration:
        """No votes, no local outcomes."""
        return Corroboration()

    def established_lessons(
        self, operation: str, domain: str, environment: str
    ) -> Sequence[EstablishedLesson]:
        """No lessons of its own."""
        return ()

    def source_history(self, node_id: str) -> SourceStats:
        """Never seen the author publish."""
        return SourceStats()

    def declared_tool(self, tool: str) -> DeclaredTool | None:
        """No tool registry: the peer declares the tools this node's own settings declare
        (``FilterParams.declared_tools``, which the filters carry), and no other."""
        return None

    def known_versions(self, record_id: str) -> Sequence[KnownVersion]:
        """No versions held."""
        return ()

    def previously_rejected(self, content_hash: str) -> str | None:
        """Never rejected it."""
        return None


def own_record_refusal(
    raw: bytes,
    *,
    params: ImportParams,
    now: datetime,
    recipient: str = "",
    policy: ImportPolicy | None = None,
) -> str | None:
    """The reason a stranger peer's import pipeline would refuse ``raw``, or ``None``.

    ``params`` are this node's own import parameters (the same skew, filters and limits its
    pipeline applies to what it receives). ``recipient`` is the peer the record goes to when
    it is ``private``. ``policy``: the checks built from ``params`` (the publisher builds
    them once; None builds them here, for a one-off check).
    """
    try:
        signed = SignedMemory.from_json(raw)
        signed.verify(now, params.max_future_skew_s)
    except (InvalidRecord, VerificationError) as e:
        return e.reason
    view = StrangerView(recipient, params.reputation.initial_score)
    incoming = Incoming(record=signed.memory, content_hash=signed.content_hash)
    checks = policy if policy is not None else build_policy(params)
    decision = decide_import(incoming, view, params, now, checks)
    if decision.outcome is ImportOutcome.REJECT:
        return decision.reason or "rejected"
    return None
