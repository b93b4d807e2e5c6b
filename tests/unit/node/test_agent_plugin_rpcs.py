"""AgentService for plugged-in agents: why nothing was learned, claims without an operation,
situation lessons, one lesson by id, and whether a lesson is shared (and why not).

Served by a real in-process gRPC server over LessonService and the in-memory store; every call
goes through the SDK's ``AsyncClient``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc.aio
import pytest

from lamarck.client import AsyncClient
from lamarck.errors import InvalidRecord, NotFound
from lamarck.gossip.publisher import GossipParams
from lamarck.gossip.share_reason import SharingState
from lamarck.learning.params import LearningParams
from lamarck.learning.situations import Situation
from lamarck.node.api.agent_service import CLAIM_NOTE, AgentServicer
from lamarck.node.api.interceptors import ErrorInterceptor
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import agent_pb2_grpc
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from lamarck.reputation.transfer import TransferParams

PROJECT = "c3" * 32
BAD, GOOD, TARGET = "shell:pytest tests/", "shell:pytest", "the test suite"
EMBED_DIM = 64


@dataclass
class Node:
    """One in-process node and the SDK client talking to it."""

    client: AsyncClient
    server: grpc.aio.Server
    clock: FixedClock
    sharing: list[SharingState | None]
    n: int = 0

    def outcome(
        self,
        steps: Sequence[tuple[str, str, str]],
        *,
        failed: bool = False,
        session: str = "s1",
        **extra: Any,
    ) -> dict[str, Any]:
        """An outcome record (without schema_version: the node fills the default)."""
        self.n += 1
        return {
            "id": str(uuid.UUID(int=random.Random(self.n).getrandbits(128), version=4)),
            "session_id": session,
            "turn_index": self.n,
            "project": PROJECT,
            "goal_digest": "make the test suite pass",
            "approach": [
                {"operation_key": op, "outcome": result, "target": target}
                for op, result, target in steps
            ],
            "checks": [
                {
                    "label": "pytest",
                    "kind": "test",
                    "order": 0,
                    "ran": True,
                    "failed": failed,
                    "mutated_after": False,
                }
            ],
            "passed": not failed,
            "claim_ok": True,
            "steps": len(steps),
            "tokens": 1,
            "wall_s": 1.0,
            "created_at": format_ts(self.clock.now()),
            **extra,
        }


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    store = InMemoryLessonStore(dim=EMBED_DIM)
    clock = FixedClock()
    identity = NodeIdentity.from_seed(bytes([7]) * 32)
    embedder = HashingEmbedder(EMBED_DIM)
    service = LessonService(
        store, embedder, clock, LearningParams(), rng=random.Random(7), transfer=TransferParams()
    )
    book = InMemoryReputation(ReputationParams(), clock)
    pipeline = ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, book, identity.node_id),
        pins=None,
        reputation=book,
        embedder=embedder,
        clock=clock,
        rng=random.Random(7),
    )
    sharing: list[SharingState | None] = [None]
    servicer = AgentServicer(
        service,
        identity,
        clock,
        store=store,
        pipeline=pipeline,
        sink=lambda: book,
        sharing=lambda: sharing[0],
    )
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    agent_pb2_grpc.add_AgentServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    client = AsyncClient(f"127.0.0.1:{port}", timeout=10.0)
    try:
        yield Node(client, server, clock, sharing)
    finally:
        await client.close()
        await server.stop(None)


# -- why nothing was learned ------------------------------------------------------------------


async def test_a_learning_outcome_names_no_reason(node: Node) -> None:
    result = await node.client.record_outcome(
        node.outcome([(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    assert result.ids("created") and result.nothing_learned == ""


async def test_a_passing_run_without_a_failed_then_ok_pair_says_so(node: Node) -> None:
    result = await node.client.record_outcome(node.outcome([(GOOD, "ok", TARGET)]))
    assert result.changes == () and result.nothing_learned == "no_failed_then_ok_pair"


async def test_a_failing_check_and_a_dishonest_claim_are_named(node: Node) -> None:
    failing = await node.client.record_outcome(node.outcome([(BAD, "failed", TARGET)], failed=True))
    assert failing.nothing_learned == "check_failed"
    claimed = await node.client.record_outcome(
        node.outcome([(BAD, "failed", TARGET), (GOOD, "ok", TARGET)], claim_ok=False)
    )
    assert claimed.changes == () and claimed.nothing_learned == "claim_not_ok"


async def test_a_retried_outcome_is_a_duplicate(node: Node) -> None:
    outcome = node.outcome([(GOOD, "ok", TARGET)])
    await node.client.record_outcome(outcome)
    again = await node.client.record_outcome(outcome)
    assert again.duplicate and again.nothing_learned == "duplicate"


async def test_lessons_in_play_about_other_operations_are_not_attributed(node: Node) -> None:
    learned = await node.client.record_outcome(
        node.outcome([(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    [lesson_id] = learned.ids("created")
    result = await node.client.record_outcome(
        node.outcome([("shell:ruff check", "ok", "src")], in_play=[lesson_id], session="s2")
    )
    assert result.changes == () and result.nothing_learned == "not_attributed"


# -- Remember without an operation ------------------------------------------------------------


async def test_remember_without_an_operation_keys_a_note_and_says_what_a_claim_is(
    node: Node,
) -> None:
    made = await node.client.remember("Run the linters before the tests, always.")
    assert made.created and made.lesson.status == "claimed"
    assert made.lesson.operation == "note:run-the-linters-before-the-tests"
    assert made.note == CLAIM_NOTE and "RecordOutcome" in made.note
    assert not made.lesson.shared and made.lesson.not_shared_reason == "sharing_off"
    again = await node.client.remember("Run the linters before the tests, always.")
    assert not again.created and again.lesson.id == made.lesson.id


# -- RecordSituation and GetLesson ------------------------------------------------------------


async def test_a_declared_situation_is_stored_once_and_read_back_by_id(node: Node) -> None:
    gh = Situation.declared(
        tool="check_cli_setup",
        subject="gh",
        kind="auth",
        interactive=True,
        unblock="run `gh auth login`",
        probe="gh auth status",
    )
    stored = await node.client.record_situation(gh, project_digest=PROJECT)
    assert stored.category == "situation" and stored.status == "active"
    assert stored.situation is not None and stored.situation.probe == "gh auth status"
    assert stored.scope == f"project:{PROJECT}"
    again = await node.client.record_situation(gh, project_digest=PROJECT)
    assert again.id == stored.id
    shown = await node.client.get_lesson(stored.id)
    assert shown.id == stored.id and shown.situation == stored.situation


async def test_inferred_and_transient_situations_are_refused(node: Node) -> None:
    inferred = Situation.inferred(tool="web_fetch", subject="api.github.com", kind="auth")
    with pytest.raises(InvalidRecord):
        await node.client.record_situation(inferred)
    network = Situation.declared(tool="git", subject="origin", kind="network")
    with pytest.raises(InvalidRecord):
        await node.client.record_situation(network)


async def test_get_lesson_of_an_unknown_id_is_not_found(node: Node) -> None:
    with pytest.raises(NotFound):
        await node.client.get_lesson(str(uuid.uuid4()))


# -- shared or not, and why --------------------------------------------------------------------


async def test_a_lesson_says_whether_it_is_shared_by_the_publishers_rule(node: Node) -> None:
    learned = await node.client.record_outcome(
        node.outcome([(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    [lesson_id] = learned.ids("created")
    assert (await node.client.get_lesson(lesson_id)).not_shared_reason == "sharing_off"
    node.sharing[0] = SharingState(GossipParams(publish_threshold=0.4, team_sharing=False))
    lesson = await node.client.get_lesson(lesson_id)
    assert not lesson.shared and lesson.not_shared_reason == "scope_not_shared"
    # Team sharing (the default): the project's lesson goes to the peers of that project.
    node.sharing[0] = SharingState(GossipParams(publish_threshold=0.4))
    assert (await node.client.get_lesson(lesson_id)).shared
    scope = f"project:{PROJECT}"
    node.sharing[0] = SharingState(
        GossipParams(publish_threshold=0.4, shared_scopes=frozenset({scope}))
    )
    lesson = await node.client.get_lesson(lesson_id)
    assert lesson.shared and lesson.not_shared_reason == ""
    node.sharing[0] = SharingState(GossipParams(shared_scopes=frozenset({scope})))
    below = await node.client.get_lesson(lesson_id)
    assert below.not_shared_reason == "below_publish_threshold"
    node.sharing[0] = SharingState(GossipParams(), incognito=True)
    assert (await node.client.get_lesson(lesson_id)).not_shared_reason == "incognito"
