"""``RedisPeerDirectory``: the ``PeerDirectory`` port on a real Redis (``redis.asyncio``).

Key layout, all under ``lamarck:{namespace}:`` so deployments (and tests) never collide:

- ``nonce:<nonce>`` → issue time; expires after twice ``nonce_ttl_s`` so a late use is told
  apart (``stale_nonce``) from a forged or reused one (``unknown_nonce``). Taken with GETDEL:
  a nonce is consumed by the first registration that presents it, whatever the outcome.
- ``pin:<id>`` → the id's public key. Set with SET NX (first key wins) and moved only by a
  compare-and-set on the old key (rotation). Never expires.
- ``peer:<id>`` → the signed registration; its TTL is the liveness (``heartbeat_ttl_s``),
  refreshed by ``heartbeat``. ``peers`` is the set of ids that may be live (an index, pruned).
- ``revoked`` → set of revoked ids; ``revocation:<id>`` → the operator's signed record.
- ``endorsement:<id>`` → the latest endorsement published for ``id``, expiring with it.

Redis is shared by every node, so a reader does not trust what it reads: each listed peer's
registration signature is re-verified and its key compared with the pin before it is served.

Every Redis failure is translated at this boundary: ``RegistryError(reason="unavailable")``.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from lamarck.errors import AdmissionRefused, InvalidRecord, RegistryError, VerificationError
from lamarck.proto.clock import Clock
from lamarck.proto.identity import b64u_encode
from lamarck.proto.signing import RecordKind
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.registry.directory import IssuedNonce, PeerDirectory, PeerInfo
from lamarck.registry.params import RegistryParams
from lamarck.registry.records import Endorsement, Registration, Revocation, parse_record_ts
from lamarck.registry.rotation import RotationInvalid, check_rotation_record
from lamarck.registry.rules import (
    check_endorsement,
    check_registration,
    check_revocation,
    verify_signed_by,
)

__all__ = ["RedisPeerDirectory", "connect_redis"]

log = logging.getLogger(__name__)

_NONCE_BYTES = 32

# Lists a peer only while it is not revoked; one script, so revoke (SADD + DEL in a
# transaction) and register cannot interleave into a listed revoked peer.
_REGISTER_LUA = """
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""

# -1: revoked; 0: not registered (expired or never); 1: refreshed.
_HEARTBEAT_LUA = """
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return -1 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# Moves a pin only from the expected old key: two concurrent rotations cannot both win.
_CAS_PIN_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# Returns [registration, pin, ...] for every live, non-revoked id, and drops ids whose peer
# key has expired from the index (atomically, so a concurrent register is never lost).
_LIVE_LUA = """
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('GET', ARGV[1] .. id)
  if not v then
    redis.call('SREM', KEYS[1], id)
  elseif redis.call('SISMEMBER', KEYS[2], id) == 0 then
    table.insert(out, v)
    table.insert(out, redis.call('GET', ARGV[2] .. id) or '')
  end
