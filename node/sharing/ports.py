"""The ports the network side is built over, besides the ``LessonStore`` and the ``Outbox``."""

from __future__ import annotations

from typing import Protocol

from lamarck.node.api.reputation import GlobalTrustBook
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationSink, ReputationView

__all__ = ["ReputationBook"]


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
