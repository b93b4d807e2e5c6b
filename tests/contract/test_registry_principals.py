"""Principals and the endorsement cap, on both directory adapters (memory, Redis) and the cache.

Every admitted identity carries the principal that admitted it: the operator key for a token
in an ``operator`` network, the endorsement chain's root in an ``endorsed`` one (a
token-admitted root answers for itself and for the identities it mints, so they count as
one), the id itself in ``open`` mode. An operator can cap how many identities one endorser
admits; revoking an endorsee frees no slot.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions

from lamarck.errors import AdmissionRefused
from lamarck.proto.clock import FixedClock, SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.directory import PeerDirectory
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.memory_directory import InMemoryPeerDirectory
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.record_directory import RecordDirectory
from lamarck.registry.records import (
    Admission,
    Endorsement,
    Registration,
    sign_endorsement,
    sign_enrollment,
    sign_registration,
    sign_revocation,
)
from lamarck.registry.redis_directory import RedisPeerDirectory, connect_redis
from lamarck.reputation.params import PrincipalParams
from lamarck.reputation.principals import independent_count

pytestmark = pytest.mark.timeout(60)

SHARED_REDIS = "redis://127.0.0.1:6379/0"
HOUR = timedelta(hours=1)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class World:
    """An operator, a few identities, and directories over one registry."""

    def __init__(self, kind: str, url: str | None) -> None:
        rng = random.Random(5)
        self.kind = kind
        self.url = url
        self.clock: Any = SystemClock() if url else FixedClock(T0)
        self.operator = NodeIdentity.generate(rng)
        self.ids = [NodeIdentity.generate(rng) for _ in range(6)]
        self.namespace = "principals-" + uuid.uuid4().hex
        self.opened: list[RecordDirectory] = []

    def directory(
        self, *, mode: str = "endorsed", cap: int | None = None, records: Any = None
    ) -> PeerDirectory:
        params = RegistryParams.load({"admission": mode})
        principal_params = None if cap is None else PrincipalParams(cap)
        inner: RecordDirectory
        if self.url is None:
            inner = InMemoryPeerDirectory(
                params=params,
                clock=self.clock,
                operator_public_key=self.operator.public_key_b64,
                principal_params=principal_params,
            )
        else:
            inner = RedisPeerDirectory.from_url(
                self.url,
                namespace=self.namespace,
                params=params,
                clock=self.clock,
                operator_public_key=self.operator.public_key_b64,
                principal_params=principal_params,
            )
        self.opened.append(inner)
        if self.kind.endswith("+cache"):
            return CachedDirectory(inner, clock=self.clock)
        return inner

    def endorsement(self, by: NodeIdentity, of: NodeIdentity) -> Endorsement:
        now = self.clock.now()
        return sign_endorsement(
            by,
            endorsee_id=of.node_id,
            endorsee_public_key=of.public_key_b64,
            created_at=now,
            expires_at=now + HOUR,
        )

    async def registration(
        self,
        directory: PeerDirectory,
        who: NodeIdentity,
        *,
        endorsed_by: NodeIdentity | None = None,
        mode: AdmissionMode = AdmissionMode.ENDORSED,
    ) -> Registration:
        nonce = await directory.issue_nonce()
        now = self.clock.now()
        token = None
        if endorsed_by is None and mode is not AdmissionMode.OPEN:
            token = sign_enrollment(
                self.operator, node_id=who.node_id, issued_at=now, expires_at=now + HOUR
            )
        return sign_registration(
            who,
            address="127.0.0.1:7000",
            domains=("git",),
            version="0.1.0",
            nonce=nonce.nonce,
            admission=Admission(
                mode=mode,
                enrollment_token=token,
                endorsement=None if endorsed_by is None else self.endorsement(endorsed_by, who),
            ),
            created_at=now,
        )

    async def admit(
        self, directory: PeerDirectory, who: NodeIdentity, by: NodeIdentity | None = None
    ) -> None:
        await directory.register(await self.registration(directory, who, endorsed_by=by))


async def _redis_url(tmp_path: Path) -> tuple[str, EmbeddedRedis | None]:
    client = connect_redis(SHARED_REDIS, timeout_s=0.5)
    try:
        if await client.ping():
            return SHARED_REDIS, None
    except (redis.exceptions.RedisError, OSError):
        pass
    finally:
        await client.aclose()
    server = EmbeddedRedis(tmp_path / "redis-home")
    return await server.start(), server


@pytest.fixture(
    params=[
        "memory",
        "memory+cache",
        pytest.param("redis", marks=pytest.mark.integration),
        pytest.param("redis+cache", marks=pytest.mark.integration),
    ]
)
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    """Each adapter in turn, bare and behind the cache."""
    server = None
    url = None
    if request.param.startswith("redis"):
        url, server = await _redis_url(tmp_path)
    w = World(request.param, url)
    try:
        yield w
    finally:
        if w.opened:
            await w.opened[0].clear_namespace()
        for d in w.opened:
            await d.aclose()
        if server is not None:
            await server.stop()


async def test_in_an_operator_network_a_token_admitted_identity_answers_to_the_operator_key(
    world: World,
) -> None:
    d = world.directory(mode="operator")
    a, b = world.ids[:2]
    for who in (a, b):
        await d.register(await world.registration(d, who, mode=AdmissionMode.OPERATOR))
    principals = await d.principals([a.node_id, b.node_id, world.ids[2].node_id])
    # The unknown id has no principal: it counts for nothing.
    assert principals == {
        a.node_id: world.operator.public_key_b64,
        b.node_id: world.operator.public_key_b64,
    }
    assert await d.principal_of(a.node_id) == world.operator.public_key_b64
    assert await d.principal_of(world.ids[2].node_id) is None


async def test_identities_minted_down_an_endorsement_chain_count_as_its_root(
    world: World,
) -> None:
    d = world.directory()
    root, child, grandchild, other = world.ids[:4]
    await world.admit(d, root)
    await world.admit(d, child, by=root)
    await world.admit(d, grandchild, by=child)
    await world.admit(d, other)
    principals = await d.principals(
        [root.node_id, child.node_id, grandchild.node_id, other.node_id]
    )
    assert principals[child.node_id] == root.node_id
    assert principals[grandchild.node_id] == root.node_id
    # The root is the principal of what it mints: it and its endorsees are one, never two.
    assert principals[root.node_id] == root.node_id
    assert principals[other.node_id] == other.node_id
    assert independent_count([root.node_id, child.node_id, grandchild.node_id], principals) == 1
    # Two token-admitted roots, each with what it minted: two principals.
    assert independent_count(list(principals), principals) == 2


async def test_a_revoked_identity_has_no_principal(world: World) -> None:
    d = world.directory()
    a = world.ids[0]
    await world.admit(d, a)
    now = world.clock.now()
    await d.revoke(sign_revocation(world.operator, node_id=a.node_id, reason="x", created_at=now))
    assert await d.principals([a.node_id]) == {}


async def test_in_open_mode_each_identity_is_its_own_principal(world: World) -> None:
    d = world.directory(mode="open")
    a, b = world.ids[:2]
    for who in (a, b):
        await d.register(await world.registration(d, who, mode=AdmissionMode.OPEN))
    assert await d.principals([a.node_id, b.node_id]) == {
        a.node_id: a.node_id,
        b.node_id: b.node_id,
    }


async def test_an_endorser_at_its_cap_admits_nobody_more(world: World) -> None:
    d = world.directory(cap=2)
    root, x, y, z = world.ids[:4]
    await world.admit(d, root)
    await world.admit(d, x, by=root)
    await world.admit(d, y, by=root)
    # Publishing a third endorsement is refused at once, and so is registering with one.
    with pytest.raises(AdmissionRefused) as published:
        await d.endorse(world.endorsement(root, z))
    assert published.value.reason == "endorsement_cap"
    with pytest.raises(AdmissionRefused) as registered:
        await world.admit(d, z, by=root)
    assert registered.value.reason == "endorsement_cap"
    assert await d.pinned_key(z.node_id) is None
    # An identity it already admitted registers again without taking a slot.
    await world.admit(d, x, by=root)
    assert {p.node_id for p in await d.live_peers()} == {root.node_id, x.node_id, y.node_id}


async def test_revoking_an_endorsee_frees_no_slot(world: World) -> None:
    d = world.directory(cap=1)
    root, x, y = world.ids[:3]
    await world.admit(d, root)
    await world.admit(d, x, by=root)
    await d.revoke(
        sign_revocation(
            world.operator, node_id=x.node_id, reason="sybil", created_at=world.clock.now()
        )
    )
    with pytest.raises(AdmissionRefused) as e:
        await world.admit(d, y, by=root)
    assert e.value.reason == "endorsement_cap"


async def test_a_token_admission_takes_no_endorser_slot(world: World) -> None:
    d = world.directory(cap=1)
    root, x, y = world.ids[:3]
    await world.admit(d, root)
    await world.admit(d, x)  # the operator's token, not root's endorsement
    await world.admit(d, y, by=root)
    assert await d.principal_of(y.node_id) == root.node_id
