"""One lesson across nodes: one encoding, one local identity, local evidence kept,
retirement spread by the signed record, and every step in the lesson's event log.

Node A is a real ``LessonService`` + ``AgentServicer`` (Export) over an in-memory store; node B
is the import pipeline of ``test_pipeline`` with a ``LessonService`` over the same store, so
B's own outcomes on the copy are the real learning rules, not hand-written rows.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import timedelta
from typing import Any

import pytest
from importing_helpers import NOW, ts
from lifecycle_harness import ALL, BAD, DIM, GOOD, TARGET, NodeB, outcome
from pipeline_harness import (
    ATTACKER,
    ATTACKER_KEY,
    SELF,
    SELF_KEY,
    SOURCE,
    SOURCE_KEY,
    Harness,
    signed_raw,
)

from lamarck.domain.rows import LessonStatus
from lamarck.gossip.audience import band_reader
from lamarck.gossip.publisher import GossipParams, lesson_version, sign_lesson
from lamarck.learning.params import LearningParams
from lamarck.node.api.agent_service import AgentServicer
from lamarck.node.api.peer_handlers import shareable_records
from lamarck.node.console.lesson_pages import lesson_page
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportSource
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportOutcome
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import FixedClock
from lamarck.proto.signed import SignedMemory
from lamarck.proto.v1 import agent_pb2, lessons_pb2
from lamarck.reputation.events import EventKind
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.transfer import TransferParams


def newer(version: int, days_ago: float, status: str = "active", **over: Any) -> bytes:
    """The source's version ``version`` of the record (in ``status``), updated ``days_ago``."""
    return signed_raw(
        lesson={"version": version, "status": status},
        provenance={"updated_at": ts(NOW - timedelta(days=days_ago))},
        **over,
    )


# -- §2.1 one encoding ----------------------------------------------------------------------


async def _export(servicer: AgentServicer) -> bytes:
    chunks = [part.jsonl async for part in servicer.Export(agent_pb2.ExportRequest(), context=None)]
    return b"".join(chunks)


