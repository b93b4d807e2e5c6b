"""Outcome attestations between nodes: made from outcomes, carried, verified, kept, counted.

Each node is a ``LessonService`` over an in-memory store with its import pipeline, its
``Attestations`` and its ``AgentServicer`` (called without a gRPC server); records travel by
the Publish and Sync handlers themselves (``handle_publish``, ``handle_sync``). Principals
are one registry view shared by every node: the source's operator, alice (two keys), bob and
carol each admit their own nodes.
"""

from __future__ import annotations

import dataclasses
import json
import random
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from lamarck.consensus.attestation import AttestationParams, attestation_bytes
from lamarck.consensus.corroboration import (
    NO_SUPPORT,
    CorroborationParams,
    EvidenceClass,
    Support,
    evidence_class,
)
from lamarck.domain.rows import LessonFilter, LessonRow
from lamarck.errors import StoreUnavailable
from lamarck.gossip.publisher import GossipParams, sign_lesson
from lamarck.learning.influence import InfluenceParams, evidence_label, evidence_of
from lamarck.learning.params import LearningParams
from lamarck.learning.scopes import project_scope
from lamarck.node.api.agent_service import AgentServicer
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.node.api.peer_handlers import PublishDeps, handle_publish, handle_sync
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.lessons.attested_support import AttestedSupportReader, SharingSupportReader
from lamarck.node.lessons.service import LessonService
from lamarck.node.sharing.attestations import Attestations
from lamarck.node.sharing.peer_client import PeerClient, sort_sync_records
from lamarck.node.store.attestations import InMemoryAttestationStore
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams
from lamarck.proto.canonical import canonical_bytes, sha256_hex
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.proto.v1 import agent_pb2, peer_pb2, records_pb2
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from lamarck.reputation.transfer import TransferParams
from tests.factories import attestation, identity, outcome_obj
from tests.unit.node.agent_node import TinyEmbedder

DIM = TinyEmbedder.dim
PROJECT = "a1" * 32
BAD, GOOD, TARGET = "shell:pytest tests/", "shell:pytest", "the test suite"
CONTEXT = {"domain": "python-testing", "environment": "linux", "tools": ["pytest"]}
TASK = "run the test suite"
PARAMS = AttestationParams()
CORROBORATION = CorroborationParams(min_principals=2)

SOURCE = identity(0x31)
SOURCE_TWIN = identity(0x32)  # another node of the source's operator
ALICE = identity(0x33)
ALICE_TWIN = identity(0x34)
BOB = identity(0x35)
CAROL = identity(0x36)
STRANGER = identity(0x37)  # signs well, but nobody admitted it

PRINCIPAL_OF = {
    SOURCE.node_id: "source-operator",
    SOURCE_TWIN.node_id: "source-operator",
    ALICE.node_id: "alice",
    ALICE_TWIN.node_id: "alice",
    BOB.node_id: "bob",
    CAROL.node_id: "carol",
}


async def principals(ids: Sequence[str]) -> dict[str, str]:
    """The registry view every node reads: admitted, unrevoked ids and their principals."""
    return {i: PRINCIPAL_OF[i] for i in ids if i in PRINCIPAL_OF}


class Pins:
    """Every admitted identity's key is pinned."""

    async def pinned_key(self, node_id: str) -> str | None:
        for who in (SOURCE, SOURCE_TWIN, ALICE, ALICE_TWIN, BOB, CAROL):
            if who.node_id == node_id:
                return who.public_key_b64
        return None

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


class Sink:
    """A reputation sink that keeps what it is told."""

    def __init__(self) -> None:
        self.events: list[ReputationEvent] = []

    def emit(self, event: ReputationEvent) -> None:
        self.events.append(event)

    def of(self, kind: EventKind) -> set[str]:
        return {e.node_id for e in self.events if e.kind is kind}


