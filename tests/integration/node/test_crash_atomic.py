"""kill -9 in the middle of a multi-row write: nothing is half-applied, the retry completes it.

Each test starts a real node with ``LAMARCK_TEST_CRASH_AT=<label>``: the node SIGKILLs itself
at that crash point (``lamarck.node.crashpoint``), between two writes of one unit of work. The
node is restarted on the same home (its embedded Postgres outlived it) and the call retried:

* RecordOutcome killed after the outcome row (``outcome_stored``) or after the lessons
  (``outcome_learned``): the retry is not a ``duplicate`` that learned nothing; the lesson
  exists once, with its ``created`` event;
* Retire killed between the row and its event (``retire_written``): the lesson is still live,
  and the retry retires it with the reason logged;
* an operator's approval killed between the stored lesson and the row's state
  (``quarantine_decided``): the row is still pending and no lesson exists; the retried
  approval stores it once.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lamarck.client import Client, dial_address
from lamarck.errors import LamarckError
from lamarck.node.crashpoint import CRASH_AT_ENV
from lamarck.operator import OperatorClient
from lamarck.proto.identity import NodeIdentity
from tests.factories import outcome_obj, signed_record

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROJECT = "c4" * 32
BAD, GOOD = "shell:pytest tests/", "shell:pytest"
_START_S = 90.0
_EXIT_S = 30.0
_POLL_S = 0.05


def _outcome(session: str, target: str, outcome_id: str) -> dict[str, Any]:
    """An outcome that teaches "prefer GOOD over BAD for target" (one new lesson)."""
    return outcome_obj(
        outcome_id=outcome_id,
        session_id=session,
        turn_index=0,
        project=PROJECT,
        goal_digest="make the test suite pass",
        steps=[(BAD, "failed", target), (GOOD, "ok", target)],
        created_at=datetime.now(UTC),
        tokens=10,
        wall_s=0.5,
    )


def _foreign_bundle(identity: NodeIdentity) -> bytes:
    """One lesson signed by a key this node's registry does not know (held for review)."""
    signed = signed_record(
        identity,
        id=str(uuid.uuid4()),
        created=datetime.now(UTC) - timedelta(days=1),
        outcome_id=str(uuid.uuid4()),
        confidence=0.9,
        confidence_interval={"mean": 0.9},
    )
    return signed.raw + b"\n"


def _serving(address: str) -> bool:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
    except grpc.RpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


class _Crashing:
    """A node process started with a crash point armed."""

    def __init__(self, process: subprocess.Popen[bytes], home: Path, agent_addr: str) -> None:
        self.process, self.home, self.agent_addr = process, home, agent_addr

    def died_by_sigkill(self) -> bool:
        """Wait (bounded) for the process to end; whether SIGKILL ended it."""
        try:
            return self.process.wait(timeout=_EXIT_S) == -9
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            return False


@pytest.fixture
def crashing_node(
    node_cli: Callable[..., tuple[list[str], dict[str, str]]], tmp_path: Path
) -> Iterator[Callable[[str], _Crashing]]:
    """``crashing_node(label)``: a SERVING node on ``tmp_path/node`` that dies at ``label``."""
    started: list[subprocess.Popen[bytes]] = []

    def start(label: str) -> _Crashing:
        home = tmp_path / "node"
        home.mkdir(exist_ok=True)
        argv, env = node_cli(home)
        env[CRASH_AT_ENV] = label
        with (home / "crashing.stderr").open("ab") as err:
            process = subprocess.Popen(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL
            )
        started.append(process)
        deadline = time.monotonic() + _START_S
        while True:
            assert process.poll() is None, (home / "crashing.stderr").read_text()[-3000:]
            assert time.monotonic() < deadline, "the crashing node did not start"
            try:
                info = json.loads((home / "node.json").read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                info = {}
            mine = info.get("pid") == process.pid and info.get("serving")
            if mine and _serving(dial_address(info["agent_listen"])):
                return _Crashing(process, home, dial_address(info["agent_listen"]))
            time.sleep(_POLL_S)  # bounded poll of the node's own report

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def _call_dies(call: Callable[[], object]) -> None:
    """Run a call the node is armed to die in; it must fail (the node is gone)."""
    with pytest.raises((grpc.RpcError, LamarckError)):
        call()


@pytest.mark.parametrize("label", ["outcome_stored", "outcome_learned"])
def test_record_outcome_killed_midway_is_learned_whole_on_retry(
    label: str, crashing_node: Any, node_process: Any
) -> None:
    target = f"suite-{uuid.uuid4().hex[:8]}"
    outcome_id = str(uuid.uuid4())
    record = _outcome("crash-1", target, outcome_id)
    armed = crashing_node(label)
    with Client(armed.agent_addr, timeout=20) as client:
        _call_dies(lambda: client.record_outcome(record))
    assert armed.died_by_sigkill()

    node = node_process(armed.home)
    with Client(node.agent_addr, timeout=20) as client:
        retried = client.record_outcome(record)
        assert not retried.duplicate
        [lesson_id] = retried.ids("created")
        assert client.record_outcome(record).duplicate  # now it is whole: a real duplicate
        lessons = client.list_lessons(operation=GOOD, scope=f"project:{PROJECT}").lessons
        assert [x.id for x in lessons if target in x.content] == [lesson_id]
        assert [e.kind for e in client.history(lesson_id)] == ["created"]


def test_retire_killed_between_row_and_event_is_not_half_applied(
    crashing_node: Any, node_process: Any
) -> None:
    target = f"suite-{uuid.uuid4().hex[:8]}"
    record = _outcome("crash-2", target, str(uuid.uuid4()))
    armed = crashing_node("retire_written")
    with Client(armed.agent_addr, timeout=20) as client:
        [lesson_id] = client.record_outcome(record).ids("created")
        _call_dies(lambda: client.retire(lesson_id, reason="flaky advice"))
    assert armed.died_by_sigkill()

    node = node_process(armed.home)
    with Client(node.agent_addr, timeout=20) as client:
        assert [e.kind for e in client.history(lesson_id)] == ["created"]
        assert client.retire(lesson_id, reason="flaky advice").status == "retired"
        history = client.history(lesson_id)
        assert [e.kind for e in history] == ["created", "retired"]
        assert history[-1].reason == "flaky advice"


def test_an_approval_killed_midway_leaves_the_row_pending_and_no_lesson(
    crashing_node: Any, node_process: Any
) -> None:
    bundle = _foreign_bundle(NodeIdentity.generate())
    armed = crashing_node("quarantine_decided")
    with Client(armed.agent_addr, timeout=20) as client:
        acks = client.import_bundle(bundle, source_label="crash.jsonl").acks
        assert [(a.status, a.reason) for a in acks] == [("quarantined", "unknown_signer")]
    with OperatorClient.from_home(armed.home, timeout=20) as desk:
        [entry] = desk.list_quarantine()
        _call_dies(lambda: desk.approve(entry.id, note="our backup"))
    assert armed.died_by_sigkill()

    node = node_process(armed.home)
    with Client(node.agent_addr, timeout=20) as client:
        assert client.list_lessons(origin="imported").lessons == ()
        with OperatorClient.from_home(node.home, timeout=20) as desk:
            assert [e.id for e in desk.list_quarantine()] == [entry.id]
            decided = desk.approve(entry.id, note="our backup")
            assert decided.lesson_id
            assert desk.list_quarantine() == []
        assert [x.id for x in client.list_lessons(origin="imported").lessons] == [decided.lesson_id]
