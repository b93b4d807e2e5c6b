"""BatchImporter: the pipeline's decisions unchanged, the embedding done a chunk at a time."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from importing_helpers import NOW

from lamarck.domain.embedder import (
    Embedder,
    Vectors,
)
from lamarck.domain.rows import LessonFilter
from lamarck.errors import ConfigError, StoreUnavailable
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.batch import (
    BatchImporter,
    BatchImportParams,
    Prefetch,
    PrimedEmbedder,
    record_operation,
    record_texts,
)
from lamarck.node.importing.pipeline import (
    ExpectedHook,
    ImportPipeline,
    ImportResult,
    ImportSource,
)
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from tests.factories import signed_record

SOURCE_KEY = NodeIdentity.from_seed(b"\x61" * 32)
SELF = NodeIdentity.from_seed(b"\x62" * 32).node_id
VIA = "lmk1" + "c" * 32
BOUND_S = 10.0  # seconds a test waits for threads to meet, never reached when they do
DIM = 32


class Pins:
    """SOURCE_KEY is registered."""

    async def pinned_key(self, node_id: str) -> str | None:
        return SOURCE_KEY.public_key_b64 if node_id == SOURCE_KEY.node_id else None

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


class CountingEmbedder(Embedder):
    """Hashing vectors; records how many texts each call embedded."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=DIM)
        self.calls: list[int] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return self.inner.embed(texts)


def _raws(n: int, first: int = 0) -> list[bytes]:
    out = []
    for i in range(first, first + n):
        signed = signed_record(
            SOURCE_KEY,
            id=str(uuid.UUID(int=1000 + i, version=4)),
            content=f"Run the migrations of service {i} before restarting its workers.",
            lesson={"operation": f"deploy.step{i}"},
        )
        out.append(signed.raw)
    out.append(b'{"not": "a record"}')  # refused by the pipeline's own checks
    out.append(out[0])  # the same bytes again: a duplicate
    return out


def _pipeline(
    store: InMemoryLessonStore, embedder: Embedder, on_expected: ExpectedHook | None = None
) -> ImportPipeline:
    clock = FixedClock(NOW)
    book = InMemoryReputation(ReputationParams(), clock)
    return ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, book, SELF),
        pins=Pins(),
        reputation=book,
        embedder=embedder,
        clock=clock,
        rng=random.Random(3),
        on_expected=on_expected,
    )


def _summary(results: list[ImportResult]) -> list[tuple[Any, ...]]:
    return [(r.outcome, r.reasons, r.record_id, r.lesson_id) for r in results]


def test_a_batch_gets_the_answers_of_one_record_at_a_time_and_the_same_vectors() -> None:
    """Same outcomes, reasons, local ids and stored vectors as ``import_record`` in order."""
    raws = _raws(10)

    async def go() -> tuple[Any, ...]:
        one_store, batch_store = InMemoryLessonStore(), InMemoryLessonStore()
        one = _pipeline(one_store, HashingEmbedder(dim=DIM))
        singles = [
            await one.import_record(r, source=ImportSource.SYNC, via_node_id=VIA) for r in raws
        ]
        params = BatchImportParams(chunk=3, max_primed=8)
        primed = PrimedEmbedder(HashingEmbedder(dim=DIM), params)
        importer = BatchImporter(_pipeline(batch_store, primed), primed, params)
        seen: list[tuple[int, int]] = []
        batch = await importer.import_batch(
            raws,
            source=ImportSource.SYNC,
            via_node_id=VIA,
            progress=lambda done, total: seen.append((done, total)),
        )
        flt = LessonFilter(statuses=None, limit=100)
        return (
            singles,
            batch,
            await one_store.list_lessons(flt),
            await batch_store.list_lessons(flt),
            seen,
            primed.primed,
        )

    singles, batch, one_rows, batch_rows, seen, left = asyncio.run(go())
    assert _summary(batch) == _summary(singles)
    assert [r.outcome.value for r in batch].count("accept") == 10
    assert batch[-2].outcome.value == "reject" and batch[-1].outcome.value == "duplicate"
    by_id = {r.id: r for r in one_rows}
    for row in batch_rows:
        assert row.embedding is not None
        np.testing.assert_allclose(row.embedding, by_id[row.id].embedding, atol=1e-6)
    assert seen[-1] == (12, 12) and [d for d, _ in seen] == [3, 6, 9, 12]
    assert left == 0  # nothing held once the batch is done


