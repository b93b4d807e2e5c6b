"""What the import pipeline answers: the path a record came by (``ImportSource``), the
result of one record (``ImportResult``) and the ``IMPORTS`` labels it counts under."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from lamarck.errors import LamarckError
from lamarck.policy.decision import ImportOutcome
from lamarck.proto.signed import SignedMemory

__all__ = [
    "QUORUM_ACTOR",
    "RESULT_LABELS",
    "UNCHARGED",
    "CertificateCheck",
    "ImportResult",
    "ImportSource",
]


class ImportSource(StrEnum):
    """By which path a record from another node arrived (every pipeline call names one)."""

    #: PeerService.Publish from an authenticated peer (``via_node_id``).
    PEER = "peer"
    #: An anti-entropy pull from a peer (``via_node_id``).
    SYNC = "sync"
    #: A bundle file given to AgentService.Import: a local source, no delivering peer.
    BUNDLE = "bundle"
    #: An operator approving a quarantined record (OperatorService.DecideQuarantine).
    APPROVAL = "approval"
    #: A record held ``awaiting_quorum`` stored once a quorum certificate for it verified.
    QUORUM = "quorum"


#: The actor the lesson event log names for a decision a quorum certificate made.
QUORUM_ACTOR = "quorum"


class CertificateCheck(Protocol):
    """Verifies a quorum certificate for a record, and keeps the ones that got one stored."""

    async def verify(self, signed: SignedMemory, certificate: bytes) -> int:
        """Check ``certificate`` for ``signed``; returns how many votes counted. Raises
        ``VerificationError`` / ``InvalidRecord`` (typed reasons) when it does not hold."""
        ...

    def keep(self, content_hash: str, certificate: bytes) -> None:
        """Remember the certificate of a record now stored (it travels on with the record)."""
        ...


#: ``IMPORTS`` ``result`` label counting, by reason, the refusals that charged nobody (they
#: are counted as ``rejected`` too): a fault no one provably made here.
UNCHARGED = "uncharged"

#: ``IMPORTS`` ``result`` label for each outcome.
RESULT_LABELS: dict[ImportOutcome, str] = {
    ImportOutcome.ACCEPT: "accepted",
    ImportOutcome.DUPLICATE: "duplicate",
    ImportOutcome.QUARANTINE: "quarantined",
    ImportOutcome.REJECT: "rejected",
}


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What became of one received record.

    ``content_hash`` is the sha256 hex of the exact bytes; ``lesson_id`` the local row that
    holds it (accept, and duplicate of a stored lesson); ``forward`` whether to gossip it on.
    """

    outcome: ImportOutcome
    content_hash: str
    reasons: tuple[str, ...] = ()
    record_id: str | None = None
    source_node_id: str | None = None
    lesson_id: str | None = None
    forward: bool = False
    error: LamarckError | None = None
    #: For an approval: the transfer rule of the decision applied (kept with the row).
    transfer_rule: str | None = None
    #: A quorum certificate given with the record verified and got it stored.
    certified: bool = False
    #: Why a certificate given with the record was refused (None: none given, or it held).
    certificate_error: LamarckError | None = None

    @property
    def reason(self) -> str:
        """The first reason ("" for accept and duplicate)."""
        return self.reasons[0] if self.reasons else ""