class Node:
    """One node: lessons, import pipeline, attestations, agent servicer and support reader."""

    def __init__(self, identity: NodeIdentity, seed: int) -> None:
        self.identity = identity
        self.clock = FixedClock()
        self.store = InMemoryLessonStore(dim=DIM)
        # Every recall shows the unverified import (as a hint), so each outcome judges it.
        shown = LearningParams(influence=InfluenceParams(unverified_plan_share=1.0))
        self.service = LessonService(
            self.store,
            TinyEmbedder(),
            self.clock,
            shown,
            rng=random.Random(seed),
            transfer=TransferParams(),
        )
        book = InMemoryReputation(ReputationParams(), self.clock)
        self.pipeline = ImportPipeline(
            params=ImportParams(),
            store=self.store,
            view=StoreImportView(self.store, book, identity.node_id),
            pins=Pins(),
            reputation=book,
            embedder=TinyEmbedder(),
            clock=self.clock,
            rng=random.Random(seed),
        )
        self.sink = Sink()
        self.attestations = Attestations(
            InMemoryAttestationStore(PARAMS),
            self.store,
            identity,
            principals=principals,
            sink=self.sink,
            clock=self.clock,
            rng=random.Random(seed),
        )
        self.servicer = AgentServicer(
            self.service,
            identity,
            self.clock,
            store=self.store,
            pipeline=self.pipeline,
            sink=lambda: self.sink,
            attester=self.attestations.on_outcome,
        )
        self.reader = AttestedSupportReader(
            self.attestations.store,
            principals=principals,
            certified=lambda _: False,
            clock=self.clock,
        )
        self.turn = 0

    async def outcome(self, session: str, steps: list[tuple[str, str]], passed: bool) -> Any:
        """Record one turn's outcome through RecordOutcome."""
        self.turn += 1
        obj = outcome_obj(
            outcome_id=str(uuid.UUID(int=random.Random(self.turn).getrandbits(128), version=4)),
            session_id=session,
            turn_index=self.turn,
            project=PROJECT,
            goal_digest=f"make the test suite pass, turn {self.turn}",
            steps=[(op, result, TARGET) for op, result in steps],
            created_at=self.clock.now(),
            passed=passed,
        )
        request = agent_pb2.RecordOutcomeRequest(outcome_json=json.dumps(obj).encode())
        return await self.servicer.RecordOutcome(request, None)

    async def use_and_judge(self, session: str, works: bool) -> None:
        """Recall the lessons for the task, then run it: GOOD works or fails."""
        await self.service.recall(TASK, CONTEXT, project_scope(PROJECT), session)
        await self.outcome(session, [(GOOD, "ok" if works else "failed")], passed=works)

    async def publish(self, kind: records_pb2.RecordKind.ValueType, *raws: bytes) -> list[Any]:
        """Publish ``raws`` of ``kind`` to this node; its acks."""
        request = peer_pb2.PublishRequest(
            records=[records_pb2.SignedRecord(kind=kind, canonical_json=r) for r in raws],
            sender_node_id=SOURCE.node_id,
        )
        deps = PublishDeps(pipeline=self.pipeline, attestations=self.attestations)
        return list((await handle_publish(request, deps)).acks)

    async def copy(self) -> LessonRow:
        """This node's imported copy of the lesson."""
        [row] = await self.store.list_lessons(LessonFilter(imported=True))
        return row

    async def support(self) -> Support:
        row = await self.copy()
        return (await self.reader.support_for([row])).get(row.id, Support())

    async def evidence(self) -> EvidenceClass:
        row = await self.copy()
        return evidence_class(
            imported=True,
            local_confirmations=row.confirmations,
            support=await self.support(),
            params=CORROBORATION,
        )


async def source_lesson() -> bytes:
    """The source learns a lesson from its own outcome and signs it for gossip."""
    source = Node(SOURCE, 1)
    await source.outcome("s1", [(BAD, "failed"), (GOOD, "ok")], passed=True)
    [row] = await source.store.list_lessons(LessonFilter(imported=False))
    return sign_lesson(row, SOURCE).raw


