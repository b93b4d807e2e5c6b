"""Writes the store gets after the agent's reply: claim embeddings and recall uses.

An agent waits on ``Remember`` and ``Recall``. Two of their writes need not be in that wait
(issue 17 §2, "nothing an agent waits for that it need not"):

* **A claim's embedding.** A claim (a lesson without evidence) is never in a prompt and is
  never contested; its vector serves only a recall that asks for claims and consolidation.
  The row is stored at once without it and the vector is written behind the reply, in
  batches (``LessonStore.set_embeddings`` sets the vector and nothing else, so a
  confirmation written meanwhile is kept).
* **A recall's use marks** (``mark_used``: last use and use count, which ranking and decay
  read; not a signed field).

Read-your-writes holds: every reader that needs a vector or a use mark (recall, outcome
learning, reconcile, contest) calls :meth:`WriteBehind.settle` first, which waits for what is
pending and, if the background write failed, writes it inline so the reader gets the
store's typed error rather than a silently stale answer. Nothing is dropped: a failed batch
stays pending, ``close`` (the node's stop) flushes, and a vector lost to a crash is found again
at start (``LessonStore.unembedded``, :meth:`WriteBehind.recover`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from lamarck.node.learning.write_behind import WriteBehindParams
from lamarck.node.store.port import LessonStore

__all__ = ["EmbedBatch", "WriteBehind", "WriteBehindParams"]

_log = logging.getLogger(__name__)

#: Embeds a batch of texts off the event loop: one row per text.
EmbedBatch = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]


class WriteBehind:
    """Pending claim embeddings and use marks, written by one background drain.

    ``embed_later`` / ``use_later`` queue and return at once; ``settle`` waits until nothing is
    pending (writing inline whatever the background could not); ``close`` flushes.
    """

    def __init__(self, store: LessonStore, embed: EmbedBatch, params: WriteBehindParams) -> None:
        self._store = store
        self._embed = embed
        self.params = params
        self._embeddings: dict[str, str] = {}
        self._uses: list[tuple[tuple[str, ...], datetime]] = []
        self._task: asyncio.Task[None] | None = None
        # One writer at a time: the drain and a reader writing inline must not both take the
        # same use marks (a use would count twice, another not at all).
        self._lock = asyncio.Lock()
        # Said once per failure streak, not for every batch of an outage.
        self._failing = False

    @property
    def pending(self) -> int:
        """Claims waiting for a vector plus recalls waiting for their use marks."""
        return len(self._embeddings) + len(self._uses)

    def embed_later(self, lesson_id: str, content: str) -> None:
        """Queue ``lesson_id``'s vector (of ``content``)."""
        self._embeddings[lesson_id] = content
        self._kick()

    def use_later(self, lesson_ids: Sequence[str], now: datetime) -> None:
        """Queue one use of each of ``lesson_ids`` at ``now``."""
        if lesson_ids:
            self._uses.append((tuple(lesson_ids), now))
            self._kick()

    async def settle(self) -> None:
        """Return once nothing is pending; raises the store's error if it cannot write."""
        if not self.pending and self._task is None:
            return
        task = self._task
        if task is not None:
            # Shielded: a cancelled reader must not cancel the writes other readers wait for.
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        while self.pending:
            await self._write_once()

    async def recover(self) -> int:
        """Queue the vectors a crash left unwritten (claimed or active rows without one)."""
        found = await self._store.unembedded(self.params.recover_limit)
        for lesson_id, content in found:
            self._embeddings.setdefault(lesson_id, content)
        if found:
            _log.info("re-embedding %d lessons stored without a vector", len(found))
            self._kick()
        return len(found)

    async def close(self) -> None:
        """Flush everything pending (the node's stop)."""
        await self.settle()

    def _kick(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._drain(), name="lamarck-write-behind"
            )

    async def _drain(self) -> None:
        try:
            while self.pending:
                try:
                    await self._write_once()
                except Exception as e:  # the store is down: the next reader retries inline
                    if not self._failing:
                        _log.warning("write-behind paused: %s (%d pending)", e, self.pending)
                    self._failing = True
                    return
                if self._failing:
                    _log.info("write-behind works again")
                self._failing = False
        finally:
            self._task = None

    async def _write_once(self) -> None:
        """Write one batch of vectors, then the use marks queued so far."""
        async with self._lock:
            await self._write_batch()

    async def _write_batch(self) -> None:
        if self._embeddings:
            batch = list(self._embeddings.items())[: self.params.batch]
            vectors = await self._embed([content for _, content in batch])
            await self._store.set_embeddings(
                [(lesson_id, vectors[k]) for k, (lesson_id, _) in enumerate(batch)]
            )
            for lesson_id, content in batch:
                # A newer content queued for the same id meanwhile stays pending.
                if self._embeddings.get(lesson_id) == content:
                    del self._embeddings[lesson_id]
        while self._uses:
            ids, at = self._uses[0]
            await self._store.mark_used(ids, at)
            self._uses.pop(0)
