"""One way in (§4.4): every path into the node is the import pipeline.

Over the in-memory store with a fixed clock and seeded ids: duplicates are answered as
duplicates whatever the index knew, one record's store failure never aborts a batch or a Sync
round, the embedding runs outside the import lock, and — the property — any interleaving of
the same signed records arriving by Publish, Sync, bundle Import and operator approval leaves
the same stored rows and reputation events as the same records arriving by Publish alone.
"""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from importing_helpers import NOW, ts
from pipeline_harness import (
    ATTACKER_KEY,
    DIM,
    SELF,
    VIA,
    VIA2,
    Events,
    Harness,
    Pins,
    run,
    signed_raw,
)

from lamarck.domain.rows import LessonEvent, LessonFilter, LessonRow
from lamarck.errors import StoreError, StoreUnavailable
from lamarck.gossip.sync import SyncPage, SyncQuery, sync_step
from lamarck.node.api.peer_handlers import PublishDeps, handle_publish
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportResult, ImportSource
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportOutcome, ImportParams
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import FixedClock
from lamarck.proto.signed import SignedMemory
from lamarck.proto.v1 import peer_pb2, records_pb2
from lamarck.reputation.params import ReputationParams

#: Bound on every wait for another task or thread (never a sleep).
BOUND_S = 5.0


def _id(n: int) -> str:
    return str(uuid.UUID(int=n, version=4))


class Scores:
    """Every source at the score of a newly admitted node."""

    def score(self, node_id: str) -> float:
        return ReputationParams().initial_score


def pipeline_over(
    store: InMemoryLessonStore, embedder: Any, events: Events | None = None
) -> ImportPipeline:
    """A pipeline like the Harness's, over the given store and embedder."""
    return ImportPipeline(
        store=store,
        view=StoreImportView(store, Scores(), SELF),
        pins=Pins(),
        reputation=events or Events(),
        embedder=embedder,
        clock=FixedClock(NOW),
        rng=random.Random(11),
        params=ImportParams(reputation=ReputationParams()),
    )


# -- 1.2: a duplicate is a duplicate, DEFERRED means the store is down ----------------------


def test_a_record_stored_by_a_path_the_index_did_not_see_is_a_duplicate_not_an_error() -> None:
    async def go() -> None:
        h = Harness()
        raw = signed_raw()
        signed = SignedMemory.from_json(raw)
        # Stored behind the pipeline's back (as a bundle import once did).
        from lamarck.node.importing.versions import imported_row

        await h.store.insert_lesson(
            imported_row(signed, lesson_id="behind", confidence=0.3, via_node_id="", now=NOW)
        )
        result = await h.offer(raw)
        assert result.outcome is ImportOutcome.DUPLICATE
        assert result.lesson_id == "behind"
        [row] = await h.store.list_lessons(LessonFilter(statuses=None))
        assert {p.via_node_id for p in row.provenance} == {"", VIA}
        # And the index now knows it: the next copy is a duplicate without a store conflict.
        again = await h.offer(raw, via=VIA2)
        assert again.outcome is ImportOutcome.DUPLICATE and again.lesson_id == "behind"

    run(go())


class FailingStore(InMemoryLessonStore):
    """Fails ``insert_lesson`` for chosen contents with a chosen store error."""

    def __init__(self) -> None:
        super().__init__(dim=DIM)
        self.failures: dict[str, StoreError] = {}

    async def insert_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        failure = self.failures.get(lesson.content)
        if failure is not None:
            raise failure
        await super().insert_lesson(lesson, events)


def _publish(*raws: bytes) -> peer_pb2.PublishRequest:
    return peer_pb2.PublishRequest(
        sender_node_id=VIA,
        records=[
            records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw)
            for raw in raws
        ],
    )


