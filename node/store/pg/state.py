"""The Postgres ``StateStore``: the ``node_state`` table."""

from __future__ import annotations

import json
from typing import Any

from lamarck.errors import StoreError
from lamarck.node.store.pg.sql import PgTables, db_guard
from lamarck.node.store.port import StateStore

__all__ = ["PgState"]


class PgState(PgTables, StateStore):
    """The node's state documents in Postgres (part of ``PostgresLessonStore``)."""

    async def get_state(self, key: str) -> dict[str, Any] | None:
        """The document stored under ``key`` in ``node_state``, or ``None``."""
        async with db_guard():
            doc = await self.pool.fetchval("SELECT document FROM node_state WHERE key = $1", key)
        return None if doc is None else dict(doc)

    async def put_state(self, key: str, document: dict[str, Any]) -> None:
        """Store ``document`` under ``key`` (one upsert); a value JSON cannot hold raises
        ``StoreError`` (``invalid_value``)."""
        try:
            json.dumps(document)
        except (TypeError, ValueError) as e:
            raise StoreError(f"state {key!r} is not JSON: {e}", reason="invalid_value") from e
        async with db_guard():
            await self.pool.execute(
                "INSERT INTO node_state (key, document, updated_at) VALUES ($1, $2, now())"
                " ON CONFLICT (key) DO UPDATE SET document = EXCLUDED.document,"
                " updated_at = EXCLUDED.updated_at",
                key,
                document,
            )
