"""Batched intake for catch-up: embed a batch at once, outside the lock, while the previous
batch is decided and stored.

``ImportPipeline.import_record`` embeds one record at a time (≈3–10 ms each with MiniLM, where
a batch of 32 costs ≈3–4 ms a record). ``BatchImporter.import_batch`` keeps every stage and
every decision of the pipeline — each record still goes through ``import_record`` in order —
and only moves the embedding: the contents of the next chunk are embedded in one call on a
worker thread while the current chunk runs through the pipeline, and the pipeline's embedder
(a ``PrimedEmbedder`` around the real one) answers from those vectors. A record the pipeline
then refuses or finds duplicate wastes its vector, nothing else; a shipped vector is never
read (only the record's ``content`` is embedded, by this node's model).

The pipeline must be built with the ``PrimedEmbedder`` for this to help; with any other
embedder ``import_batch`` is still correct, only not faster. The node builds its one embedder
as a ``PrimedEmbedder`` (the daemon), so every pipeline and the lesson service share it.

Callers that receive records one at a time (a Sync page handed to ``sync_step``, a bundle
streamed line by line) use a ``Prefetch``: ``add`` the records as they arrive, ``await
ready(raw)`` before each ``import_record``; the chunk holding that record is embedded (one
call) and the next chunk starts on a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lamarck.domain.embedder import Embedder, Vectors
from lamarck.domain.rows import LessonFilter
from lamarck.errors import ConfigError, StoreError
from lamarck.node.heap import release_memory
from lamarck.node.importing.pipeline import (
    ExpectedHook,
    ImportPipeline,
    ImportResult,
    ImportSource,
)
from lamarck.node.store.port import LessonStore
from lamarck.params_checks import check_finite, check_rule
from lamarck.policy.filters import Filter, texts_with_content
from lamarck.proto.limits import DEFAULT_LIMITS, too_deep

__all__ = [
    "BatchImportParams",
    "BatchImporter",
    "Prefetch",
    "PrimedEmbedder",
    "Progress",
    "record_content",
    "record_operation",
    "record_texts",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchImportParams:
    """How a batch import is cut: records embedded per call, and the primed-vector bound."""

    #: Records whose contents are embedded in one call (one chunk ahead of the pipeline).
    chunk: int = 64
    #: Most vectors the primed embedder holds (two chunks in flight, with room to spare).
    max_primed: int = 4096
    #: Records between two progress lines of a long catch-up (logs; node status).
    progress_every: int = 1000
    #: Records queued ahead before an import counts as long and takes the long-run
    #: measures: the embedder's bulk set-up (``Embedder.bulk``) and, when it also brings at
    #: least ``bulk_store_share`` of what the store holds, the store's ``bulk_load`` (its
    #: vector index down until the import ends, then built once).
    bulk_at: int = 2000
    #: Incoming records per stored lesson above which rebuilding the vector index once
    #: costs less than inserting into it record by record (a build reads every row).
    bulk_store_share: float = 0.5
    #: Lessons stored since the query planner's statistics were gathered, as a share of the
    #: rows they count, from which an import's end gathers them again
    #: (``LessonStore.refresh_statistics``): autovacuum's own default rule, applied at once
    #: rather than on its next round (a minute later), so that recalls right after a
    #: catch-up search through the vector index.
    analyze_share: float = 0.1

    def __post_init__(self) -> None:
        """Refuse a value no import could use (``ConfigError`` naming the field)."""
        for name in ("bulk_store_share", "analyze_share"):
            share, value = f"BatchImportParams.{name}", getattr(self, name)
            check_finite(share, value)
            check_rule(value > 0, share, f"must be > 0, got {value}")
        for name in ("chunk", "max_primed", "progress_every", "bulk_at"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"BatchImportParams.{name} must be an int >= 1, got {value!r}")
        if self.max_primed < 2 * self.chunk:
            raise ConfigError("BatchImportParams.max_primed must hold two chunks (>= 2 * chunk)")


class PrimedEmbedder(Embedder):
    """An ``Embedder`` that answers from vectors computed ahead (``prime``), else the model.

    Thread-safe: ``prime`` runs on a worker thread while the pipeline's own ``embed`` calls
    run on others. A primed vector is used once and dropped; the store is bounded.
    """

    def __init__(self, inner: Embedder, params: BatchImportParams) -> None:
        """Wrap ``inner`` (the node's embedder); ``params.max_primed`` bounds what is held."""
        self._inner = inner
        self._params = params
        self._primed: dict[str, Vectors] = {}
        self._lock = threading.Lock()
        self._model_texts = 0

    @property
    def inner(self) -> Embedder:
        """The wrapped embedder."""
        return self._inner

    @property
    def params(self) -> BatchImportParams:
        """How imports that prime this embedder cut their batches."""
        return self._params

    @property
    def name(self) -> str:
        """The wrapped embedder's vector space."""
        return self._inner.name

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return self._inner.dim

    @property
    def primed(self) -> int:
        """How many vectors are held now."""
        with self._lock:
            return len(self._primed)

    @property
    def model_texts(self) -> int:
        """How many texts this embedder has had the wrapped one embed (primed or asked)."""
        with self._lock:
            return self._model_texts

    def bulk(self) -> contextlib.AbstractContextManager[object]:
        """The wrapped embedder's bulk set-up (a long catch-up primes through it)."""
        return self._inner.bulk()

    def embed_bulk(self, texts: Sequence[str]) -> Vectors:
        """The wrapped embedder's ``embed_bulk`` (no primed vectors: ``prime`` calls it)."""
        return self._inner.embed_bulk(texts)

    @property
    def bulk_parallel(self) -> int:
        """The wrapped embedder's ``bulk_parallel``."""
        return self._inner.bulk_parallel

    def inline(self, texts: Sequence[str]) -> bool:
        """The wrapped embedder's ``inline``: the node's one embedder is this wrapper, so
        without it every recall's task went to a worker thread (the port's default)."""
        return self._inner.inline(texts)

    def prime(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` in one call and hold their vectors (blocking: run it in a thread)."""
        with self._lock:
            wanted = [t for t in dict.fromkeys(texts) if t not in self._primed]
        if not wanted:
            return
        vectors = self._inner.embed_bulk(wanted)
        with self._lock:
            self._model_texts += len(wanted)
            room = self._params.max_primed - len(self._primed)
            for text, vector in list(zip(wanted, vectors, strict=True))[: max(room, 0)]:
                self._primed[text] = vector

    def forget(self, texts: Sequence[str] | None = None) -> None:
        """Drop the held vectors of ``texts`` (the end of a batch), or every one."""
        with self._lock:
            if texts is None:
                self._primed.clear()
            else:
                for text in texts:
                    self._primed.pop(text, None)

    def computed(self, texts: Sequence[str]) -> Vectors | None:
        """The primed vectors of ``texts`` (each used once) when every one is held, else
        what the wrapped embedder has at hand (its ``computed``), else None and nothing is
        used: a caller on the event loop takes them without a thread hop."""
        if isinstance(texts, str):
            return None
        items = list(texts)
        with self._lock:
            if all(text in self._primed for text in items):
                out = np.empty((len(items), self.dim), dtype=np.float32)
                for i, text in enumerate(items):
                    # A text twice in ``items`` was primed once: its one vector serves both.
                    out[i] = self._primed[text]
                for text in items:
                    self._primed.pop(text, None)
                return out
        # Outside the lock: the wrapped embedder's vectors are none of the primed ones.
        return self._inner.computed(items)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Primed vectors where held (each used once), the model for the rest."""
        items = list(texts)
        if isinstance(texts, str):
            return self._inner.embed(texts)  # the inner embedder refuses a bare str
        out = np.empty((len(items), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._lock:
            for i, text in enumerate(items):
                vector = self._primed.pop(text, None)
                if vector is None:
                    missing.append(i)
                else:
                    out[i] = vector
        if missing:
            out[missing] = self._inner.embed([items[i] for i in missing])
            with self._lock:
                self._model_texts += len(missing)
        return out


def _record_object(raw: bytes) -> dict[str, Any] | None:
    """``raw`` read as plain JSON when it is an object. Read ahead of the pipeline for what
    to prepare; the pipeline parses and checks the record itself (nothing here decides)."""
    if too_deep(raw, DEFAULT_LIMITS.max_depth):
        return None  # the pipeline refuses it (``too_deep``); no decoder may recurse into it
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def record_content(raw: bytes) -> str | None:
    """The ``content`` a record would be embedded from, or None when it has none (it will be
    refused by the pipeline's own checks)."""
    obj = _record_object(raw)
    content = obj.get("content") if obj is not None else None
    return content if isinstance(content, str) else None


def record_operation(raw: bytes) -> str | None:
    """The ``lesson.operation`` of a record, or None when it has none."""
    obj = _record_object(raw)
    lesson = obj.get("lesson") if obj is not None else None
    operation = lesson.get("operation") if isinstance(lesson, dict) else None
    return operation if isinstance(operation, str) else None


def record_texts(raw: bytes, filters: Filter | None = None) -> list[str]:
    """What the pipeline will embed for ``raw``: its content, then the texts ``filters`` read
    by meaning (``texts_to_embed``). Empty when it has no content. Only the content is read
    (the record is parsed and checked once, by the pipeline; nothing here decides
    anything)."""
    content = record_content(raw)
    if content is None:
        return []
    if filters is None:
        return [content]
    return texts_with_content(filters, content)


class Prefetch:
    """Embeds records a chunk ahead of a pipeline that imports them one at a time.

    ``add`` records as they arrive (a Sync page, a bundle's lines); ``await ready(raw)`` before
    importing each: its chunk is embedded in one call (awaited if still running) and the next
    chunk starts on a worker thread. Records are imported in the order they were added: once
    the first record of a chunk is ready, the vectors the chunks before it left unused (a
    record refused before it was embedded) are dropped. ``close`` waits for what runs and
    drops what was left unused. Without a primed embedder (or without ``params``) every call
    is a no-op: one record at a time, as before.

    Once ``params.bulk_at`` records have been queued the import is long: chunks are embedded
    inside the embedder's ``bulk()``, ``bulk_parallel`` of them at once, and, when the import
    brings at least ``bulk_store_share`` of what ``store`` holds, inside the store's
    ``bulk_load()`` (its vector index built once at ``close``). ``close`` must be awaited (it
    ends both).
    """

    @classmethod
    def ahead_of(
        cls,
        pipeline: ImportPipeline,
        embedder: PrimedEmbedder | None,
        params: BatchImportParams | None,
    ) -> Prefetch:
        """A prefetch for ``pipeline``'s imports: the texts its filters read embedded too, its
        store bulk-loaded on a long import, and each chunk's operations told to it
        (``ImportPipeline.expect``)."""
        return cls(embedder, params, pipeline.policy.filters, pipeline.store, pipeline.expect)

    def __init__(
        self,
        embedder: PrimedEmbedder | None,
        params: BatchImportParams | None,
        filters: Filter | None = None,
        store: LessonStore | None = None,
        expect: ExpectedHook | None = None,
    ) -> None:
        self._embedder = embedder if params is not None else None
        # Told of the operations of each chunk's records as the import reaches it, and of
        # none at ``close`` (``ImportPipeline.expect``).
        self._expect = expect
        self._expecting: int | None = None
        self._params = params
        self._chunk = params.chunk if params is not None else 1
        self._filters = filters
        self._store = store
        self._chunks: list[list[bytes]] = []
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._where: dict[bytes, int] = {}
        # The texts each started chunk primed, until the import has passed it.
        self._texts: dict[int, list[str]] = {}
        # Chunks before this one are passed: their records were imported.
        self._passed = 0
        self._queued = 0
        self._long = False
        # Chunks embedded at once: 1, or the embedder's ``bulk_parallel`` once long.
        self._ahead = 1
        self._bulk = contextlib.ExitStack()
        self._bulk_store = contextlib.AsyncExitStack()

    @property
    def long(self) -> bool:
        """Whether this import counts as long (the long-run measures are on)."""
        return self._long

    async def _go_long(self) -> None:
        params, embedder = self._params, self._embedder
        if self._long or params is None or embedder is None or self._queued < params.bulk_at:
            return
        self._long = True
        # Opening a second model session takes a few hundred ms: off the event loop.
        await asyncio.to_thread(self._bulk.enter_context, embedder.bulk())
        # As many chunks at once as the bulk set-up runs well, and no more than the primed
        # embedder holds (one more chunk is being taken by the pipeline meanwhile).
        room = params.max_primed // params.chunk - 1
        self._ahead = max(1, min(embedder.bulk_parallel, room))
        if self._store is not None:
            held = await self._store.count_lessons(LessonFilter(statuses=None))
            if self._queued >= params.bulk_store_share * held:
                await self._bulk_store.enter_async_context(self._store.bulk_load())

    def add(self, raws: Sequence[bytes]) -> None:
        """Queue ``raws`` (in import order) to be embedded ahead."""
        if self._embedder is None:
            return
        step = self._chunk
        # A record already queued (or twice in ``raws``) is embedded once.
        fresh = [r for r in dict.fromkeys(raws) if r not in self._where]
        self._queued += len(fresh)
        for start in range(0, len(fresh), step):
            index = len(self._chunks)
            chunk = fresh[start : start + step]
            self._chunks.append(chunk)
            for raw in chunk:
                self._where[raw] = index

    def _start(self, index: int) -> asyncio.Task[None] | None:
        embedder = self._embedder
        if embedder is None or index >= len(self._chunks):
            return None
        task = self._tasks.get(index)
        if task is None:
            texts = [t for raw in self._chunks[index] for t in record_texts(raw, self._filters)]
            self._texts[index] = texts
            # At most ``_ahead`` chunks at once: one (the model's query set-up already uses
            # every core it is given: two runs would only contend), or in a long import as
            # many as the bulk set-up runs side by side (each on one thread).
            before = self._tasks.get(index - self._ahead)
            task = asyncio.create_task(self._prime_after(before, texts))
            self._tasks[index] = task
        return task

    async def _prime_after(self, before: asyncio.Task[None] | None, texts: list[str]) -> None:
        if before is not None:
            # Its failure is its own chunk's to report (``ready`` awaits it); this one runs.
            await asyncio.gather(before, return_exceptions=True)
        assert self._embedder is not None  # only started with one
        await asyncio.to_thread(self._embedder.prime, texts)

    async def ready(self, raw: bytes) -> None:
        """Wait until ``raw``'s chunk is embedded; start the next chunk."""
        index = self._where.pop(raw, None)
        if index is None:
            return
        if not self._long:
            await self._go_long()
        self._pass(index)
        if self._expect is not None and index != self._expecting:
            self._expecting = index
            operations = map(record_operation, self._chunks[index])
            await self._expect([op for op in operations if op is not None])
        task = self._start(index)
        for ahead in range(1, self._ahead + 1):
            self._start(index + ahead)
        if task is not None:
            await task

    def _pass(self, index: int) -> None:
        """The import reached chunk ``index``: every record before it was imported, so what
        their chunks primed and nobody took never will be. Dropped now, not at ``close``:
        a long import of records refused before their embedding (bad signatures from a
        hostile peer) would otherwise fill the primed embedder, and the chunks after them
        would find no room and embed one record at a time. Their raws are let go too."""
        if index <= self._passed:
            return
        ahead = {t for j, texts in self._texts.items() if j >= index for t in texts}
        unused: list[str] = []
        for j in range(self._passed, index):
            # A text also primed for a later chunk was primed once for both: it takes it.
            unused.extend(t for t in self._texts.pop(j, ()) if t not in ahead)
            self._chunks[j] = []
            self._tasks.pop(j, None)
        self._passed = index
        if unused and self._embedder is not None:
            self._embedder.forget(unused)

    async def close(self) -> None:
        """Wait for running chunks, drop every vector this prefetch left unused and end the
        long-run measures (the store's vector index is built again here: 15 s for 67k
        lessons in the catch-up bench). Raises the store's ``StoreUnavailable`` if that
        build fails (the next start builds it). Then the store's statistics are refreshed
        when the import grew it by ``analyze_share`` (a failure there is logged: the
        import stands)."""
        running = [t for t in self._tasks.values() if not t.done()]
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        if self._expect is not None and self._expecting is not None:
            self._expecting = None
            await self._expect([])
        if self._embedder is not None and self._texts:
            self._embedder.forget([t for texts in self._texts.values() for t in texts])
            # The batches' activations are free now: give them back (the node's RSS).
            release_memory()
        self._chunks.clear()
        self._tasks.clear()
        self._where.clear()
        self._texts.clear()
        self._passed = 0
        self._long = False
        self._ahead = 1
        self._queued = 0
        try:
            await asyncio.to_thread(self._bulk.close)
        finally:
            await self._bulk_store.aclose()
        if self._store is not None and self._params is not None:
            try:
                await self._store.refresh_statistics(self._params.analyze_share)
            except StoreError as e:
                # What was imported is stored; only the planner waits for autovacuum.
                _log.warning("refreshing the store's statistics after an import failed: %s", e)


#: Told after each chunk: (records done, records in the batch).
Progress = Callable[[int, int], Awaitable[None] | None]


class BatchImporter:
    """``import_batch`` over one ``ImportPipeline`` built with ``embedder`` (see module doc)."""

    def __init__(
        self, pipeline: ImportPipeline, embedder: PrimedEmbedder, params: BatchImportParams
    ) -> None:
        """``embedder`` must be the pipeline's own (the node builds both at start-up)."""
        self._pipeline = pipeline
        self._embedder = embedder
        self._params = params

    async def import_batch(
        self,
        raws: Sequence[bytes],
        *,
        source: ImportSource,
        via_node_id: str = "",
        label: str = "",
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> list[ImportResult]:
        """Import ``raws`` in order, one result per record, exactly as ``import_record``
        would; the next chunk's contents are embedded while the current chunk is stored.

        Raises only ``StoreUnavailable`` (as ``import_record``): the results so far are lost
        to the caller, but every record before the failure is stored and a retry of the
        batch answers them as duplicates.
        """
        step = self._params.chunk
        results: list[ImportResult] = []
        # A dry run embeds nothing: nothing to prefetch.
        ahead = self.prefetch(enabled=not dry_run)
        ahead.add(raws)
        try:
            for raw in raws:
                await ahead.ready(raw)
                results.append(
                    await self._pipeline.import_record(
                        raw,
                        source=source,
                        via_node_id=via_node_id,
                        label=label,
                        dry_run=dry_run,
                    )
                )
                if progress is not None and (len(results) % step == 0 or len(results) == len(raws)):
                    told = progress(len(results), len(raws))
                    if told is not None:
                        await told
        finally:
            await ahead.close()
        return results

    def prefetch(self, *, enabled: bool = True) -> Prefetch:
        """A ``Prefetch`` over this importer's embedder that also embeds the texts the
        pipeline's filters read by meaning (a no-op one when not ``enabled``)."""
        embedder = self._embedder if enabled else None
        return Prefetch.ahead_of(self._pipeline, embedder, self._params)