def test_deferred_means_the_store_is_down_and_nothing_else() -> None:
    async def go() -> None:
        store = FailingStore()
        pipeline = pipeline_over(store, HashingEmbedder(dim=DIM))
        good = signed_raw(id=_id(1), content="Pin the node version in CI.")
        broken = signed_raw(id=_id(2), content="Cache the pip wheels between CI runs.")
        down = signed_raw(id=_id(3), content="Run the linter before the unit tests.")
        store.failures["Cache the pip wheels between CI runs."] = StoreError(
            "constraint", reason="invalid_value"
        )
        store.failures["Run the linter before the unit tests."] = StoreUnavailable("gone")
        response = await handle_publish(_publish(good, broken, down, good), PublishDeps(pipeline))
        assert [(a.status, a.reason) for a in response.acks] == [
            (records_pb2.ACK_STATUS_ACCEPTED, ""),
            (records_pb2.ACK_STATUS_REJECTED, "invalid_value"),
            (records_pb2.ACK_STATUS_DEFERRED, "store_unavailable"),
            (records_pb2.ACK_STATUS_DUPLICATE, ""),
        ]
        # The store failure was not recorded as a judgement: once the store takes it, the
        # same record is accepted.
        del store.failures["Cache the pip wheels between CI runs."]
        retried = await pipeline.import_record(broken, source=ImportSource.PEER, via_node_id=VIA)
        assert retried.outcome is ImportOutcome.ACCEPT

    run(go())


def test_one_bad_record_never_aborts_a_sync_round() -> None:
    async def go() -> None:
        store = FailingStore()
        pipeline = pipeline_over(store, HashingEmbedder(dim=DIM))
        contents = ["Pin the node version in CI.", "Cache wheels.", "Lint before testing."]
        raws = [signed_raw(id=_id(10 + i), content=c) for i, c in enumerate(contents)]
        store.failures["Cache wheels."] = StoreError("boom", reason="database_error")
        page = SyncPage(
            records=tuple(sorted((sha256_hex(r), r) for r in raws)), cursor="", more=False
        )

        async def fetch(query: SyncQuery) -> SyncPage:
            return page

        results: list[ImportResult] = []

        async def importer(raw: bytes) -> object:
            result = await pipeline.import_record(raw, source=ImportSource.SYNC, via_node_id=VIA)
            results.append(result)
            return result

        received = await sync_step(set(), fetch, importer, prefix_len=2, page_size=10)
        assert received == 3
        outcomes = sorted(r.outcome.value for r in results)
        assert outcomes == ["accept", "accept", "reject"]
        stored = await store.list_lessons(LessonFilter(statuses=None))
        assert sorted(r.content for r in stored) == sorted(contents[::2])

    run(go())


# -- 4.4: embedding outside the import lock --------------------------------------------------


class GatedEmbedder:
    """A hashing embedder whose first call blocks until ``release`` is set."""

    dim = DIM

    def __init__(self) -> None:
        self._inner = HashingEmbedder(dim=DIM)
        self.entered = threading.Event()
        self.release = threading.Event()
        self._calls = 0
        self._lock = threading.Lock()

    def computed(self, texts: Sequence[str]) -> None:
        return None  # nothing at hand: every call reaches embed

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            self._calls += 1
            first = self._calls == 1
        if first:
            self.entered.set()
            assert self.release.wait(BOUND_S), "never released"
        return self._inner.embed(texts)


def test_intake_is_not_serialised_on_the_embedder() -> None:
    async def go() -> None:
        embedder = GatedEmbedder()
        pipeline = pipeline_over(InMemoryLessonStore(dim=DIM), embedder)
        slow = asyncio.create_task(
            pipeline.import_record(
                signed_raw(id=_id(20), content="Pin the node version in CI."),
                source=ImportSource.PEER,
                via_node_id=VIA,
            )
        )
        assert await asyncio.to_thread(embedder.entered.wait, BOUND_S)
        try:
            # The first record is stuck in its embedding; a second one still gets through.
            fast = await asyncio.wait_for(
                pipeline.import_record(
                    signed_raw(id=_id(21), content="Cache the pip wheels between CI runs."),
                    source=ImportSource.PEER,
                    via_node_id=VIA,
                ),
                BOUND_S,
            )
        finally:
            embedder.release.set()
        assert fast.outcome is ImportOutcome.ACCEPT
        assert (await asyncio.wait_for(slow, BOUND_S)).outcome is ImportOutcome.ACCEPT

    run(go())


