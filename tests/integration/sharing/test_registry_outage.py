"""Five real node processes ride out a 30 s Redis outage and re-register when it returns.

The registry is this test's own ``redis-server`` on a free loopback port (the shared Redis
at 127.0.0.1:6379 must never be stopped), run without persistence (``--save ""
--appendonly no``): the restarted Redis has lost every registration and pin, so the nodes
must register again on their own — which is what "re-registers" means here.

While Redis is down a lesson learned on A still reaches every peer: A gossips to the peer
list it cached, and the receivers check A's signature against the key pins they cached.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from conftest import Net, expected_transfer, fixtures, imported, wait_for

from lamarck.errors import RegistryError
from lamarck.fleet.supervisor import listed_peers
from lamarck.proto.clock import SystemClock
from lamarck.registry.embedded import redis_server_executable
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.redis_directory import RedisPeerDirectory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: How long Redis stays down, counted from its stop: the scenario, not a wait for anything.
OUTAGE_S = 30.0
#: Bound on the nodes noticing the outage or the return (they tick every heartbeat
#: interval, 10 s by default), and on re-registering after the restart.
REGISTRY_TICK_BOUND_S = 45.0
_REDIS_START_TIMEOUT_S = 15.0
_REDIS_STOP_TIMEOUT_S = 15.0
_SHARING_LOGGER = "lamarck.node.sharing"


class OwnRedis:
    """A private, non-persistent redis-server on one loopback port, stopped and restarted."""

    def __init__(self, workdir: Path) -> None:
        self.executable = shutil.which("redis-server") or redis_server_executable()
        self.workdir = workdir
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._starts = 0

    @property
    def url(self) -> str:
        """The URL nodes and the test use to reach it."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (on the same port every time) and wait, bounded, for PING."""
        assert self.process is None, "redis-server is already running"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._starts += 1
        log = self.workdir / f"redis.{self._starts}.log"
        # Started in the foreground as our child, so stop() signals exactly this process.
        self.process = subprocess.Popen(
            [
                self.executable,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "no",
                "--dir", str(self.workdir),
                "--logfile", str(log),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        process = self.process
        wait_for(
            lambda: self._answers() or _exited(process, log),
            f"redis-server on port {self.port} to answer PING",
            timeout_s=_REDIS_START_TIMEOUT_S,
        )

    def stop(self) -> None:
        """SIGTERM and wait for the exit (killed past a bound); nothing is saved."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=_REDIS_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def _answers(self) -> bool:
        try:
            with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1) as client:
                return bool(client.ping())
        except redis.exceptions.RedisError:
            return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _exited(process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is None:
        return False
    text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise AssertionError(f"redis-server exited with {process.returncode}:\n{text}")


class OutageNet(Net):
    """The conftest's ``Net`` with the registry on this test's own Redis."""

    def __init__(self, launcher: Any, tmp_path: Path, redis_url: str) -> None:
        super().__init__(launcher, tmp_path)
        self.redis_url = redis_url

    def flags(self) -> dict[str, Any]:
        """The conftest's sharing flags, pointed at the private Redis."""
        return {**super().flags(), "redis_url": self.redis_url}

    def registered(self) -> dict[str, datetime]:
        """Id → registration time of the peers live in the registry (empty while it is down)."""
        return asyncio.run(self._registered())

    async def _registered(self) -> dict[str, datetime]:
        directory = RedisPeerDirectory.from_url(
            self.redis_url,
            namespace=self.namespace,
            # Read as the nodes do (admission open): readers verify admission proofs.
            params=RegistryParams(admission=AdmissionMode.OPEN),
            clock=SystemClock(),
        )
        try:
            return {p.node_id: p.registered_at for p in await directory.live_peers()}
        except RegistryError as e:
            if e.reason != "unavailable":
                raise
            return {}
        finally:
            await directory.aclose()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    """A private redis-server, always stopped at teardown."""
    server = OwnRedis(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def outage_net(tmp_path: Path, own_redis: OwnRedis) -> Iterator[OutageNet]:
    """A network on ``own_redis``; its nodes are stopped before the server is."""
    launcher = fixtures._Launcher(lambda: tmp_path / f"extra{uuid.uuid4().hex[:6]}")
    try:
        yield OutageNet(launcher, tmp_path, own_redis.url)
    finally:
        launcher.stop_all()


def test_gossip_continues_through_a_redis_outage_and_nodes_re_register(
    outage_net: OutageNet, own_redis: OwnRedis
) -> None:
    net = outage_net
    nodes = [net.start() for _ in range(5)]
    a, *others = nodes
    ids = {n.node_id for n in nodes}
    wait_for(lambda: net.registered().keys() >= ids, "all five nodes to register")
    # Each node's own view: the peer cache it would gossip from during an outage.
    for node in nodes:
        wait_for(lambda n=node: listed_peers(n.home) >= ids, f"{node.node_id} to list every peer")

    stopped_at, stopped_wall = time.monotonic(), datetime.now(UTC)
    own_redis.stop()
    assert net.registered() == {}  # really down, not just slow

    during = net.learn(a, f"api-{uuid.uuid4().hex[:8]}")
    want = expected_transfer(during.confidence)
    for peer in others:
        copy = wait_for(
            lambda p=peer: imported(p, during.id), f"{peer.node_id} to import during the outage"
        )
        assert copy.source_node_id == a.node_id
        assert copy.confidence == pytest.approx(want)

    for node in nodes:
        wait_for(
            lambda n=node: _registry_logs(n, "unreachable"),
            f"{node.node_id} to log the registry as unreachable",
            timeout_s=REGISTRY_TICK_BOUND_S,
        )
    # The outage lasts OUTAGE_S whatever happened meanwhile: that duration is the scenario.
    time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped_at)))

    own_redis.start()
    back = wait_for(
        lambda: (r := net.registered()).keys() >= ids and r,
        "every node to register again in the restarted Redis",
        timeout_s=REGISTRY_TICK_BOUND_S,
    )
    # The restarted Redis kept nothing: every listing is a registration made after the stop.
    assert all(back[i] > stopped_wall for i in ids), back
    for node in nodes:
        logged = wait_for(
            lambda n=node: _registry_logs(n, "reachable"),
            f"{node.node_id} to log the registry as reachable again",
            timeout_s=REGISTRY_TICK_BOUND_S,
        )
        # Reachable at start, unreachable during the outage, reachable again: no flapping.
        assert [_state(e) for e in logged] == [
            "reachable",
            "unreachable",
            "reachable",
        ], logged

    after = net.learn(a, f"api-{uuid.uuid4().hex[:8]}")
    want = expected_transfer(after.confidence)
    for peer in others:
        copy = wait_for(
            lambda p=peer: imported(p, after.id), f"{peer.node_id} to import after the outage"
        )
        assert copy.source_node_id == a.node_id
        assert copy.confidence == pytest.approx(want)


def _registry_log(node: Any) -> list[dict[str, Any]]:
    """The node's registry state changes, from its JSON log, oldest first."""
    entries = []
    for line in node.stderr().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("logger") == _SHARING_LOGGER and str(entry.get("msg", "")).startswith(
            "registry "
        ):
            entries.append(entry)
    return [e for e in entries if _state(e) is not None]


def _state(entry: dict[str, Any]) -> str | None:
    msg = str(entry["msg"])
    if msg.startswith("registry unreachable") and entry["level"] == "WARNING":
        return "unreachable"
    if msg.startswith("registry reachable") and entry["level"] == "INFO":
        return "reachable"
    return None


def _registry_logs(node: Any, state: str) -> list[dict[str, Any]] | None:
    """The node's registry log entries, once the latest one says ``state``."""
    entries = _registry_log(node)
    return entries if entries and _state(entries[-1]) == state else None
