"""An admitted (``endorsed``) network run with ``lamarck registry``: enroll, endorse, revoke.

The first test drives the CLI against the real Redis with registry clients standing in for
nodes (seconds). The second runs real node processes (``net`` fixture): the operator enrolls
the first node with a token, a second node is refused until the first endorses it, then it
gets the first node's lessons, and once revoked it gets none. Every wait is a bounded poll.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import REDIS_URL, expected_transfer, fixtures, imported, sync_calls, wait_for
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.errors import AdmissionRefused
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import init_keys, show_keys
from lamarck.registry.client import RegistryClient
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import EnrollmentToken
from lamarck.registry.redis_directory import RedisPeerDirectory

pytestmark = pytest.mark.integration

#: A refused node retries its registration every heartbeat interval (10 s by default).
RETRY_BOUND_S = 30.0
_T = TypeVar("_T")


@pytest.fixture(autouse=True)
def _no_developer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LAMARCK_"):
            monkeypatch.delenv(name)


def _on_registry(
    namespace: str, operator_key: str, work: Callable[[RedisPeerDirectory], Awaitable[_T]]
) -> _T:
    """Run ``work`` on a directory of ``namespace`` on the shared Redis, as a node of it would
    (admission ``endorsed`` under ``operator_key``)."""

    async def run() -> _T:
        directory = RedisPeerDirectory.from_url(
            REDIS_URL,
            namespace=namespace,
            params=RegistryParams(admission=AdmissionMode.ENDORSED),
            clock=SystemClock(),
            operator_public_key=operator_key,
        )
        try:
            return await work(directory)
        finally:
            await directory.aclose()

    return asyncio.run(run())


def _live_ids(namespace: str, operator_key: str) -> set[str]:
    async def read(directory: RedisPeerDirectory) -> set[str]:
        return {p.node_id for p in await directory.live_peers()}

    return _on_registry(namespace, operator_key, read)


def _network_config(home: Path, namespace: str, operator_key: str) -> None:
    """The operator's ``lamarck.toml``: the settings the node and the CLI read for ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "lamarck.toml").write_text(
        f'redis_url = "{REDIS_URL}"\n'
        f'redis_namespace = "{namespace}"\n'
        'admission = "endorsed"\n'
        f'operator_public_key = "{operator_key}"\n'
    )


# -- the CLI against the registry, registry clients standing in for nodes ------------------

runner = CliRunner()


def _cli(args: list[str], code: int = 0) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout) if code == 0 and "--json" in args else result.stderr


