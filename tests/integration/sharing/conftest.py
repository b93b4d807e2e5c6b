"""Fixtures for sharing between real node processes over a real Redis.

Nodes come from the ``node_process`` machinery of ``tests/integration/node/conftest.py``
(loaded by path: test directories are not packages). Every test gets its own registry
namespace on the shared Redis at 127.0.0.1:6379, so parallel or repeated runs never see each
other's peers; the namespace is cleared at teardown.

``net.start()`` starts a node on that network (admission ``open``: tests only, unless the test
closes it with ``net.admit_by``), ``net.learn()``
makes a lesson on a node that passes the publish threshold, and ``wait_for`` awaits a
condition with a bound.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

from lamarck.client import Client, Lesson
from lamarck.gossip.publisher import GossipParams
from lamarck.proto.clock import SystemClock
from lamarck.registry.params import RegistryParams
from lamarck.registry.redis_directory import RedisPeerDirectory
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import trust_band
from lamarck.reputation.transfer import TransferInputs, TransferParams, imported_confidence
from tests.factories import outcome_obj

REDIS_URL = "redis://127.0.0.1:6379/0"
_FIXTURE_FILE = Path(__file__).resolve().parents[1] / "node" / "conftest.py"
#: Bound on a lesson reaching every peer (gossip rounds are 0.2 s; Sync every 1 s).
PROPAGATION_TIMEOUT_S = 60.0
_POLL_S = 0.1
_T = TypeVar("_T")


def _node_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lamarck_sharing_node_fixture", _FIXTURE_FILE)
    if spec is None or spec.loader is None:
        raise AssertionError(f"the node process fixture is missing: {_FIXTURE_FILE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


fixtures = _node_fixtures()


def wait_for(
    probe: Callable[[], _T | None], what: str, timeout_s: float = PROPAGATION_TIMEOUT_S
) -> _T:
    """Poll ``probe`` until it returns something other than None/False; fail after a bound."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(_POLL_S)  # a bounded poll of the nodes' own state, not a guess


def sync_calls(node: Any, *, ok: bool) -> int:
    """Sync calls ``node`` answered so far, OK ones or refused ones, from its metrics."""
    with urllib.request.urlopen(node.metrics_url, timeout=5) as response:
        lines = response.read().decode().splitlines()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in lines
        if line.startswith("lamarck_rpc_requests_total{")
        and 'method="/lamarck.v1.PeerService/Sync"' in line
        and ('code="OK"' in line) == ok
    )


def outcome(
    session: str,
    project: str,
    steps: list[tuple[str, str, str]],
    *,
    passed: bool = True,
    in_play: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One turn's outcome record, dated now (nodes run on the system clock)."""
    return outcome_obj(
        outcome_id=str(uuid.uuid4()),
        session_id=session,
        turn_index=0,
        project=project,
        goal_digest="make the test suite pass",
        steps=steps,
        created_at=datetime.now(UTC),
        passed=passed,
        tokens=10,
        wall_s=0.5,
        in_play=list(in_play),
    )


def expected_transfer(original: float) -> float:
    """The confidence a fresh receiver gives a lesson from a source it has no history of."""
    rep = ReputationParams()
    score = rep.initial_score
    return imported_confidence(
        TransferInputs(original_confidence=original, reputation=score, band=trust_band(score, rep)),
        TransferParams(),
    ).confidence


def imported(node: Any, lesson_id: str) -> Lesson | None:
    """The node's imported copy of ``lesson_id`` (matched by the record id), if it has one."""
    with Client(node.agent_addr, timeout=20) as client:
        for lesson in client.list_lessons(origin="imported").lessons:
            if lesson.record_json and lesson.record["id"] == lesson_id:
                return lesson
    return None


class Net:
    """One test's network: a Redis namespace and the nodes started on it."""

    def __init__(self, launcher: Any, tmp_path: Path) -> None:
        self.namespace = "t" + uuid.uuid4().hex[:16]
        self._launcher = launcher
        self._tmp = tmp_path
        self._count = 0
        self.admission = "open"
        self.operator_public_key: str | None = None

    def admit_by(self, operator_public_key: str, admission: str = "endorsed") -> None:
        """Close the network: nodes started from now on admit by ``operator_public_key``."""
        self.admission = admission
        self.operator_public_key = operator_public_key

    def flags(self) -> dict[str, Any]:
        """The sharing flags of every node on this network."""
        flags: dict[str, Any] = {
            "redis_url": REDIS_URL,
            "redis_namespace": self.namespace,
            "admission": self.admission,
            "gossip_interval_s": 0.2,
            "anti_entropy_interval_s": 1.0,
            # A node started later is in the others' peer lists within a second.
            "registry_heartbeat_s": 1.0,
        }
        if self.operator_public_key is not None:
            flags["operator_public_key"] = self.operator_public_key
        return flags

    def start(self, home: Path | None = None, **extra: Any) -> Any:
        """Start (or restart, given its home) a node on this network (``extra``: more flags).

        One retry when the embedded Postgres itself fails to start (pgserver's initdb or
        pg_ctl aborting under a loaded machine, before any lamarck code runs): that is not
        what these tests are about, and the second start on the same home is a real restart.
        """
        if home is None:
            home = self._tmp / f"node{self._count}"
            self._count += 1
        try:
            return self._launcher(home, **{**self.flags(), **extra})
        except AssertionError as e:
            if "embedded_start_failed" not in str(e):
                raise
            return self._launcher(home, **{**self.flags(), **extra})

    def learn(self, node: Any, target: str) -> Lesson:
        """A lesson on ``node`` that may be published: active, global, above the threshold.

        Learned in one project (a failed op then a working one), then confirmed by runs in
        other projects that had it in play: confirmation from two projects promotes it.
        """
        bad, good = f"shell:make {target}", f"shell:build {target}"
        threshold = GossipParams().publish_threshold
        with Client(node.agent_addr, timeout=20) as client:
            made = client.record_outcome(
                outcome("learn", "a1" * 32, [(bad, "failed", target), (good, "ok", target)])
            )
            [lesson_id] = made.ids("created")
            for i in range(2, 6):
                project = f"{i:02x}" * 32
                session = f"confirm-{i}"
                client.record_outcome(
                    outcome(session, project, [(good, "ok", target)], in_play=(lesson_id,))
                )
                [lesson] = [
                    x for x in client.list_lessons(operation=good).lessons if x.id == lesson_id
                ]
                if lesson.scope == "global" and lesson.confidence >= threshold:
                    return lesson
        raise AssertionError(f"lesson {lesson_id} never became publishable: {lesson}")


@pytest.fixture
def net(tmp_path: Path) -> Iterator[Net]:
    """A fresh network on the shared Redis; its nodes are stopped and its keys dropped after."""
    launcher = fixtures._Launcher(lambda: tmp_path / f"extra{uuid.uuid4().hex[:6]}")
    network = Net(launcher, tmp_path)
    try:
        yield network
    finally:
        try:
            launcher.stop_all()
        finally:
            asyncio.run(_clear(network.namespace))


async def _clear(namespace: str) -> None:
    directory = RedisPeerDirectory.from_url(
        REDIS_URL, namespace=namespace, params=RegistryParams(), clock=SystemClock()
    )
    try:
        await directory.clear_namespace()
    finally:
        await directory.aclose()
