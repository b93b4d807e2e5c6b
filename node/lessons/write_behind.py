"""Writes the store gets after the agent's reply: new lessons' embeddings and recall uses.

An agent waits on ``Remember``, ``RecordOutcome`` and ``Recall``. Some of their writes need
not be in that wait ("nothing an agent waits for that it need not"):

* **A new lesson's embedding**: a claim's (a lesson without evidence, never in a prompt and
  never contested) and a lesson an outcome teaches. The row is stored at once without it and
  the vector is written behind the reply, in batches (``LessonRecall.set_embeddings`` sets the
  vector and nothing else, so a confirmation written meanwhile is kept). A row written inside
  a unit of work is queued only once that unit commits (:meth:`WriteBehind.until_commit`):
  before, another connection cannot see it, and the vector's UPDATE would find no row.
* **A recall's use marks** (``mark_used``: last use and use count, which ranking and decay
  read; not a signed field).

Read-your-writes holds: every reader that needs vectors or use marks calls
:meth:`WriteBehind.settle` (everything), :meth:`WriteBehind.settle_vectors` (the vectors of the
rows it reads) or :meth:`WriteBehind.settle_marks` first, which wait for what is pending and,
if the background write failed, write it inline so the reader gets the store's typed error
rather than a silently stale answer. A recall may bound its wait
(``WriteBehindParams.recall_settles_at_most``): it embeds the newest queued rows with its task
(:meth:`newest`, :meth:`write_embedded`; one the drain already holds is written by the drain's
batch first, so the newest rows are always searchable after it) and says how many it could not
search; after a burst (``recall_burst_above``) it embeds none. Nothing is
dropped: a failed batch stays pending,
``close`` (the node's stop) flushes, and a vector lost to a crash is found again at start
(``LessonRecall.unembedded``, :meth:`WriteBehind.recover`).

Every write runs outside the caller's unit of work (a fresh context): the rows it touches
are already committed, and a caller's rollback must not undo a write this queue counts as
done.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
)
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from lamarck.errors import StoreError
from lamarck.learning.write_behind import WriteBehindParams
from lamarck.node.store.port import LessonRecall

__all__ = ["EmbedBatch", "WriteBehind", "WriteBehindParams"]

_log = logging.getLogger(__name__)

#: Embeds a batch of texts off the event loop: one row per text.
EmbedBatch = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]


_T = TypeVar("_T")


async def _outside(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` in a fresh context: no unit of work of the caller's is joined. Shielded:
    a cancelled caller must not stop a write halfway (a use mark written but still queued
    would count twice)."""
    task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
    return await asyncio.shield(task)


