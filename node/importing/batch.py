"""Batched intake for catch-up: embed a batch at once, outside the lock, while the previous
batch is decided and stored (issue 17 §4).

``ImportPipeline.import_record`` embeds one record at a time (≈3–10 ms each with MiniLM, where
a batch of 32 costs ≈3–4 ms a record). ``BatchImporter.import_batch`` keeps every stage and
every decision of the pipeline — each record still goes through ``import_record`` in order —
and only moves the embedding: the contents of the next chunk are embedded in one call on a
worker thread while the current chunk runs through the pipeline, and the pipeline's embedder
(a ``PrimedEmbedder`` around the real one) answers from those vectors. A record the pipeline
then refuses or finds duplicate wastes its vector, nothing else; a shipped vector is never
read (only the record's ``content`` is embedded, by this node's model).

The pipeline must be built with the ``PrimedEmbedder`` for this to help; with any other
embedder ``import_batch`` is still correct, only not faster.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lamarck.errors import ConfigError
from lamarck.node.embedding import Embedder, Vectors
from lamarck.node.importing.pipeline import ImportPipeline, ImportResult, ImportSource

__all__ = ["BatchImportParams", "BatchImporter", "PrimedEmbedder", "Progress", "record_content"]


@dataclass(frozen=True, slots=True)
class BatchImportParams:
    """How a batch import is cut: records embedded per call, and the primed-vector bound."""

    #: Records whose contents are embedded in one call (one chunk ahead of the pipeline).
    chunk: int = 64
    #: Most vectors the primed embedder holds (two chunks in flight, with room to spare).
    max_primed: int = 4096

    def __post_init__(self) -> None:
        """Refuse a value no import could use (``ConfigError`` naming the field)."""
        for name in ("chunk", "max_primed"):
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

    @property
    def inner(self) -> Embedder:
        """The wrapped embedder."""
        return self._inner

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

    def prime(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` in one call and hold their vectors (blocking: run it in a thread)."""
        with self._lock:
            wanted = [t for t in dict.fromkeys(texts) if t not in self._primed]
        if not wanted:
            return
        vectors = self._inner.embed(wanted)
        with self._lock:
            room = self._params.max_primed - len(self._primed)
            for text, vector in list(zip(wanted, vectors, strict=True))[: max(room, 0)]:
                self._primed[text] = vector

    def forget(self) -> None:
        """Drop every held vector (the end of a batch)."""
        with self._lock:
            self._primed.clear()

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
        return out


def record_content(raw: bytes) -> str | None:
    """The ``content`` a record would be embedded from, or None when it has none (it will be
    refused by the pipeline's own checks; nothing here decides anything)."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    content = obj.get("content") if isinstance(obj, dict) else None
    return content if isinstance(content, str) else None


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
        chunks = [list(raws[i : i + step]) for i in range(0, len(raws), step)]
        results: list[ImportResult] = []

        def texts(chunk: list[bytes]) -> list[str]:
            return [c for c in (record_content(r) for r in chunk) if c is not None]

        ahead: asyncio.Task[None] | None = None
        if chunks and not dry_run:
            ahead = asyncio.create_task(asyncio.to_thread(self._embedder.prime, texts(chunks[0])))
        try:
            for n, chunk in enumerate(chunks):
                if ahead is not None:
                    await ahead
                    ahead = None
                if n + 1 < len(chunks) and not dry_run:
                    following = texts(chunks[n + 1])
                    ahead = asyncio.create_task(asyncio.to_thread(self._embedder.prime, following))
                for raw in chunk:
                    results.append(
                        await self._pipeline.import_record(
                            raw,
                            source=source,
                            via_node_id=via_node_id,
                            label=label,
                            dry_run=dry_run,
                        )
                    )
                if progress is not None:
                    told = progress(len(results), len(raws))
                    if told is not None:
                        await told
        finally:
            if ahead is not None:
                await asyncio.gather(ahead, return_exceptions=True)
            self._embedder.forget()
        return results
