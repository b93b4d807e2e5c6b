"""``RedisPeerDirectory``: the ``PeerDirectory`` port on a real Redis (``redis.asyncio``).

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
- ``endorsement:<id>`` → the latest endorsement published for ``id``, expiring with it.

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

import json
import logging
import random
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.client import Pipeline
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from lamarck.errors import AdmissionRefused, InvalidRecord, RegistryError, VerificationError
from lamarck.proto.clock import Clock
from lamarck.proto.identity import b64u_encode
from lamarck.proto.signing import RecordKind
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.registry.directory import IssuedNonce, PeerDirectory, PeerInfo
from lamarck.registry.params import RegistryParams
from lamarck.registry.proofs import (
    IdFacts,
    ProofInvalid,
    ProofMemo,
    ProofParams,
    ProofPolicy,
    VerifiedProof,
    endorser_to_fetch,
    revocation_holds,
    verify_admission,
)
from lamarck.registry.records import Endorsement, Registration, Revocation, parse_record_ts
from lamarck.registry.rotation import RotationInvalid, check_rotation_record
from lamarck.registry.rules import (
    Admitted,
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

# A first pin and its admission proof, together: first key wins. KEYS: pin, admission,
# rotations; ARGV: key, proof. Rotations left behind for an id nobody pinned are not ours.
# 1: pinned (or already pinned to this very key by a concurrent registration); 0: lost.
_NEW_PIN_LUA = """
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('DEL', KEYS[3])
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
_FACT_REPLIES = 4


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
        self._new_pin_script = client.register_script(_NEW_PIN_LUA)
        self._move_pin_script = client.register_script(_MOVE_PIN_LUA)
        self._live_script = client.register_script(_LIVE_LUA)
        self._policy = ProofPolicy.of(params, operator_public_key, proof_params)
        # Per directory: verdicts hold for this policy only, for proof_params.memo_ttl_s.
        self._memo = ProofMemo(self._policy.proof_params)

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
            proof_params=proof_params,
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

    # -- admission proofs: fetched here, judged by lamarck.registry.proofs ------------------

    def _queue_facts(self, pipe: Pipeline, node_ids: Sequence[str]) -> None:
        """Queue the reads of each id's pin, proof, rotations and revocation (4 replies each)."""
        for node_id in node_ids:
            pipe.get(self._key("pin", node_id))
            pipe.get(self._key("admission", node_id))
            pipe.lrange(self._key("rotations", node_id), 0, -1)
            pipe.get(self._key("revocation", node_id))

    async def _fetch_facts(self, node_ids: Collection[str]) -> dict[str, IdFacts]:
        """The records of ``node_ids``, in one round trip."""
        ids = sorted(set(node_ids))
        if not ids:
            return {}
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            self._queue_facts(pipe, ids)
            replies = await pipe.execute()
        return _read_facts(ids, replies)

    def _fresh_memo(self) -> ProofMemo:
        """A memo for one write: admission decisions judge the records as they are now."""
        return ProofMemo(self._policy.proof_params)

    async def _verdicts(
        self,
        facts: dict[str, IdFacts],
        node_ids: Collection[str],
        now: datetime,
        memo: ProofMemo | None = None,
    ) -> dict[str, VerifiedProof | ProofInvalid]:
        """Each of ``node_ids``' proof, verified for this directory, or why it does not verify.

        ``facts`` must hold ``node_ids``' records; the endorsers their proofs lean on are
        fetched into it here, one round trip per level, stopping wherever the memo answers.
        ``memo`` defaults to the directory's (reads); writes pass a fresh one.
        """
        memo = self._memo if memo is None else memo
        frontier, seen = set(node_ids), set(node_ids)
        for _ in range(self._policy.proof_params.max_endorsement_depth):
            wanted: set[str] = set()
            for node_id in frontier:
                own = facts.get(node_id)
                if own is None or memo.get(own.proof_key, now) is not None:
                    continue
                endorser = endorser_to_fetch(own, self._policy)
                if endorser is not None and endorser not in seen:
                    wanted.add(endorser)
            if not wanted:
                break
            seen |= wanted
            facts.update(await self._fetch_facts(wanted - facts.keys()))
            frontier = wanted
        verdicts: dict[str, VerifiedProof | ProofInvalid] = {}
        for node_id in node_ids:
            try:
                verdicts[node_id] = verify_admission(
                    node_id, facts, policy=self._policy, now=now, memo=memo
                )
            except ProofInvalid as e:
                verdicts[node_id] = e  # logged by verify_admission when first judged
        return verdicts

    async def _admitted(
        self,
        facts: dict[str, IdFacts],
        node_ids: Collection[str],
        now: datetime,
        memo: ProofMemo | None = None,
    ) -> dict[str, VerifiedProof]:
        """Those of ``node_ids`` whose proof verifies; the others are treated as unregistered."""
        verdicts = await self._verdicts(facts, node_ids, now, memo)
        return {i: v for i, v in verdicts.items() if isinstance(v, VerifiedProof)}

    def _revoked(self, own: IdFacts, now: datetime) -> bool:
        # A verified revocation stays verified: the directory's memo is safe for writes too.
        return revocation_holds(own, self._policy, now, self._memo)

    async def _proof_to_write(
        self,
        reg: Registration,
        admitted: Admitted,
        facts: dict[str, IdFacts],
        now: datetime,
        memo: ProofMemo,
    ) -> str | None:
        """The admission proof to store with this registration (``None``: keep the stored one).

        Readers will judge the id by its proof, so the registry refuses (with the proof's
        reason) a registration after which the proof would not verify for this directory
        either. A pinned id keeps its proof while it verifies; otherwise (written before
        proofs existed, or its endorser since revoked) this registration's own admission
        material replaces it, which is how such a node gets back in.
        """
        own = facts[reg.node_id]
        wire = json.dumps(reg.wire())
        rotation = () if admitted.rotated_from is None else (json.dumps(reg.rotation),)
        after = IdFacts(
            reg.node_id, admitted.pin_key, own.admission, own.rotations + rotation, own.revocation
        )
        if admitted.new_pin:
            # A new pin starts a fresh chain: rotations left for an unpinned id are not its.
            candidate = replace(after, admission=wire, rotations=())
        else:
            kept = await self._verdicts({**facts, reg.node_id: after}, [reg.node_id], now, memo)
            if isinstance(kept[reg.node_id], VerifiedProof):
                return None
            candidate = replace(after, admission=wire)
        view = {**facts, reg.node_id: candidate}
        verdict = (await self._verdicts(view, [reg.node_id], now, memo))[reg.node_id]
        if isinstance(verdict, ProofInvalid):
            raise AdmissionRefused(
                f"admission proof would not verify: {verdict}",
                reason=verdict.reason,
                **verdict.details,
            ) from verdict
        return wire

    async def register(self, reg: Registration) -> PeerInfo:
        """Consume the nonce, apply the admission and pinning rules, pin, and list the peer.

        A new pin is stored with the registration as the id's admission proof; a rotation
        appends its record to the id's chain (see ``lamarck.registry.proofs``). Besides the
        reasons of ``check_registration``, a registration after which the id's proof would
        not verify for this directory is refused with the proof's reason (``bad_enrollment``,
        ``no_endorsement``, ``bad_endorsement``, ``bad_proof``, ``bad_chain``...).
        """
        endorser = reg.admission.endorsement.endorser_id if reg.admission.endorsement else None
        ids = [reg.node_id] + ([endorser] if endorser and endorser != reg.node_id else [])
        async with _translated():
            # The nonce goes first and unconditionally: whatever happens next, it is spent.
            issued_raw = await self._r.getdel(self._key("nonce", reg.nonce))
            pipe = self._r.pipeline(transaction=False)
            self._queue_facts(pipe, ids)
            pipe.smismember(self._key("revoked"), ids)
            replies = await pipe.execute()
        facts = _read_facts(ids, replies[:-1])
        now = self._clock.now()
        memo = self._fresh_memo()
        # The set or a verified record: at admission either is reason enough to refuse.
        revoked = {
            i
            for i, flag in zip(ids, replies[-1], strict=True)
            if int(flag) or self._revoked(facts[i], now)
        }
        admitted_ids: dict[str, str] = {}
        if endorser and endorser in facts:
            # An endorser counts as admitted only if its own proof verifies, not for a pin.
            proven = await self._admitted(facts, [endorser], now, memo)
            if endorser in proven:
                admitted_ids[endorser] = proven[endorser].pinned_key
        admitted = check_registration(
            reg,
            nonce_issued=_parse_issued(issued_raw),
            pinned_key=facts[reg.node_id].pin,
            revoked=revoked,
            admitted_ids=admitted_ids,
            operator_public_key=self._operator_key,
            params=self._params,
            now=now,
        )
        proof = await self._proof_to_write(reg, admitted, facts, now, memo)
        pin_keys = [
            self._key("pin", reg.node_id),
            self._key("admission", reg.node_id),
            self._key("rotations", reg.node_id),
        ]
        async with _translated():
            if admitted.new_pin:
                # A new pin's proof is always this registration (_proof_to_write returns it).
                first = proof if proof is not None else json.dumps(reg.wire())
                if not int(
                    await self._new_pin_script(keys=pin_keys, args=[admitted.pin_key, first])
                ):
                    # Lost a race with another registration of this id: first key wins.
                    raise AdmissionRefused("id pinned concurrently", reason="key_pinned")
            elif admitted.rotated_from is not None or proof is not None:
                old_key = admitted.rotated_from or admitted.pin_key
                rotation = json.dumps(reg.rotation) if admitted.rotated_from else ""
                moved = await self._move_pin_script(
                    keys=pin_keys, args=[old_key, admitted.pin_key, rotation, proof or ""]
                )
                if not int(moved):
                    raise AdmissionRefused("pin moved concurrently", reason="key_pinned")
                if admitted.rotated_from is not None:
                    log.info("key rotated", extra={"node_id": reg.node_id})
                else:
                    log.info("admission proof replaced", extra={"node_id": reg.node_id})
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
        """Every live, admitted, non-revoked peer whose registration verifies against its pin."""
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
        now = self._clock.now()
        listed: dict[str, str] = {}
        facts: dict[str, IdFacts] = {}
        for node_id_raw, raw, pin, admission, rotations, revocation in rows:
            node_id = _text(node_id_raw)
            listed[node_id] = _text(raw)
            facts[node_id] = _facts(node_id, pin, admission, rotations, revocation)
        admitted = await self._admitted(facts, list(listed), now)
        peers = []
        for node_id, proof in admitted.items():
            if self._revoked(facts[node_id], now):
                continue
            peer = _verified_peer(listed[node_id], proof.pinned_key)
            if peer is not None and peer.node_id == node_id:
                peers.append(peer)
        peers.sort(key=lambda p: p.node_id)
        return peers

    async def get_peer(self, node_id: str) -> PeerInfo | None:
        """The live peer ``node_id`` (admitted, not revoked, verified), or ``None``."""
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            pipe.get(self._key("peer", node_id))
            self._queue_facts(pipe, [node_id])
            raw, *replies = await pipe.execute()
        if raw is None:
            return None
        now = self._clock.now()
        facts = _read_facts([node_id], replies)
        proof = (await self._admitted(facts, [node_id], now)).get(node_id)
        if proof is None or self._revoked(facts[node_id], now):
            return None
        peer = _verified_peer(_text(raw), proof.pinned_key)
        return peer if peer is not None and peer.node_id == node_id else None

    async def pinned_key(self, node_id: str) -> str | None:
        """The key ``node_id`` is pinned to, or ``None`` (unknown, or its admission unproven)."""
        return (await self.pinned_keys([node_id])).get(node_id)

    async def pinned_keys(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The pinned keys of those of ``node_ids`` that have one and whose admission verifies."""
        if not node_ids:
            return {}
        facts = await self._fetch_facts(node_ids)
        admitted = await self._admitted(facts, list(facts), self._clock.now())
        return {i: admitted[i].pinned_key for i in node_ids if i in admitted}

    async def rotate_key(self, rotation: Mapping[str, Any]) -> None:
        """Move a pin to a new key if the pinned (old) key signed ``rotation``.

        The record is appended to the id's rotation chain with the move, atomically.
        """
        node_id = rotation.get("node_id")
        new_key = rotation.get("new_public_key")
        if not isinstance(node_id, str) or not isinstance(new_key, str):
            raise AdmissionRefused("malformed rotation record", reason="key_pinned")
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            self._queue_facts(pipe, [node_id])
            pipe.sismember(self._key("revoked"), node_id)
            *replies, revoked = await pipe.execute()
        own = _read_facts([node_id], replies)[node_id]
        now = self._clock.now()
        if int(revoked) or self._revoked(own, now):
            raise AdmissionRefused("this node id is revoked", reason="revoked")
        if own.pin is None:
            raise AdmissionRefused("no pinned key to rotate from", reason="key_mismatch")
        old_key = own.pin
        try:
            check_rotation_record(
                rotation,
                node_id=node_id,
                old_key=old_key,
                new_key=new_key,
                now=now,
                max_future_skew_s=self._params.max_future_skew_s,
            )
        except RotationInvalid as e:
            raise AdmissionRefused(f"rotation refused: {e}", reason="key_pinned") from e
        async with _translated():
            moved = await self._move_pin_script(
                keys=[
                    self._key("pin", node_id),
                    self._key("admission", node_id),
                    self._key("rotations", node_id),
                ],
                args=[old_key, new_key, json.dumps(dict(rotation)), ""],
            )
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
        """Whether an operator-signed revocation of ``node_id`` is on record (the set is not
        consulted: removing an id from it un-revokes nobody, adding one revokes nobody)."""
        async with _translated():
            raw = await self._r.get(self._key("revocation", node_id))
        own = IdFacts(node_id, None, None, revocation=None if raw is None else _text(raw))
        return self._revoked(own, self._clock.now())

    async def revoked_ids(self) -> frozenset[str]:
        """The ids of the ``revoked`` index whose revocation record verifies.

        An id removed from the index by hand is missed here, not by ``is_revoked``,
        ``get_peer`` or ``live_peers``, which read its record.
        """
        async with _translated():
            members = sorted(_text(m) for m in await self._r.smembers(self._key("revoked")))
            records = (
                await self._r.mget([self._key("revocation", i) for i in members]) if members else []
            )
        now = self._clock.now()
        return frozenset(
            i
            for i, raw in zip(members, records, strict=True)
            if raw is not None and self._revoked(IdFacts(i, None, None, revocation=_text(raw)), now)
        )

    async def endorse(self, endorsement: Endorsement) -> None:
        """Check and publish an endorsement until it expires; the endorser must be admitted
        (its proof verifies) and not revoked."""
        endorser = endorsement.endorser_id
        async with _translated():
            pipe = self._r.pipeline(transaction=False)
            self._queue_facts(pipe, [endorser])
            pipe.sismember(self._key("revoked"), endorser)
            *replies, flag = await pipe.execute()
        facts = _read_facts([endorser], replies)
        now = self._clock.now()
        revoked = int(flag) or self._revoked(facts[endorser], now)
        proven = await self._admitted(facts, [endorser], now, self._fresh_memo())
        check_endorsement(
            endorsement,
            endorsee_id=endorsement.endorsee_id,
            endorsee_public_key=endorsement.endorsee_public_key,
            revoked={endorser} if revoked else set(),
            admitted_ids={endorser: proven[endorser].pinned_key} if endorser in proven else {},
            params=self._params,
            now=now,
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


def _opt_text(value: Any) -> str | None:
    return None if value is None else _text(value)


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