def test_the_model_runs_once_per_chunk_not_once_per_record() -> None:
    """The pipeline's own embed calls are answered from the primed vectors."""
    counting = CountingEmbedder()
    params = BatchImportParams(chunk=4, max_primed=8)
    primed = PrimedEmbedder(counting, params)
    importer = BatchImporter(_pipeline(InMemoryLessonStore(), primed), primed, params)
    results = asyncio.run(
        importer.import_batch(_raws(8), source=ImportSource.SYNC, via_node_id=VIA)
    )
    assert sum(1 for r in results if r.outcome.value == "accept") == 8
    # Two chunks of four; the last (a malformed line, and a duplicate embedded once already
    # with its first copy) primes nothing.
    assert counting.calls == [4, 4]
    assert primed.model_texts == 8


def test_primed_vectors_are_taken_on_the_loop_only_when_all_are_held() -> None:
    inner = HashingEmbedder(dim=DIM)
    primed = PrimedEmbedder(inner, BatchImportParams(chunk=1, max_primed=4))
    primed.prime(["a b c", "d e f"])
    assert primed.computed(["a b c", "x y z"]) is None
    assert primed.primed == 2  # nothing used when one is missing
    out = primed.computed(["d e f", "a b c", "a b c"])
    assert out is not None
    np.testing.assert_allclose(out, inner.embed(["d e f", "a b c", "a b c"]), atol=1e-6)
    assert primed.primed == 0
    assert inner.computed(["a b c"]) is None  # a plain model has nothing at hand


class _OneAtHand(HashingEmbedder):
    """A model with one text's vector at hand (as a query cache holds one)."""

    def computed(self, texts: Sequence[str]) -> Vectors | None:
        return self.embed(texts) if list(texts) == ["asked before"] else None


def test_without_primed_vectors_the_models_own_at_hand_ones_are_taken() -> None:
    inner = _OneAtHand(dim=DIM)
    primed = PrimedEmbedder(inner, BatchImportParams(chunk=1, max_primed=4))
    primed.prime(["a b c"])
    out = primed.computed(["asked before"])
    assert out is not None
    np.testing.assert_allclose(out, inner.embed(["asked before"]), atol=1e-6)
    assert primed.computed(["never asked"]) is None
    assert primed.primed == 1  # the primed vector was not used by either


