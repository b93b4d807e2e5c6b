"""The in-memory ``StateStore``: JSON documents by key."""

from __future__ import annotations

import json
from typing import Any

from lamarck.errors import StoreError
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import StateStore

__all__ = ["MemState"]


class MemState(MemTables, StateStore):
    """Node state documents in a dict (part of ``InMemoryLessonStore``)."""

    async def get_state(self, key: str) -> dict[str, Any] | None:
        """A copy of the document stored under ``key`` (a round trip through JSON, as the
        Postgres column gives), or ``None``."""
        raw = self._state.get(key)
        return None if raw is None else json.loads(json.dumps(raw))

    async def put_state(self, key: str, document: dict[str, Any]) -> None:
        """Store a JSON copy of ``document`` under ``key``; a value JSON cannot hold raises
        ``StoreError`` (``invalid_value``), as the jsonb column does."""
        try:
            copy = json.loads(json.dumps(document))
        except (TypeError, ValueError) as e:
            raise StoreError(f"state {key!r} is not JSON: {e}", reason="invalid_value") from e
        async with self._lock:
            self._state[key] = copy