class BarrierEmbedder:
    """Every call waits until ``parties`` calls are embedding at the same time."""

    dim = DIM

    def __init__(self, parties: int) -> None:
        self._inner = HashingEmbedder(dim=DIM)
        self._barrier = threading.Barrier(parties, timeout=BOUND_S)

    def computed(self, texts: Sequence[str]) -> None:
        return None  # nothing at hand: every call reaches embed

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self._barrier.wait()
        return self._inner.embed(texts)


def test_two_copies_arriving_together_embed_at_once_but_store_one_row() -> None:
    async def go() -> None:
        store = InMemoryLessonStore(dim=DIM)
        pipeline = pipeline_over(store, BarrierEmbedder(2))
        raw = signed_raw(id=_id(30), content="Pin the node version in CI.")
        results = await asyncio.wait_for(
            asyncio.gather(
                pipeline.import_record(raw, source=ImportSource.PEER, via_node_id=VIA),
                pipeline.import_record(raw, source=ImportSource.SYNC, via_node_id=VIA2),
            ),
            BOUND_S * 2,
        )
        assert sorted(r.outcome.value for r in results) == ["accept", "duplicate"]
        [row] = await store.list_lessons(LessonFilter(statuses=None))
        assert {p.via_node_id for p in row.provenance} == {VIA, VIA2}

    run(go())


# -- 1.3: the paths agree ----------------------------------------------------------------------

_LATER = ts(NOW - timedelta(days=1))
#: The signed records every run offers, in the order of their first arrival.
POOL: tuple[bytes, ...] = (
    # 0, 1: a lesson and its newer version.
    signed_raw(id=_id(40)),
    signed_raw(
        id=_id(40),
        content="Run database migrations, then restart the api service.",
        lesson={"version": 2},
        provenance={"updated_at": _LATER},
    ),
    # 2: another source's lesson on another operation.
    signed_raw(
        ATTACKER_KEY,
        id=_id(41),
        content="Pin the node version in CI.",
        lesson={"operation": "ci.pin"},
    ),
    # 3: high stakes: held until an operator approves it.
    signed_raw(
        id=_id(42),
        content="Before a release, run terraform destroy on staging.",
        lesson={"operation": "release.clean"},
    ),
    # 4: a secret (refused by a filter: nobody charged).
    signed_raw(
        ATTACKER_KEY,
        id=_id(43),
        content="When deploying, upload with key AKIAIOSFODNN7EXAMPLE to the bucket.",
        lesson={"operation": "deploy.fetch"},
    ),
    # 5: an equivocation of 2 (refused, its signer charged).
    signed_raw(
        ATTACKER_KEY,
        id=_id(41),
        content="Never pin the node version in CI.",
        lesson={"operation": "ci.pin"},
    ),
)
HELD = 3
REFUSED = frozenset({4, 5})
PATHS = (ImportSource.PEER, ImportSource.SYNC, ImportSource.BUNDLE)
VIA_OF = {ImportSource.PEER: VIA, ImportSource.SYNC: VIA2, ImportSource.BUNDLE: ""}

Step = tuple[str, int, ImportSource | None]  # ("offer" | "approve", record index, path)


async def _play(steps: Sequence[Step]) -> Harness:
    h = Harness()
    held_hash = SignedMemory.from_json(POOL[HELD]).content_hash
    for kind, index, path in steps:
        if kind == "approve":
            [row] = [q for q in await h.store.list_quarantine() if q.content_hash == held_hash]
            result = await h.pipeline.approve(row)
            assert result.outcome is ImportOutcome.ACCEPT
            await h.store.set_quarantine_state(row.id, "approved")
            continue
        assert path is not None
        await h.pipeline.import_record(POOL[index], source=path, via_node_id=VIA_OF[path])
    return h