class WriteBehind:
    """Pending lesson embeddings and use marks, written by one background drain.

    ``embed_later`` / ``use_later`` queue and return at once; ``settle`` waits until nothing is
    pending (writing inline whatever the background could not); ``close`` flushes.
    """

    def __init__(
        self,
        store: LessonRecall,
        embed: EmbedBatch,
        params: WriteBehindParams,
        *,
        release: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._embed = embed
        # Called off the loop once vectors were embedded and nothing is left to embed: gives
        # the model's freed activations back to the system (the node's resident memory). A
        # reader that embedded inline leaves it to a background task, not to its own wait.
        self._release = release
        self._embedded = False  # since the last release
        self._releasing: asyncio.Task[None] | None = None
        self.params = params
        self._embeddings: dict[str, str] = {}
        # The queued lessons that are claims: no search without claims needs their vector.
        self._claims: set[str] = set()
        self._uses: list[tuple[tuple[str, ...], datetime]] = []
        self._task: asyncio.Task[None] | None = None
        # One writer of each kind at a time: the drain and a reader writing inline must not
        # both take the same use marks (a use would count twice, another not at all) or embed
        # the same rows twice. Two locks: a reader that needs only the marks does not wait
        # for a batch of vectors.
        self._vector_lock = asyncio.Lock()
        # The rows of the vector batch being embedded now: a reader embedding rows itself
        # (``newest``) leaves these to that batch.
        self._in_hand: set[str] = set()
        self._mark_lock = asyncio.Lock()
        # Rows queued inside ``until_commit`` in this task, released when it exits cleanly.
        self._held: contextvars.ContextVar[list[tuple[str, str, bool]] | None] = (
            contextvars.ContextVar("lamarck_write_behind_held", default=None)
        )
        # Said once per failure streak, not for every batch of an outage.
        self._failing = False
        # Ends the drain's wait for quiet early: a reader waits (``_urgent``: the drain then
        # runs until nothing is pending) or the queue is full (``_full``).
        self._wake = asyncio.Event()
        self._urgent = False
        # When the last write was queued (the loop's clock): the drain waits for quiet.
        self._last_queued = 0.0
        # Readers writing the vectors they wait for: the drain takes no batch meanwhile, so
        # a reader's batches do not alternate with batches of vectors it does not need.
        self._readers = 0
        self._no_readers = asyncio.Event()
        self._no_readers.set()

    @property
    def pending(self) -> int:
        """Lessons waiting for a vector plus recalls waiting for their use marks."""
        return len(self._embeddings) + len(self._uses)

    @property
    def holding(self) -> bool:
        """Whether this task is inside :meth:`until_commit` (a row's vector may wait for it)."""
        return self._held.get() is not None

    @property
    def queued(self) -> tuple[str, ...]:
        """The lessons whose vector is queued now (a search cannot find them yet)."""
        return tuple(self._embeddings)

    @property
    def queued_beyond_claims(self) -> tuple[str, ...]:
        """The queued lessons that are not claims: what a search of active lessons needs (a
        claim becomes active only by an outcome that had it in play, and an outcome settles
        the vectors of what it had in play first)."""
        return tuple(i for i in self._embeddings if i not in self._claims)

    def waits_for(self, lesson_id: str) -> bool:
        """Whether ``lesson_id``'s vector is queued (not held in a unit of work)."""
        return lesson_id in self._embeddings

    def embed_later(self, lesson_id: str, content: str, *, claim: bool = False) -> None:
        """Queue ``lesson_id``'s vector (of ``content``; ``claim``: the lesson is a claim);
        inside :meth:`until_commit`, once the block ends without an error."""
        held = self._held.get()
        if held is not None:
            held.append((lesson_id, content, claim))
            return
        self._embeddings[lesson_id] = content
        if claim:
            self._claims.add(lesson_id)
        else:
            self._claims.discard(lesson_id)
        self._queued_now()
        if self._full():
            self._wake.set()
        self._kick()

    @contextlib.contextmanager
    def until_commit(self) -> Iterator[None]:
        """Hold the vectors queued in the block until it ends without an error.

        Wrap a unit of work in it (``with behind.until_commit(): async with
        store.atomic(): ...``): its rows are visible to the drain's connection only once the
        unit commits, and a rolled-back row has nothing to embed.
        """
        held: list[tuple[str, str, bool]] = []
        token = self._held.set(held)
        try:
            yield
        finally:
            self._held.reset(token)
        for lesson_id, content, claim in held:
            self.embed_later(lesson_id, content, claim=claim)

    def use_later(self, lesson_ids: Sequence[str], now: datetime) -> None:
        """Queue one use of each of ``lesson_ids`` at ``now``."""
        if lesson_ids:
            self._uses.append((tuple(lesson_ids), now))
            self._queued_now()
            self._kick()

    async def settle(self) -> None:
        """Return once nothing is pending; raises the store's error if it cannot write."""
        if not self.pending and self._task is None:
            return
        task = self._task
        if task is not None:
            # No waiting for quiet while a reader waits.
            self._urgent = True
            self._wake.set()
            # Shielded: a cancelled reader must not cancel the writes other readers wait for.
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        while self.pending:
            await _outside(self._write_once())
        self._release_soon()

    async def settle_vectors(self, lesson_ids: Iterable[str] | None = None) -> None:
        """Return once none of ``lesson_ids`` (None: of the lessons queued now) waits for its
        vector; use marks and lessons queued later may still."""
        ids = list(self._embeddings if lesson_ids is None else lesson_ids)
        async with self.reading():
            while wanted := [i for i in ids if i in self._embeddings]:
                await _outside(self._write_vectors(wanted))
                ids = wanted
        self._release_soon()

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """A reader writes the vectors it needs: the drain takes no new batch meanwhile (the
        batch it has in hand runs to its end), so a row the reader chose stays its to write."""
        self._readers += 1
        self._no_readers.clear()
        try:
            yield
        finally:
            self._readers -= 1
            if not self._readers:
                self._no_readers.set()

    async def newest(self, lesson_ids: Sequence[str], at_most: int) -> list[tuple[str, str]]:
        """The ``at_most`` newest of ``lesson_ids`` still queued (queued order), with their
        contents: what a reader may embed itself (:meth:`write_embedded`) instead of waiting
        for the drain. Those of them in the batch the drain has in hand are not returned: this
        waits for that batch to be written (one batch, not the queue), so the newest rows are
        searchable after it either way. Call it inside :meth:`reading`, so the drain takes
        none of the returned rows before the reader writes them."""
        if at_most <= 0:
            return []
        queued = [i for i in lesson_ids if i in self._embeddings]
        chosen = queued[max(0, len(queued) - at_most) :]
        if held := [i for i in chosen if i in self._in_hand]:
            await self.settle_vectors(held)
        return [(i, self._embeddings[i]) for i in chosen if i in self._embeddings]

    def waiting(self, lesson_ids: Iterable[str]) -> int:
        """How many of ``lesson_ids`` still wait for their vector."""
        return sum(1 for i in lesson_ids if i in self._embeddings)

    async def write_embedded(
        self, rows: Sequence[tuple[str, str]], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Write the vectors a reader embedded for ``rows`` (from :meth:`newest`, one vector
        each, in order) and take them off the queue; a row whose content changed meanwhile,
        or that a writer took, is left alone."""
        batch = [
            (lesson_id, vectors[k])
            for k, (lesson_id, content) in enumerate(rows)
            if self._embeddings.get(lesson_id) == content and lesson_id not in self._in_hand
        ]
        if not batch:
            return
        await _outside(self._store.set_embeddings(batch))
        self._embedded = True
        for lesson_id, content in rows:
            if self._embeddings.get(lesson_id) == content:
                del self._embeddings[lesson_id]
                self._claims.discard(lesson_id)

    async def settle_marks(self) -> None:
        """Return once no use mark is pending (vectors may still be)."""
        while self._uses:
            await _outside(self._write_marks())

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
        if self._releasing is not None:
            await self._releasing

    def _release_soon(self) -> None:
        """Release in the background once nothing is left to embed (a running drain releases
        at its end itself: woken, it ends now if nothing else is pending)."""
        if self._release is None or not self._embedded or self._embeddings:
            return
        if self._task is not None:
            self._wake.set()
            return
        self._embedded = False
        self._releasing = asyncio.get_running_loop().create_task(
            asyncio.to_thread(self._release), context=contextvars.Context()
        )

    def _full(self) -> bool:
        """Whether so many vectors wait that the drain embeds without waiting for quiet."""
        p = self.params
        claims = len(self._claims)
        return len(self._embeddings) - claims >= p.max_pending or claims >= p.max_pending_claims

    def _queued_now(self) -> None:
        self._last_queued = asyncio.get_running_loop().time()

    async def _until_due(self) -> None:
        """Wait until the queue has been quiet for ``linger_s``, it is full (``_full``) or a
        reader waits: while the agent's calls keep coming, the model stays off the cores they
        need."""
        p = self.params
        loop = asyncio.get_running_loop()
        while self.pending and not self._urgent and not self._full():
            left = self._last_queued + p.linger_s - loop.time()
            if left <= 0:
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._wake.wait()

    def _kick(self) -> None:
        if self._task is None:
            # A fresh context: a drain started inside a caller's unit of work must not join it.
            self._task = asyncio.get_running_loop().create_task(
                self._drain(), name="lamarck-write-behind", context=contextvars.Context()
            )

    async def _drain(self) -> None:
        try:
            while self.pending:
                # Before every batch, not only the first: a burst that starts while the
                # drain writes gets the cores back after the batch in hand.
                await self._until_due()
                await self._no_readers.wait()
                if not self.pending:  # a reader wrote it all inline meanwhile
                    break
                try:
                    await self._write_once()
                except StoreError as e:  # the store is down: the next reader retries inline
                    if not self._failing:
                        _log.warning("write-behind paused: %s (%d pending)", e, self.pending)
                    self._failing = True
                    return
                if self._failing:
                    _log.info("write-behind works again")
                self._failing = False
            if self._embedded and self._release is not None and not self._embeddings:
                self._embedded = False
                await asyncio.to_thread(self._release)
        finally:
            self._task = None
            self._urgent = False
        # Queued while the memory was released, after this drain's loop had ended (not
        # reached when the drain failed, was cancelled or closed).
        if self.pending:
            self._kick()

    async def _write_once(self) -> None:
        """Write one batch of vectors, then the use marks queued so far."""
        if self._embeddings:
            await self._write_vectors(list(self._embeddings)[: self.params.batch])
        await self._write_marks()

    async def _write_vectors(self, lesson_ids: Sequence[str]) -> None:
        async with self._vector_lock:
            # Another writer may have written some while this one waited for the lock.
            batch = [(i, self._embeddings[i]) for i in lesson_ids if i in self._embeddings]
            batch = batch[: self.params.batch]
            if not batch:
                return
            self._in_hand = {lesson_id for lesson_id, _ in batch}
            try:
                vectors = await self._embed([content for _, content in batch])
                self._embedded = True
                await self._store.set_embeddings(
                    [(lesson_id, vectors[k]) for k, (lesson_id, _) in enumerate(batch)]
                )
            finally:
                self._in_hand = set()
            for lesson_id, content in batch:
                # A newer content queued for the same id meanwhile stays pending.
                if self._embeddings.get(lesson_id) == content:
                    del self._embeddings[lesson_id]
                    self._claims.discard(lesson_id)

    async def _write_marks(self) -> None:
        async with self._mark_lock:
            while self._uses:
                # Every recall's marks queued so far in one write (a burst of recalls leaves
                # hundreds); taken off only once written, so a failure leaves them queued.
                taken = len(self._uses)
                await self._store.mark_uses(self._uses[:taken])
                del self._uses[:taken]
