"""``RecordDirectory``: the ``PeerDirectory`` logic over a store of raw registry records.

Both adapters (``RedisPeerDirectory``, ``InMemoryPeerDirectory``) are this class over their
own ``DirectoryRecords``: the records they keep, how reads re-verify them and how writes apply
``lamarck.registry.rules`` are written once, here, so the in-memory adapter cannot drift from
the Redis one (the contract suite, ``tests/contract/test_peer_directory_contract.py``, runs
against both).

The records, per id, are listed with their port, ``lamarck.registry.directory_records``.

Every admitted id carries its **principal** (``VerifiedProof.principal``): :meth:`principals`
serves them, so quorums and corroboration count operators and endorsement roots, not keys.

A reader trusts no record for what it is, only for what it proves: an id is served (listed,
or its pin returned) only if its admission proof verifies with THIS directory's own mode and
operator key; a listed registration is re-verified and compared with the pin; an id counts
as revoked only if an operator-signed revocation record is on file, and a record as
retracted only if an operator-signed retraction of its content hash is.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from lamarck.errors import (
    AdmissionRefused,
    InvalidRecord,
    ProofInvalid,
    RegistryError,
    RotationInvalid,
    VerificationError,
)
from lamarck.proto.clock import Clock
from lamarck.proto.identity import b64u_encode
from lamarck.proto.signing import RecordKind
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.registry.directory import IssuedNonce, PeerDirectory, PeerInfo
from lamarck.registry.directory_records import DirectoryRecords, Heartbeat
from lamarck.registry.operator_records import OperatorRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.proofs import (
    IdFacts,
    ProofMemo,
    ProofParams,
    ProofPolicy,
    VerifiedProof,
    endorser_to_fetch,
    revoked_through,
    verify_admission,
)
from lamarck.registry.records import (
    AdmissionProof,
    Endorsement,
    Registration,
    parse_record_ts,
)
from lamarck.registry.rotation import check_rotation_record
from lamarck.registry.rules import (
    Admitted,
    check_endorsement,
    check_registration,
    lineage_ids,
    verify_signed_by,
)
from lamarck.reputation.params import PrincipalParams
from lamarck.reputation.principals import endorsement_refusal

__all__ = ["RecordDirectory"]

log = logging.getLogger(__name__)

_NONCE_BYTES = 32


@dataclass(frozen=True, slots=True)
class _Successor:
    """A registration's lineage: the id whose key rotated to the registering key."""

    lineage: str
    proof: VerifiedProof
    facts: IdFacts
    #: The key the rotation must move (the lineage's pin, or the one before on a retry).
    predecessor_key: str
    #: The lineage already moved to the new key (a retry): only the successor is pinned.
    moved: bool


