"""The agent's view of a real node process, end to end, only through gRPC and ``lamarck.client``.

Nodes run as ``python -m lamarck.node.daemon`` (embedded Postgres, hashing embedder) from the
``node_process`` fixtures. The module shares one node for the read/write scenarios; the
SIGTERM test and the two-node round trip start their own.
"""

from __future__ import annotations

import asyncio
import json
import signal
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest

from lamarck.client import AsyncClient, Client
from lamarck.errors import LamarckError, PolicyRejected, SecretDetected
from lamarck.operator import OperatorClient
from lamarck.proto.signed import SignedMemory
from lamarck.proto.v1 import agent_pb2, agent_pb2_grpc
from tests.factories import outcome_obj

pytestmark = pytest.mark.integration

PROJECT = "e2" * 32
BAD, GOOD = "shell:pytest tests/", "shell:pytest"
CONTEXT = {"domain": "python-testing", "environment": "linux", "tools": ["pytest"]}
# Bound on the SIGTERM stream: the node must have acked this many before the signal.
ACKED_BEFORE_KILL = 40
WORKERS = 8


def outcome(
    session: str,
    steps: list[tuple[str, str, str]],
    *,
    passed: bool = True,
    turn: int = 0,
    outcome_id: str | None = None,
) -> dict[str, Any]:
    """One turn's outcome record, dated now (the node runs on the system clock)."""
    return outcome_obj(
        outcome_id=outcome_id or str(uuid.uuid4()),
        session_id=session,
        turn_index=turn,
        project=PROJECT,
        goal_digest="make the test suite pass",
        steps=steps,
        created_at=datetime.now(UTC),
        passed=passed,
        tokens=10,
        wall_s=0.5,
    )


@pytest.fixture(scope="module")
def node(module_node_process: Any) -> Any:
    """The module's node, on loopback (no token needed)."""
    return module_node_process()


def test_learn_recall_contradict_retire_and_history(node: Any) -> None:
    target = f"suite-{uuid.uuid4().hex[:8]}"
    with Client.from_home(node.home, timeout=20) as client:
        # (1) A failed op A on T, then an ok op B on T, and the checks passed: a lesson.
        learned = client.record_outcome(
            outcome("e2e-1", [(BAD, "failed", target), (GOOD, "ok", target)])
        )
        [lesson_id] = learned.ids("created")
        # (2) Recall shows it, and puts it in play for the session.
        # The query shares the lesson's words, not only the random target: with the hashing
        # embedder "run <target>" alone scores 0.03-0.45 against the lesson by bucket
        # collisions, straddling the relevance floor (0.2) for ~3 % of targets.
        recalled = client.recall(
            f"run pytest for {target}", CONTEXT, session_id="e2e-2", project_digest=PROJECT
        )
        assert lesson_id in [x.id for x in recalled.lessons]
        assert recalled.section.startswith("Lessons:") and target in recalled.section
        before = next(x for x in recalled.lessons if x.id == lesson_id).confidence
        # (3) A contradicting outcome in that session lowers it.
        contradicted = client.record_outcome(
            outcome("e2e-2", [(GOOD, "failed", target)], passed=False)
        )
        assert contradicted.ids("contradicted") == [lesson_id]
        [now] = client.list_lessons(operation=GOOD, scope=f"project:{PROJECT}").lessons
        assert now.id == lesson_id and now.confidence < before
        # (4) Retire; (5) the history shows the chain, oldest first.
        retired = client.retire(lesson_id, reason="flaky advice")
        assert retired.status == "retired"
        history = client.history(lesson_id)
        # The event log: every change with its actor, confidence before/after and reason.
        assert [e.kind for e in history] == ["created", "contradicted", "retired"]
        assert history[0].outcome_id == learned.outcome_id
        assert history[1].outcome_id == contradicted.outcome_id
        assert history[1].confidence_before == before and history[1].confidence == now.confidence
        assert history[-1].actor == "agent" and history[-1].status == "retired"
        assert history[-1].reason == "flaky advice"
        assert lesson_id not in [
            x.id for x in client.recall(f"run pytest for {target}", session_id="e2e-3").lessons
        ]


def test_secret_in_content_is_secret_detected_on_the_client(node: Any) -> None:
    with Client(node.agent_addr, timeout=20) as client:
        with pytest.raises(SecretDetected) as info:
            client.remember("Deploy with AKIAABCDEFGHIJKLMNOP as the key.", "shell:deploy")
        assert info.value.reason == "secret_detected"


def test_remember_stores_a_claim(node: Any) -> None:
    with Client(node.agent_addr, timeout=20) as client:
        made = client.remember("Run ruff before committing.", "shell:ruff", tags=["style"])
        assert made.created and made.lesson.status == "claimed"
        claimed = client.list_lessons(statuses="claimed").lessons
        assert made.lesson.id in [x.id for x in claimed]