def test_a_batch_takes_its_primed_vectors_without_a_thread_per_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = CountingEmbedder()
    params = BatchImportParams(chunk=4, max_primed=8)
    primed = PrimedEmbedder(counting, params)
    importer = BatchImporter(_pipeline(InMemoryLessonStore(), primed), primed, params)
    hops: list[object] = []
    real = asyncio.to_thread

    async def counted(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    results = asyncio.run(
        importer.import_batch(_raws(8), source=ImportSource.SYNC, via_node_id=VIA)
    )
    assert sum(1 for r in results if r.outcome.value == "accept") == 8
    # The chunks ran on a worker; every record's vectors were at hand on the loop.
    assert hops.count(primed.prime) >= 2
    assert primed.embed not in hops


def test_unprimed_texts_fall_back_to_the_model() -> None:
    """A text nobody primed is embedded by the wrapped model, mixed with primed ones."""
    inner = HashingEmbedder(dim=DIM)
    primed = PrimedEmbedder(inner, BatchImportParams(chunk=1, max_primed=2))
    primed.prime(["a b c"])
    out = primed.embed(["a b c", "d e f"])
    np.testing.assert_allclose(out, inner.embed(["a b c", "d e f"]), atol=1e-6)
    assert primed.primed == 0
    assert primed.model_texts == 2  # one primed, one asked


@pytest.mark.parametrize(
    "fields",
    [
        {"chunk": 0},
        {"chunk": True},
        {"max_primed": 0},
        {"chunk": 10, "max_primed": 19},
        {"bulk_at": 0},
        {"bulk_store_share": 0.0},
        {"bulk_store_share": float("nan")},
        {"bulk_store_share": float("inf")},
        {"analyze_share": 0.0},
        {"analyze_share": -0.1},
        {"analyze_share": float("nan")},
    ],
)
def test_batch_params_refuse_unusable_values(fields: dict[str, Any]) -> None:
    """Every field is validated; the error names the field."""
    with pytest.raises(ConfigError, match="BatchImportParams"):
        BatchImportParams(**fields)


def test_a_prefetch_embeds_a_stream_a_chunk_ahead_of_one_record_imports() -> None:
    """Records added as they arrive (two pages) are embedded a chunk per call, and the
    pipeline's answers are those of one record at a time."""
    raws = _raws(6)[:6]
    counting = CountingEmbedder()
    params = BatchImportParams(chunk=2, max_primed=4)
    primed = PrimedEmbedder(counting, params)
    pipeline = _pipeline(InMemoryLessonStore(), primed)

    async def go() -> list[ImportResult]:
        ahead = Prefetch(primed, params)
        out = []
        for page in (raws[:4], raws[4:]):
            ahead.add(page)
            for raw in page:
                await ahead.ready(raw)
                out.append(await pipeline.import_record(raw, source=ImportSource.SYNC))
        await ahead.close()
        return out

    results = asyncio.run(go())
    assert [r.outcome.value for r in results] == ["accept"] * 6
    assert counting.calls == [2, 2, 2]
    assert primed.primed == 0


def test_a_prefetch_without_a_primed_embedder_embeds_one_record_at_a_time() -> None:
    """No primed embedder: ready and close do nothing; the pipeline embeds each record."""
    counting = CountingEmbedder()
    pipeline = _pipeline(InMemoryLessonStore(), counting)
    raws = _raws(3)[:3]

    async def go() -> None:
        ahead = Prefetch(None, BatchImportParams(chunk=2, max_primed=4))
        ahead.add(raws)
        for raw in raws:
            await ahead.ready(raw)
            await pipeline.import_record(raw, source=ImportSource.SYNC)
        await ahead.close()

    asyncio.run(go())
    assert counting.calls == [1, 1, 1]


def test_closing_a_prefetch_drops_only_its_own_unused_vectors() -> None:
    """Another import's primed vectors survive; this one's unused ones are dropped."""
    params = BatchImportParams(chunk=4, max_primed=8)
    primed = PrimedEmbedder(HashingEmbedder(dim=DIM), params)
    primed.prime(["someone else's text"])
    raws = _raws(2)[:2]

    async def go() -> None:
        ahead = Prefetch(primed, params)
        ahead.add(raws)
        await ahead.ready(raws[0])  # embeds both; neither is used
        await ahead.close()

    asyncio.run(go())
    assert primed.primed == 1


def test_a_prefetch_drops_the_unused_vectors_of_the_chunks_it_has_passed() -> None:
    """Records refused before their embedding (say, bad signatures) leave their vectors
    unused. Once the import reaches the next chunk they are dropped, so the chunks after
    them still find room in the primed embedder."""
    params = BatchImportParams(chunk=2, max_primed=4)
    primed = PrimedEmbedder(HashingEmbedder(dim=DIM), params)
    raws = _raws(6)[:6]
    contents = [SignedMemory.from_json(raw).memory.content for raw in raws]

    async def go() -> tuple[bool, bool, bool]:
        ahead = Prefetch(primed, params)
        ahead.add(raws)
        for raw in raws[:2]:
            await ahead.ready(raw)  # nothing takes their vectors: both refused
        await ahead.ready(raws[2])
        first_chunk_dropped = primed.computed(contents[:1]) is None
        await ahead.ready(raws[3])
        await ahead.ready(raws[4])
        # Two chunks' worth of room: the third chunk was primed in full.
        third_chunk_held = primed.computed(contents[4:6]) is not None
        await ahead.close()
        return first_chunk_dropped, third_chunk_held, primed.primed == 0

    assert asyncio.run(go()) == (True, True, True)


def test_a_batch_tells_the_pipeline_of_each_chunk_as_it_reaches_it_and_of_none_at_the_end() -> None:
    """``ImportPipeline.expect`` hears each chunk's records before the first of them is
    imported (their operations go to the lesson service's ``on_expected`` hook), and an
    empty list once the import ends."""
    told: list[list[str]] = []
    order: list[str] = []

    async def expected(operations: Sequence[str]) -> None:
        told.append(list(operations))
        order.append(f"told {len(operations)}")

    params = BatchImportParams(chunk=3, max_primed=8)
    primed = PrimedEmbedder(HashingEmbedder(dim=DIM), params)
    pipeline = _pipeline(InMemoryLessonStore(), primed, on_expected=expected)
    real = pipeline.import_record

    async def importing(raw: bytes, **kwargs: Any) -> ImportResult:
        order.append("import")
        return await real(raw, **kwargs)

    pipeline.import_record = importing  # type: ignore[method-assign]
    raws = _raws(5)[:5]
    importer = BatchImporter(pipeline, primed, params)
    asyncio.run(importer.import_batch(raws, source=ImportSource.SYNC, via_node_id=VIA))
    assert told == [
        ["deploy.step0", "deploy.step1", "deploy.step2"],
        ["deploy.step3", "deploy.step4"],
        [],
    ]
    assert order == ["told 3", *["import"] * 3, "told 2", *["import"] * 2, "told 0"]


class _BulkSpy(CountingEmbedder):
    """Counts the bulk blocks open and the texts embedded inside one."""

    def __init__(self) -> None:
        super().__init__()
        self.open = 0
        self.most_open = 0
        self.in_bulk = 0

    @contextlib.contextmanager
    def bulk(self) -> Iterator[object]:
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            yield None
        finally:
            self.open -= 1

    def embed_bulk(self, texts: Sequence[str]) -> Vectors:
        self.in_bulk += len(texts) if self.open else 0
        return self.embed(texts)


class _StoreSpy(InMemoryLessonStore):
    """Counts the bulk loads open (the Postgres adapter drops its vector index inside)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0
        self.open = 0

    @contextlib.asynccontextmanager
    async def bulk_load(self) -> AsyncIterator[object]:
        self.loads += 1
        self.open += 1
        try:
            yield self
        finally:
            self.open -= 1


@pytest.mark.parametrize(
    "held, bulk_at, embedder_bulk, store_loads",
    [
        (0, 4, True, 1),  # long, and large beside an empty store: both measures
        (20, 4, True, 0),  # long, but small beside what the store holds: no index rebuild
        (0, 50, False, 0),  # short: neither
    ],
)
def test_a_long_import_takes_the_long_run_measures_until_it_closes(
    held: int, bulk_at: int, embedder_bulk: bool, store_loads: int
) -> None:
    """Past ``bulk_at`` queued records a prefetch embeds inside the embedder's ``bulk()``
    and, when it brings at least ``bulk_store_share`` of what the store holds, inside the
    store's ``bulk_load()``; ``close`` ends both. The answers are those of one at a time."""
    spy = _BulkSpy()
    store = _StoreSpy()
    params = BatchImportParams(chunk=2, max_primed=4, bulk_at=bulk_at, bulk_store_share=0.5)
    primed = PrimedEmbedder(spy, params)
    pipeline = _pipeline(store, primed)
    raws = _raws(6)[:6]

    async def go() -> list[ImportResult]:
        for raw in _raws(held, first=100)[:held]:  # what the store held before
            await pipeline.import_record(raw, source=ImportSource.SYNC)
        ahead = Prefetch(primed, params, store=store)
        ahead.add(raws)
        out = []
        for raw in raws:
            await ahead.ready(raw)
            assert ahead.long is embedder_bulk
            assert spy.open == int(embedder_bulk) and store.open == store_loads
            out.append(await pipeline.import_record(raw, source=ImportSource.SYNC))
        await ahead.close()
        return out

    results = asyncio.run(go())
    assert [r.outcome.value for r in results] == ["accept"] * 6
    assert spy.open == 0 and store.open == 0  # closed with the prefetch
    assert store.loads == store_loads
    assert (spy.in_bulk > 0) is embedder_bulk


class _AnalysingStore(InMemoryLessonStore):
    """Records what each import's end asks of the planner's statistics; ``down`` fails it."""

    def __init__(self, *, down: bool = False) -> None:
        super().__init__()
        self.asked: list[float] = []
        self.down = down

    async def refresh_statistics(self, share: float) -> bool:
        self.asked.append(share)
        if self.down:
            raise StoreUnavailable("the database went away", reason="store_unavailable")
        return True


@pytest.mark.parametrize("down", [False, True])
def test_an_import_ends_by_refreshing_the_store_statistics_and_stands_if_that_fails(
    down: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """``close`` asks the store to refresh its planner statistics with ``analyze_share``
    (searches right after a catch-up then use the vector index); when the store cannot,
    the import's records stay stored and the failure is logged, never raised."""
    store = _AnalysingStore(down=down)
    params = BatchImportParams(chunk=2, max_primed=4, analyze_share=0.25)
    primed = PrimedEmbedder(CountingEmbedder(), params)
    pipeline = _pipeline(store, primed)
    raws = _raws(3)[:3]

    async def go() -> list[ImportResult]:
        ahead = Prefetch(primed, params, store=store)
        ahead.add(raws)
        out = []
        for raw in raws:
            await ahead.ready(raw)
            out.append(await pipeline.import_record(raw, source=ImportSource.SYNC))
        await ahead.close()
        return out

    results = asyncio.run(go())
    assert [r.outcome.value for r in results] == ["accept"] * 3
    assert store.asked == [0.25]
    assert len(asyncio.run(store.list_lessons(LessonFilter(statuses=None)))) == 3
    failed = "refreshing the store's statistics after an import failed" in caplog.text
    assert failed is down


class _ParallelSpy(_BulkSpy):
    """A bulk set-up that runs ``parallel`` batches at once; records the most at once."""

    def __init__(self, parallel: int, together: int) -> None:
        super().__init__()
        self.parallel = parallel
        self.running = 0
        self.entered = 0
        self.most_running = 0
        # The first ``together`` chunks wait for each other: they must run at once.
        self.together = threading.Barrier(together, timeout=BOUND_S)
        self._lock = threading.Lock()

    @property
    def bulk_parallel(self) -> int:
        return self.parallel

    def embed_bulk(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.running += 1
            self.entered += 1
            first = self.entered <= self.together.parties
            self.most_running = max(self.most_running, self.running)
        try:
            if first:
                self.together.wait()
            return super().embed_bulk(texts)
        finally:
            with self._lock:
                self.running -= 1


@pytest.mark.parametrize("parallel, max_primed, most", [(2, 8, 2), (3, 8, 3), (3, 6, 2), (1, 8, 1)])
def test_a_long_import_embeds_as_many_chunks_at_once_as_the_bulk_set_up_runs(
    parallel: int, max_primed: int, most: int
) -> None:
    """Once long, ``bulk_parallel`` chunks are embedded at once (within what the primed
    embedder holds beside the chunk being imported); the answers are those of one at a
    time."""
    spy = _ParallelSpy(parallel, together=most)
    params = BatchImportParams(chunk=2, max_primed=max_primed, bulk_at=1)
    primed = PrimedEmbedder(spy, params)
    importer = BatchImporter(_pipeline(InMemoryLessonStore(), primed), primed, params)
    raws = _raws(12)[:12]
    results = asyncio.run(importer.import_batch(raws, source=ImportSource.SYNC, via_node_id=VIA))
    assert [r.outcome.value for r in results] == ["accept"] * 12
    assert spy.most_running == most
    assert sum(spy.calls) == 12  # each content embedded once, none by the pipeline itself


class _ReadsMeaning:
    """A filter that reads one more text's vector (as the autonomy filter does)."""

    def check(self, record: MemoryV2, view: Any) -> Any:
        raise AssertionError("not called")

    def texts_to_embed(self, content: str) -> tuple[str, ...]:
        return (content, "the claim the filter reads")


def test_record_texts_are_the_content_then_what_the_filters_read() -> None:
    raw = _raws(1)[0]
    content = SignedMemory.from_json(raw).memory.content
    assert record_texts(raw) == [content]
    assert record_texts(raw, _ReadsMeaning()) == [content, "the claim the filter reads"]
    assert record_texts(b'{"not": "a record"}', _ReadsMeaning()) == []
    assert record_operation(raw) == "deploy.step0"
    assert record_operation(b'{"lesson": {"operation": 7}}') is None
    assert record_operation(b"[1, 2]") is None and record_operation(b"\xff") is None
    # Only the content is read: a record the pipeline will refuse costs no parse here.
    assert record_texts(b'{"content": "x", "schema_version": 7}', _ReadsMeaning()) == [
        "x",
        "the claim the filter reads",
    ]
