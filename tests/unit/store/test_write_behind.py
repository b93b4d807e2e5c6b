"""Writes behind the agent's reply: a claim's vector and a recall's use marks come after the
reply, every reader sees them (read-your-writes), a failed write is retried, never dropped,
and a vector lost to a crash is written at the next start."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
import pytest

from lamarck.domain.rows import LessonFilter, LessonStatus
from lamarck.errors import ConfigError, StoreUnavailable
from lamarck.learning.params import LearningParams
from lamarck.learning.write_behind import WriteBehindParams
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.lessons.service import LessonService
from lamarck.node.lessons.write_behind import WriteBehind
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome
from lamarck.reputation.transfer import TransferParams
from tests.factories import outcome_obj

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIM = 64
SCOPE = "project:" + "ab" * 32
ON = WriteBehindParams(
    defer_claim_embedding=True, defer_learned_embedding=True, defer_use_marks=True, batch=4
)
PROJECT = "ab" * 32


def _outcome(n: int, failing: str, working: str, target: str) -> Outcome:
    """A passed run where ``failing`` failed and ``working`` worked on ``target``: it teaches
    "prefer working over failing for target"."""
    return Outcome.from_obj(
        outcome_obj(
            outcome_id=str(uuid.UUID(int=20_000 + n, version=4)),
            session_id=f"s{n}",
            turn_index=n,
            project=PROJECT,
            goal_digest=f"task {n}",
            steps=[(failing, "failed", target), (working, "ok", target)],
            created_at=NOW,
            in_play=[],
            injected_instruction=False,
        )
    )


class FlakyStore(InMemoryLessonStore):
    """An in-memory store whose vector writes fail while ``down``."""

    def __init__(self) -> None:
        super().__init__(dim=DIM)
        self.down = False
        self.vector_writes = 0

    async def set_embeddings(self, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        if self.down:
            raise StoreUnavailable("the database is down", reason="not_connected")
        self.vector_writes += 1
        await super().set_embeddings(vectors)


def service(
    store: InMemoryLessonStore, params: WriteBehindParams = ON, *, seed: int = 3
) -> LessonService:
    return LessonService(
        store,
        HashingEmbedder(dim=DIM),
        FixedClock(NOW),
        LearningParams(write_behind=params),
        rng=random.Random(seed),
        transfer=TransferParams(),
    )


async def test_a_claim_is_stored_before_its_vector_and_recall_still_finds_it() -> None:
    store = InMemoryLessonStore(dim=DIM)
    svc = service(store)
    row = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
    assert row is not None and row.status is LessonStatus.CLAIMED
    # Stored at once, without its vector: nothing was embedded in the agent's wait.
    assert (await store.get_lesson(row.id)).embedding is None
    result = await svc.recall("ruff check before commit", None, SCOPE, "s1", include_claimed=True)
    assert [r.id for r in result.claimed] == [row.id]
    assert (await store.get_lesson(row.id)).embedding is not None


async def test_without_write_behind_the_vector_is_written_with_the_row() -> None:
    store = InMemoryLessonStore(dim=DIM)
    svc = service(store, WriteBehindParams())
    row = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
    assert row is not None and (await store.get_lesson(row.id)).embedding is not None


async def test_use_marks_come_behind_the_recall_and_settle_writes_them() -> None:
    store = InMemoryLessonStore(dim=DIM)
    svc = service(store)
    row = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
    assert row is not None
    await svc.recall("ruff check before commit", None, SCOPE, "s1", include_claimed=True)
    await svc.settle()
    stored = await store.get_lesson(row.id)
    assert stored.use_count == 1 and stored.last_used == NOW


async def test_a_failed_vector_write_stays_pending_and_the_reader_gets_the_typed_error() -> None:
    store = FlakyStore()
    svc = service(store)
    store.down = True
    row = await svc.remember("Pin the node version in CI.", "shell:nvm use", SCOPE)
    assert row is not None
    with pytest.raises(StoreUnavailable):
        await svc.recall("pin node version", None, SCOPE, "s1", include_claimed=True)
    assert (await store.get_lesson(row.id)).embedding is None
    store.down = False
    result = await svc.recall("pin node version", None, SCOPE, "s1", include_claimed=True)
    assert [r.id for r in result.claimed] == [row.id]


async def test_claims_are_embedded_in_batches() -> None:
    store = FlakyStore()
    svc = service(store)
    # Stored one after another with no await in between for the drain: one batch per 4.
    rows = [
        await svc.remember(f"Lesson number {k} about builds.", f"shell:make b{k}", SCOPE)
        for k in range(8)
    ]
    await svc.settle()
    stored = await store.get_lessons([r.id for r in rows if r is not None])
    assert len(stored) == 8 and all(r.embedding is not None for r in stored)
    # The drain starts after the first claim and takes what queued meanwhile, up to 4 a batch.
    assert 2 <= store.vector_writes < 8


async def test_close_flushes_and_recover_finds_what_a_crash_lost() -> None:
    store = InMemoryLessonStore(dim=DIM)
    svc = service(store)
    row = await svc.remember("Use uv sync, not pip install.", "shell:uv sync", SCOPE)
    assert row is not None
    await svc.close()
    assert (await store.get_lesson(row.id)).embedding is not None
    # A crash between the reply and the vector: the row has none; a new start queues it.
    lost = await service(store, seed=4).remember(
        "Build docs with mkdocs.", "shell:mkdocs build", SCOPE
    )
    assert lost is not None
    restarted = service(store, seed=5)
    assert await restarted.recover_write_behind() == 1
    await restarted.settle()
    assert (await store.get_lesson(lost.id)).embedding is not None


async def test_a_late_use_mark_does_not_move_last_use_back() -> None:
    store = InMemoryLessonStore(dim=DIM)
    behind = WriteBehind(store, _no_embed, ON)
    svc = service(store, WriteBehindParams())
    row = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
    assert row is not None
    await store.mark_used([row.id], NOW + timedelta(minutes=5))
    behind.use_later([row.id], NOW)
    await behind.settle()
    stored = await store.get_lesson(row.id)
    assert stored.last_used == NOW + timedelta(minutes=5) and stored.use_count == 2


async def _no_embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    raise AssertionError("nothing to embed here")


def test_params_are_validated() -> None:
    with pytest.raises(ConfigError):
        WriteBehindParams(batch=0)
    with pytest.raises(ConfigError):
        WriteBehindParams(defer_use_marks=1)  # type: ignore[arg-type]


def test_the_drain_is_not_cancelled_by_a_cancelled_reader() -> None:
    async def scenario() -> None:
        store = InMemoryLessonStore(dim=DIM)
        svc = service(store)
        row = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
        assert row is not None
        reader = asyncio.ensure_future(svc.settle())
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await svc.settle()
        assert (await store.get_lesson(row.id)).embedding is not None

    asyncio.run(scenario())


class GatedStore(InMemoryLessonStore):
    """An in-memory store whose vector writes wait for ``gate`` (the drain is observable)."""

    def __init__(self) -> None:
        super().__init__(dim=DIM)
        self.gate = asyncio.Event()
        self.written = asyncio.Event()

    async def set_embeddings(self, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        await self.gate.wait()
        await super().set_embeddings(vectors)
        self.written.set()


async def test_a_taught_lesson_is_stored_before_its_vector_and_recall_waits_for_it() -> None:
    store = GatedStore()
    svc = service(store)
    result = await svc.record_outcome(_outcome(1, "shell:pytest tests/", "shell:pytest", "suite"))
    created = [c.lesson_id for c in result.changes if c.change == "created"]
    assert len(created) == 1
    # Committed at once, active, without its vector: RecordOutcome did not wait for the model.
    row = await store.get_lesson(created[0])
    assert row.status is LessonStatus.ACTIVE and row.embedding is None
    recall = asyncio.create_task(svc.recall("how to run pytest", None, "project:" + PROJECT, "r"))
    await asyncio.sleep(0)
    assert not recall.done()  # read-your-writes: recall settles the vector first
    store.gate.set()
    found = await asyncio.wait_for(recall, 5)
    assert [r.id for r in found.lessons] == created


async def test_an_outcome_that_rolls_back_queues_no_vector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = GatedStore()
    store.gate.set()
    svc = service(store)

    def fail_after_learning(label: str) -> None:
        # After the taught lesson is stored and its vector queued inside the unit of work.
        if label == "outcome_learned":
            raise StoreUnavailable("the database went away", reason="not_connected")

    monkeypatch.setattr("lamarck.node.lessons.outcomes.crash_point", fail_after_learning)
    with pytest.raises(StoreUnavailable):
        await svc.record_outcome(_outcome(2, "shell:pytest tests/", "shell:pytest", "suite"))
    # Nothing of the outcome is stored, and nothing waits to embed a row that does not exist.
    assert await store.list_lessons(LessonFilter()) == []
    assert svc._core.behind.pending == 0


async def test_without_deferral_a_taught_lesson_has_its_vector_at_once() -> None:
    store = GatedStore()
    store.gate.set()
    svc = service(store, WriteBehindParams())
    result = await svc.record_outcome(_outcome(3, "shell:pytest tests/", "shell:pytest", "x"))
    created = [c.lesson_id for c in result.changes if c.change == "created"]
    assert (await store.get_lesson(created[0])).embedding is not None


async def test_settle_vectors_writes_the_vectors_it_is_asked_for() -> None:
    store = FlakyStore()
    svc = service(store)
    first = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
    second = await svc.remember("Pin the node version in CI.", "shell:nvm use", SCOPE)
    assert first is not None and second is not None
    behind = svc._core.behind
    await behind.settle_vectors([second.id])
    assert not behind.waits_for(second.id)
    assert (await store.get_lesson(second.id)).embedding is not None


async def test_a_lingering_drain_is_woken_by_a_reader() -> None:
    store = FlakyStore()
    # A linger far longer than the bound below: only the reader's wake can end it in time.
    svc = service(store, dataclasses.replace(ON, linger_s=600.0))
    row = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
    assert row is not None
    await asyncio.sleep(0)
    assert store.vector_writes == 0  # lingering: nothing embedded yet
    result = await asyncio.wait_for(
        svc.recall("ruff check before commit", None, SCOPE, "s1", include_claimed=True), 5
    )
    assert [r.id for r in result.claimed] == [row.id]
    assert store.vector_writes == 1


async def test_max_pending_vectors_end_the_linger() -> None:
    store = GatedStore()
    store.gate.set()
    full = dataclasses.replace(ON, linger_s=600.0, max_pending=ON.batch)
    svc = service(store, full)
    taught = [
        await svc.record_outcome(_outcome(40 + k, "shell:make", "shell:make all", f"t{k}"))
        for k in range(ON.batch)
    ]
    await asyncio.wait_for(store.written.wait(), 5)
    ids = [c.lesson_id for r in taught for c in r.changes if c.change == "created"]
    stored = await store.get_lessons(ids)
    assert len(stored) == ON.batch and all(r.embedding is not None for r in stored)


async def test_claims_end_the_linger_only_at_their_own_bound() -> None:
    # Only a recall that includes claims waits for their vectors: they do not fill the queue
    # that makes the model share the cores with the calls still coming.
    store = GatedStore()
    store.gate.set()
    params = dataclasses.replace(
        ON, linger_s=600.0, max_pending=ON.batch, max_pending_claims=2 * ON.batch
    )
    svc = service(store, params)
    for k in range(2 * ON.batch - 1):
        await svc.remember(f"Lesson number {k} about builds.", f"shell:make b{k}", SCOPE)
    for _ in range(5):
        await asyncio.sleep(0)
    assert not store.written.is_set()
    await svc.remember("One claim more about builds.", "shell:make more", SCOPE)
    # The linger (600 s) is ended by the claims' own bound.
    await asyncio.wait_for(store.written.wait(), 5)
    await svc._core.behind.close()


def test_linger_must_be_finite_and_not_negative() -> None:
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ConfigError):
            WriteBehindParams(linger_s=bad)


async def test_a_contradiction_of_a_lesson_whose_vector_waits_is_still_found() -> None:
    # The conflict check searches the stored vectors; a lesson taught a moment ago, its vector
    # still queued, is read from the queue with its vector filled in, not missed.
    store = FlakyStore()
    svc = service(store, dataclasses.replace(ON, linger_s=600.0))
    result = await svc.record_outcome(_outcome(7, "shell:pytest tests/", "shell:pytest", "suite"))
    [taught] = [c.lesson_id for c in result.changes if c.change == "created"]
    assert svc._core.behind.waits_for(taught)
    stored = await store.get_lesson(taught)
    denial = stored.content.replace("Prefer", "Do not prefer")
    no = await svc.write_lesson(
        denial,
        stored.operation,
        stored.scope,
        evidence=list(stored.evidence),
        context=stored.context,
    )
    assert no is not None
    assert (await store.get_lesson(no.id)).contested_with == (taught,)
    assert (await store.get_lesson(taught)).contested_with == (no.id,)
    await svc.close()


async def test_writes_still_coming_keep_the_model_waiting_until_a_reader_needs_them() -> None:
    # A burst of writes: none is embedded while they keep coming (the agent's calls keep the
    # cores), then one reader's settle writes them all in full batches.
    store = FlakyStore()
    svc = service(store, dataclasses.replace(ON, linger_s=600.0, max_pending=100))
    rows = [
        await svc.remember(f"Lesson number {k} about deploys.", f"shell:make d{k}", SCOPE)
        for k in range(2 * ON.batch + 1)
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    assert store.vector_writes == 0
    await asyncio.wait_for(svc._core.behind.settle(), 5)
    assert store.vector_writes == 3  # 4 + 4 + 1: full batches
    stored = await store.get_lessons([r.id for r in rows if r is not None])
    assert all(r.embedding is not None for r in stored)


def test_max_pending_must_be_a_positive_int() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError):
            WriteBehindParams(max_pending=bad)  # type: ignore[arg-type]


async def test_vectors_a_reader_embedded_inline_are_released_after_it() -> None:
    # The model's freed activations go back to the system once nothing is left to embed,
    # also when a reader (not the drain) embedded them, and never inside the reader's wait.
    store = FlakyStore()
    released = asyncio.Event()
    embedder = HashingEmbedder(dim=DIM)

    async def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return embedder.embed(list(texts))

    loop = asyncio.get_running_loop()
    behind = WriteBehind(
        store,
        embed,
        dataclasses.replace(ON, linger_s=600.0),
        release=lambda: loop.call_soon_threadsafe(released.set),  # runs on a worker thread
    )
    row = await svc_row(store)
    behind.embed_later(row, "Run ruff check before every commit.")
    await behind.settle_vectors([row])
    assert store.vector_writes == 1
    await asyncio.wait_for(released.wait(), 5)
    await behind.close()


async def svc_row(store: InMemoryLessonStore) -> str:
    """A claim stored without its vector; its id."""
    svc = service(store, dataclasses.replace(ON, linger_s=600.0))
    row = await svc.remember("Run ruff check before every commit.", "shell:ruff check", SCOPE)
    assert row is not None
    return row.id


async def test_a_recall_without_claims_waits_only_for_the_vectors_it_can_find() -> None:
    # Claims and a taught lesson queued behind their replies; the drain lingers.
    store = FlakyStore()
    svc = service(store, dataclasses.replace(ON, linger_s=600.0))
    claims = [
        await svc.remember(f"Claim number {k} about deploys.", f"shell:make d{k}", SCOPE)
        for k in range(3)
    ]
    result = await svc.record_outcome(_outcome(4, "shell:pytest tests/", "shell:pytest", "suite"))
    [taught] = [c.lesson_id for c in result.changes if c.change == "created"]
    behind = svc._core.behind
    assert set(behind.queued) == {taught, *(c.id for c in claims if c is not None)}
    found = await svc.recall("how to run pytest", None, "project:" + PROJECT, "r")
    assert [r.id for r in found.lessons] == [taught]
    # Only the taught lesson's vector was written in the recall's wait; the claims' wait for
    # the drain (no search without claims finds them).
    assert store.vector_writes == 1 and behind.queued_beyond_claims == ()
    assert sorted(behind.queued) == sorted(c.id for c in claims if c is not None)
    # A recall that includes claims waits for them too.
    with_claims = await svc.recall("claim about deploys", None, SCOPE, "r2", include_claimed=True)
    assert behind.queued == () and with_claims.claimed


class RecordingStore(InMemoryLessonStore):
    """Records each vector write's ids; the first write waits for ``gate``."""

    def __init__(self) -> None:
        super().__init__(dim=DIM)
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.batches: list[list[str]] = []

    async def set_embeddings(self, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        self.started.set()
        if not self.batches:
            await self.gate.wait()
        self.batches.append([i for i, _ in vectors])
        await super().set_embeddings(vectors)


async def test_a_reader_s_batches_are_not_interleaved_with_the_drain_s() -> None:
    store = RecordingStore()
    embedder = HashingEmbedder(dim=DIM)

    async def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return embedder.embed(list(texts))

    behind = WriteBehind(store, embed, ON)  # no linger: the drain starts at once
    claims = [f"c{k}" for k in range(8)]
    for lesson_id in claims:
        behind.embed_later(lesson_id, f"claim {lesson_id}", claim=True)
    await asyncio.wait_for(store.started.wait(), 5)  # the drain holds its first batch
    wanted = [f"t{k}" for k in range(8)]
    for lesson_id in wanted:
        behind.embed_later(lesson_id, f"taught {lesson_id}")
    reader = asyncio.create_task(behind.settle_vectors(behind.queued_beyond_claims))
    await asyncio.sleep(0)
    store.gate.set()
    await asyncio.wait_for(reader, 5)
    # The drain's batch in hand, then the reader's two, back to back; the rest of the claims
    # only after the reader is done.
    assert store.batches[0] == claims[:4]
    assert store.batches[1:3] == [wanted[:4], wanted[4:]]
    await behind.close()
    assert store.batches[3:] == [claims[4:]]


async def test_a_recall_after_a_burst_embeds_only_the_newest_and_says_how_many_wait() -> None:
    # Six lessons taught in a burst, their vectors behind the replies; the drain lingers.
    store = FlakyStore()
    params = dataclasses.replace(ON, linger_s=600.0, recall_settles_at_most=2)
    svc = service(store, params)
    taught: list[str] = []
    for n in range(6):
        result = await svc.record_outcome(
            _outcome(n, f"shell:pytest suite{n}/", f"shell:make test-{n}", f"suite{n}")
        )
        taught += [c.lesson_id for c in result.changes if c.change == "created"]
    assert len(taught) == 6
    behind = svc._core.behind
    found = await svc.recall("make test-5 for suite5", None, "project:" + PROJECT, "r")
    # The two newest were embedded with the task (one model call, one write), the newest is
    # found; the four older are left to the drain and the recall says so.
    assert store.vector_writes == 1 and found.indexing == 4
    assert taught[-1] in [r.id for r in found.lessons]
    assert sorted(behind.queued) == sorted(taught[:4])
    await behind.settle()
    again = await svc.recall("make test-5 for suite5", None, "project:" + PROJECT, "r2")
    assert again.indexing == 0


async def test_a_recall_after_a_larger_burst_embeds_none_and_says_how_many_wait() -> None:
    store = FlakyStore()
    params = dataclasses.replace(ON, linger_s=600.0, recall_settles_at_most=2, recall_burst_above=5)
    svc = service(store, params)
    for n in range(6):
        await svc.record_outcome(
            _outcome(n, f"shell:pytest suite{n}/", f"shell:make test-{n}", f"suite{n}")
        )
    found = await svc.recall("make test-5 for suite5", None, "project:" + PROJECT, "r")
    # Six wait, more than the burst bound: the recall writes no vector and says so.
    assert store.vector_writes == 0 and found.indexing == 6
    await svc._core.behind.settle()
    again = await svc.recall("make test-5 for suite5", None, "project:" + PROJECT, "r2")
    assert again.indexing == 0 and again.lessons


async def test_a_recall_under_the_burst_bound_still_embeds_the_newest() -> None:
    store = FlakyStore()
    params = dataclasses.replace(ON, linger_s=600.0, recall_settles_at_most=1, recall_burst_above=5)
    svc = service(store, params)
    result = await svc.record_outcome(
        _outcome(0, "shell:pytest suite0/", "shell:make test-0", "suite0")
    )
    taught = [c.lesson_id for c in result.changes if c.change == "created"]
    found = await svc.recall("make test-0 for suite0", None, "project:" + PROJECT, "r")
    assert store.vector_writes == 1 and found.indexing == 0
    assert taught[0] in [r.id for r in found.lessons]


def test_recall_burst_above_must_be_a_non_negative_int_or_none() -> None:
    assert WriteBehindParams(recall_burst_above=0).recall_burst_above == 0
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match="recall_burst_above"):
            WriteBehindParams(recall_burst_above=bad)  # type: ignore[arg-type]


