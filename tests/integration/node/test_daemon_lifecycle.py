"""The daemon as a real process: health, reflection, identity, auth, metrics, lock, restart.

One node is shared by the module (its embedded Postgres takes seconds to start). Its agent API
listens on 0.0.0.0, so it needs the bearer token; the restart test brings it back on loopback.
Only standard clients (grpcio-health-checking, grpcio-reflection) and PeerService's stub are
used: no lamarck client code.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import secrets
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from lamarck.node.store.recall_index import RecallIndexParams
from lamarck.proto.identity import b64u_encode, node_id_for
from lamarck.proto.signing import verify_raw
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc, records_pb2

pytestmark = pytest.mark.integration

PEER = "lamarck.v1.PeerService"
AGENT = "lamarck.v1.AgentService"
OPERATOR = "lamarck.v1.OperatorService"
HEALTH = "grpc.health.v1.Health"
REFLECTION = "grpc.reflection.v1alpha.ServerReflection"


@pytest.fixture(scope="module")
def node(module_node_process: Any) -> Any:
    """The module's node: agent API on 0.0.0.0 (token required), peer API on loopback."""
    return module_node_process(agent_listen="0.0.0.0:0")


def _dial(where: Any) -> grpc.Channel:
    """A node's peer port (with its own TLS certificate), or a plain address."""
    return where.peer_channel() if not isinstance(where, str) else grpc.insecure_channel(where)


def _check(where: Any, service: str = "", metadata: Any = ()) -> int:
    with _dial(where) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5, metadata=metadata
        )
    status: int = reply.status
    return status


def _list_services(where: Any, metadata: Any = ()) -> set[str]:
    with _dial(where) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        replies = list(stub.ServerReflectionInfo(iter([request]), timeout=5, metadata=metadata))
    return {s.name for s in replies[0].list_services_response.service}


def _reason(err: grpc.RpcError) -> str | None:
    for key, value in err.trailing_metadata() or ():  # type: ignore[attr-defined]
        if key == "lamarck-reason":
            return str(value)
    return None


def test_health_serves_the_node_and_agent_but_not_peers_until_admitted(node: Any) -> None:
    serving = health_pb2.HealthCheckResponse.SERVING
    assert _check(node) == serving
    assert _check(node, AGENT) == serving
    # This node has no operator key, so no network admits it: its peer service must not
    # claim to serve, whatever the rest of the node can answer.
    assert _check(node, PEER) == health_pb2.HealthCheckResponse.NOT_SERVING


def test_reflection_lists_each_servers_services(node: Any) -> None:
    assert _list_services(node) == {PEER, HEALTH, REFLECTION}
    assert _list_services(node.agent_addr, node.agent_metadata()) == {
        AGENT,
        OPERATOR,
        HEALTH,
        REFLECTION,
    }


def test_agent_api_beyond_loopback_refuses_calls_without_the_token(node: Any) -> None:
    token_file = node.home / "agent.token"
    assert token_file.stat().st_mode & 0o777 == 0o600
    for metadata in ((), (("authorization", "Bearer " + secrets.token_urlsafe(32)),)):
        with pytest.raises(grpc.RpcError) as caught:
            _check(node.agent_addr, metadata=metadata)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
        assert _reason(caught.value) == "unauthenticated"
    assert _check(node.agent_addr, metadata=node.agent_metadata()) == (
        health_pb2.HealthCheckResponse.SERVING
    )


def test_get_identity_proves_key_possession_over_the_callers_nonce(node: Any) -> None:
    nonce = os.urandom(32)
    with node.peer_channel() as channel:
        reply = peer_pb2_grpc.PeerServiceStub(channel).GetIdentity(
            peer_pb2.GetIdentityRequest(nonce=nonce), timeout=5
        )
    assert reply.node_id == node.node_id == node_id_for(reply.public_key)
    assert reply.addresses == [node.info["listen"]]
    assert reply.version and "1.0" in reply.schema_versions
    assert reply.proof.kind == records_pb2.RECORD_KIND_NONCE
    from lamarck.node.api.peer_service import NONCE_KIND

    proof = verify_raw(NONCE_KIND, reply.proof.canonical_json, signer_id_path=("node_id",))
    assert proof["nonce"] == b64u_encode(nonce)
    assert proof["signature"]["signed_by"] == b64u_encode(reply.public_key)


def test_get_identity_refuses_a_short_nonce_with_a_reason(node: Any) -> None:
    with node.peer_channel() as channel, pytest.raises(grpc.RpcError) as caught:
        peer_pb2_grpc.PeerServiceStub(channel).GetIdentity(
            peer_pb2.GetIdentityRequest(nonce=b"short"), timeout=5
        )
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert _reason(caught.value) == "bad_nonce"
    details = dict(caught.value.trailing_metadata())  # type: ignore[attr-defined]
    assert "grpc-status-details-bin" in details