async def test_export_twice_across_a_confidence_change_then_gossip_is_one_row_no_equivocation() -> (
    None
):
    # Node A: learns a lesson, exports it, confirms it (confidence moves), exports again.
    a_clock = FixedClock(NOW - timedelta(hours=1))
    a_store = InMemoryLessonStore(dim=DIM)
    a_service = LessonService(
        a_store,
        HashingEmbedder(dim=DIM),
        a_clock,
        LearningParams(),
        rng=random.Random(3),
        transfer=TransferParams(),
    )
    # A's pipeline is never used here (Export only), but the servicer is wired as the node's.
    servicer = AgentServicer(
        a_service, SOURCE_KEY, a_clock, store=a_store, pipeline=Harness().pipeline
    )
    learned = await a_service.record_outcome(
        outcome(a_clock, 1, [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    [lesson_id] = learned.ids("created")
    first = await _export(servicer)
    a_clock.advance(60)
    confirmed = await a_service.record_outcome(
        outcome(a_clock, 2, [(GOOD, "ok", TARGET)], in_play=[lesson_id])
    )
    assert confirmed.ids("confirmed") == [lesson_id]
    second = await _export(servicer)
    one, two = (
        SignedMemory.from_json(first.rstrip(b"\n")),
        SignedMemory.from_json(second.rstrip(b"\n")),
    )
    assert one.memory.schema_version == two.memory.schema_version == "2.0"
    assert one.memory.confidence != two.memory.confidence
    assert one.memory.lesson is not None and two.memory.lesson is not None
    assert one.memory.lesson.version < two.memory.lesson.version

    # Node B imports both bundles, then A gossips the lesson as it stands now.
    b = NodeB()
    r1, r2 = [
        await b.pipeline.import_record(
            raw.rstrip(b"\n"), source=ImportSource.BUNDLE, via_node_id=""
        )
        for raw in (first, second)
    ]
    gossiped = sign_lesson(await a_store.get_lesson(lesson_id), SOURCE_KEY)
    r3 = await b.offer(gossiped.raw, via=SOURCE)
    assert [r.outcome for r in (r1, r2, r3)] == [
        ImportOutcome.ACCEPT,
        ImportOutcome.ACCEPT,
        ImportOutcome.DUPLICATE,
    ]
    assert gossiped.raw == second.rstrip(b"\n")  # Export and Publish: the same bytes
    [row] = await b.store.list_lessons(ALL)
    assert row.content_hash == gossiped.content_hash
    assert not [e for e in b.events.events if e.kind is EventKind.EQUIVOCATION]


def test_the_record_version_moves_with_every_signed_field() -> None:
    a_store = InMemoryLessonStore(dim=DIM)
    a_clock = FixedClock(NOW)
    service = LessonService(
        a_store,
        HashingEmbedder(dim=DIM),
        a_clock,
        LearningParams(),
        rng=random.Random(5),
        transfer=TransferParams(),
    )

    async def go() -> None:
        learned = await service.record_outcome(
            outcome(a_clock, 1, [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
        )
        [lesson_id] = learned.ids("created")
        seen = [sign_lesson(await a_store.get_lesson(lesson_id), SOURCE_KEY)]
        a_clock.advance(1)
        await service.set_access(lesson_id, "trusted")
        seen.append(sign_lesson(await a_store.get_lesson(lesson_id), SOURCE_KEY))
        a_clock.advance(1)
        await service.retire(lesson_id, "alice")
        seen.append(sign_lesson(await a_store.get_lesson(lesson_id), SOURCE_KEY))
        versions = [s.memory.lesson.version for s in seen if s.memory.lesson is not None]
        assert versions == sorted(set(versions)) and len(versions) == 3
        assert [s.memory.access_level for s in seen] == ["public", "trusted", "trusted"]
        retired = seen[-1].memory
        assert retired.lesson is not None and retired.lesson.status == "retired"
        assert retired.metadata.superseded_by == "retired:alice"
        row = await a_store.get_lesson(lesson_id)
        assert retired.lesson.version == lesson_version(row)

    asyncio.run(go())


# -- §2.2 stable id, §2.3 local evidence ------------------------------------------------------


async def test_re_pushes_of_newer_versions_keep_one_local_id() -> None:
    b = NodeB()
    ids = [
        (await b.offer(raw)).lesson_id
        for raw in (signed_raw(), newer(2, 2), newer(3, 1, confidence=0.75))
    ]
    assert len(set(ids)) == 1 and ids[0] is not None
    [row] = await b.store.list_lessons(ALL)
    assert row.id == ids[0] and row.status is LessonStatus.ACTIVE
    assert row.original_confidence == 0.75


async def test_local_evidence_survives_a_newer_version_from_the_source() -> None:
    b = NodeB()
    lesson_id = (await b.offer(signed_raw())).lesson_id or ""
    transferred = (await b.store.get_lesson(lesson_id)).confidence
    await b.confirm(lesson_id)
    tested = await b.store.get_lesson(lesson_id)
    assert tested.confidence > transferred and tested.confirmations == 1

    # The source re-pushes the same claim as a newer version (new content wording).
    result = await b.offer(newer(2, 1, content="Run the database migrations before a restart."))
    assert result.outcome is ImportOutcome.ACCEPT and result.lesson_id == lesson_id
    after = await b.store.get_lesson(lesson_id)
    assert after.content == "Run the database migrations before a restart."
    assert after.confidence == pytest.approx(tested.confidence)
    assert (after.confirmations, after.evidence) == (1, tested.evidence)
    assert after.transferred_confidence == pytest.approx(transferred)
    # The log says who changed it and why: the source's newer version, not an edit by "agent".
    events = await b.store.lesson_events([lesson_id])
    assert [(e.kind, e.actor) for e in events] == [
        ("imported", SOURCE),
        ("confirmed", "loop"),
        ("version", SOURCE),
    ]
    assert events[-1].confidence_before == pytest.approx(tested.confidence)
    assert events[-1].confidence_after == pytest.approx(after.confidence)


# -- edits: a new version of the same lesson, local evidence kept ------------------------------


class NodeA:
    """The source: a real ``LessonService`` over its own store, with a lesson worth sharing."""

    def __init__(self) -> None:
        self.clock = FixedClock(NOW - timedelta(hours=1))
        self.store = InMemoryLessonStore(dim=DIM)
        self.service = LessonService(
            self.store,
            HashingEmbedder(dim=DIM),
            self.clock,
            LearningParams(),
            rng=random.Random(3),
            transfer=TransferParams(),
        )
        self.lesson_id = ""
        self.params = GossipParams()

    async def learn(self) -> str:
        learned = await self.service.record_outcome(
            outcome(self.clock, 1, [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
        )
        [self.lesson_id] = learned.ids("created")
        for n in (2, 3):  # confirmed until it is worth publishing
            self.clock.advance(60)
            await self.service.record_outcome(
                outcome(self.clock, n, [(GOOD, "ok", TARGET)], in_play=[self.lesson_id])
            )
        row = await self.store.get_lesson(self.lesson_id)
        self.params = GossipParams(shared_scopes=frozenset({row.scope}))
        return self.lesson_id

    async def shared(self) -> list[bytes]:
        """What a peer's Sync would pull from A now, ended records first."""
        held = await shareable_records(
            self.store, SOURCE_KEY, self.params, band_reader(Scores(), ReputationParams()), SELF
        )
        return sorted(held.values(), key=lambda raw: b'"status":"active"' in raw)


async def _b_holds_a_confirmed_copy(a: NodeA) -> tuple[NodeB, Any]:
    """B imports A's lesson and confirms it with an outcome of its own."""
    b = NodeB()
    for raw in await a.shared():
        assert (await b.offer(raw, via=SOURCE)).outcome is ImportOutcome.ACCEPT
    [copy] = await b.store.list_lessons(ALL)
    b.n += 1
    confirmed = await b.service.record_outcome(
        outcome(b.clock, 100 + b.n, [(GOOD, "ok", TARGET)], in_play=[copy.id])
    )
    assert confirmed.ids("confirmed") == [copy.id]
    tested = await b.store.get_lesson(copy.id)
    assert tested.confidence > copy.confidence and tested.confirmations == 1
    return b, tested


@pytest.mark.parametrize("edit_first", [False, True], ids=["old-ended-first", "edit-first"])
async def test_an_edit_at_the_source_is_a_new_version_of_the_holders_copy_evidence_kept(
    edit_first: bool,
) -> None:
    a = NodeA()
    await a.learn()
    b, tested = await _b_holds_a_confirmed_copy(a)
    a.clock.advance(60)
    edited = await a.service.edit(
        a.lesson_id, "Run pytest on the whole suite, never one file.", "alice", "clearer"
    )
    shared = await a.shared()  # the old record, now superseded, and its edit
    assert len(shared) == 2
    for raw in reversed(shared) if edit_first else shared:
        result = await b.offer(raw, via=SOURCE)
        assert result.outcome is ImportOutcome.ACCEPT and result.lesson_id == tested.id
    # One copy, the same local id, the new text, and B's own evidence with it.
    [after] = await b.store.list_lessons(ALL)
    assert after.id == tested.id and after.status is LessonStatus.ACTIVE
    assert after.content == edited.content
    assert (after.confirmations, after.evidence) == (1, tested.evidence)
    assert after.confirmed_projects == tested.confirmed_projects
    margin = tested.confidence - (tested.transferred_confidence or 0.0)
    assert after.confidence == pytest.approx(after.transferred_confidence + margin)
    assert SignedMemory.from_json(after.signed_record or b"").memory.id == edited.id
    # The history shows the edit: who signed it, what it supersedes and why.
    events = await b.store.lesson_events([tested.id])
    [edit] = [e for e in events if e.kind == "edited"]
    assert edit.actor == SOURCE
    assert edit.reason == (
        f"edited by its source: record {edited.id} supersedes {a.lesson_id}: clearer"
    )
    # The superseded record is history here: a Sync does not pull it again each round.
    superseded = next(raw for raw in shared if b'"status":"superseded"' in raw)
    assert sha256_hex(superseded) in b.pipeline.view.held.history_hashes()
    # Re-pushes of either record change nothing more.
    for raw in shared:
        assert (await b.offer(raw, via=SOURCE)).outcome is ImportOutcome.DUPLICATE
    assert await b.store.list_lessons(ALL) == [await b.store.get_lesson(tested.id)]


async def test_an_edit_that_changes_the_operation_does_not_carry_old_evidence() -> None:
    b = NodeB()
    lesson_id = (await b.offer(signed_raw())).lesson_id or ""
    await b.confirm(lesson_id)
    tested = await b.store.get_lesson(lesson_id)
    successor = str(uuid.UUID(int=4242, version=4))
    result = await b.offer(
        signed_raw(
            id=successor,
            content="Drain the api service before database migrations.",
            lesson={"operation": "deploy.drain", "version": 2},
            metadata={"supersedes": _held_record_id(tested)},
            provenance={"updated_at": ts(NOW - timedelta(days=1))},
        )
    )
    assert result.outcome is ImportOutcome.ACCEPT and result.lesson_id == lesson_id
    after = await b.store.get_lesson(lesson_id)
    assert after.operation == "deploy.drain"
    # Evidence about deploy.restart does not confirm deploy.drain: it starts from its claim.
    assert (after.confirmations, after.contradictions, after.evidence) == (0, 0, ())
    assert after.confidence == pytest.approx(after.transferred_confidence)
    [edit] = [e for e in await b.store.lesson_events([lesson_id]) if e.kind == "edited"]
    assert "operation changed from deploy.restart to deploy.drain" in (edit.reason or "")
    assert "1 local outcome(s)" in (edit.reason or "")


async def test_only_the_signer_of_a_record_can_edit_the_holders_copy_of_it() -> None:
    b = NodeB()
    lesson_id = (await b.offer(signed_raw())).lesson_id or ""
    await b.confirm(lesson_id)
    record_id = _held_record_id(await b.store.get_lesson(lesson_id))
    forged = signed_raw(
        ATTACKER_KEY,
        id=str(uuid.UUID(int=4243, version=4)),
        content="Skip database migrations before restarting the api service.",
        metadata={"supersedes": record_id},
    )
    result = await b.offer(forged, via=ATTACKER)
    assert result.lesson_id != lesson_id
    copy = await b.store.get_lesson(lesson_id)
    assert copy.content == "Run database migrations before restarting the api service."
    assert copy.confirmations == 1


def _held_record_id(row: Any) -> str:
    """The id of the signed record a copy holds."""
    return SignedMemory.from_json(row.signed_record or b"").memory.id


# -- §2.4 retirement spreads ------------------------------------------------------------------


async def test_a_retirement_signed_by_the_source_retires_every_holders_copy() -> None:
    b = NodeB()
    lesson_id = (await b.offer(signed_raw())).lesson_id or ""
    await b.confirm(lesson_id)
    task = "restart the api service after database migrations"
    before = await b.service.recall(task, None, "global", "s-before")
    assert [r.id for r in before.lessons] == [lesson_id]
    retired = newer(2, 1, "retired", metadata={"superseded_by": "retired:bob"})
    result = await b.offer(retired)
    assert result.outcome is ImportOutcome.ACCEPT and result.lesson_id == lesson_id
    assert result.forward  # the holder passes the news on
    row = await b.store.get_lesson(lesson_id)
    assert row.status is LessonStatus.RETIRED and row.confirmations == 1
    # Out of every prompt, kept in history.
    recalled = await b.service.recall(task, None, "global", "s-after")
    assert recalled.lessons == ()
    events = await b.store.lesson_events([lesson_id])
    assert (events[-1].kind, events[-1].actor, events[-1].reason) == (
        "retired",
        SOURCE,
        "retired by bob at its source",
    )


class Scores:
    """A ``ReputationView`` that trusts nobody in particular."""

    def score(self, node_id: str) -> float:
        return 0.5


async def test_retiring_on_the_source_spreads_through_sync_and_retires_the_holders_copy() -> None:
    a_clock = FixedClock(NOW - timedelta(hours=1))
    a_store = InMemoryLessonStore(dim=DIM)
    a_service = LessonService(
        a_store,
        HashingEmbedder(dim=DIM),
        a_clock,
        LearningParams(),
        rng=random.Random(3),
        transfer=TransferParams(),
    )
    learned = await a_service.record_outcome(
        outcome(a_clock, 1, [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    [lesson_id] = learned.ids("created")
    for n in (2, 3):  # confirmed until it is worth publishing
        a_clock.advance(60)
        await a_service.record_outcome(
            outcome(a_clock, n, [(GOOD, "ok", TARGET)], in_play=[lesson_id])
        )
    row = await a_store.get_lesson(lesson_id)
    params = GossipParams(shared_scopes=frozenset({row.scope}))
    b = NodeB()

    async def sync_from_a() -> list[ImportOutcome]:
        held = await shareable_records(
            a_store, SOURCE_KEY, params, band_reader(Scores(), ReputationParams()), SELF
        )
        return [(await b.offer(raw, via=SOURCE)).outcome for raw in held.values()]

    assert await sync_from_a() == [ImportOutcome.ACCEPT]
    [copy] = await b.store.list_lessons(ALL)
    assert copy.status is LessonStatus.ACTIVE

    a_clock.advance(60)
    await a_service.retire(lesson_id, "alice", reason="the suite moved to nox")
    assert await sync_from_a() == [ImportOutcome.ACCEPT]
    [after] = await b.store.list_lessons(ALL)
    assert (after.id, after.status) == (copy.id, LessonStatus.RETIRED)
    assert (await b.service.recall("run the test suite", None, row.scope, "s")).lessons == ()
    # And the source's own log keeps who retired it and why.
    a_events = await a_store.lesson_events([lesson_id])
    assert (a_events[-1].kind, a_events[-1].actor, a_events[-1].reason) == (
        "retired",
        "alice",
        "the suite moved to nox",
    )


async def test_a_retirements_reason_and_retirer_reach_every_holders_history_cli_and_console() -> (
    None
):
    a = NodeA()
    await a.learn()
    b = NodeB()
    for raw in await a.shared():
        await b.offer(raw, via=SOURCE)
    a.clock.advance(60)
    await a.service.retire(a.lesson_id, "alice", reason="the suite moved to nox")
    [retirement] = await a.shared()
    signed = SignedMemory.from_json(retirement).memory
    assert signed.lesson is not None and signed.lesson.reason == "the suite moved to nox"
    assert signed.metadata.superseded_by == "retired:alice"
    assert (await b.offer(retirement, via=SOURCE)).outcome is ImportOutcome.ACCEPT
    [copy] = await b.store.list_lessons(ALL)
    assert copy.status is LessonStatus.RETIRED
    said = "retired by alice at its source: the suite moved to nox"
    # B's history (what `lamarck lessons history|show` prints) names the retirer and why.
    servicer = AgentServicer(b.service, SELF_KEY, b.clock, store=b.store, pipeline=b.pipeline)
    history = await servicer.History(agent_pb2.HistoryRequest(lesson_id=copy.id), context=None)
    retired = history.entries[-1]
    assert (retired.kind, retired.actor, retired.reason) == (
        lessons_pb2.LESSON_EVENT_KIND_RETIRED,
        SOURCE,
        said,
    )
    assert said in str(lesson_page(copy, await b.store.lesson_events([copy.id])))


async def test_a_copy_retired_here_stays_retired_when_the_source_re_pushes_it_active() -> None:
    b = NodeB()
    lesson_id = (await b.offer(signed_raw())).lesson_id or ""
    await b.service.retire(lesson_id, "operator")
    await b.offer(newer(2, 1))
    assert (await b.store.get_lesson(lesson_id)).status is LessonStatus.RETIRED