async def network() -> tuple[bytes, Node, Node, Node]:
    """Alice, bob and carol each hold the source's lesson, imported by Publish."""
    raw = await source_lesson()
    nodes = Node(ALICE, 2), Node(BOB, 3), Node(CAROL, 4)
    for node in nodes:
        [ack] = await node.publish(records_pb2.RECORD_KIND_MEMORY, raw)
        assert ack.status == records_pb2.ACK_STATUS_ACCEPTED, ack.reason
    return (raw, *nodes)


MEMORY = records_pb2.RECORD_KIND_MEMORY
ATTESTATION = records_pb2.RECORD_KIND_ATTESTATION


async def test_an_outcome_on_an_imported_lesson_signs_an_attestation_queued_to_travel() -> None:
    _, alice, _, _ = await network()
    await alice.use_and_judge("a1", works=True)
    [raw] = alice.attestations.take_pending()
    attestation = json.loads(raw)
    assert attestation["attester_id"] == ALICE.node_id
    assert attestation["verdict"] == "confirm"
    assert attestation["memory_hash"] == (await alice.copy()).content_hash
    assert alice.attestations.take_pending() == []
    # Kept here too: a Sync from alice serves it.
    held = await alice.attestations.of_records([attestation["memory_hash"]])
    assert held == {attestation["memory_hash"]: [raw]}


async def test_an_outcome_on_a_local_lesson_attests_nothing() -> None:
    source = Node(SOURCE, 1)
    await source.outcome("s1", [(BAD, "failed"), (GOOD, "ok")], passed=True)
    await source.service.recall(TASK, CONTEXT, project_scope(PROJECT), "s2")
    await source.outcome("s2", [(GOOD, "ok")], passed=True)
    assert source.attestations.take_pending() == []


async def test_an_attestation_carried_with_its_lesson_is_verified_and_kept() -> None:
    raw, alice, _, _ = await network()
    await alice.use_and_judge("a1", works=True)
    [attested] = alice.attestations.take_pending()
    dave = Node(CAROL, 9)  # a node that has not seen the lesson yet
    request = peer_pb2.PublishRequest(
        records=[
            records_pb2.SignedRecord(kind=MEMORY, canonical_json=raw),
            records_pb2.SignedRecord(kind=ATTESTATION, canonical_json=attested),
        ],
        sender_node_id=ALICE.node_id,
    )
    reply = await handle_publish(
        request, PublishDeps(pipeline=dave.pipeline, attestations=dave.attestations)
    )
    assert [a.status for a in reply.acks] == [
        records_pb2.ACK_STATUS_ACCEPTED,
        records_pb2.ACK_STATUS_ACCEPTED,
    ]
    assert (await dave.support()).confirming == frozenset({"alice"})
    # The same attestation again is a duplicate; a stranger's and a forged one are refused.
    again = await dave.publish(ATTESTATION, attested)
    assert [a.status for a in again] == [records_pb2.ACK_STATUS_DUPLICATE]
    memory_hash = json.loads(attested)["memory_hash"]
    stranger = _attestation(STRANGER, memory_hash)
    forged = json.loads(_attestation(BOB, memory_hash))
    forged["verdict"] = "contradict"
    refused = await dave.publish(ATTESTATION, stranger, canonical_bytes(forged))
    assert [(a.status, a.reason) for a in refused] == [
        (records_pb2.ACK_STATUS_REJECTED, "unknown_attester"),
        (records_pb2.ACK_STATUS_REJECTED, "hash_mismatch"),
    ]


def _attestation(
    who: NodeIdentity, memory_hash: str, confirmed: bool = True, age: timedelta = timedelta(0)
) -> bytes:
    made = attestation(who, memory_hash, confirmed, at=FixedClock().now() - age, seed=who.node_id)
    return attestation_bytes(made)


async def test_attestations_about_lessons_not_held_or_by_the_sources_principal_are_refused() -> (
    None
):
    _, _, _, carol = await network()
    held_hash = (await carol.copy()).content_hash or ""
    acks = await carol.publish(
        ATTESTATION,
        _attestation(ALICE, "00" * 32),
        _attestation(SOURCE_TWIN, held_hash),
        _attestation(BOB, held_hash, age=timedelta(days=PARAMS.max_age_days + 1)),
    )
    assert [a.reason for a in acks] == ["orphan_attestation", "source_attestation", "expired"]
    assert await carol.support() == Support()


