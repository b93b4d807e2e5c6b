"""``RedisPeerDirectory``: the ``PeerDirectory`` port on a real Redis (``redis.asyncio``).

The directory logic is ``lamarck.registry.record_directory.RecordDirectory``, shared with the
in-memory adapter; this module holds the Redis records (``RedisRecords``) it runs over.

Key layout, all under ``lamarck:{namespace}:`` so deployments (and tests) never collide:

- ``nonce:<nonce>`` → issue time; expires after twice ``nonce_ttl_s`` so a late use is told
  apart (``stale_nonce``) from a forged or reused one (``unknown_nonce``). Taken with GETDEL:
  a nonce is consumed by the first registration that presents it, whatever the outcome.
- ``pin:<id>`` → the id's public key. Set only when absent (first key wins) and moved only
  by a compare-and-set on the old key (rotation). Never expires.
- ``admission:<id>`` → the id's admission proof: the admitted signed registration with its
  admission material, written with the first pin; ``rotations:<id>`` → every rotation record
  since (a list, appended with each pin move). Never expire. See ``lamarck.registry.proofs``.
- ``peer:<id>`` → the signed registration; its TTL is the liveness (``heartbeat_ttl_s``),
  refreshed by ``heartbeat``. ``peers`` is the set of ids that may be live (an index, pruned).
- ``revoked`` → set of revoked ids, an index only; ``revocation:<id>`` → the operator's
  signed record, which is what counts.
- ``seal`` → the operator's signed, sequence-numbered seal of what the registry must keep
  (``lamarck.registry.records.RegistrySeal``)
- ``retractions`` → a hash: content hash → the operator's signed retraction of that record
  (``lamarck registry retract``). Never expires: a node offline when it was made reads it
  when it is back. Only a record the reader's operator key signed retracts anything.
- ``endorsement:<id>`` → the latest endorsement published for ``id``, expiring with it.
- ``endorsees:<id>`` → set of the ids ``id`` admitted by endorsement (revoked ones too), which
  the endorsement cap counts; added to by a script that checks the cap atomically. Never expires.

Redis is shared by every node and every node may write to it, so a reader trusts no key for
what it is, only for what it proves. An id is served (listed, or its pin returned) only if its
admission proof verifies with THIS directory's own mode and operator key (bounded recursion
through endorsers, memoised for ``ProofParams.memo_ttl_s``); a listed registration is
re-verified and compared with the pin; an id counts as revoked if a revocation record the
operator signed exists, whatever the ``revoked`` set says, and a record that does not verify
revokes nobody. So writing ``pin:``/``peer:`` keys around ``register()`` admits nobody, and
removing an id from ``revoked`` un-revokes nobody.

Every Redis failure is translated at this boundary: ``RegistryError(reason="unavailable")``.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.client import Pipeline
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from lamarck.errors import ConfigError, RegistryError
from lamarck.proto.clock import Clock
from lamarck.registry.directory_records import (
    DirectoryRecords,
    Heartbeat,
    Listed,
    check_namespace,
)
from lamarck.registry.params import RegistryParams
from lamarck.registry.proofs import IdFacts, ProofParams
from lamarck.registry.record_directory import RecordDirectory
from lamarck.reputation.params import PrincipalParams

__all__ = ["RedisPeerDirectory", "RedisRecords", "connect_redis"]

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

# A first pin and its admission proof, together: first key wins. KEYS: pin, admission,
# rotations; ARGV: key, proof, then the rotation chain a restored id brings back (a new id
# none). Rotations left behind for an id nobody pinned are not ours.
# 1: pinned (or already pinned to this very key by a concurrent registration); 0: lost.
_NEW_PIN_LUA = """
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('DEL', KEYS[3])
  for i = 3, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
  return 1
end
if current ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SET', KEYS[2], ARGV[2]) end
return 1
"""

# Moves a pin only from the expected old key, appending the rotation record that moved it
# (and replacing the admission proof, when given), atomically: two concurrent rotations
# cannot both win, and the chain always ends at the pin. KEYS: pin, admission, rotations;
# ARGV: old key, new key, rotation ('' none), proof ('' keep).
_MOVE_PIN_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] ~= ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) end
if ARGV[3] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[3]) end
if ARGV[4] ~= '' then redis.call('SET', KEYS[2], ARGV[4]) end
return 1
"""