def test_publish_and_request_vote_need_a_peer_token(node: Any) -> None:
    with node.peer_channel() as channel:
        stub = peer_pb2_grpc.PeerServiceStub(channel)
        with pytest.raises(grpc.RpcError) as anonymous:
            stub.Publish(peer_pb2.PublishRequest(sender_node_id=node.node_id), timeout=5)
        with pytest.raises(grpc.RpcError) as caught:
            stub.RequestVote(peer_pb2.RequestVoteRequest(), timeout=5)
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
    assert _reason(anonymous.value) == "token_missing"
    # A vote is asked of a node by a proven peer, as a Sync is.
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]


def test_metrics_endpoint_serves_lamarck_metrics(node: Any) -> None:
    _check(node)  # at least one finished RPC to count
    with urllib.request.urlopen(node.metrics_url, timeout=5) as response:
        text = response.read().decode()
    assert 'lamarck_rpc_requests_total{code="OK",method="/grpc.health.v1.Health/Check"' in text
    assert "lamarck_rpc_duration_seconds_bucket" in text
    assert 'lamarck_node_info{database="embedded",embedder="hashing' in text
    assert 'lamarck_lessons{status="active"}' in text
    size = [line for line in text.splitlines() if line.startswith("lamarck_store_size_bytes ")]
    assert size and float(size[0].split()[1]) > 0
    # Whether recall searches in memory, and over how many lessons (none read yet here).
    assert 'lamarck_store_records{kind="recall_index_lessons"} 0.0' in text


def test_node_status_says_where_recall_searches(node: Any) -> None:
    """``lamarck node status --json`` carries the recall index's state (nothing recalled yet
    on this node: not read), as the console and the CLI's table show it."""
    argv = [sys.executable, "-m", "lamarck.cli", "node", "status", "--home", str(node.home)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAMARCK_")}
    done = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    index = json.loads(done.stdout)["status"]["recall_index"]
    assert index == {
        "state": "not_read",
        "lessons": 0,
        "max_rows": RecallIndexParams().max_rows,
    }
    table = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    most = RecallIndexParams().max_rows
    assert f"not read yet: the next recall reads it (up to {most} lessons)" in table.stdout


def test_second_start_on_the_same_home_is_refused_naming_the_pid(node: Any, node_cli: Any) -> None:
    argv, env = node_cli(node.home)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode != 0
    assert f"pid {node.pid}" in result.stderr
    assert _check(node) == health_pb2.HealthCheckResponse.SERVING  # untouched


async def _set_marker(pgdata: Path, value: str | None) -> str | None:
    conn = await asyncpg.connect(host=str(pgdata), user="postgres", database="lamarck")
    try:
        if value is not None:
            await conn.execute(
                "INSERT INTO store_settings (key, value) VALUES ('test_marker', $1)"
                " ON CONFLICT (key) DO UPDATE SET value = $1",
                value,
            )
        marker: str | None = await conn.fetchval(
            "SELECT value FROM store_settings WHERE key = 'test_marker'"
        )
        return marker
    finally:
        await conn.close()


def _lock_is_free(home: Path) -> bool:
    fd = os.open(home / "node.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_sigterm_exits_0_and_restart_keeps_identity_and_data(
    node: Any, module_node_process: Any
) -> None:
    marker = secrets.token_hex(8)
    asyncio.run(_set_marker(node.home / "pgdata", marker))
    assert not _lock_is_free(node.home)

    assert node.stop() == 0
    assert _lock_is_free(node.home)
    assert not (node.home / "node.json").exists()
    assert "stopped" in node.stderr()

    again = module_node_process(node.home)  # agent API back on loopback: no token needed
    assert again.node_id == node.node_id
    assert asyncio.run(_set_marker(node.home / "pgdata", None)) == marker
    assert _check(again.agent_addr) == health_pb2.HealthCheckResponse.SERVING
    assert again.stop() == 0


def test_a_lone_node_on_a_fresh_home_logs_no_error_and_says_how_to_join(node: Any) -> None:
    # The first start of a node with no network is a normal start.
    lines = [json.loads(line) for line in node.stderr().splitlines() if line.startswith("{")]
    assert [x["msg"] for x in lines if x["level"] == "ERROR"] == []
    assert any("shares nothing until it joins a network" in x["msg"] for x in lines)


def test_with_json_logs_every_line_the_node_printed_is_json(node: Any) -> None:
    """A log collector reading both streams of a node logging JSON finds no plain-text
    banner; the start line carries the banner's facts (addresses, console, database)."""
    lines = [
        line
        for path in (node.stdout_path, node.stderr_path)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    records = [json.loads(line) for line in lines]
    started = [r for r in records if r.get("msg") == "node started"]
    assert len(started) == 1
    assert started[0]["node_id"] == node.node_id
    assert "console_url" in started[0] and "database" in started[0]