def test_export_import_round_trips_into_a_second_node(node: Any, node_process: Any) -> None:
    target = f"docs-{uuid.uuid4().hex[:8]}"
    with Client(node.agent_addr, timeout=20) as client:
        [lesson_id] = client.record_outcome(
            outcome(
                "e2e-x", [("shell:make html", "failed", target), ("shell:sphinx", "ok", target)]
            )
        ).ids("created")
        bundle = client.export_bundle(statuses="active", operation="shell:sphinx")
    lines = bundle.splitlines()
    assert lines and all(SignedMemory.from_json(x).source_agent_id == node.node_id for x in lines)
    assert lesson_id in [SignedMemory.from_json(x).memory.id for x in lines]

    # Its own registry: the second node knows no key of the first, so an operator decides.
    second = node_process()
    with Client(second.agent_addr, timeout=20) as other:
        result = other.import_bundle(bundle, source_label="e2e.jsonl")
        assert [(a.status, a.reason) for a in result.acks] == [
            ("quarantined", "unknown_signer")
        ] * len(lines)
        assert other.list_lessons(origin="imported").lessons == ()
        with OperatorClient.from_home(second.home, timeout=20) as desk:
            for entry in desk.list_quarantine():
                assert desk.approve(entry.id, note="our own backup").lesson_id
        imported = {
            SignedMemory.from_json(x.record_json).memory.id: x
            for x in other.list_lessons(origin="imported").lessons
        }
        assert imported[lesson_id].source_node_id == node.node_id
        assert imported[lesson_id].record_json in lines
        assert [a.status for a in other.import_bundle(bundle).acks] == ["duplicate"] * len(lines)
        assert set(other.export_bundle().splitlines()) == set(lines)


def test_agent_api_beyond_loopback_needs_the_token(node_process: Any, tmp_path: Path) -> None:
    remote = node_process(tmp_path / "remote", agent_listen="0.0.0.0:0")
    with Client(remote.agent_addr, timeout=20) as anonymous:
        with pytest.raises(PolicyRejected) as info:
            anonymous.list_lessons()
        assert info.value.reason == "unauthenticated"
    with Client.from_home(remote.home, timeout=20) as client:
        assert client.list_lessons().lessons == ()
    with Client(remote.agent_addr, home=remote.home, timeout=20) as client:
        assert client.list_lessons().lessons == ()


async def _stream_outcomes(address: str, acked: list[str], enough: asyncio.Event) -> None:
    """RecordOutcome from ``WORKERS`` concurrent senders until the node stops answering."""
    async with AsyncClient(address, timeout=20) as client:

        async def worker(w: int) -> None:
            turn = 0
            while True:
                turn += 1
                record = outcome(f"stream-{w}", [(GOOD, "ok", f"t{w}")], turn=turn)
                try:
                    result = await client.record_outcome(record)
                except LamarckError:
                    return  # the node stopped: everything acked so far must be kept
                assert result.outcome_id == record["id"]
                acked.append(result.outcome_id)
                if len(acked) >= ACKED_BEFORE_KILL:
                    enough.set()

        await asyncio.gather(*(worker(w) for w in range(WORKERS)))


async def test_sigterm_during_a_stream_of_outcomes_loses_no_acknowledged_outcome(
    node_process: Any, tmp_path: Path
) -> None:
    home = tmp_path / "durable"
    first = node_process(home)
    with Client(first.agent_addr, timeout=20) as client:
        lesson_id = client.remember("Keep the changelog current.", "edit:changelog").lesson.id
    acked: list[str] = []
    enough = asyncio.Event()
    stream = asyncio.create_task(_stream_outcomes(first.agent_addr, acked, enough))
    await asyncio.wait_for(enough.wait(), timeout=120)
    first.process.send_signal(signal.SIGTERM)
    await asyncio.wait_for(stream, timeout=120)
    assert await asyncio.to_thread(first.stop) == 0
    assert len(acked) >= ACKED_BEFORE_KILL

    again = node_process(home)
    # The same identity and the same data.
    assert again.node_id == first.node_id
    channel = grpc.insecure_channel(again.agent_addr)
    stub = agent_pb2_grpc.AgentServiceStub(channel)
    try:
        for outcome_id in acked:
            # Re-sending an acknowledged outcome must find it stored: duplicate, no change.
            record = outcome("stream-check", [(GOOD, "ok", "t")], outcome_id=outcome_id)
            reply = stub.RecordOutcome(
                agent_pb2.RecordOutcomeRequest(outcome_json=json.dumps(record).encode()),
                timeout=20,
            )
            assert reply.duplicate, f"acknowledged outcome {outcome_id} was lost"
    finally:
        channel.close()
    with Client(again.agent_addr, timeout=20) as client:
        assert lesson_id in [x.id for x in client.list_lessons(statuses="claimed").lessons]
