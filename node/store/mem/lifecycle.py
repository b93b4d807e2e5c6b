"""The in-memory ``StoreLifecycle``: nothing to open or close, units of work by snapshot,
and the counts."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from lamarck.domain.rows import LessonStatus
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import StoreLifecycle

__all__ = ["MemLifecycle"]


class MemLifecycle(MemTables, StoreLifecycle):
    """Migrations, units of work and counts in memory (part of ``InMemoryLessonStore``)."""

    async def migrate(self) -> None:
        """Nothing to create: the dicts are the schema."""

    async def close(self) -> None:
        """Nothing to release."""

    @contextlib.asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        """All or nothing: a failure inside the block restores what the store held before.

        Rows are frozen, so shallow copies are a faithful snapshot. (Writes other tasks
        make during the block are undone with it: this adapter serves tests and the
        simulator, where one unit of work runs at a time.)
        """
        if self._in_unit:
            yield
            return
        snapshot = (
            dict(self._lessons),
            dict(self._outcomes),
            dict(self._quarantine),
            list(self._rejections),
            list(self._events),
            dict(self._state),
        )
        self._in_unit = True
        try:
            yield
        except BaseException:
            (
                self._lessons,
                self._outcomes,
                self._quarantine,
                self._rejections,
                self._events,
                self._state,
            ) = snapshot
            raise
        finally:
            self._in_unit = False

    async def stats(self) -> dict[str, int]:
        """Counts: ``lessons_<status>`` for every status, outcomes, quarantine, rejections."""
        counts = {f"lessons_{status.value}": 0 for status in LessonStatus}
        for row in self._lessons.values():
            counts[f"lessons_{row.status.value}"] += 1
        counts["outcomes"] = len(self._outcomes)
        counts["quarantine_pending"] = sum(
            1 for q in self._quarantine.values() if q.state == "pending"
        )
        counts["quarantine"] = len(self._quarantine)
        counts["rejections"] = len(self._rejections)
        return counts
