"""The peer cache with its registry unreachable (a closed port, or a registry switched off)."""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from lamarck.errors import RegistryError
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient
from lamarck.registry.memory_directory import InMemoryPeerDirectory
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    sign_endorsement,
    sign_enrollment,
    sign_retraction,
    sign_revocation,
)
from lamarck.registry.redis_directory import RedisPeerDirectory


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unreachable(clock: FixedClock) -> RedisPeerDirectory:
    return RedisPeerDirectory.from_url(
        f"redis://127.0.0.1:{_closed_port()}/0",
        namespace="unit",
        params=RegistryParams(),
        clock=clock,
    )


async def test_damaged_cache_file_means_an_empty_cache_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "peers.json"
    path.write_text("{not json")
    clock = FixedClock()
    cache = CachedDirectory(_unreachable(clock), clock=clock, path=path)
    try:
        assert await cache.live_peers() == []
        assert await cache.pinned_key("lmk1" + "a" * 32) is None
        assert not cache.available and cache.refreshed_at is None
    finally:
        await cache.aclose()


async def test_writes_fail_as_unavailable_while_the_registry_is_down() -> None:
    clock = FixedClock()
    cache = CachedDirectory(_unreachable(clock), clock=clock)
    try:
        with pytest.raises(RegistryError) as e:
            await cache.issue_nonce()
        assert e.value.reason == "unavailable"
        assert isinstance(e.value.__cause__, Exception)  # the Redis error is chained
        with pytest.raises(RegistryError, match="unavailable"):
            await cache.heartbeat("lmk1" + "a" * 32)
        assert not await cache.refresh()
    finally:
        await cache.aclose()


async def test_a_retraction_seen_is_kept_through_data_loss_an_outage_and_a_restart(
    tmp_path: Path,
) -> None:
    clock = FixedClock()
    operator = NodeIdentity.generate(random.Random(5))
    path = tmp_path / "peers.json"
    registry = InMemoryPeerDirectory(
        params=RegistryParams(), clock=clock, operator_public_key=operator.public_key_b64
    )
    cache = CachedDirectory(registry, clock=clock, path=path)
    retraction = sign_retraction(
        operator, content_hash="ab" * 32, reason="wrong", created_at=clock.now()
    )
    await registry.retract(retraction)  # published by another node's operator CLI
    assert await cache.refresh()
    await registry.clear_namespace()  # the registry loses it: this node does not
    assert await registry.retractions() == ()
    assert await cache.retractions() == (retraction,)
    # Restarted during an outage: served from the file.
    down = CachedDirectory(_unreachable(clock), clock=clock, path=path)
    try:
        assert await down.retractions() == (retraction,)
        assert not down.available
    finally:
        await down.aclose()


class _Flaky(InMemoryPeerDirectory):
    """An in-memory registry that can be switched unreachable."""

    down = False

    async def revoked_through(self, node_ids: Sequence[str]) -> dict[str, str]:
        if self.down:
            raise RegistryError("redis is down", reason="unavailable")
        return await super().revoked_through(node_ids)


async def _admit_root_and_member(
    registry: InMemoryPeerDirectory,
    clock: FixedClock,
    operator: NodeIdentity,
    root: NodeIdentity,
    member: NodeIdentity,
) -> None:
    """``root`` admitted by the operator's enrollment token, ``member`` by ``root``'s
    endorsement."""
    now = clock.now()
    token = sign_enrollment(
        operator, node_id=root.node_id, issued_at=now, expires_at=now + timedelta(hours=1)
    )
    endorsement = sign_endorsement(
        root, endorsee_id=member.node_id, endorsee_public_key=member.public_key_b64,
        created_at=now, expires_at=now + timedelta(hours=1),
    )  # fmt: skip
    for who, kw in ((root, {"enrollment_token": token}), (member, {"endorsement": endorsement})):
        await RegistryClient(
            registry, who, address="127.0.0.1:7001", domains=(), version="0",
            mode=AdmissionMode.ENDORSED, clock=clock, **kw,
        ).register()  # fmt: skip


async def test_who_was_admitted_through_a_revoked_id_is_remembered_through_an_outage() -> None:
    clock = FixedClock()
    rng = random.Random(6)
    operator, root, member = (NodeIdentity.generate(rng) for _ in range(3))
    registry = _Flaky(
        params=RegistryParams(admission=AdmissionMode.ENDORSED),
        clock=clock,
        operator_public_key=operator.public_key_b64,
    )
    await _admit_root_and_member(registry, clock, operator, root, member)
    cache = CachedDirectory(registry, clock=clock)
    ids = [root.node_id, member.node_id]
    assert await cache.revoked_through(ids) == {}
    await registry.revoke(
        sign_revocation(operator, node_id=root.node_id, reason="x", created_at=clock.now())
    )
    both = {root.node_id: root.node_id, member.node_id: root.node_id}
    assert await cache.revoked_through(ids) == both
    registry.down = True
    assert await cache.revoked_through(ids) == both
    assert not cache.available


class _Counting(InMemoryPeerDirectory):
    """An in-memory registry that counts principal lookups and the ids each one asked."""

    asked: list[list[str]]

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        self.asked.append(list(node_ids))
        return await super().principals(node_ids)


async def test_principals_are_answered_from_a_short_lived_view_that_revocations_empty() -> None:
    clock = FixedClock()
    rng = random.Random(7)
    operator, root, member, stranger = (NodeIdentity.generate(rng) for _ in range(4))
    registry = _Counting(
        params=RegistryParams(admission=AdmissionMode.ENDORSED),
        clock=clock,
        operator_public_key=operator.public_key_b64,
    )
    registry.asked = []
    await _admit_root_and_member(registry, clock, operator, root, member)
    cache = CachedDirectory(registry, clock=clock, principal_view_s=5.0)
    ids = [root.node_id, member.node_id, stranger.node_id]
    both = {root.node_id: root.node_id, member.node_id: root.node_id}
    assert await cache.principals(ids) == both
    clock.advance(4.0)
    # Within the view: no lookup, the unadmitted stranger still has none.
    assert await cache.principals(ids) == both
    assert len(registry.asked) == 1
    clock.advance(1.0)
    assert await cache.principals([member.node_id]) == {member.node_id: root.node_id}
    assert registry.asked[-1] == [member.node_id]  # only the stale id is asked
    # The member is revoked elsewhere: the view answers until it lapses...
    await registry.revoke(
        sign_revocation(operator, node_id=member.node_id, reason="x", created_at=clock.now())
    )
    assert await cache.principals([member.node_id]) == {member.node_id: root.node_id}
    # ...or a refresh (after each heartbeat) learns the revocation and empties it at once.
    assert await cache.refresh()
    assert await cache.principals(ids) == {root.node_id: root.node_id}
    assert registry.asked[-1] == [root.node_id, stranger.node_id]  # the revoked id: never


async def test_without_a_view_every_principal_lookup_asks_the_registry() -> None:
    clock = FixedClock()
    registry = _Counting(params=RegistryParams(), clock=clock)
    registry.asked = []
    cache = CachedDirectory(registry, clock=clock)
    ids = ["lmk1" + "a" * 32]
    assert await cache.principals(ids) == {}
    assert await cache.principals(ids) == {}
    assert registry.asked == [ids, ids]
