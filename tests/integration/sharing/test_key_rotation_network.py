"""Key rotation end to end: ``lamarck keys rotate``, a real node restarted on its home, and
the network's Redis registry.

A node admitted by an operator's enrollment token (``endorsed`` network) publishes its
key's lessons; its operator stops it and rotates its key with the CLI. Restarted, the node
is the id of its new key, admitted as the successor of its old id on the rotation (signed
by both keys) — not refused ``bad_enrollment`` as a stranger — with the same principal; the
old id's pin moved to the new key, so the old key is refused afterwards (a registration with
it, and a lesson it signs after the rotation). A lesson the old key signed before the
rotation still imports on another node; one the new key signs imports too.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import REDIS_URL, Net, wait_for
from typer.testing import CliRunner

import lamarck
from lamarck.cli import app
from lamarck.client import Client
from lamarck.errors import AdmissionRefused
from lamarck.node.sharing import ENROLLMENT_FILE
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import KEYS_DIR, identity_path, init_keys, load_private_key
from lamarck.registry.client import RegistryClient
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import sign_enrollment
from lamarck.registry.redis_directory import RedisPeerDirectory
from tests.factories import signed_record

pytestmark = pytest.mark.integration

# The developer's LAMARCK_* settings must not reach the command under test.
runner = CliRunner(env={k: None for k in os.environ if k.startswith("LAMARCK_")})
OPERATOR = NodeIdentity.from_seed(b"\x51" * 32)


def _enrolled_home(home: Path) -> NodeIdentity:
    """A home whose first registration presents an operator token for its key."""
    identity = init_keys(home)
    now = datetime.now(UTC)
    token = sign_enrollment(
        OPERATOR,
        issued_at=now - timedelta(minutes=1),
        expires_at=now + timedelta(hours=1),
        node_id=identity.node_id,
        public_key=identity.public_key_b64,
    )
    (home / ENROLLMENT_FILE).write_text(json.dumps(token.wire()))
    return identity


def _lesson(identity: NodeIdentity, op: str, signed_at: datetime) -> bytes:
    """A low-stakes lesson about ``op`` signed by ``identity`` at ``signed_at``."""
    return signed_record(
        identity,
        id=str(uuid.uuid4()),
        created=signed_at,
        outcome_id=str(uuid.uuid4()),
        content=f"Run {op.removeprefix('shell:')} before the build.",
        context={"domain": "build", "environment": "ci", "-tools": None},
        lesson={"operation": op},
    ).raw


def _directory(namespace: str) -> RedisPeerDirectory:
    return RedisPeerDirectory.from_url(
        REDIS_URL,
        namespace=namespace,
        params=RegistryParams(admission=AdmissionMode.ENDORSED),
        clock=SystemClock(),
        operator_public_key=OPERATOR.public_key_b64,
    )


def _registry(namespace: str, ask: Any) -> Any:
    async def go() -> Any:
        directory = _directory(namespace)
        try:
            return await ask(directory)
        finally:
            await directory.aclose()

    return asyncio.run(go())


def test_a_rotated_node_is_its_lineages_successor_and_its_old_key_is_refused(
    net: Net, tmp_path: Path
) -> None:
    net.admit_by(OPERATOR.public_key_b64)
    old = _enrolled_home(tmp_path / "source")
    _enrolled_home(tmp_path / "receiver")
    source = net.start(tmp_path / "source")
    receiver = net.start(tmp_path / "receiver")
    assert source.node_id == old.node_id
    wait_for(
        lambda: _registry(net.namespace, lambda d: d.pinned_key(old.node_id)),
        "the source registered",
    )
    principal = _registry(net.namespace, lambda d: d.principal_of(old.node_id))
    before = _lesson(old, "shell:make before", datetime.now(UTC) - timedelta(minutes=1))

    source.stop()
    rotated = runner.invoke(app, ["keys", "rotate", "--home", str(source.home), "--json"])
    assert rotated.exit_code == 0, rotated.output
    facts = json.loads(rotated.output)
    new = load_private_key(identity_path(source.home))
    assert facts["new_node_id"] == new.node_id != old.node_id
    assert facts["record"]["countersignature"]["signed_by"] == new.public_key_b64

    source = net.start(source.home)
    assert source.node_id == new.node_id
    # Admitted as the successor (no bad_enrollment), same principal; the old id moved too.
    wait_for(
        lambda: (
            _registry(net.namespace, lambda d: d.pinned_key(old.node_id)) == new.public_key_b64
            or None
        ),
        "the old id's pin moved to the new key",
    )
    assert _registry(net.namespace, lambda d: d.pinned_key(new.node_id)) == new.public_key_b64
    assert _registry(net.namespace, lambda d: d.principal_of(new.node_id)) == principal
    live = _registry(net.namespace, lambda d: d.live_peers())
    assert new.node_id in {p.node_id for p in live} and old.node_id not in {p.node_id for p in live}

    # The old key cannot register again, with its token or without.
    retired = load_private_key(source.home / KEYS_DIR / "identity.1.pem.old")
    assert retired.node_id == old.node_id

    async def register_old(directory: RedisPeerDirectory) -> str:
        client = RegistryClient(
            directory,
            retired,
            address="127.0.0.1:1",
            domains=(),
            version=lamarck.__version__,
            mode=AdmissionMode.ENDORSED,
            clock=SystemClock(),
        )
        try:
            await client.register()
        except AdmissionRefused as e:
            return e.reason
        return "admitted"

    assert _registry(net.namespace, register_old) == "key_pinned"

    # History keeps verifying; the old key's new records do not; the new key's do.
    later = _lesson(retired, "shell:make later", datetime.now(UTC))
    fresh = _lesson(new, "shell:make fresh", datetime.now(UTC) - timedelta(seconds=1))
    with Client(receiver.agent_addr, timeout=30) as client:
        acks = client.import_bundle(b"".join(raw + b"\n" for raw in (before, fresh, later))).acks
    assert [(a.status, a.reason) for a in acks][:2] == [("accepted", ""), ("accepted", "")]
    assert (acks[2].status, acks[2].reason) == ("rejected", "key_not_pinned")