# For every live id: {id, registration, pin, admission proof, rotations, revocation}, and
# drops ids whose peer key has expired from the index (atomically, so a concurrent register
# is never lost). Revocation is judged by the reader from the signed record, not the set.
_LIVE_LUA = """
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('GET', ARGV[1] .. id)
  if not v then
    redis.call('SREM', KEYS[1], id)
  else
    table.insert(out, {id, v, redis.call('GET', ARGV[2] .. id),
      redis.call('GET', ARGV[3] .. id), redis.call('LRANGE', ARGV[4] .. id, 0, -1),
      redis.call('GET', ARGV[5] .. id)})
  end
end
return out
"""

#: Replies per id queued by ``_queue_facts``.
# One more endorsee for an endorser, unless it already admitted the cap. KEYS: endorsees set;
# ARGV: endorsee id, cap (-1: none). 1: recorded (or already there); 0: at the cap.
_ADD_ENDORSEE_LUA = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
local cap = tonumber(ARGV[2])
if cap >= 0 and redis.call('SCARD', KEYS[1]) >= cap then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
return 1
"""

_FACT_REPLIES = 4


def connect_redis(
    url: str, *, timeout_s: float = 2.0, password: str = "", ca_file: str = ""
) -> aioredis.Redis:
    """A client for ``url`` (``redis://``, ``rediss://`` or ``unix://``) tuned to fail fast.

    ``password`` authenticates (AUTH, or the URL's ACL user: ``redis://user@host``) without
    being spliced into the URL; ``ca_file`` is the CA bundle a ``rediss://`` server's
    certificate is verified against (the system's when empty). A ``rediss://`` connection
    always verifies the server's certificate and host name.

    One quick retry re-dials a connection that went stale while Redis restarted; more would
    only delay the switch to the local cache during an outage.
    """
    options: dict[str, Any] = {}
    if password:
        options["password"] = password
    if url.startswith("rediss://"):
        options["ssl_cert_reqs"] = "required"
        options["ssl_check_hostname"] = True
        if ca_file:
            options["ssl_ca_certs"] = ca_file
    elif ca_file:
        raise ConfigError(
            "redis_ca_file needs a rediss:// URL", reason="invalid_config", field="redis_ca_file"
        )
    return aioredis.Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), 1),
        decode_responses=True,
        **options,
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _opt_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _ms(seconds: float) -> int:
    """A Redis TTL in milliseconds; never 0, which Redis refuses."""
    return max(1, int(seconds * 1000))


@asynccontextmanager
async def _translated() -> AsyncIterator[None]:
    """Translate every Redis or socket failure into ``RegistryError(reason="unavailable")``."""
    try:
        yield
    except (redis.exceptions.RedisError, OSError) as e:
        raise RegistryError(f"registry unavailable: {e}", reason="unavailable") from e


class RedisRecords(DirectoryRecords):
    """The registry records in one Redis namespace (``lamarck:{namespace}:``)."""

    def __init__(self, client: aioredis.Redis, *, namespace: str, owns_client: bool) -> None:
        self._r = client
        self._prefix = f"lamarck:{check_namespace(namespace)}:"
        self.namespace = namespace
        self._owns_client = owns_client
        self._register_script = client.register_script(_REGISTER_LUA)
        self._heartbeat_script = client.register_script(_HEARTBEAT_LUA)
        self._new_pin_script = client.register_script(_NEW_PIN_LUA)
        self._move_pin_script = client.register_script(_MOVE_PIN_LUA)
        self._live_script = client.register_script(_LIVE_LUA)
        self._add_endorsee_script = client.register_script(_ADD_ENDORSEE_LUA)

    def _key(self, *parts: str) -> str:
        return self._prefix + ":".join(parts)

    def _pin_keys(self, node_id: str) -> list[str]:
        return [
            self._key("pin", node_id),
            self._key("admission", node_id),
            self._key("rotations", node_id),
        ]

    def _queue_facts(self, pipe: Pipeline, node_ids: Sequence[str]) -> None:
        """Queue the reads of each id's pin, proof, rotations and revocation (4 replies each)."""
        for node_id in node_ids:
            pipe.get(self._key("pin", node_id))
            pipe.get(self._key("admission", node_id))
            pipe.lrange(self._key("rotations", node_id), 0, -1)
            pipe.get(self._key("revocation", node_id))

    async def aclose(self) -> None:
        """Close the client if these records created it."""
        if self._owns_client:
            await self._r.aclose()

    async def ping(self) -> bool:
        """True when Redis answers."""
        try:
            async with _translated():
                return bool(await self._r.ping())
        except RegistryError:
            return False

    async def put_nonce(self, nonce: str, issued: str, keep_s: float) -> None:
        """SET with a TTL."""
        async with _translated():
            await self._r.set(self._key("nonce", nonce), issued, px=_ms(keep_s))

    async def take_nonce(self, nonce: str) -> str | None:
        """GETDEL: the first registration presenting a nonce consumes it."""
        async with _translated():
            return _opt_text(await self._r.getdel(self._key("nonce", nonce)))

    async def facts(self, node_ids: Sequence[str]) -> dict[str, IdFacts]:
        """Each id's records, in one round trip."""
        if not node_ids:
            return {}
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            self._queue_facts(pipe, node_ids)
            replies = await pipe.execute()
        return _read_facts(node_ids, replies)

    async def facts_and_revoked(
        self, node_ids: Sequence[str]
    ) -> tuple[dict[str, IdFacts], set[str]]:
        """Each id's records and its membership of the ``revoked`` set, in one round trip."""
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            self._queue_facts(pipe, node_ids)
            pipe.smismember(self._key("revoked"), list(node_ids))
            replies = await pipe.execute()
        flags = replies[-1]
        indexed = {i for i, flag in zip(node_ids, flags, strict=True) if int(flag)}
        return _read_facts(node_ids, replies[:-1]), indexed

    async def new_pin(
        self, node_id: str, key: str, proof: str, rotations: Sequence[str] = ()
    ) -> bool:
        """The first-pin script."""
        async with _translated():
            pinned = await self._new_pin_script(
                keys=self._pin_keys(node_id), args=[key, proof, *rotations]
            )
        return bool(int(pinned))

    async def move_pin(
        self, node_id: str, old_key: str, new_key: str, rotation: str | None, proof: str | None
    ) -> bool:
        """The compare-and-set script."""
        async with _translated():
            moved = await self._move_pin_script(
                keys=self._pin_keys(node_id), args=[old_key, new_key, rotation or "", proof or ""]
            )
        return bool(int(moved))

    async def list_peer(self, node_id: str, listing: str, ttl_s: float) -> bool:
        """The register script: listed only while not in the ``revoked`` set."""
        async with _translated():
            listed = await self._register_script(
                keys=[self._key("peer", node_id), self._key("peers"), self._key("revoked")],
                args=[node_id, listing, _ms(ttl_s)],
            )
        return bool(int(listed))

    async def refresh(self, node_id: str, ttl_s: float) -> Heartbeat:
        """The heartbeat script."""
        async with _translated():
            result = await self._heartbeat_script(
                keys=[self._key("peer", node_id), self._key("revoked")],
                args=[node_id, _ms(ttl_s)],
            )
        return Heartbeat(int(result))

    async def unlist(self, node_id: str) -> None:
        """DEL the listing and SREM it from the index, in a transaction."""
        async with _translated():
            pipe = self._r.pipeline(transaction=True)
            pipe.delete(self._key("peer", node_id))
            pipe.srem(self._key("peers"), node_id)
            await pipe.execute()

    async def listed(self) -> list[Listed]:
        """The live script (prunes expired ids from the index)."""
        async with _translated():
            rows: Sequence[Any] = await self._live_script(
                keys=[self._key("peers")],
                args=[
                    self._key("peer", ""),
                    self._key("pin", ""),
                    self._key("admission", ""),
                    self._key("rotations", ""),
                    self._key("revocation", ""),
                ],
            )
        return [
            Listed(_text(raw), _facts(_text(node_id), pin, admission, rotations, revocation))
            for node_id, raw, pin, admission, rotations, revocation in rows
        ]

    async def listing(self, node_id: str) -> Listed | None:
        """The listing and the id's records, in one round trip."""
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            pipe.get(self._key("peer", node_id))
            self._queue_facts(pipe, [node_id])
            raw, *replies = await pipe.execute()
        if raw is None:
            return None
        return Listed(_text(raw), _read_facts([node_id], replies)[node_id])

    async def put_revocation(self, node_id: str, record: str) -> None:
        """SADD, SET the record, and unlist, in a transaction."""
        async with _translated():
            pipe = self._r.pipeline(transaction=True)
            pipe.sadd(self._key("revoked"), node_id)
            pipe.set(self._key("revocation", node_id), record)
            pipe.delete(self._key("peer", node_id))
            pipe.srem(self._key("peers"), node_id)
            await pipe.execute()

    async def revocation(self, node_id: str) -> str | None:
        """GET the record."""
        async with _translated():
            return _opt_text(await self._r.get(self._key("revocation", node_id)))

    async def revoked_index(self) -> list[tuple[str, str | None]]:
        """SMEMBERS then MGET of the records."""
        async with _translated():
            members = sorted(_text(m) for m in await self._r.smembers(self._key("revoked")))
            records = (
                await self._r.mget([self._key("revocation", i) for i in members]) if members else []
            )
        return [(i, _opt_text(raw)) for i, raw in zip(members, records, strict=True)]

    async def put_seal(self, record: str) -> None:
        """SET the ``seal`` key."""
        async with _translated():
            await self._r.set(self._key("seal"), record)

    async def seal_record(self) -> str | None:
        """GET the ``seal`` key."""
        async with _translated():
            return _opt_text(await self._r.get(self._key("seal")))

    async def put_retraction(self, content_hash: str, record: str) -> None:
        """HSET in the ``retractions`` hash."""
        async with _translated():
            await self._r.hset(self._key("retractions"), content_hash, record)

    async def retraction_records(self) -> list[tuple[str, str]]:
        """HGETALL of the ``retractions`` hash, sorted by content hash."""
        async with _translated():
            kept = await self._r.hgetall(self._key("retractions"))
        return sorted((_text(k), _text(v)) for k, v in kept.items())

    async def put_endorsement(self, endorsee_id: str, record: str, expires_at: datetime) -> None:
        """SET with an absolute expiry."""
        async with _translated():
            await self._r.set(
                self._key("endorsement", endorsee_id),
                record,
                pxat=int(expires_at.timestamp() * 1000),
            )

    async def endorsement(self, endorsee_id: str) -> str | None:
        """GET (Redis expires it)."""
        async with _translated():
            return _opt_text(await self._r.get(self._key("endorsement", endorsee_id)))

    async def endorsees(self, endorser_id: str) -> frozenset[str]:
        """SMEMBERS."""
        async with _translated():
            members = await self._r.smembers(self._key("endorsees", endorser_id))
        return frozenset(_text(m) for m in members)

    async def add_endorsee(self, endorser_id: str, endorsee_id: str, cap: int | None) -> bool:
        """The add-endorsee script (checks the cap and adds in one step)."""
        async with _translated():
            added = await self._add_endorsee_script(
                keys=[self._key("endorsees", endorser_id)],
                args=[endorsee_id, -1 if cap is None else cap],
            )
        return bool(int(added))

    async def clear(self) -> int:
        """Delete every key of this namespace."""
        deleted = 0
        async with _translated():
            async for key in self._r.scan_iter(match=self._prefix + "*", count=500):
                deleted += int(await self._r.delete(key))
        return deleted


class RedisPeerDirectory(RecordDirectory):
    """The peer directory on Redis; reads re-verify, writes apply ``lamarck.registry.rules``.

    Reads verify admission proofs with this directory's own ``params.admission`` and
    ``operator_public_key`` (``proof_params``: endorsement depth and memo lifetime).
    """

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
        proof_params: ProofParams | None = None,
        principal_params: PrincipalParams | None = None,
    ) -> None:
        super().__init__(
            RedisRecords(client, namespace=namespace, owns_client=owns_client),
            params=params,
            clock=clock,
            operator_public_key=operator_public_key,
            rng=rng,
            proof_params=proof_params,
            principal_params=principal_params,
        )

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
        proof_params: ProofParams | None = None,
        principal_params: PrincipalParams | None = None,
        password: str = "",
        ca_file: str = "",
    ) -> RedisPeerDirectory:
        """A directory with its own client for ``url`` (closed by ``aclose``; ``password`` and
        ``ca_file``: see ``connect_redis``)."""
        return cls(
            connect_redis(url, password=password, ca_file=ca_file),
            namespace=namespace,
            params=params,
            clock=clock,
            operator_public_key=operator_public_key,
            rng=rng,
            owns_client=True,
            proof_params=proof_params,
            principal_params=principal_params,
        )


def _facts(node_id: str, pin: Any, admission: Any, rotations: Any, revocation: Any) -> IdFacts:
    """An id's records as Redis returned them (``None`` for a missing key)."""
    return IdFacts(
        node_id,
        pin=_opt_text(pin),
        admission=_opt_text(admission),
        rotations=tuple(_text(r) for r in rotations or ()),
        revocation=_opt_text(revocation),
    )


def _read_facts(node_ids: Sequence[str], replies: Sequence[Any]) -> dict[str, IdFacts]:
    """The ``IdFacts`` of ``node_ids`` from the replies ``_queue_facts`` queued, in order."""
    n = _FACT_REPLIES
    return {i: _facts(i, *replies[k * n : (k + 1) * n]) for k, i in enumerate(node_ids)}