async def test_two_independent_principals_outcomes_corroborate_a_third_nodes_copy() -> None:
    _, alice, bob, carol = await network()
    assert await carol.evidence() is EvidenceClass.UNVERIFIED
    await alice.use_and_judge("a1", works=True)
    await carol.publish(ATTESTATION, *alice.attestations.take_pending())
    # One independent principal is not enough; a second key of the same principal adds nothing.
    assert await carol.evidence() is EvidenceClass.UNVERIFIED
    held_hash = (await carol.copy()).content_hash or ""
    await carol.publish(ATTESTATION, _attestation(ALICE_TWIN, held_hash))
    assert (await carol.support()).confirming == frozenset({"alice"})
    assert await carol.evidence() is EvidenceClass.UNVERIFIED
    await bob.use_and_judge("b1", works=True)
    await carol.publish(ATTESTATION, *bob.attestations.take_pending())
    support = await carol.support()
    assert support.confirming == frozenset({"alice", "bob"})
    assert "source-operator" not in support.confirming
    assert await carol.evidence() is EvidenceClass.CORROBORATED


async def test_reality_at_the_receiver_judges_the_attesters_once() -> None:
    _, alice, bob, carol = await network()
    await alice.use_and_judge("a1", works=True)
    await bob.use_and_judge("b1", works=False)
    await carol.publish(
        ATTESTATION, *alice.attestations.take_pending(), *bob.attestations.take_pending()
    )
    assert (await carol.support()).contradicting == frozenset({"bob"})
    await carol.use_and_judge("c1", works=True)
    assert carol.sink.of(EventKind.ATTESTATION_RIGHT) == {ALICE.node_id}
    assert carol.sink.of(EventKind.ATTESTATION_WRONG) == {BOB.node_id}
    # Carol's own outcome attests too, and she never judges herself.
    assert CAROL.node_id not in carol.sink.of(EventKind.ATTESTATION_RIGHT)
    keys = [e.key for e in carol.sink.events if e.kind is EventKind.ATTESTATION_RIGHT]
    await carol.use_and_judge("c2", works=True)
    again = [e.key for e in carol.sink.events if e.kind is EventKind.ATTESTATION_RIGHT]
    assert set(again) == set(keys)  # the same facts: the book counts each once


async def test_a_principal_attesting_both_verdicts_counts_for_nothing_and_is_charged() -> None:
    _, alice, _, carol = await network()
    await alice.use_and_judge("a1", works=True)
    await carol.publish(ATTESTATION, *alice.attestations.take_pending())
    held_hash = (await carol.copy()).content_hash or ""
    await carol.publish(ATTESTATION, _attestation(ALICE_TWIN, held_hash, confirmed=False))
    assert await carol.support() == Support()
    assert carol.sink.of(EventKind.ATTESTATION_EQUIVOCATION) == {
        ALICE.node_id,
        ALICE_TWIN.node_id,
    }


async def test_anti_entropy_carries_attestations_about_lessons_the_puller_holds() -> None:
    raw, alice, _, carol = await network()
    await alice.use_and_judge("a1", works=True)
    alice.attestations.take_pending()  # the push is lost: only Sync can carry it now
    content_hash = (await alice.copy()).content_hash or ""
    held = {content_hash: raw}
    attested = await alice.attestations.shareable(held, CAROL.node_id)
    assert len(attested) == 1
    # Never offered to the lesson's own source, which keeps none about its own lessons.
    assert await alice.attestations.shareable(held, SOURCE.node_id) == {}
    # Carol holds the lesson and tells alice so: only the attestation is missing.
    mine = {content_hash}
    request = peer_pb2.SyncRequest(requester_node_id=CAROL.node_id, known_hashes=sorted(mine))
    pages = [
        page async for page in handle_sync(request, held, GossipParams(), attestations=attested)
    ]
    found: dict[str, bytes] = {}
    memories = [m for page in pages for m in sort_sync_records(page.records, None, found)]
    assert memories == []
    assert set(found) == set(attested)
    results = await carol.attestations.receive(list(found.values()))
    assert [r.kept for r in results] == [True]
    assert (await carol.support()).confirming == frozenset({"alice"})


