"""Health tells the truth about the store and the registry the node owns.

A real node (embedded Postgres, embedded Redis, hashing embedder) has its database server,
then its Redis, killed with SIGKILL. The node must say so (grpc.health NOT_SERVING within a
bound, ``lamarck node status`` exiting non-zero, agent calls UNAVAILABLE with reason
``store_unavailable``), restart the server itself, and report SERVING and answer again.

To look at the node while its store is down, the test holds pgserver's inter-process lock,
which the node needs to start a server: the node cannot restart Postgres until the test lets
go. Every wait is a bounded poll of a condition, never a fixed sleep.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lamarck.node.api.server import PEER_SERVICE
from lamarck.proto.v1 import agent_pb2, agent_pb2_grpc

pytestmark = [pytest.mark.integration, pytest.mark.slow]

psutil: Any = importlib.import_module("psutil")

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
#: Bound on noticing a dead server: a probe runs every second (SupervisionParams).
DETECT_WITHIN_S = 15.0
#: Bound on serving again once the server may be restarted.
RECOVER_WITHIN_S = 60.0
_POLL_S = 0.02


def _wait_for(check: Callable[[], bool], what: str, within_s: float) -> float:
    """Poll ``check`` until it holds; return how long it took; fail naming ``what``."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > within_s:
            pytest.fail(f"not within {within_s}s: {what}")
        time.sleep(_POLL_S)
    return time.monotonic() - started


def _health(address: str, service: str = "") -> int | None:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=2
            )
    except grpc.RpcError:
        return None
    status: int = reply.status
    return status


def _recall(node: Any, timeout_s: float = 10.0) -> agent_pb2.RecallResponse:
    with grpc.insecure_channel(node.agent_addr) as channel:
        reply: agent_pb2.RecallResponse = agent_pb2_grpc.AgentServiceStub(channel).Recall(
            agent_pb2.RecallRequest(task=f"deploy the service {uuid.uuid4().hex[:6]}"),
            timeout=timeout_s,
            metadata=node.agent_metadata(),
        )
    return reply


def _recall_refusal(node: Any) -> tuple[grpc.StatusCode, str]:
    try:
        _recall(node)
    except grpc.RpcError as e:
        reason = dict(e.trailing_metadata() or ()).get("lamarck-reason", "")
        return e.code(), str(reason)
    return grpc.StatusCode.OK, ""


def _status_exit(home: Path) -> int:
    argv = [sys.executable, "-m", "lamarck.cli", "node", "status", "--home", str(home)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAMARCK_")}
    return subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False).returncode


def _postmaster_pid(home: Path) -> int:
    return int((home / "pgdata" / "postmaster.pid").read_text().split()[0])


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _pgserver_lock() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver.postgres_server import PostgresServer
    return PostgresServer._lock


def test_a_killed_embedded_postgres_turns_health_off_and_the_node_restarts_it(
    node_process: Any,
) -> None:
    node = node_process()
    # Start-up warmed the embedder before SERVING: the first Recall does not load a model.
    assert node.info["embedder_warmup_s"] is not None
    started = time.monotonic()
    assert _recall(node).prompt_section is not None
    first_recall_s = time.monotonic() - started
    assert first_recall_s < 1.0, f"first Recall after SERVING took {first_recall_s:.2f}s"

    lock = _pgserver_lock()
    old = _postmaster_pid(node.home)
    assert lock.acquire(timeout=30)
    try:
        killed_at = time.monotonic()
        os.kill(old, signal.SIGKILL)
        detect_s = _wait_for(
            lambda: _health(node.agent_addr) == NOT_SERVING, "health NOT_SERVING", DETECT_WITHIN_S
        )
        assert _health(node.agent_addr, PEER_SERVICE) == NOT_SERVING
        assert _status_exit(node.home) != 0
        assert _recall_refusal(node) == (grpc.StatusCode.UNAVAILABLE, "store_unavailable")
        # Still down while the node may not start a server: it does not pretend.
        assert _health(node.agent_addr) == NOT_SERVING
        released_at = time.monotonic()
    finally:
        lock.release()
    serve_again_s = _wait_for(
        lambda: _health(node.agent_addr) == SERVING, "health SERVING again", RECOVER_WITHIN_S
    )
    assert _postmaster_pid(node.home) != old and _alive(_postmaster_pid(node.home))
    assert _recall(node).prompt_section is not None
    assert _status_exit(node.home) == 0
    assert node.process.poll() is None

    # The same kill left alone: the figures of an unobstructed outage.
    old = _postmaster_pid(node.home)
    killed_free_at = time.monotonic()
    os.kill(old, signal.SIGKILL)
    detect_free_s = _wait_for(
        lambda: _health(node.agent_addr) != SERVING, "health NOT_SERVING", DETECT_WITHIN_S
    )
    _wait_for(lambda: _health(node.agent_addr) == SERVING, "SERVING again", RECOVER_WITHIN_S)
    outage_s = time.monotonic() - killed_free_at
    assert _recall(node).prompt_section is not None
    print(
        f"\nstore: detected in {detect_s:.2f}s (held) / {detect_free_s:.2f}s, serving again "
        f"{serve_again_s:.2f}s after the lock was released (held {released_at - killed_at:.1f}s),"
        f" unobstructed outage {outage_s:.2f}s; first Recall {first_recall_s * 1000:.0f} ms, "
        f"embedder warm-up {node.info['embedder_warmup_s']:.3f}s"
    )