def test_recall_settles_at_most_must_be_a_non_negative_int_or_none() -> None:
    assert WriteBehindParams(recall_settles_at_most=0).recall_settles_at_most == 0
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match="recall_settles_at_most"):
            WriteBehindParams(recall_settles_at_most=bad)  # type: ignore[arg-type]


class FirstWriteGatedStore(RecordingStore):
    """Records each vector write's ids; only the first write (the drain's) waits for ``gate``."""

    async def set_embeddings(self, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        self.started.set()
        first = not self.started_once
        self.started_once = True
        if first:
            await self.gate.wait()
        self.batches.append([i for i, _ in vectors])
        await InMemoryLessonStore.set_embeddings(self, vectors)

    started_once = False


async def _taught_with_the_first_in_hand(
    store: FirstWriteGatedStore, svc: LessonService
) -> tuple[list[str], set[str]]:
    """Five lessons taught; the drain holds the first one's vector at the store's gate."""
    taught: list[str] = []
    for n in range(5):
        result = await svc.record_outcome(
            _outcome(n, f"shell:pytest suite{n}/", f"shell:make test-{n}", f"suite{n}")
        )
        taught += [c.lesson_id for c in result.changes if c.change == "created"]
        if n == 0:
            await store.started.wait()  # the drain holds the first vector at the gate
    in_hand = set(svc._core.behind._in_hand)
    assert in_hand and in_hand < set(taught)
    return taught, in_hand


async def test_a_recall_leaves_older_rows_the_drain_has_in_hand_to_it() -> None:
    store = FirstWriteGatedStore()
    svc = service(store, dataclasses.replace(ON, linger_s=0.0, recall_settles_at_most=3))
    taught, in_hand = await _taught_with_the_first_in_hand(store, svc)
    found = await svc.recall("make test-4 for suite4", None, "project:" + PROJECT, "r")
    # The three newest were embedded with the task; the one in hand and the one beyond the
    # three newest wait for the drain.
    assert found.indexing == 2 and not in_hand & set(taught[-3:])
    store.gate.set()
    await svc._core.behind.settle()
    written = [i for batch in store.batches for i in batch]
    assert sorted(written) == sorted(taught)  # every vector written once, none twice


async def test_a_recall_waits_for_the_drains_batch_when_it_holds_one_of_the_newest() -> None:
    store = FirstWriteGatedStore()
    svc = service(store, dataclasses.replace(ON, linger_s=0.0, recall_settles_at_most=5))
    taught, in_hand = await _taught_with_the_first_in_hand(store, svc)
    recall = asyncio.create_task(
        svc.recall("make test-0 for suite0", None, "project:" + PROJECT, "r")
    )
    for _ in range(20):
        await asyncio.sleep(0)
    assert not recall.done()  # the newest five include the row in hand: its batch is awaited
    store.gate.set()
    found = await recall
    assert found.indexing == 0
    assert in_hand <= {r.id for r in found.lessons}
    await svc._core.behind.settle()
    written = [i for batch in store.batches for i in batch]
    assert sorted(written) == sorted(taught)  # every vector written once, none twice
