"""The ports the network side is built over, besides the ``LessonStore`` and the ``Outbox``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from lamarck.node.api.node_status import Admission
from lamarck.node.api.reputation import GlobalTrustBook
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationSink, ReputationView

__all__ = ["LivePeers", "ReputationBook", "VoterRegistry"]


class ReputationBook(ReputationView, ReputationSink, GlobalTrustBook, Protocol):
    """The reputation port Sharing needs: scores and events, persisted by ``flush``, and
    global trust recomputed on its schedule."""

    @property
    def params(self) -> ReputationParams:
        """The threshold set the book scores with."""
        ...

    @property
    def pending(self) -> int:
        """Events emitted but not yet persisted."""
        ...

    async def flush(self) -> int:
        """Persist the pending events; returns how many were written."""
        ...

    def expertise(self, node_id: str, domain: str) -> float:
        """The node's expertise in ``domain`` now (voter choice prefers experts)."""
        ...


class LivePeers(Protocol):
    """The live peers as last seen in the registry, and where this node stands with it."""

    def live_peers(self) -> list[str]:
        """Ids of the live peers (other than this node)."""
        ...

    def admission(self) -> Admission:
        """Where this node stands with its registry."""
        ...


class VoterRegistry(Protocol):
    """What the quorum rounds read of the registry: the network and its principals."""

    def live_peers(self) -> list[str]:
        """Ids of the live peers (other than this node)."""
        ...

    def network_ids(self) -> list[str]:
        """This node and its live peers."""
        ...

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The registry's principals of the admitted ids among ``node_ids``."""
        ...
