"""What the servicers read of the node's network side, as ports.

``lamarck.node.sharing`` builds the network side (``Sharing``) on top of this package: it
authenticates peers with ``peer_auth``, answers votes with ``peer_handlers`` and reports its
state as ``node_status`` facts. The servicers here read it back through these protocols, each
the part it needs (the PeerService only ``PeerSide``), so this package never imports the one
above it; ``Sharing`` and its parts satisfy them as they stand.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from lamarck.consensus.certificate import QuorumCertificate
from lamarck.domain.rows import QuarantineRow
from lamarck.gossip.publisher import GossipParams
from lamarck.node.api.node_status import NetworkSnapshot
from lamarck.node.api.ready import Ready
from lamarck.proto.outcome import Outcome
from lamarck.reputation.events import ReputationEvent

if TYPE_CHECKING:
    from lamarck.node.api.peer_handlers import PublishDeps
    from lamarck.node.importing.pipeline import ImportPipeline

__all__ = [
    "AttestationAnswer",
    "AttestationsSide",
    "MembershipSide",
    "NetworkSide",
    "PeerSide",
    "QuorumSide",
    "StatusSide",
    "TaintSide",
    "serving_pipeline",
]


class AttestationAnswer(Protocol):
    """What became of one received attestation."""

    @property
    def content_hash(self) -> str: ...
    @property
    def kept(self) -> bool: ...
    @property
    def reason(self) -> str: ...


class AttestationsSide(Protocol):
    """The node's outcome attestations: received from peers, made on outcomes, offered."""

    def receive(self, raws: Sequence[bytes]) -> Awaitable[Sequence[AttestationAnswer]]: ...
    def on_outcome(
        self, outcome: Outcome, reality: Sequence[ReputationEvent]
    ) -> Awaitable[tuple[ReputationEvent, ...]]: ...
    def shareable(
        self, offered: Mapping[str, bytes], requester: str
    ) -> Awaitable[dict[str, bytes]]: ...


class QuorumSide(Protocol):
    """The quorum certificates the node holds and the rounds it runs."""

    def certificate(self, content_hash: str) -> QuorumCertificate | None: ...
    def certificate_bytes(self, content_hash: str) -> bytes | None: ...
    def describe(self, content_hash: str) -> str: ...


class TaintSide(Protocol):
    """Releases a lesson the taint sweep took out."""

    def release(self, row: QuarantineRow, note: str, actor: str) -> Awaitable[str]: ...


class MembershipSide(Protocol):
    """The registry's view of the nodes known, and the peers it already authenticated."""

    def labels(self) -> dict[str, str]: ...
    def known_peer(self, metadata: Any) -> str | None: ...


class PeerSide(Protocol):
    """What the PeerService reads of the network side (``lamarck.node.sharing.PeerIntake``):
    who the caller is, where its records go, and what a Sync offers it."""

    @property
    def params(self) -> GossipParams: ...
    @property
    def rng(self) -> random.Random: ...
    @property
    def publish_deps(self) -> PublishDeps | None: ...
    @property
    def attestations(self) -> AttestationsSide: ...
    @property
    def quorum(self) -> QuorumSide: ...
    def authenticate(self, metadata: Any, claimed: str, channel: str | None) -> Awaitable[str]: ...
    def shareable(
        self, requester: str, projects: Sequence[str] = ()
    ) -> Awaitable[dict[str, bytes]]: ...
    def trust_summaries(self) -> list[bytes]: ...


class StatusSide(Protocol):
    """The network side's facts for the node's status."""

    def network_snapshot(self) -> Awaitable[NetworkSnapshot]: ...


class NetworkSide(Protocol):
    """The network side the servicers read (``lamarck.node.sharing.Sharing``), by part."""

    @property
    def params(self) -> GossipParams: ...
    @property
    def incognito(self) -> bool: ...
    @property
    def pipeline(self) -> ImportPipeline | None: ...
    @property
    def attestations(self) -> AttestationsSide: ...
    @property
    def quorum(self) -> QuorumSide: ...
    @property
    def taint(self) -> TaintSide: ...
    @property
    def membership(self) -> MembershipSide: ...
    @property
    def peers(self) -> PeerSide: ...
    @property
    def status(self) -> StatusSide: ...


def serving_pipeline(gate: Ready[Any], network: Ready[NetworkSide]) -> Callable[[], ImportPipeline]:
    """The node's one import pipeline (every record from another node enters by it), read per
    call: ``StoreUnavailable(reason="starting")`` until the network side has built it and
    while ``gate`` (the store) is withdrawn."""

    def get() -> ImportPipeline:
        side = network.peek()
        pipeline = side.pipeline if side is not None else None
        if pipeline is None or not gate.is_set:
            raise gate.unavailable()
        return pipeline

    return get