def test_endorse_revoke_and_peers_act_on_the_registry_of_the_home(tmp_path: Path) -> None:
    namespace = "t" + uuid.uuid4().hex[:16]
    op_file = tmp_path / "operator.pem"
    op_key = _cli(["registry", "operator-key", "create", str(op_file), "--json"])["public_key"]
    a_home, outsider_home = tmp_path / "a", tmp_path / "outsider"
    a, b = init_keys(a_home), NodeIdentity.generate()
    init_keys(outsider_home)  # a node on the network that was never admitted
    for home in (a_home, outsider_home):
        _network_config(home, namespace, op_key)
    _cli(["registry", "enroll", "--home", str(a_home), "--operator-key", str(op_file)])
    token = EnrollmentToken.from_wire(json.loads((a_home / "enrollment.json").read_text()))

    def client_for(
        directory: RedisPeerDirectory, who: NodeIdentity, token: EnrollmentToken | None = None
    ) -> RegistryClient:
        return RegistryClient(
            directory, who, address="127.0.0.1:1", domains=("d",), version="0",
            mode=AdmissionMode.ENDORSED, clock=SystemClock(), enrollment_token=token,
        )  # fmt: skip

    async def admit_a_refuse_b(directory: RedisPeerDirectory) -> str:
        await client_for(directory, a, token).register()
        with pytest.raises(AdmissionRefused) as refused:
            await client_for(directory, b).register()
        return refused.value.reason

    try:
        assert _on_registry(namespace, op_key, admit_a_refuse_b) == "no_endorsement"
        endorse = ["registry", "endorse", b.node_id, "--public-key", b.public_key_b64]
        # A node that was never admitted cannot vouch for anyone.
        line = _cli([*endorse, "--home", str(outsider_home)], code=1)
        assert line.startswith("lamarck: bad_endorsement: ")

        facts = _cli([*endorse, "--home", str(a_home), "--json"])
        assert (facts["endorser_id"], facts["endorsee_id"]) == (a.node_id, b.node_id)

        async def b_registers(directory: RedisPeerDirectory) -> None:
            await client_for(directory, b).register()  # picks up the endorsement

        _on_registry(namespace, op_key, b_registers)
        listed = _cli(["registry", "peers", "--home", str(a_home), "--json"])
        assert [p["node_id"] for p in listed["peers"]] == sorted([a.node_id, b.node_id])
        assert listed["revoked"] == [] and listed["admission"] == "endorsed"
        assert {p["address"] for p in listed["peers"]} == {"127.0.0.1:1"}

        revoke = ["registry", "revoke", b.node_id, "--reason", "test", "--operator-key"]
        stranger = tmp_path / "stranger.pem"
        _cli(["registry", "operator-key", "create", str(stranger)])
        line = _cli([*revoke, str(stranger), "--home", str(a_home)], code=2)
        assert line.startswith("lamarck: operator_key_mismatch: ")
        revoked = _cli([*revoke, str(op_file), "--home", str(a_home), "--json"])
        assert revoked["seal"] == 1  # a revocation is sealed at once
        listed = _cli(["registry", "peers", "--home", str(a_home), "--json"])
        assert [p["node_id"] for p in listed["peers"]] == [a.node_id]
        assert listed["revoked"] == [b.node_id]
        seal_args = ["registry", "seal", "--operator-key", str(op_file), "--home", str(a_home)]
        assert _cli([*seal_args, "--json"])["seal"] == 2

        async def the_seal(directory: RedisPeerDirectory) -> Any:
            return await directory.seal()

        held = _on_registry(namespace, op_key, the_seal)
        assert held.seq == 2 and held.revoked == (b.node_id,)
        assert held.pins == {a.node_id: a.public_key_b64}
        assert held.endorsees == {a.node_id: (b.node_id,)}
        since = "2026-01-01T00:00:00Z"
        # The key after "--": a base64url key begins with "-" one time in 64.
        revoke_key = ["registry", "revoke-key", "--since", since, "--operator-key", str(op_file)]
        facts = _cli([*revoke_key, "--home", str(a_home), "--json", "--", a.public_key_b64])
        assert facts == {"public_key": a.public_key_b64, "since": since, "seal": 3}
        held = _on_registry(namespace, op_key, the_seal)
        assert held.revoked_keys == {a.public_key_b64: since} and held.revoked == (b.node_id,)

        async def b_heartbeats(directory: RedisPeerDirectory) -> str:
            with pytest.raises(AdmissionRefused) as refused:
                await directory.heartbeat(b.node_id)
            return refused.value.reason

        assert _on_registry(namespace, op_key, b_heartbeats) == "revoked"
    finally:
        _on_registry(namespace, op_key, lambda d: d.clear_namespace())


def test_the_cli_uses_the_running_embedded_registry_of_a_home_without_redis_url(
    tmp_path: Path,
) -> None:
    home = tmp_path / "solo"
    init_keys(home)
    newcomer = NodeIdentity.generate()
    embedded = EmbeddedRedis(home)
    asyncio.run(embedded.start())
    try:
        listed = _cli(["registry", "peers", "--home", str(home), "--json"])
        assert (listed["peers"], listed["revoked"]) == ([], [])
        # Reached: the registry itself answers that this never-admitted node vouches for nobody.
        line = _cli(
            ["registry", "endorse", newcomer.node_id, "--public-key", newcomer.public_key_b64,
             "--home", str(home)],
            code=1,
        )  # fmt: skip
        assert line.startswith("lamarck: bad_endorsement: ")
    finally:
        asyncio.run(embedded.stop())


# -- real nodes ----------------------------------------------------------------------------


