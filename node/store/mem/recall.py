"""The in-memory ``LessonRecall``: exact cosine search with numpy, embeddings and use marks."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from lamarck.domain.rows import LessonFilter, LessonStatus, RelevanceFloor, ScoredLesson, Vector
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import LessonRecall, checked_query
from lamarck.node.store.recall_index import exact_top_k

__all__ = ["MemRecall"]


class MemRecall(MemTables, LessonRecall):
    """Search and embeddings over the lesson dict (part of ``InMemoryLessonStore``)."""

    async def search(
        self, query: Vector, k: int, flt: LessonFilter, floor: RelevanceFloor | None = None
    ) -> list[ScoredLesson]:
        """Exact top-``k`` by cosine similarity among matching lessons that have an embedding.

        Ties are broken by id; ``flt.limit``/``offset`` do not apply (``k`` does).
        """
        if k <= 0:
            return []
        q = checked_query(query, self._dim)
        q = (q / np.linalg.norm(q)).astype(np.float32)
        rows = [r for r in self._matching(flt) if r.embedding is not None]
        if not rows:
            return []
        matrix = np.stack([r.embedding for r in rows if r.embedding is not None])
        norms = np.linalg.norm(matrix, axis=1)
        # A zero vector has no direction: Postgres returns NaN distance for it; never a hit.
        with np.errstate(divide="ignore", invalid="ignore"):
            sims = (matrix @ q) / norms
        ranked = exact_top_k(sims, [r.id for r in rows], k, floor)
        return [ScoredLesson(rows[i], s) for i, s in ranked]

    async def set_embeddings(self, vectors: Sequence[tuple[str, Vector]]) -> None:
        """Set each listed lesson's embedding only; unknown ids are skipped."""
        async with self._lock:
            # The same dimension check an insert makes, all before any is set.
            updated = [
                self._normalise(dataclasses.replace(row, embedding=vector))
                for lesson_id, vector in vectors
                if (row := self._lessons.get(lesson_id)) is not None
            ]
            for row in updated:
                self._lessons[row.id] = row

    async def unembedded(self, limit: int) -> list[tuple[str, str]]:
        """Claimed or active lessons with no embedding, oldest first."""
        rows = sorted(
            (
                r
                for r in self._lessons.values()
                if r.embedding is None and r.status in (LessonStatus.CLAIMED, LessonStatus.ACTIVE)
            ),
            key=lambda r: (r.created_at, r.id),
        )
        return [(r.id, r.content) for r in rows[: max(0, limit)]]

    async def mark_uses(self, uses: Sequence[tuple[Sequence[str], datetime]]) -> None:
        """One use of each lesson per entry; unknown ids are skipped. ``updated_at`` stays: a
        use is not a signed field, so it must not make a newer version of the record."""
        for lesson_ids, now in uses:
            for lesson_id in dict.fromkeys(lesson_ids):
                row = self._lessons.get(lesson_id)
                if row is not None:
                    # The latest use wins (a use mark written behind a reply may come late).
                    last = now if row.last_used is None else max(row.last_used, now)
                    self._lessons[lesson_id] = dataclasses.replace(
                        row, last_used=last, use_count=row.use_count + 1
                    )