end
return out
"""


def connect_redis(url: str, *, timeout_s: float = 2.0) -> aioredis.Redis:
    """A client for ``url`` (``redis://``, ``rediss://`` or ``unix://``) tuned to fail fast.

    One quick retry re-dials a connection that went stale while Redis restarted; more would
    only delay the switch to the local cache during an outage.
    """
    return aioredis.Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
        decode_responses=True,
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@asynccontextmanager
async def _translated() -> AsyncIterator[None]:
    """Translate every Redis or socket failure into ``RegistryError(reason="unavailable")``."""
    try:
        yield
    except (redis.exceptions.RedisError, OSError) as e:
        raise RegistryError(f"registry unavailable: {e}", reason="unavailable") from e


class RedisPeerDirectory(PeerDirectory):
    """The peer directory on Redis; reads re-verify, writes apply ``lamarck.registry.rules``."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        namespace: str,
        params: RegistryParams,
        clock: Clock,
        operator_public_key: str | None = None,
        rng: random.Random | None = None,
        owns_client: bool = False,
    ) -> None:
        if not namespace or any(c in namespace for c in ":{} \n"):
            raise RegistryError(f"invalid namespace {namespace!r}", reason="invalid_namespace")
        self._r = client
        self._prefix = f"lamarck:{namespace}:"
        self._params = params
        self._clock = clock
        self._operator_key = operator_public_key
        # Nonces must be unguessable: the OS CSPRNG unless a test injects a seeded source.
        self._rng: random.Random = rng if rng is not None else random.SystemRandom()
        self._owns_client = owns_client
        self._register_script = client.register_script(_REGISTER_LUA)
        self._heartbeat_script = client.register_script(_HEARTBEAT_LUA)
        self._cas_pin_script = client.register_script(_CAS_PIN_LUA)
        self._live_script = client.register_script(_LIVE_LUA)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        namespace: str,
        params: RegistryParams,
        clock: Clock,
        operator_public_key: str | None = None,
        rng: random.Random | None = None,
    ) -> RedisPeerDirectory:
        """A directory with its own client for ``url`` (closed by ``aclose``)."""
        return cls(
            connect_redis(url),
            namespace=namespace,
            params=params,
            clock=clock,
            operator_public_key=operator_public_key,
            rng=rng,
            owns_client=True,
        )

    @property
    def params(self) -> RegistryParams:
        """The parameters this directory applies."""
        return self._params

    def _key(self, *parts: str) -> str:
        return self._prefix + ":".join(parts)

    async def aclose(self) -> None:
        """Close the client if this directory created it."""
        if self._owns_client:
            await self._r.aclose()

    async def ping(self) -> bool:
        """True when Redis answers."""
        try:
            async with _translated():
                return bool(await self._r.ping())
        except RegistryError:
            return False

    async def issue_nonce(self) -> IssuedNonce:
        """Issue a fresh single-use nonce (256 random bits)."""
        nonce = b64u_encode(self._rng.randbytes(_NONCE_BYTES))
        now = self._clock.now()
        ttl_ms = int(self._params.nonce_ttl_s * 2000)
        async with _translated():
            await self._r.set(self._key("nonce", nonce), format_ts(now), px=ttl_ms)
        return IssuedNonce(nonce, now + timedelta(seconds=self._params.nonce_ttl_s))

    async def register(self, reg: Registration) -> PeerInfo:
        """Consume the nonce, apply the admission and pinning rules, pin, and list the peer."""
        endorser = reg.admission.endorsement.endorser_id if reg.admission.endorsement else None
        async with _translated():
            # The nonce goes first and unconditionally: whatever happens next, it is spent.
            issued_raw = await self._r.getdel(self._key("nonce", reg.nonce))
            pipe = self._r.pipeline(transaction=False)
            pipe.get(self._key("pin", reg.node_id))
            ids = [reg.node_id] + ([endorser] if endorser else [])
            pipe.smismember(self._key("revoked"), ids)
            if endorser:
                pipe.get(self._key("pin", endorser))
            replies = await pipe.execute()
        pinned = _text(replies[0]) if replies[0] is not None else None
        revoked = {i for i, flag in zip(ids, replies[1], strict=True) if int(flag)}
        admitted_ids: dict[str, str] = {}
        if endorser and replies[2] is not None:
            admitted_ids[endorser] = _text(replies[2])
        now = self._clock.now()
        admitted = check_registration(
            reg,
            nonce_issued=_parse_issued(issued_raw),
            pinned_key=pinned,
            revoked=revoked,
            admitted_ids=admitted_ids,
            operator_public_key=self._operator_key,
            params=self._params,
            now=now,
        )
        pin_key = self._key("pin", reg.node_id)
        async with _translated():
            if admitted.new_pin:
                if not await self._r.set(pin_key, admitted.pin_key, nx=True):
                    # Lost a race with another registration of this id: first key wins.
                    current = await self._r.get(pin_key)
                    if current is None or _text(current) != admitted.pin_key:
                        raise AdmissionRefused("id pinned concurrently", reason="key_pinned")
            elif admitted.rotated_from is not None:
                moved = await self._cas_pin_script(
                    keys=[pin_key], args=[admitted.rotated_from, admitted.pin_key]
                )
                if not int(moved):
                    raise AdmissionRefused("pin moved concurrently", reason="key_pinned")
                log.info("key rotated", extra={"node_id": reg.node_id})
            value = json.dumps({"registration": reg.wire(), "registered_at": format_ts(now)})
            listed = await self._register_script(
                keys=[self._key("peer", reg.node_id), self._key("peers"), self._key("revoked")],
                args=[reg.node_id, value, self._ttl_ms()],
            )
        if not int(listed):
            raise AdmissionRefused("this node id is revoked", reason="revoked")
        return PeerInfo.from_registration(reg, now)

    def _ttl_ms(self) -> int:
        return max(1, int(self._params.heartbeat_ttl_s * 1000))

    async def heartbeat(self, node_id: str) -> None:
        """Refresh ``node_id``'s liveness TTL."""
        async with _translated():
            result = int(
                await self._heartbeat_script(
                    keys=[self._key("peer", node_id), self._key("revoked")],
                    args=[node_id, self._ttl_ms()],
                )
            )
        if result < 0:
            raise AdmissionRefused("this node id is revoked", reason="revoked")
        if result == 0:
            raise RegistryError("not registered (expired); register again", reason="not_registered")

    async def deregister(self, node_id: str) -> None:
        """Drop ``node_id`` from the live peers now; its pin stays."""
        async with _translated():
            pipe = self._r.pipeline(transaction=True)
            pipe.delete(self._key("peer", node_id))
            pipe.srem(self._key("peers"), node_id)
            await pipe.execute()

    async def live_peers(self) -> list[PeerInfo]:
        """Every live, non-revoked peer whose registration verifies against its pin."""
        async with _translated():
            flat: Sequence[Any] = await self._live_script(
                keys=[self._key("peers"), self._key("revoked")],
                args=[self._key("peer", ""), self._key("pin", "")],
            )
        peers = []
        for raw, pin in zip(flat[0::2], flat[1::2], strict=True):
            peer = _verified_peer(_text(raw), _text(pin))
            if peer is not None:
                peers.append(peer)
        peers.sort(key=lambda p: p.node_id)
        return peers

    async def get_peer(self, node_id: str) -> PeerInfo | None:
        """The live peer ``node_id`` (verified), or ``None``."""
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            pipe.get(self._key("peer", node_id))
            pipe.get(self._key("pin", node_id))
            pipe.sismember(self._key("revoked"), node_id)
            raw, pin, revoked = await pipe.execute()
        if raw is None or pin is None or int(revoked):
            return None
        peer = _verified_peer(_text(raw), _text(pin))
        return peer if peer is not None and peer.node_id == node_id else None

    async def pinned_key(self, node_id: str) -> str | None:
        """The key ``node_id`` is pinned to, or ``None``."""
        async with _translated():
            value = await self._r.get(self._key("pin", node_id))
        return None if value is None else _text(value)

    async def pinned_keys(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The pinned keys of those of ``node_ids`` that have one."""
        if not node_ids:
            return {}
        async with _translated():
            values = await self._r.mget([self._key("pin", i) for i in node_ids])
        return {i: _text(v) for i, v in zip(node_ids, values, strict=True) if v is not None}

    async def rotate_key(self, rotation: Mapping[str, Any]) -> None:
        """Move a pin to a new key if the pinned (old) key signed ``rotation``."""
        node_id = rotation.get("node_id")
        new_key = rotation.get("new_public_key")
        if not isinstance(node_id, str) or not isinstance(new_key, str):
            raise AdmissionRefused("malformed rotation record", reason="key_pinned")
        pin_key = self._key("pin", node_id)
        async with _translated():
            pinned = await self._r.get(pin_key)
            revoked = await self._r.sismember(self._key("revoked"), node_id)
        if int(revoked):
            raise AdmissionRefused("this node id is revoked", reason="revoked")
        if pinned is None:
            raise AdmissionRefused("no pinned key to rotate from", reason="key_mismatch")
        old_key = _text(pinned)
        try:
            check_rotation_record(
                rotation,
                node_id=node_id,
                old_key=old_key,
                new_key=new_key,
                now=self._clock.now(),
                max_future_skew_s=self._params.max_future_skew_s,
            )
        except RotationInvalid as e:
            raise AdmissionRefused(f"rotation refused: {e}", reason="key_pinned") from e
        async with _translated():
            moved = await self._cas_pin_script(keys=[pin_key], args=[old_key, new_key])
            # The listed registration carries the old key: drop it until the node registers
            # again with its new key.
            await self._r.delete(self._key("peer", node_id))
        if not int(moved):
            raise AdmissionRefused("pin moved concurrently", reason="key_pinned")

    async def revoke(self, revocation: Revocation) -> None:
        """Revoke (operator-signed): add to the set, keep the record, unlist the peer."""
        check_revocation(
            revocation,
            operator_public_key=self._operator_key,
            params=self._params,
            now=self._clock.now(),
        )
        async with _translated():
            pipe = self._r.pipeline(transaction=True)
            pipe.sadd(self._key("revoked"), revocation.node_id)
            pipe.set(self._key("revocation", revocation.node_id), json.dumps(revocation.wire()))
            pipe.delete(self._key("peer", revocation.node_id))
            pipe.srem(self._key("peers"), revocation.node_id)
            await pipe.execute()
        log.warning("node revoked", extra={"node_id": revocation.node_id})

    async def is_revoked(self, node_id: str) -> bool:
        """Whether ``node_id`` is revoked."""
        async with _translated():
            return bool(int(await self._r.sismember(self._key("revoked"), node_id)))

    async def revoked_ids(self) -> frozenset[str]:
        """All revoked ids."""
        async with _translated():
            members = await self._r.smembers(self._key("revoked"))
        return frozenset(_text(m) for m in members)

    async def endorse(self, endorsement: Endorsement) -> None:
        """Check and publish an endorsement until it expires."""
        endorser = endorsement.endorser_id
        async with _translated():
            pinned = await self._r.get(self._key("pin", endorser))
            revoked = await self._r.sismember(self._key("revoked"), endorser)
        check_endorsement(
            endorsement,
            endorsee_id=endorsement.endorsee_id,
            endorsee_public_key=endorsement.endorsee_public_key,
            revoked={endorser} if int(revoked) else set(),
            admitted_ids={} if pinned is None else {endorser: _text(pinned)},
            params=self._params,
            now=self._clock.now(),
        )
        expires_ms = int(parse_record_ts(endorsement.expires_at).timestamp() * 1000)
        async with _translated():
            await self._r.set(
                self._key("endorsement", endorsement.endorsee_id),
                json.dumps(endorsement.wire()),
                pxat=expires_ms,
            )

    async def endorsement_for(self, node_id: str) -> Endorsement | None:
        """The endorsement published for ``node_id``, or ``None``."""
        async with _translated():
            raw = await self._r.get(self._key("endorsement", node_id))
        if raw is None:
            return None
        try:
            return Endorsement.from_wire(json.loads(_text(raw)))
        except (InvalidRecord, ValueError):
            log.warning("unreadable endorsement in registry", extra={"node_id": node_id})
            return None

    async def clear_namespace(self) -> int:
        """Delete every key of this namespace (tests and decommissioning); returns the count."""
        deleted = 0
        async with _translated():
            async for key in self._r.scan_iter(match=self._prefix + "*", count=500):
                deleted += int(await self._r.delete(key))
        return deleted


def _parse_issued(raw: Any) -> datetime | None:
    if raw is None:
        return None
    try:
        return parse_ts(_text(raw))
    except InvalidRecord:
        return None


def _verified_peer(raw: str, pin: str) -> PeerInfo | None:
    """Parse a listed registration; ``None`` (logged) unless it verifies against the pin."""
    try:
        entry = json.loads(raw)
        reg = Registration.from_wire(entry["registration"])
        registered_at = parse_ts(entry["registered_at"])
        if reg.public_key != pin:
            raise VerificationError("listed key is not the pinned key", reason="key_mismatch")
        verify_signed_by(RecordKind.registration, reg, pin)
    except (ValueError, KeyError, TypeError, InvalidRecord, VerificationError) as e:
        # Somebody with write access to Redis wrote this, not the registry's register():
        # skip it rather than serve an unverified peer.
        log.warning("skipping unverifiable registry entry", extra={"error": str(e)})
        return None
    return PeerInfo.from_registration(reg, registered_at)