def _lamarck(*args: str) -> Any:
    """Run ``lamarck`` as an operator would (own process, no LAMARCK_* settings); JSON out."""
    done = subprocess.run(
        [sys.executable, "-m", "lamarck.cli", *args, "--json"],
        env=fixtures.node_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _refusals(node: Any) -> list[str]:
    return [line for line in node.stderr().splitlines() if "registry refused this node" in line]


def _registry_rounds(node: Any, result: str) -> int:
    """Registry rounds ``node`` made with ``result``, from its metrics."""
    with urllib.request.urlopen(node.metrics_url, timeout=5) as response:
        lines = response.read().decode().splitlines()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in lines
        if line.startswith("lamarck_registry_rounds_total{") and f'result="{result}"' in line
    )


def _syncs_refused(node: Any) -> int:
    return sync_calls(node, ok=False)


def _cached_revoked(home: Path) -> list[str]:
    """The revoked ids in the node's peer cache (rewritten at each registry refresh)."""
    try:
        revoked = json.loads((home / "peers.json").read_text())["revoked"]
    except (FileNotFoundError, ValueError, KeyError):
        return []
    return list(revoked)


@pytest.mark.slow
def test_an_endorsed_network_admits_by_token_and_endorsement_and_shuts_out_the_revoked(
    net: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    op_file = tmp_path / "operator.pem"
    op_key = _lamarck("registry", "operator-key", "create", str(op_file))["public_key"]
    closed = {**net.flags(), "admission": "endorsed", "operator_public_key": op_key}
    monkeypatch.setattr(net, "flags", lambda: closed)
    a_home, b_home = tmp_path / "a", tmp_path / "b"
    _network_config(a_home, net.namespace, op_key)
    init_keys(a_home)
    _lamarck("registry", "enroll", "--home", str(a_home), "--operator-key", str(op_file))

    a = net.start(a_home)
    wait_for(lambda: a.node_id in _live_ids(net.namespace, op_key), "A to register with its token")
    b = net.start(b_home)
    wait_for(lambda: _refusals(b), "B to be refused by the registry", RETRY_BOUND_S)
    assert "no_endorsement" in _refusals(b)[0]

    first = net.learn(a, f"closed-{uuid.uuid4().hex[:8]}")
    refused = _registry_rounds(b, "no_endorsement")
    wait_for(
        lambda: _registry_rounds(b, "no_endorsement") > refused,
        "B's next refused attempt",
        RETRY_BOUND_S,
    )
    # The refusal is logged once, not on every attempt.
    assert len(_refusals(b)) == 1
    assert _live_ids(net.namespace, op_key) == {a.node_id}
    assert imported(b, first.id) is None

    endorsed = _lamarck(
        "registry", "endorse", b.node_id, "--public-key", show_keys(b_home).public_key,
        "--home", str(a_home),
    )  # fmt: skip
    assert endorsed["endorser_id"] == a.node_id
    wait_for(lambda: b.node_id in _live_ids(net.namespace, op_key), "B to register", RETRY_BOUND_S)
    copy = wait_for(lambda: imported(b, first.id), "B to import A's lesson")
    assert copy.source_node_id == a.node_id
    assert copy.confidence == pytest.approx(expected_transfer(first.confidence))
    listed = _lamarck("registry", "peers", "--home", str(a_home))
    assert {p["node_id"] for p in listed["peers"]} == {a.node_id, b.node_id}
    assert listed["revoked"] == []

    _lamarck(
        "registry", "revoke", b.node_id, "--reason", "left the team",
        "--operator-key", str(op_file), "--home", str(a_home),
    )  # fmt: skip
    listed = _lamarck("registry", "peers", "--home", str(a_home))
    assert [p["node_id"] for p in listed["peers"]] == [a.node_id]
    assert listed["revoked"] == [b.node_id]
    # A's next registry round drops B from the peers it publishes to; B's next one is refused.
    wait_for(lambda: b.node_id in _cached_revoked(a_home), "A to see B revoked", RETRY_BOUND_S)
    wait_for(
        lambda: any("revoked" in line for line in _refusals(b)), "B to learn it is revoked",
        RETRY_BOUND_S,
    )  # fmt: skip

    second = net.learn(a, f"after-{uuid.uuid4().hex[:8]}")
    # B still pulls from A every second; A refuses it. Two refused pulls after the lesson
    # exists have had their chance to carry it.
    seen = _syncs_refused(a)
    wait_for(lambda: _syncs_refused(a) >= seen + 2, "A to refuse two Syncs from B")
    assert imported(b, second.id) is None
    assert b.node_id not in _live_ids(net.namespace, op_key)
