"""The in-memory ``OutcomeStore``: outcomes by id."""

from __future__ import annotations

from collections.abc import Sequence

from lamarck.domain.rows import OutcomeRow
from lamarck.errors import ConflictError, NotFound
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import OutcomeStore

__all__ = ["MemOutcomes"]


class MemOutcomes(MemTables, OutcomeStore):
    """Outcomes in a dict (part of ``InMemoryLessonStore``)."""

    async def insert_outcome(self, outcome: OutcomeRow) -> None:
        """Store an outcome; a duplicate id raises ``ConflictError``."""
        async with self._lock:
            if outcome.id in self._outcomes:
                raise ConflictError(f"outcome {outcome.id} exists", reason="duplicate_id")
            self._outcomes[outcome.id] = outcome

    async def get_outcome(self, outcome_id: str) -> OutcomeRow:
        """Return one outcome or raise ``NotFound``."""
        try:
            return self._outcomes[outcome_id]
        except KeyError:
            raise NotFound(f"outcome {outcome_id} not found", id=outcome_id) from None

    async def existing_outcome_ids(self, ids: Sequence[str]) -> set[str]:
        """Return the subset of ``ids`` that are stored outcomes."""
        return {i for i in ids if i in self._outcomes}

    async def list_outcomes(self, limit: int = 100, offset: int = 0) -> list[OutcomeRow]:
        """Newest first (ties by id)."""
        rows = sorted(self._outcomes.values(), key=lambda o: o.id)
        rows.sort(key=lambda o: o.created_at, reverse=True)
        return rows[offset : offset + limit]