class _Watch:
    """The statuses a health Watch stream sends for ``service``, collected on a thread (the
    node's outage of its own Redis may last only a few tens of milliseconds)."""

    def __init__(self, address: str, service: str) -> None:
        self.seen: list[int] = []
        self._channel = grpc.insecure_channel(address)
        self._call = health_pb2_grpc.HealthStub(self._channel).Watch(
            health_pb2.HealthCheckRequest(service=service)
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for reply in self._call:
                self.seen.append(reply.status)
        except grpc.RpcError:
            return  # cancelled at close

    def close(self) -> None:
        self._call.cancel()
        self._thread.join(timeout=10)
        self._channel.close()


def test_a_killed_embedded_redis_turns_the_peer_service_off_until_the_node_restarts_it(
    node_process: Any,
) -> None:
    # Open admission: the node is in its (own) network, so its peer service serves.
    node = node_process(admission="open")
    pidfile = node.home / "redis" / "redis.pid"
    old = int(pidfile.read_text().strip())
    watch = _Watch(node.agent_addr, PEER_SERVICE)
    try:
        _wait_for(lambda: watch.seen == [SERVING], "the watch sees SERVING", DETECT_WITHIN_S)
        killed_at = time.monotonic()
        os.kill(old, signal.SIGKILL)
        detect_s = _wait_for(
            lambda: NOT_SERVING in watch.seen, "peer service NOT_SERVING", DETECT_WITHIN_S
        )
        _wait_for(
            lambda: watch.seen[-1] == SERVING and len(watch.seen) >= 3,
            "peer service SERVING again",
            RECOVER_WITHIN_S,
        )
        outage_s = time.monotonic() - killed_at
    finally:
        watch.close()
    assert watch.seen[:3] == [SERVING, NOT_SERVING, SERVING]
    new = int(pidfile.read_text().strip())
    assert new != old and _alive(new)
    assert _health(node.agent_addr, PEER_SERVICE) == SERVING
    # The store never went away: the agent side kept answering.
    assert _health(node.agent_addr) == SERVING
    assert _recall(node).prompt_section is not None
    print(f"\nregistry: detected in {detect_s:.2f}s, serving again after {outage_s:.2f}s")


def test_an_external_postgres_killed_and_brought_back_is_reconnected_by_the_node(
    node_process: Any, tmp_path: Path
) -> None:
    from lamarck.node.store.embedded import EmbeddedPostgres

    # An "external" server: one the node does not own (it reconnects; the operator restarts).
    external = EmbeddedPostgres(tmp_path / "external")
    dsn = external.start()
    try:
        node = node_process(database_url=dsn)
        assert node.info["database"] == "external"
        old = _postmaster_pid(external.home)
        killed_at = time.monotonic()
        os.kill(old, signal.SIGKILL)
        detect_s = _wait_for(
            lambda: _health(node.agent_addr) == NOT_SERVING, "health NOT_SERVING", DETECT_WITHIN_S
        )
        assert _recall_refusal(node) == (grpc.StatusCode.UNAVAILABLE, "store_unavailable")
        assert _status_exit(node.home) != 0
        # The node does not restart a server it does not own.
        assert not external.is_running()
        back_at = time.monotonic()
        assert external.restart() == dsn
        serve_again_s = _wait_for(
            lambda: _health(node.agent_addr) == SERVING, "health SERVING again", RECOVER_WITHIN_S
        )
        assert _recall(node).prompt_section is not None
        print(
            f"\nexternal store: detected in {detect_s:.2f}s, serving {serve_again_s:.2f}s after "
            f"the server was back (down {back_at - killed_at:.1f}s)"
        )
    finally:
        external.stop()
