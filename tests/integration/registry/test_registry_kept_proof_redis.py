"""Against a real Redis: the registry's namespace is wiped two months after admission (data
loss), and the token-enrolled root and its endorsee get back in with the admission proofs they
kept in their homes, although the token and the endorsement expired long ago; a node that
rotated its key gets back in under its current key, and a peer that saw the rotation refuses
the retired key if somebody re-registers it first."""

from __future__ import annotations

import random
import shutil
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lamarck.errors import AdmissionRefused
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import make_rotation
from lamarck.registry.admitted_file import ADMITTED_FILE
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import sign_endorsement, sign_enrollment
from lamarck.registry.redis_directory import RedisPeerDirectory

pytestmark = pytest.mark.integration

# Redis expires what the registry stores by the wall clock: start the story now.
T0 = datetime.now(UTC).replace(microsecond=0)
WEEK = timedelta(days=7)


@pytest.fixture
async def setup(
    integration_services: Any,
) -> AsyncIterator[tuple[RedisPeerDirectory, FixedClock, NodeIdentity]]:
    """A directory in a fresh namespace of the run's real Redis; the namespace is wiped after."""
    redis_url: str = integration_services.redis_url
    clock = FixedClock(T0)
    operator = NodeIdentity.generate(random.Random(3))
    directory = RedisPeerDirectory.from_url(
        redis_url,
        namespace="test-" + uuid.uuid4().hex,
        params=RegistryParams.load({"admission": "endorsed"}),
        clock=clock,
        operator_public_key=operator.public_key_b64,
        rng=random.Random(4),
    )
    try:
        yield directory, clock, operator
    finally:
        await directory.clear_namespace()
        await directory.aclose()


async def test_endorsed_nodes_reenter_a_wiped_redis_with_their_kept_registrations(
    setup: tuple[RedisPeerDirectory, FixedClock, NodeIdentity], tmp_path: Path
) -> None:
    directory, clock, operator = setup
    rng = random.Random(5)
    root, newcomer = NodeIdentity.generate(rng), NodeIdentity.generate(rng)
    token = sign_enrollment(operator, node_id=root.node_id, issued_at=T0, expires_at=T0 + WEEK)

    def client(who: NodeIdentity, home: Path | None, node_id: str | None = None) -> RegistryClient:
        if home is not None:
            home.mkdir(exist_ok=True)
        return RegistryClient(
            directory,
            who,
            address="127.0.0.1:7001",
            domains=(),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=clock,
            enrollment_token=token if who is root else None,
            kept_path=home / ADMITTED_FILE if home is not None else None,
            node_id=node_id,
        )

    root_home, newcomer_home = tmp_path / "root", tmp_path / "newcomer"
    assert await client(root, root_home).tick() is TickResult.REGISTERED
    await directory.endorse(
        sign_endorsement(
            root,
            endorsee_id=newcomer.node_id,
            endorsee_public_key=newcomer.public_key_b64,
            created_at=T0,
            expires_at=T0 + WEEK,
        )
    )
    assert await client(newcomer, newcomer_home).tick() is TickResult.REGISTERED

    clock.advance(timedelta(days=60).total_seconds())
    assert await directory.clear_namespace() > 0  # the network's Redis lost its data
    assert await client(root, root_home).tick() is TickResult.REGISTERED
    with pytest.raises(AdmissionRefused):
        await client(newcomer, None).tick()  # nothing kept: the expired material alone fails
    assert await client(newcomer, newcomer_home).tick() is TickResult.REGISTERED
    listed = {p.node_id for p in await directory.live_peers()}
    assert listed == {root.node_id, newcomer.node_id}
    assert await directory.pinned_key(newcomer.node_id) == newcomer.public_key_b64


async def test_a_rotated_node_reenters_a_wiped_redis_and_its_retired_key_stays_refused(
    setup: tuple[RedisPeerDirectory, FixedClock, NodeIdentity], tmp_path: Path
) -> None:
    directory, clock, operator = setup
    rng = random.Random(7)
    root, member, new_key = (NodeIdentity.generate(rng) for _ in range(3))
    token = sign_enrollment(operator, node_id=root.node_id, issued_at=T0, expires_at=T0 + WEEK)

    def client(who: NodeIdentity, home: Path, node_id: str | None = None) -> RegistryClient:
        home.mkdir(exist_ok=True)
        return RegistryClient(
            directory,
            who,
            address="127.0.0.1:7001",
            domains=(),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=clock,
            enrollment_token=token if who is root else None,
            kept_path=home / ADMITTED_FILE,
            node_id=node_id,
        )

    root_home, member_home, stolen = tmp_path / "root", tmp_path / "member", tmp_path / "stolen"
    assert await client(root, root_home).tick() is TickResult.REGISTERED
    await directory.endorse(
        sign_endorsement(
            root,
            endorsee_id=member.node_id,
            endorsee_public_key=member.public_key_b64,
            created_at=T0,
            expires_at=T0 + WEEK,
        )
    )
    assert await client(member, member_home).tick() is TickResult.REGISTERED
    stolen.mkdir()
    shutil.copy(member_home / ADMITTED_FILE, stolen / ADMITTED_FILE)  # the pre-rotation proof
    observer = CachedDirectory(directory, clock=clock, path=tmp_path / "observer" / "peers.json")
    assert await observer.refresh()
    rotating = client(member, member_home)
    rotating.use_rotation(new_key, make_rotation(member, new_key, clock.now()))
    assert await rotating.tick() is TickResult.REGISTERED
    assert await observer.refresh()
    assert await observer.pinned_key(member.node_id) == new_key.public_key_b64

    # Data loss; the rotated node comes back first, under its current key, chain and all.
    clock.advance(timedelta(days=60).total_seconds())
    assert await directory.clear_namespace() > 0
    assert await client(root, root_home).tick() is TickResult.REGISTERED
    assert await client(new_key, member_home, member.node_id).tick() is TickResult.REGISTERED
    assert await directory.pinned_key(member.node_id) == new_key.public_key_b64
    proof = await directory.admission_proof(member.node_id)
    assert proof is not None
    assert proof.keys == (member.public_key_b64, new_key.public_key_b64)

    # Data loss again; this time the retired key's holder is first. The observer refuses it.
    assert await directory.clear_namespace() > 0
    assert await client(root, root_home).tick() is TickResult.REGISTERED
    assert await client(member, stolen).tick() is TickResult.REGISTERED
    assert await directory.pinned_key(member.node_id) == member.public_key_b64
    restarted = CachedDirectory(directory, clock=clock, path=tmp_path / "observer" / "peers.json")
    assert await restarted.refresh()
    assert await restarted.pinned_key(member.node_id) is None
    assert member.node_id not in {p.node_id for p in await restarted.live_peers()}