class RecordDirectory(OperatorRecords, PeerDirectory):
    """The peer directory over ``DirectoryRecords``; reads re-verify, writes apply the rules.

    Reads verify admission proofs with this directory's own ``params.admission`` and
    ``operator_public_key`` (``proof_params``: endorsement depth and memo lifetime).
    ``principal_params`` caps how many identities one endorser may admit (``None``: no cap,
    the endorsees are still recorded).
    """

    def __init__(
        self,
        records: DirectoryRecords,
        *,
        params: RegistryParams,
        clock: Clock,
        operator_public_key: str | None = None,
        rng: random.Random | None = None,
        proof_params: ProofParams | None = None,
        principal_params: PrincipalParams | None = None,
    ) -> None:
        self._records = records
        self._principal_params = principal_params
        self._params = params
        self._clock = clock
        self._operator_key = operator_public_key
        # Nonces must be unguessable: the OS CSPRNG unless a test injects a seeded source.
        self._rng: random.Random = rng if rng is not None else random.SystemRandom()
        self._policy = ProofPolicy.of(params, operator_public_key, proof_params)
        # Per directory: verdicts hold for this policy only, for proof_params.memo_ttl_s.
        self._memo = ProofMemo(self._policy.proof_params)
        # Proofs verified with revocations set aside (``revoked_through``): kept apart.
        self._chain_memo = ProofMemo(self._policy.proof_params)

    @property
    def params(self) -> RegistryParams:
        """The parameters this directory applies."""
        return self._params

    async def aclose(self) -> None:
        """Release the records' connections."""
        await self._records.aclose()

    async def ping(self) -> bool:
        """True when the backing store answers."""
        return await self._records.ping()

    async def clear_namespace(self) -> int:
        """Delete every record of this directory (tests and decommissioning); returns the count."""
        return await self._records.clear()

    async def issue_nonce(self) -> IssuedNonce:
        """Issue a fresh single-use nonce (256 random bits)."""
        nonce = b64u_encode(self._rng.randbytes(_NONCE_BYTES))
        now = self._clock.now()
        await self._records.put_nonce(nonce, format_ts(now), self._params.nonce_ttl_s * 2)
        return IssuedNonce(nonce, now + timedelta(seconds=self._params.nonce_ttl_s))

    # -- admission proofs: fetched here, judged by lamarck.registry.proofs ------------------

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
        fetched into it here, one read per level, stopping wherever the memo answers.
        ``memo`` defaults to the directory's (reads); writes pass a fresh one.
        """
        memo = self._memo if memo is None else memo
        await self._fetch_endorsers(facts, node_ids, now, memo)
        verdicts: dict[str, VerifiedProof | ProofInvalid] = {}
        for node_id in node_ids:
            try:
                verdicts[node_id] = verify_admission(
                    node_id, facts, policy=self._policy, now=now, memo=memo
                )
            except ProofInvalid as e:
                verdicts[node_id] = e  # logged by verify_admission when first judged
        return verdicts

    async def _fetch_endorsers(
        self, facts: dict[str, IdFacts], node_ids: Collection[str], now: datetime, memo: ProofMemo
    ) -> None:
        """Fetch into ``facts`` the records of the endorsers ``node_ids``' proofs lean on, one
        read per level, stopping wherever ``memo`` answers."""
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
            missing = sorted(wanted - facts.keys())
            if missing:
                facts.update(await self._records.facts(missing))
            frontier = wanted

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

    async def _verified_kept_proof(
        self,
        reg: Registration,
        kept: AdmissionProof,
        facts: dict[str, IdFacts],
        now: datetime,
        memo: ProofMemo,
    ) -> VerifiedProof:
        """``kept`` verified as ``reg``'s id's stored proof would be, with ``reg``'s key as the
        pin (its chain must end there); else ``AdmissionRefused`` with the proof's reason."""
        if reg.node_id not in lineage_ids(kept.keys):
            raise AdmissionRefused("the kept admission proof is not this id's", reason="wrong_id")
        view = {**facts, reg.node_id: _kept_facts(reg.node_id, reg.public_key, kept)}
        verdict = (await self._verdicts(view, [reg.node_id], now, memo))[reg.node_id]
        if isinstance(verdict, ProofInvalid):
            raise AdmissionRefused(
                f"the kept admission proof does not verify: {verdict}",
                reason=verdict.reason,
                **verdict.details,
            ) from verdict
        return verdict

    async def admission_proof(self, node_id: str) -> AdmissionProof | None:
        """``node_id``'s stored proof (registration and rotation chain) if it verifies here."""
        facts = await self._records.facts([node_id])
        own = facts[node_id]
        if node_id not in await self._admitted(facts, [node_id], self._clock.now()):
            return None
        assert own.admission is not None  # a verified proof has one
        try:
            return AdmissionProof(
                Registration.from_wire(json.loads(own.admission)),
                tuple(json.loads(r) for r in own.rotations),
            )
        except (ValueError, InvalidRecord):
            # Verified a moment ago, so only a record changed in between gets here.
            return None

    async def register(
        self, reg: Registration, *, kept_proof: AdmissionProof | None = None
    ) -> PeerInfo:
        """Consume the nonce, apply the admission and pinning rules, pin, and list the peer.

        A new pin is stored with the registration as the id's admission proof; a rotation
        appends its record to the id's chain (see ``lamarck.registry.proofs``). Besides the
        reasons of ``check_registration``, a registration after which the id's proof would
        not verify for this directory is refused with the proof's reason (``bad_enrollment``,
        ``no_endorsement``, ``bad_endorsement``, ``bad_proof``, ``bad_chain``...).

        ``kept_proof`` is this id's admission proof as the node kept it (its admitted
        registration and key rotations since, ``lamarck.registry.admitted_file``). It counts
        only for an id this registry does not know (its records were lost) whose registration
        is refused for its own material (an endorsement or token expired since) or, after a
        key rotation, because the id is not derived from its current key. Then ``kept_proof``
        must verify exactly as a stored proof does with ``reg``'s key as the pin
        (``verify_admission``: the chain from the id's own key to this one, each link signed
        by the key it retires; the material valid at the registration's own date, from an
        endorser admitted and not revoked now), and the registration is checked as usual in
        every other respect (revocation, nonce, proof of possession); the pin is restored
        with the kept registration and chain as its proof. A kept proof therefore admits no
        one it did not admit before, however old it is, and no revoked id.
        """
        endorser = reg.admission.endorsement.endorser_id if reg.admission.endorsement else None
        ids = [reg.node_id] + ([endorser] if endorser and endorser != reg.node_id else [])
        # The nonce goes first and unconditionally: whatever happens next, it is spent.
        issued_raw = await self._records.take_nonce(reg.nonce)
        facts, indexed = await self._records.facts_and_revoked(ids)
        now = self._clock.now()
        memo = self._fresh_memo()
        # The index or a verified record: at admission either is reason enough to refuse.
        revoked = {i for i in ids if i in indexed or self._revoked(facts[i], now)}
        sealed = await self.seal()
        if sealed is not None:
            # A revocation the operator sealed holds even if its record was deleted.
            revoked |= set(ids) & set(sealed.revoked)
            if reg.public_key in sealed.revoked_keys:
                raise AdmissionRefused("this key was revoked as compromised", reason="revoked_key")
        successor = await self._successor_of(reg, facts, revoked, now, memo)
        admitted_ids: dict[str, str] = {}
        if endorser and endorser in facts:
            # An endorser counts as admitted only if its own proof verifies, not for a pin.
            proven = await self._admitted(facts, [endorser], now, memo)
            if endorser in proven:
                admitted_ids[endorser] = proven[endorser].pinned_key
        nonce_issued = _parse_issued(issued_raw)

        def check(params: RegistryParams) -> Admitted:
            return check_registration(
                reg,
                nonce_issued=nonce_issued,
                pinned_key=facts[reg.node_id].pin,
                revoked=revoked,
                admitted_ids=admitted_ids,
                operator_public_key=self._operator_key,
                params=params,
                now=now,
                predecessor_key=successor.predecessor_key if successor else None,
            )

        restored: AdmissionProof | None = None
        try:
            admitted = check(self._params)
        except AdmissionRefused as e:
            lost = facts[reg.node_id].pin is None
            if kept_proof is None or not lost or e.reason not in _KEPT_PROOF_ANSWERS:
                raise
            # The kept proof stands for the material (and, after a key rotation, for the id's
            # derivation from the key): verified first, then every other rule applies.
            verified = await self._verified_kept_proof(reg, kept_proof, facts, now, memo)
            admitted = check_registration(
                reg,
                nonce_issued=nonce_issued,
                pinned_key=None,
                revoked=revoked,
                admitted_ids=admitted_ids,
                operator_public_key=self._operator_key,
                params=self._params,
                now=now,
                proven_keys=verified.keys,
            )
            restored = kept_proof
        if admitted.lineage is not None and successor is not None:
            await self._admit_successor(reg, admitted, successor)
            return await self._list(reg, now)
        if restored is None:
            proof = await self._proof_to_write(reg, admitted, facts, now, memo)
        else:
            proof = json.dumps(restored.registration.wire())
            log.info(
                "admission restored from the node's kept proof", extra={"node_id": reg.node_id}
            )
        charged = None
        if self._params.admission is AdmissionMode.ENDORSED:
            charged = _endorser_charged(
                reg if restored is None else restored.registration, admitted, proof
            )
        if charged is not None:
            # Before the pin: a refused endorsee must not end up pinned. A pin lost to a race
            # below keeps the slot (fail closed: the cap is never exceeded).
            # The slot is the admitted identity's: after a key rotation, its lineage's.
            endorsee = reg.node_id if restored is None else restored.registration.node_id
            await self._charge_endorser(charged, endorsee)
        if admitted.new_pin:
            # A new pin's proof is always this registration (_proof_to_write returns it).
            first = proof if proof is not None else json.dumps(reg.wire())
            # A restored id gets its kept rotation chain back with its pin, atomically.
            rotations = () if restored is None else _kept_facts(reg.node_id, "", restored).rotations
            if not await self._records.new_pin(reg.node_id, admitted.pin_key, first, rotations):
                # Lost a race with another registration of this id: first key wins.
                raise AdmissionRefused("id pinned concurrently", reason="key_pinned")
        elif admitted.rotated_from is not None or proof is not None:
            old_key = admitted.rotated_from or admitted.pin_key
            rotation = json.dumps(reg.rotation) if admitted.rotated_from else None
            if not await self._records.move_pin(
                reg.node_id, old_key, admitted.pin_key, rotation, proof
            ):
                raise AdmissionRefused("pin moved concurrently", reason="key_pinned")
            if admitted.rotated_from is not None:
                log.info("key rotated", extra={"node_id": reg.node_id})
            else:
                log.info("admission proof replaced", extra={"node_id": reg.node_id})
        return await self._list(reg, now)

    async def _list(self, reg: Registration, now: datetime) -> PeerInfo:
        """List an admitted registration for ``heartbeat_ttl_s``."""
        listing = json.dumps({"registration": reg.wire(), "registered_at": format_ts(now)})
        if not await self._records.list_peer(reg.node_id, listing, self._params.heartbeat_ttl_s):
            raise AdmissionRefused("this node id is revoked", reason="revoked")
        return PeerInfo.from_registration(reg, now)

    async def _successor_of(
        self,
        reg: Registration,
        facts: dict[str, IdFacts],
        revoked: set[str],
        now: datetime,
        memo: ProofMemo,
    ) -> _Successor | None:
        """For a new id registering with a rotation of another id's key (its lineage): the
        lineage's verified proof and the key the rotation must start from. The lineage is
        added to ``facts`` and, when revoked, to ``revoked``; ``None`` for any other
        registration, or when the lineage is not admitted here (the rules then refuse)."""
        rotation = reg.rotation
        lineage = rotation.get("node_id") if rotation is not None else None
        if not isinstance(lineage, str) or lineage == reg.node_id:
            return None
        sealed = await self.seal()
        if (
            sealed is not None
            and rotation is not None
            and rotation.get("old_public_key") in sealed.revoked_keys
        ):
            # Its signature proves nothing now (the key's thief could have made it): the
            # registration is judged as a new id's, on its own admission material.
            return None
        if facts[reg.node_id].pin is not None:
            return None  # a known id: the rotation names its own key or nothing (rules)
        more, indexed = await self._records.facts_and_revoked([lineage])
        facts.update(more)
        if lineage in indexed or self._revoked(facts[lineage], now):
            revoked.add(lineage)
            return None
        verdict = (await self._verdicts(facts, [lineage], now, memo))[lineage]
        if not isinstance(verdict, VerifiedProof):
            return None
        own = facts[lineage]
        assert rotation is not None and own.admission is not None  # a verified proof has one
        # A retry after the lineage moved to this key but before this id was pinned: the
        # rotation is already the chain's last link, and it starts from the key before.
        moved = (
            verdict.pinned_key == reg.public_key
            and len(verdict.keys) >= 2
            and bool(own.rotations)
            and json.loads(own.rotations[-1]) == dict(rotation)
        )
        start = verdict.keys[-2] if moved else verdict.pinned_key
        return _Successor(lineage, verdict, own, start, moved)

    async def _admit_successor(
        self, reg: Registration, admitted: Admitted, successor: _Successor
    ) -> None:
        """Move every id of the lineage from the old key to the new (compare-and-set, each
        with the rotation appended), then pin the successor with the lineage's admission
        and chain, and unlist the old ids (their listings carry the retired key)."""
        old, new = successor.predecessor_key, admitted.pin_key
        rotation = json.dumps(reg.rotation)
        own = successor.facts
        chain = own.rotations if successor.moved else (*own.rotations, rotation)
        lineage = sorted(lineage_ids(successor.proof.keys) - {reg.node_id})
        if not successor.moved:
            current = await self._records.facts(lineage)
            for node_id in lineage:
                if current[node_id].pin != old:
                    continue  # an id of the chain never registered, or already moved
                if not await self._records.move_pin(node_id, old, new, rotation, None):
                    raise AdmissionRefused("pin moved concurrently", reason="key_pinned")
        assert own.admission is not None  # a verified proof has one
        if not await self._records.new_pin(reg.node_id, new, own.admission, chain):
            raise AdmissionRefused("id pinned concurrently", reason="key_pinned")
        for node_id in lineage:
            await self._records.unlist(node_id)
        log.info(
            "key rotated: successor admitted",
            extra={"node_id": reg.node_id, "lineage": successor.lineage},
        )

    def _cap(self) -> int | None:
        params = self._principal_params
        return None if params is None else params.max_identities_per_endorser

    async def _refuse_over_cap(self, endorser_id: str, endorsee_id: str) -> None:
        """``AdmissionRefused(endorsement_cap)`` if ``endorser_id`` may admit nobody new."""
        params = self._principal_params
        if params is None:
            return
        known = await self._records.endorsees(endorser_id)
        seal = await self.seal()
        if seal is not None:
            # Who the operator sealed as this endorser's stays counted, whatever Redis says.
            known = known | frozenset(seal.endorsees.get(endorser_id, ()))
        if endorsee_id in known:
            return  # re-admitting an identity it already admitted takes no new slot
        refusal = endorsement_refusal(endorser_id, len(known), params)
        if refusal is not None:
            raise AdmissionRefused(
                f"{endorser_id} has admitted {len(known)} identities, the most one endorser "
                f"may admit ({params.max_identities_per_endorser})",
                reason=refusal,
                endorser_id=endorser_id,
                cap=params.max_identities_per_endorser,
            )

    async def _charge_endorser(self, endorser_id: str, endorsee_id: str) -> None:
        """Take one of ``endorser_id``'s slots for ``endorsee_id`` (checked, then atomic)."""
        await self._refuse_over_cap(endorser_id, endorsee_id)
        if not await self._records.add_endorsee(endorser_id, endorsee_id, self._cap()):
            # Another registration took the last slot between the check and the write.
            raise AdmissionRefused(
                f"{endorser_id} reached its endorsement cap",
                reason="endorsement_cap",
                endorser_id=endorser_id,
                cap=self._cap(),
            )

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The principal of each of ``node_ids`` that is admitted (its proof verifies for this
        directory) and not revoked; the others are absent (they count for nothing)."""
        if not node_ids:
            return {}
        facts = await self._records.facts(sorted(set(node_ids)))
        now = self._clock.now()
        admitted = await self._admitted(facts, list(facts), now)
        return {
            i: proof.principal
            for i, proof in admitted.items()
            if proof.principal and not self._revoked(facts[i], now)
        }

    async def revoked_through(self, node_ids: Sequence[str]) -> dict[str, str]:
        """For each of ``node_ids`` revoked or admitted through a revoked identity, that
        identity (``lamarck.registry.proofs.revoked_through``); the others are absent."""
        if not node_ids:
            return {}
        facts = await self._records.facts(sorted(set(node_ids)))
        now = self._clock.now()
        # Every link's records, whatever a memo knows: each endorser's revocation is read.
        await self._fetch_endorsers(facts, list(facts), now, self._fresh_memo())
        found: dict[str, str] = {}
        for node_id in facts:
            via = revoked_through(
                node_id,
                facts,
                policy=self._policy,
                now=now,
                memo=self._memo,
                chain_memo=self._chain_memo,
            )
            if via is not None:
                found[node_id] = via
        return found

    async def endorsees(self, endorser_id: str) -> frozenset[str]:
        """The identities ``endorser_id`` admitted by endorsement (revoked ones included)."""
        return await self._records.endorsees(endorser_id)

    async def heartbeat(self, node_id: str) -> None:
        """Refresh ``node_id``'s liveness TTL."""
        result = await self._records.refresh(node_id, self._params.heartbeat_ttl_s)
        if result is Heartbeat.REVOKED:
            raise AdmissionRefused("this node id is revoked", reason="revoked")
        if result is Heartbeat.NOT_LISTED:
            raise RegistryError("not registered (expired); register again", reason="not_registered")

    async def deregister(self, node_id: str) -> None:
        """Drop ``node_id`` from the live peers now; its pin stays."""
        await self._records.unlist(node_id)

    async def live_peers(self) -> list[PeerInfo]:
        """Every live, admitted, non-revoked peer whose registration verifies against its pin."""
        rows = await self._records.listed()
        now = self._clock.now()
        listed = {row.facts.node_id: row.raw for row in rows}
        facts = {row.facts.node_id: row.facts for row in rows}
        admitted = await self._admitted(facts, list(listed), now)
        seal = await self.seal()
        sealed = frozenset(seal.revoked if seal is not None else ())
        peers = []
        for node_id, proof in admitted.items():
            if node_id in sealed or self._revoked(facts[node_id], now):
                continue
            peer = _verified_peer(listed[node_id], proof.pinned_key)
            if peer is not None and peer.node_id == node_id:
                peers.append(peer)
        peers.sort(key=lambda p: p.node_id)
        return peers

    async def get_peer(self, node_id: str) -> PeerInfo | None:
        """The live peer ``node_id`` (admitted, not revoked, verified), or ``None``."""
        row = await self._records.listing(node_id)
        if row is None:
            return None
        now = self._clock.now()
        facts = {node_id: row.facts}
        proof = (await self._admitted(facts, [node_id], now)).get(node_id)
        if proof is None or self._revoked(facts[node_id], now):
            return None
        seal = await self.seal()
        if seal is not None and node_id in seal.revoked:
            return None
        peer = _verified_peer(row.raw, proof.pinned_key)
        return peer if peer is not None and peer.node_id == node_id else None

    async def pinned_key(self, node_id: str) -> str | None:
        """The key ``node_id`` is pinned to, or ``None`` (unknown, or its admission unproven)."""
        return (await self.pinned_keys([node_id])).get(node_id)

    async def pinned_keys(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The pinned keys of those of ``node_ids`` that have one and whose admission verifies."""
        if not node_ids:
            return {}
        facts = await self._records.facts(sorted(set(node_ids)))
        admitted = await self._admitted(facts, list(facts), self._clock.now())
        pins = {i: admitted[i].pinned_key for i in node_ids if i in admitted}
        dropped = [i for i in node_ids if i not in pins and facts[i].pin is None]
        if dropped:
            pins.update(await self._sealed_pins(dropped))
        return pins

    async def _sealed_pins(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The pins the operator's seal holds for ``node_ids`` (ids whose records are gone
        from Redis): records deleted from Redis do not un-admit a sealed id."""
        seal = await self.seal()
        if seal is None:
            return {}
        found = {i: seal.pins[i] for i in node_ids if i in seal.pins and i not in seal.revoked}
        for node_id in found:
            log.warning(
                "registry lost an admitted id's records; pin served from the seal",
                extra={"node_id": node_id},
            )
        return found

    async def rotate_key(self, rotation: Mapping[str, Any]) -> None:
        """Move a pin to a new key if the pinned (old) key signed ``rotation``.

        The record is appended to the id's rotation chain with the move, atomically.
        """
        node_id = rotation.get("node_id")
        new_key = rotation.get("new_public_key")
        if not isinstance(node_id, str) or not isinstance(new_key, str):
            raise AdmissionRefused("malformed rotation record", reason="key_pinned")
        facts, indexed = await self._records.facts_and_revoked([node_id])
        own = facts[node_id]
        now = self._clock.now()
        if node_id in indexed or self._revoked(own, now):
            raise AdmissionRefused("this node id is revoked", reason="revoked")
        if own.pin is None:
            raise AdmissionRefused("no pinned key to rotate from", reason="key_mismatch")
        old_key = own.pin
        seal = await self.seal()
        if seal is not None and old_key in seal.revoked_keys:
            raise AdmissionRefused(
                "the pinned key was revoked as compromised", reason="revoked_key"
            )
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
        moved = await self._records.move_pin(
            node_id, old_key, new_key, json.dumps(dict(rotation)), None
        )
        # The listed registration carries the old key: drop it until the node registers
        # again with its new key.
        await self._records.unlist(node_id)
        if not moved:
            raise AdmissionRefused("pin moved concurrently", reason="key_pinned")

    async def endorse(self, endorsement: Endorsement) -> None:
        """Check and publish an endorsement until it expires; the endorser must be admitted
        (its proof verifies), not revoked, and below its endorsement cap (``endorsement_cap``:
        refused here already, so the endorsee does not find out only when it registers)."""
        endorser = endorsement.endorser_id
        await self._refuse_over_cap(endorser, endorsement.endorsee_id)
        facts, indexed = await self._records.facts_and_revoked([endorser])
        now = self._clock.now()
        revoked = endorser in indexed or self._revoked(facts[endorser], now)
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
        await self._records.put_endorsement(
            endorsement.endorsee_id,
            json.dumps(endorsement.wire()),
            parse_record_ts(endorsement.expires_at),
        )

    async def endorsement_for(self, node_id: str) -> Endorsement | None:
        """The endorsement published for ``node_id``, or ``None``."""
        raw = await self._records.endorsement(node_id)
        if raw is None:
            return None
        try:
            return Endorsement.from_wire(json.loads(raw))
        except (InvalidRecord, ValueError):
            log.warning("unreadable endorsement in registry", extra={"node_id": node_id})
            return None


#: Refusals a kept proof may answer for an id the registry lost: its own admission material
#: (an endorsement or token expired since) and, after a key rotation, its id not being
#: derived from its current key (``key_mismatch``).
_KEPT_PROOF_ANSWERS = frozenset(
    {"no_endorsement", "bad_endorsement", "bad_enrollment", "key_mismatch"}
)


def _kept_facts(node_id: str, pin: str, kept: AdmissionProof) -> IdFacts:
    """A kept proof as the records it restores: ``pin``, the registration, the chain."""
    return IdFacts(
        node_id,
        pin,
        json.dumps(kept.registration.wire()),
        tuple(json.dumps(dict(r)) for r in kept.rotations),
    )


def _endorser_charged(reg: Registration, admitted: Admitted, proof: str | None) -> str | None:
    """The endorser whose slot this registration takes, or ``None``.

    A slot is taken when the endorsement becomes the id's stored admission proof: a new id
    admitted by endorsement, or a pinned id whose proof is replaced by this registration's
    endorsement (its endorser was revoked). A token, when presented, is what admits.
    """
    endorsement = reg.admission.endorsement
    if endorsement is None or reg.admission.enrollment_token is not None:
        return None
    if admitted.new_pin or proof is not None:
        return endorsement.endorser_id
    return None


def _parse_issued(raw: str | None) -> datetime | None:
    if raw is None:
        return None
    try:
        return parse_ts(raw)
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
        # Somebody with write access to the store wrote this, not the registry's register():
        # skip it rather than serve an unverified peer.
        log.warning("skipping unverifiable registry entry", extra={"error": str(e)})
        return None
    return PeerInfo.from_registration(reg, registered_at)
