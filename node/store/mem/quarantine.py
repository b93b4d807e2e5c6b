"""The in-memory ``QuarantineStore``: records held for review, by id."""

from __future__ import annotations

import dataclasses

from lamarck.domain.rows import QuarantineRow
from lamarck.errors import ConflictError, NotFound, StoreError
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import QuarantineStore

__all__ = ["QUARANTINE_STATES", "MemQuarantine"]

#: The states a quarantined record can be in.
QUARANTINE_STATES = frozenset({"pending", "approved", "rejected"})


class MemQuarantine(MemTables, QuarantineStore):
    """Quarantined records in a dict (part of ``InMemoryLessonStore``)."""

    async def quarantine(self, row: QuarantineRow) -> None:
        """Hold a record for review; a second record with the same content hash is a no-op."""
        if row.state not in QUARANTINE_STATES:
            raise StoreError(f"unknown quarantine state {row.state!r}", reason="bad_state")
        async with self._lock:
            if any(q.content_hash == row.content_hash for q in self._quarantine.values()):
                return
            if row.id in self._quarantine:
                raise ConflictError(f"quarantine {row.id} exists", reason="duplicate_id")
            self._quarantine[row.id] = row

    async def list_quarantine(self, state: str | None = "pending") -> list[QuarantineRow]:
        """Quarantined records in ``state`` (all when ``None``), oldest first, ties by id."""
        rows = [q for q in self._quarantine.values() if state is None or q.state == state]
        return sorted(rows, key=lambda q: (q.received_at, q.id))

    async def get_quarantine(self, quarantine_id: str) -> QuarantineRow:
        """One quarantined record in any state, or ``NotFound``."""
        row = self._quarantine.get(quarantine_id)
        if row is None:
            raise NotFound(f"quarantine {quarantine_id} not found", id=quarantine_id)
        return row

    async def quarantine_of(self, content_hash: str) -> QuarantineRow | None:
        """The quarantined record holding ``content_hash``, or ``None``."""
        return next((q for q in self._quarantine.values() if q.content_hash == content_hash), None)

    async def quarantine_reasons(self, state: str = "pending") -> dict[tuple[str, ...], int]:
        """Quarantined records in ``state`` per set of reasons (sorted)."""
        out: dict[tuple[str, ...], int] = {}
        for row in self._quarantine.values():
            if row.state == state:
                key = tuple(sorted(set(row.reasons)))
                out[key] = out.get(key, 0) + 1
        return out

    async def set_quarantine_state(self, quarantine_id: str, state: str) -> QuarantineRow:
        """Mark a quarantined record approved, rejected or pending; returns the updated row."""
        if state not in QUARANTINE_STATES:
            raise StoreError(f"unknown quarantine state {state!r}", reason="bad_state")
        async with self._lock:
            current = self._quarantine.get(quarantine_id)
            if current is None:
                raise NotFound(f"quarantine {quarantine_id} not found", id=quarantine_id)
            updated = dataclasses.replace(current, state=state)
            self._quarantine[quarantine_id] = updated
            return updated