async def _state(h: Harness) -> dict[str, Any]:
    lessons = await h.store.list_lessons(LessonFilter(statuses=None, limit=1000))
    by_id = {r.id: r.content_hash for r in lessons}
    return {
        "lessons": sorted(
            (
                r.content_hash or "",
                r.status.value,
                r.confidence,
                r.original_confidence or 0.0,
                r.imported_from or "",
                r.content,
                r.operation,
                by_id.get(r.supersedes or "", ""),
                by_id.get(r.superseded_by or "", ""),
            )
            for r in lessons
        ),
        "quarantine": sorted(
            (q.content_hash, q.source_node_id, q.reasons, q.state, q.confidence, q.transfer_rule)
            for q in await h.store.list_quarantine(state=None)
        ),
        "rejections": sorted(
            (r.source_node_id, r.reason, r.content_hash)
            for r in await h.store.list_rejections(limit=1000)
        ),
        "events": sorted(
            (e.kind.value, e.node_id, e.record_hash, e.detail) for e in h.events.events
        ),
    }


def _insert_after(steps: list[Step], first: Step, item: Step, draw: Any) -> None:
    """Insert ``item`` anywhere after ``first``."""
    at = steps.index(first) + 1
    steps.insert(draw(st.integers(min_value=at, max_value=len(steps))), item)


@st.composite
def interleavings(draw: Any) -> list[Step]:
    """Each record's first copy in pool order by any path, more copies of the records that
    are not refused anywhere later, and the approval anywhere after the held one arrived."""
    firsts: list[Step] = [("offer", i, draw(st.sampled_from(PATHS))) for i in range(len(POOL))]
    steps = list(firsts)
    for i in range(len(POOL)):
        if i in REFUSED:
            continue  # a second copy of a refused record is a replay, logged per path
        for _ in range(draw(st.integers(min_value=0, max_value=2))):
            _insert_after(steps, firsts[i], ("offer", i, draw(st.sampled_from(PATHS))), draw)
    _insert_after(steps, firsts[HELD], ("approve", HELD, None), draw)
    return steps


#: Every record once, by Publish, then the operator's approval.
BY_PUBLISH: list[Step] = [
    *(("offer", i, ImportSource.PEER) for i in range(len(POOL))),
    ("approve", HELD, None),
]


def test_the_reference_run_is_what_the_property_claims_it_is() -> None:
    reference = run(_reference())
    # The record that arrives in two versions is one row (its local id is stable): the newer
    # version updates the copy in place rather than superseding it with a second row.
    assert [lesson[1] for lesson in reference["lessons"]] == ["active"] * 3
    assert [q[3] for q in reference["quarantine"]] == ["approved"]
    assert sorted(r[1] for r in reference["rejections"]) == ["equivocation", "secret_detected"]
    assert sorted((e[0], e[1]) for e in reference["events"]) == [
        ("equivocation", ATTACKER_KEY.node_id),
    ]


async def _reference() -> dict[str, Any]:
    return await _state(await _play(BY_PUBLISH))


_REFERENCE: dict[str, Any] = {}


@settings(max_examples=60, deadline=None)
@given(interleavings())
def test_any_interleaving_of_paths_leaves_what_publish_alone_leaves(steps: list[Step]) -> None:
    if not _REFERENCE:
        _REFERENCE.update(run(_reference()))
    assert run(_state_of(steps)) == _REFERENCE


async def _state_of(steps: Sequence[Step]) -> dict[str, Any]:
    return await _state(await _play(steps))


@pytest.mark.parametrize("path", PATHS)
def test_a_held_record_approved_is_stored_alike_whatever_path_brought_it(
    path: ImportSource,
) -> None:
    steps: list[Step] = [
        ("offer", i, path if i == HELD else ImportSource.PEER) for i in range(len(POOL))
    ]
    assert run(_state_of([*steps, ("approve", HELD, None)])) == run(_reference())
