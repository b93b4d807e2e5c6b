"""Against a real Redis: the registry's namespace is wiped two months after admission (data
loss), and the token-enrolled root and its endorsee get back in with the registrations they
kept in their homes, although the token and the endorsement expired long ago."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lamarck.errors import AdmissionRefused
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.admission_file import ADMISSION_FILE
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

    def client(who: NodeIdentity, home: Path | None) -> RegistryClient:
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
            proof_path=home / ADMISSION_FILE if home is not None else None,
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