async def test_an_attestation_of_an_earlier_version_is_stale_and_never_counts() -> None:
    _, alice, _, carol = await network()
    await alice.use_and_judge("a1", works=True)
    [attested] = alice.attestations.take_pending()
    old = await carol.copy()
    newer = dataclasses.replace(
        old, id=str(uuid.UUID(int=99, version=4)), content_hash="cd" * 32, supersedes=old.id
    )
    await carol.store.supersede(old.id, newer)
    acks = await carol.publish(ATTESTATION, attested)
    assert [a.reason for a in acks] == ["stale_attestation"]


async def test_a_verified_certificate_corroborates_and_local_lessons_need_no_support() -> None:
    _, _, _, carol = await network()
    row = await carol.copy()
    reader = AttestedSupportReader(
        carol.attestations.store,
        principals=principals,
        certified=lambda content_hash: content_hash == row.content_hash,
        clock=carol.clock,
    )
    local = dataclasses.replace(row, id="local", imported_from=None)
    support = await reader.support_for([row, local])
    assert set(support) == {row.id}
    # A copy of the reading node's own record is its own lesson: no support read for it.
    own = AttestedSupportReader(
        carol.attestations.store,
        principals=principals,
        certified=lambda _: True,
        clock=carol.clock,
        own_id=row.imported_from or "",
    )
    assert await own.support_for([row]) == {}
    assert support[row.id].certified and support[row.id].independent == 0
    assert (
        evidence_class(
            imported=True, local_confirmations=0, support=support[row.id], params=CORROBORATION
        )
        is EvidenceClass.CORROBORATED
    )


async def test_an_attester_revoked_since_counts_for_nothing_when_read() -> None:
    _, alice, bob, carol = await network()
    for node, session in ((alice, "a1"), (bob, "b1")):
        await node.use_and_judge(session, works=True)
        await carol.publish(ATTESTATION, *node.attestations.take_pending())
    assert await carol.evidence() is EvidenceClass.CORROBORATED

    async def without_bob(ids: Sequence[str]) -> dict[str, str]:
        return {i: p for i, p in (await principals(ids)).items() if i != BOB.node_id}

    reader = AttestedSupportReader(
        carol.attestations.store,
        principals=without_bob,
        certified=lambda _: False,
        clock=carol.clock,
    )
    row = await carol.copy()
    assert (await reader.support_for([row]))[row.id].confirming == frozenset({"alice"})


async def test_before_sharing_runs_no_lesson_has_support() -> None:
    _, alice, _, carol = await network()
    await alice.use_and_judge("a1", works=True)
    await carol.publish(ATTESTATION, *alice.attestations.take_pending())
    row = await carol.copy()
    running: list[AttestedSupportReader] = []
    reader = SharingSupportReader(lambda: running[0] if running else None)
    assert await reader.support_for([row]) == {}
    running.append(carol.reader)
    assert (await reader.support_for([row]))[row.id].confirming == frozenset({"alice"})


class _Stub:
    """A PeerService stub that keeps the Publish requests and acks every record."""

    def __init__(self) -> None:
        self.requests: list[peer_pb2.PublishRequest] = []

    async def Publish(
        self, request: peer_pb2.PublishRequest, **call: object
    ) -> peer_pb2.PublishResponse:
        self.requests.append(request)
        return peer_pb2.PublishResponse(
            acks=[
                records_pb2.RecordAck(index=i, status=records_pb2.ACK_STATUS_ACCEPTED)
                for i in range(len(request.records))
            ]
        )


