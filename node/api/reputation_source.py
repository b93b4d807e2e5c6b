"""The reputation book as the operator's status and console read it (``ReputationSource``).

``BookReputation`` adapts any book that builds the operator table's rows and serves a peer's
history (``PostgresReputation`` does both) to ``lamarck.node.api.node_status.ReputationSource``.
Principals come from the registry when the node has one (a callable read on each call).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.table import ReputationRow

__all__ = ["BookReputation", "TableBook"]


class TableBook(Protocol):
    """What ``BookReputation`` needs of a book (``PostgresReputation``'s methods)."""

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


class BookReputation:
    """A ``ReputationSource`` over a ``TableBook``; ``history_limit`` events per peer page."""

    def __init__(
        self,
        book: TableBook,
        *,
        history_limit: int,
        principal_of: Callable[[], Mapping[str, str]] | None = None,
        peers: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        self._book = book
        self._limit = history_limit
        self._principals = principal_of or dict
        self._peers = peers or tuple

    async def rows(self) -> list[ReputationRow]:
        """One row per peer the book or the live peer list names."""
        return self._book.rows(principal_of=self._principals(), peers=self._peers())

    async def history(self, node_id: str) -> list[ReputationEvent]:
        """``node_id``'s latest events, newest first."""
        return await self._book.history(node_id, self._limit)