def _client(attestations_of: Any, max_records: int = 256) -> tuple[PeerClient, _Stub]:
    stub = _Stub()
    client = PeerClient(
        ALICE.node_id,
        PeerTokens(ALICE, FixedClock(), PeerAuthParams()),
        lambda _: "127.0.0.1:1",
        hop_limit=3,
        max_message_bytes=1 << 20,
        certificate_of=lambda _: None,
        attestations_of=attestations_of,
        max_records=max_records,
    )
    client._stub = lambda _target: stub  # type: ignore[method-assign]
    return client, stub


async def test_a_publish_carries_each_memorys_attestations_right_after_it() -> None:
    raw, alice, _, _ = await network()
    await alice.use_and_judge("a1", works=True)
    [attested] = alice.attestations.take_pending()
    client, stub = _client(alice.attestations.of_records)
    await client.publish(BOB.node_id, [raw], 1)
    [request] = stub.requests
    assert [(r.kind, bytes(r.canonical_json)) for r in request.records] == [
        (MEMORY, raw),
        (ATTESTATION, attested),
    ]
    await client.push_attestations(BOB.node_id, [attested])
    alone = stub.requests[-1]
    assert [r.kind for r in alone.records] == [ATTESTATION] and alone.hop_limit == 1


async def test_a_publish_still_sends_its_memories_when_attestations_cannot_be_read() -> None:
    raw = await source_lesson()

    async def down(_: Sequence[str]) -> dict[str, list[bytes]]:
        raise StoreUnavailable("store down")

    client, stub = _client(down)
    await client.publish(BOB.node_id, [raw], 0)
    assert [r.kind for r in stub.requests[0].records] == [MEMORY]


async def test_attestations_never_push_a_publish_past_the_record_cap() -> None:
    raw = await source_lesson()
    content_hash = sha256_hex(raw)
    many = [_attestation(who, content_hash) for who in (ALICE, ALICE_TWIN, BOB, CAROL, STRANGER)]

    async def attestations_of(hashes: Sequence[str]) -> dict[str, list[bytes]]:
        return {content_hash: many}

    client, stub = _client(attestations_of, max_records=3)
    await client.publish(BOB.node_id, [raw], 0)
    assert [r.kind for r in stub.requests[0].records] == [MEMORY, ATTESTATION, ATTESTATION]
    await client.push_attestations(BOB.node_id, many)
    assert [len(r.records) for r in stub.requests[1:]] == [3, 2]


async def test_a_node_without_attestations_refuses_them_as_an_unsupported_kind() -> None:
    _, alice, _, carol = await network()
    await alice.use_and_judge("a1", works=True)
    request = peer_pb2.PublishRequest(
        records=[
            records_pb2.SignedRecord(kind=ATTESTATION, canonical_json=raw)
            for raw in alice.attestations.take_pending()
        ],
        sender_node_id=ALICE.node_id,
    )
    reply = await handle_publish(request, PublishDeps(pipeline=carol.pipeline))
    assert [(a.status, a.reason) for a in reply.acks] == [
        (records_pb2.ACK_STATUS_REJECTED, "unsupported_kind")
    ]


async def test_a_lesson_from_a_node_of_this_nodes_own_principal_is_marked_as_such() -> None:
    # Carol's copy came from SOURCE. Read by a node of the source's own operator it is
    # marked own-principal (the canary its agents may try first); by Carol's node, it is not.
    _, _, _, carol = await network()
    row = await carol.copy()
    for own_id, expected in ((SOURCE_TWIN.node_id, True), (CAROL.node_id, False), ("", False)):
        reader = AttestedSupportReader(
            carol.attestations.store,
            principals=principals,
            certified=lambda _: False,
            clock=carol.clock,
            own_id=own_id,
        )
        support = (await reader.support_for([row])).get(row.id, NO_SUPPORT)
        assert support.own_principal is expected, own_id
        assert support.independent == 0
        evidence = evidence_of(
            imported=True,
            local_confirmations=0,
            support=support,
            authority=False,
            approved=False,
            params=InfluenceParams(),
            checkable=False,
        )
        assert evidence.evidence_class is EvidenceClass.UNVERIFIED  # never corroborated by it
        label = evidence_label(evidence, 0.29)
        assert ("of this node's operator" in label) is expected, label
