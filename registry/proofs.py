"""Admission proofs: how a reader checks, from signed records alone, that an id was admitted.

Every node can write to the shared Redis, so a pin (``pin:<id>``) proves nothing by itself:
a participant could write one without ever passing ``register()``. When ``register()`` first
pins an id it also stores the id's **admission proof**, which never expires:

- ``admission:<id>``: the admitted signed registration, carrying its ``Admission`` material
  (an operator enrollment token, an endorsement, or nothing in ``open`` mode);
- ``rotations:<id>``: every key-rotation record since, in order, each signed by the key it
  retires, so the chain from the id's first key to its pinned key can be followed.

A reader serves an id only if ``verify_admission`` passes with the reader's OWN mode and
operator key: (1) the registration names the id, or the id is a successor derived from a
later key of the chain (a rotation admits the id of the new key on its lineage's admission,
``check_registration``); (2) the rotation chain starts at the key the registered id is
derived from, each link is signed by the key it retires and countersigned by the key it
adds, and it ends at the pin;
(3) the registration is signed by a key of that chain and not dated in the reader's future;
(4) its admission material admits the id and that key in the reader's mode, judged at the
registration's ``created_at``:

- ``open``: any material;
- ``operator`` (and ``endorsed``, when a token is presented): an enrollment token signed by
  the reader's operator key, naming this id/key, whose validity window contains
  ``created_at``. A token that has expired *since* still proves the admission — otherwise
  every node would drop out an hour after joining — but one that had expired (or was not yet
  valid) when the registration was made does not. ``created_at`` is the registrant's claim:
  a holder of an expired token could backdate a registration, but only for the identity the
  operator named in it; revocation is the remedy for that;
- ``endorsed``: otherwise an endorsement, valid at ``created_at``, signed by a key of the
  endorser's own verified chain (a retired key only for endorsements dated before its
  retirement), by an endorser that is not revoked (a verified operator revocation) and whose
  own admission verifies the same way, at most ``ProofParams.max_endorsement_depth`` hops
  from a token-admitted root. Revoking an endorser therefore withdraws the admissions it
  granted: the only sound rule, as an endorser's key could otherwise keep minting backdated
  endorsements after its revocation. Its honest endorsees register again with new material.

A revocation counts only if ``revocation_holds``: the operator signed it, for this id.

A verified proof also names the id's **principal** (``VerifiedProof.principal``): in
``operator`` mode the operator key whose token admitted it (one operator admitted every node:
it is the one principal); in ``endorsed`` mode the token-admitted id at the root of its
endorsement chain, itself for a token-admitted id (each identity the operator's tokens let in
answers for itself and for every identity it mints down its chain, so a root and its endorsees
are one principal, never two); in ``open`` mode the id itself. Quorums and corroboration
count principals, not keys (``lamarck.reputation.principals``). It also names
the id's **chain** (``VerifiedProof.chain``): the endorsers its admission runs through,
nearest first.

``revoked_through`` is the chain rule of revocation: an id is revoked *through* a revoked
identity when it is that identity or that identity is on its admission chain. The chain is
the one its proof shows once revocations are set aside (every link still verified: the
registration signed by the id's own key chain, each endorsement by a key its endorser held),
so a revoked endorser's endorsees are known for what they are, however deep, and nobody
else is: records a writer forged name no chain. Revoking an identity thereby reaches every
identity it admitted, directly or through others; the taint sweep takes their lessons out
and the import pipeline refuses their records (``revoked_source``). An endorsee that
registers again with new material (another endorser, a token) has a new chain.

Everything here is pure: values in (``IdFacts`` as fetched, an explicit ``now``), a verdict
out. ``ProofMemo`` remembers verdicts for ``memo_ttl_s`` (keyed by the exact records, so a
changed record is re-verified at once; the TTL bounds how long an endorser's revocation or a
change deeper in the chain takes to be seen), so a read with a warm memo costs no signature
check beyond the listed registration's.

Refusal reasons (``ProofInvalid.reason``): ``no_proof``, ``malformed_proof``, ``wrong_id``,
``bad_chain``, ``bad_proof``, ``bad_enrollment``, ``no_endorsement``, ``bad_endorsement``,
``endorsement_too_deep``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from lamarck.errors import (
    AdmissionRefused,
    ConfigError,
    InvalidRecord,
    LamarckError,
    ProofInvalid,
    RegistryError,
    RotationInvalid,
)
from lamarck.proto.identity import b64u_decode, node_id_for
from lamarck.proto.signing import RecordKind
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import Registration, Revocation, parse_record_ts
from lamarck.registry.rotation import check_rotation_record
from lamarck.registry.rules import (
    AdmittedVia,
    check_endorsement,
    check_enrollment,
    check_revocation,
    lineage_ids,
    verify_signed_by,
)

__all__ = [
    "IdFacts",
    "ProofMemo",
    "ProofParams",
    "ProofPolicy",
    "VerifiedProof",
    "endorser_to_fetch",
    "revocation_holds",
    "revoked_through",
    "verify_admission",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProofParams:
    """How far and how long proof verification looks; validated at construction."""

    #: Endorsement hops allowed from an id to a token-admitted (or open) root (>= 0).
    #: Each hop is one more Redis round trip on a cold read.
    max_endorsement_depth: int = 16
    #: How long a verdict is reused (> 0): bounds how late an endorser's revocation (or any
    #: change deeper in a chain) is seen by a reader that memoised its endorsees.
    memo_ttl_s: float = 10.0
    #: Memo size bound (> 0): a writer can invent ids faster than verdicts expire.
    memo_max_entries: int = 10_000

    def __post_init__(self) -> None:
        if self.max_endorsement_depth < 0:
            raise ConfigError(
                f"invalid max_endorsement_depth={self.max_endorsement_depth}: must be >= 0",
                reason="invalid_config",
                field="max_endorsement_depth",
            )
        if not math.isfinite(self.memo_ttl_s) or self.memo_ttl_s <= 0:
            raise ConfigError(
                f"invalid memo_ttl_s={self.memo_ttl_s}: must be finite and > 0",
                reason="invalid_config",
                field="memo_ttl_s",
            )
        if self.memo_max_entries <= 0:
            raise ConfigError(
                f"invalid memo_max_entries={self.memo_max_entries}: must be > 0",
                reason="invalid_config",
                field="memo_max_entries",
            )


@dataclass(frozen=True, slots=True)
class ProofPolicy:
    """The reader's own terms: its admission mode and operator key, never the writer's."""

    mode: AdmissionMode
    operator_public_key: str | None
    params: RegistryParams
    proof_params: ProofParams = field(default_factory=ProofParams)

    @classmethod
    def of(
        cls,
        params: RegistryParams,
        operator_public_key: str | None,
        proof_params: ProofParams | None = None,
    ) -> ProofPolicy:
        """The policy of a directory configured with ``params`` and ``operator_public_key``."""
        if proof_params is None:  # the policy's default (ProofParams' defaults)
            return cls(params.admission, operator_public_key, params)
        return cls(params.admission, operator_public_key, params, proof_params)


@dataclass(frozen=True, slots=True)
class IdFacts:
    """What the registry holds for one id, raw and unverified, as the adapter fetched it."""

    node_id: str
    #: ``pin:<id>``: the key the id is bound to.
    pin: str | None
    #: ``admission:<id>``: the admitted registration's JSON wire form.
    admission: str | None
    #: ``rotations:<id>``: each rotation record's JSON, oldest first.
    rotations: tuple[str, ...] = ()
    #: ``revocation:<id>``: the operator's signed revocation's JSON, if any.
    revocation: str | None = None

    @property
    def proof_key(self) -> tuple[str, str | None, str | None, tuple[str, ...]]:
        """The memo key of this id's verdict: exactly the records it was derived from."""
        return (self.node_id, self.pin, self.admission, self.rotations)


@dataclass(frozen=True, slots=True)
class VerifiedProof:
    """An id whose admission verified: its key chain and on what grounds it was admitted."""

    node_id: str
    #: The id's keys, oldest (the one the id is derived from) first, the pinned key last.
    keys: tuple[str, ...]
    #: ``retired_at[i]``: when ``keys[i]`` was rotated away (the rotation's ``created_at``).
    retired_at: tuple[datetime, ...]
    via: AdmittedVia
    #: Endorsement hops to a root admitted by a token (or in ``open`` mode): 0 for a root.
    height: int
    #: Who stands behind this identity (independence is counted by principal, not by key):
    #: in ``operator`` mode the operator key whose enrollment token admitted it; in
    #: ``endorsed`` mode the root of its endorsement chain (the token-admitted id every
    #: endorsement leads back to; itself for a token-admitted id), so every identity a node
    #: mints counts as its endorser's principal; in ``open`` mode, the id itself.
    principal: str = ""
    #: The endorsers this admission runs through, nearest first (empty for a root).
    chain: tuple[str, ...] = ()

    @property
    def pinned_key(self) -> str:
        """The current key."""
        return self.keys[-1]


@dataclass(frozen=True, slots=True)
class _Refusal:
    reason: str
    message: str
    details: Mapping[str, Any]


_MemoKey = tuple[Any, ...]


class ProofMemo:
    """Verdicts (and verified revocations) for ``ttl_s``, keyed by the records they judged.

    One memo per policy: a verdict is only meaningful for the mode and operator key that
    produced it. Time comes in as ``now``; nothing here reads a clock.
    """

    def __init__(self, params: ProofParams) -> None:
        self._ttl = timedelta(seconds=params.memo_ttl_s)
        self._max = params.memo_max_entries
        self._entries: dict[_MemoKey, tuple[datetime, VerifiedProof | _Refusal | bool]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: _MemoKey, now: datetime) -> VerifiedProof | _Refusal | bool | None:
        """The remembered verdict for ``key``, or ``None`` (never seen, or expired)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if now >= entry[0]:
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: _MemoKey, value: VerifiedProof | _Refusal | bool, now: datetime) -> None:
        """Remember ``value`` for ``key`` until ``now + ttl``."""
        if len(self._entries) >= self._max:
            self._entries = {k: v for k, v in self._entries.items() if now < v[0]}
            if len(self._entries) >= self._max:
                # Still full of live entries: a flood of invented ids. Start over rather than
                # grow without bound; honest ids are simply verified again.
                self._entries.clear()
        self._entries[key] = (now + self._ttl, value)

    def forget(self) -> None:
        """Drop every verdict."""
        self._entries.clear()


def revocation_holds(
    facts: IdFacts, policy: ProofPolicy, now: datetime, memo: ProofMemo | None = None
) -> bool:
    """Whether ``facts`` carries a valid operator revocation of exactly this id.

    A record that does not verify against the reader's operator key revokes nobody (else
    anyone with Redis access could revoke anyone); it is logged and ignored.
    """
    raw = facts.revocation
    if raw is None:
        return False
    key = ("revocation", facts.node_id, raw, policy.operator_public_key)
    if memo is not None:
        known = memo.get(key, now)
        if isinstance(known, bool):
            return known
    try:
        revocation = Revocation.from_wire(json.loads(raw))
        if revocation.node_id != facts.node_id:
            raise RegistryError("revocation is for another id", reason="bad_revocation")
        check_revocation(
            revocation,
            operator_public_key=policy.operator_public_key,
            params=policy.params,
            now=now,
        )
    except (ValueError, InvalidRecord, RegistryError) as e:
        log.warning(
            "ignoring a revocation that does not verify",
            extra={"node_id": facts.node_id, "error": str(e)},
        )
        holds = False
    else:
        holds = True
    if memo is not None:
        # Keyed by the exact record: a refusal is re-judged once the memo expires (a record
        # dated slightly ahead becomes valid), and logged once per judgement, not per read.
        memo.put(key, holds, now)
    return holds


def _endorser_named(admission_raw: str) -> tuple[str | None, bool]:
    """(endorser id, whether a token is presented) from a stored registration, unverified."""
    try:
        material = json.loads(admission_raw)["admission"]
        endorsement = material.get("endorsement")
        has_token = material.get("enrollment_token") is not None
        endorser = endorsement.get("endorser_id") if isinstance(endorsement, dict) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, False
    return (endorser if isinstance(endorser, str) else None), has_token


def endorser_to_fetch(facts: IdFacts, policy: ProofPolicy) -> str | None:
    """The endorser whose records verifying ``facts`` will need (``None``: no recursion).

    Lets the adapter fetch an endorsement chain level by level before the pure check.
    """
    if policy.mode is not AdmissionMode.ENDORSED or facts.admission is None:
        return None
    endorser, has_token = _endorser_named(facts.admission)
    # A presented token is judged alone (as at admission): no endorser is consulted.
    return None if has_token or endorser == facts.node_id else endorser


def verify_admission(
    node_id: str,
    facts: Mapping[str, IdFacts],
    *,
    policy: ProofPolicy,
    now: datetime,
    memo: ProofMemo | None = None,
) -> VerifiedProof:
    """Check ``node_id``'s admission proof for this reader; return it or raise ``ProofInvalid``.

    ``facts`` holds the fetched records of ``node_id`` and of the endorsers its proof leans
    on (see ``endorser_to_fetch``); the id's own revocation is not judged here (a revoked id
    still has a pin), its endorsers' are. Fresh refusals are logged.
    """
    return _verify(
        node_id,
        facts,
        policy=policy,
        now=now,
        memo=memo,
        budget=policy.proof_params.max_endorsement_depth,
        path=frozenset(),
        top=True,
    )


def _verify(
    node_id: str,
    facts: Mapping[str, IdFacts],
    *,
    policy: ProofPolicy,
    now: datetime,
    memo: ProofMemo | None,
    budget: int,
    path: frozenset[str],
    top: bool = False,
) -> VerifiedProof:
    own = facts.get(node_id)
    if own is None:
        raise ProofInvalid(
            f"the records of {node_id} were not fetched", reason="no_proof", bounded=True
        )
    key = own.proof_key
    hit = memo.get(key, now) if memo is not None else None
    if isinstance(hit, VerifiedProof):
        if hit.height > budget:
            raise ProofInvalid(
                "endorsement chain is longer than this read may follow",
                reason="endorsement_too_deep",
                bounded=True,
            )
        return hit
    if isinstance(hit, _Refusal):
        raise ProofInvalid(hit.message, reason=hit.reason, **hit.details)
    try:
        proof = _verify_uncached(
            own, facts, policy=policy, now=now, memo=memo, budget=budget, path=path
        )
    except ProofInvalid as e:
        if memo is not None and not e.bounded:
            memo.put(key, _Refusal(e.reason, str(e), dict(e.details)), now)
        if top:
            log.warning(
                "registry id not admitted; treated as unregistered",
                extra={"node_id": node_id, "reason": e.reason, "error": str(e)},
            )
        raise
    if memo is not None:
        memo.put(key, proof, now)
    return proof


def _verify_uncached(
    own: IdFacts,
    facts: Mapping[str, IdFacts],
    *,
    policy: ProofPolicy,
    now: datetime,
    memo: ProofMemo | None,
    budget: int,
    path: frozenset[str],
) -> VerifiedProof:
    node_id = own.node_id
    skew = timedelta(seconds=policy.params.max_future_skew_s)
    # (0) There is a pin and a proof at all: a pin alone was not written by register().
    if own.pin is None or own.admission is None:
        raise ProofInvalid("no pin or no admission proof", reason="no_proof")
    try:
        reg = Registration.from_wire(json.loads(own.admission))
    except (ValueError, InvalidRecord) as e:
        raise ProofInvalid(f"unreadable admission proof: {e}", reason="malformed_proof") from e
    # (1)-(2) The key chain from the registered id's own key to the pin, and this id is of
    #     its lineage: the registered id itself, or a successor derived from a later key of
    #     the chain (admitted by the rotation to that key).
    if node_id != reg.node_id and node_id not in lineage_ids(_stated_new_keys(own.rotations)):
        raise ProofInvalid("the proof registers another id", reason="wrong_id")
    keys, retired_at = _check_chain(reg.node_id, own.rotations, own.pin, policy=policy, now=now)
    # (3) The registration was made by a key of that chain, and not in the reader's future
    #     (its date is the instant the admission material is judged at).
    if reg.public_key not in keys:
        raise ProofInvalid("the proof is signed by a key this id never had", reason="bad_proof")
    created = parse_record_ts(reg.created_at)
    if created > now + skew:
        raise ProofInvalid("the proof is dated in the future", reason="bad_proof")
    try:
        verify_signed_by(RecordKind.registration, reg, reg.public_key)
    except (LamarckError, ValueError) as e:
        raise ProofInvalid(f"proof signature: {e}", reason="bad_proof") from e
    # (4) The admission material admits this id and key, in the reader's mode.
    via, height, principal, chain = _check_material(
        reg, created, facts, policy=policy, now=now, memo=memo, budget=budget, path=path
    )
    return VerifiedProof(node_id, keys, retired_at, via, height, principal, chain)


def _stated_new_keys(rotations: tuple[str, ...]) -> list[str]:
    """The keys a chain's records say they rotate to (unverified: ``_check_chain`` checks)."""
    keys = []
    for raw in rotations:
        try:
            record = json.loads(raw)
            key = record.get("new_public_key") if isinstance(record, dict) else None
        except ValueError:
            continue
        if isinstance(key, str):
            try:
                b64u_decode(key)
            except InvalidRecord:
                continue
            keys.append(key)
    return keys


def _check_chain(
    node_id: str, rotations: tuple[str, ...], pin: str, *, policy: ProofPolicy, now: datetime
) -> tuple[tuple[str, ...], tuple[datetime, ...]]:
    """The id's keys (first to pinned) and each retired key's rotation time; else ``bad_chain``."""
    try:
        records = [json.loads(r) for r in rotations]
        if any(not isinstance(r, dict) for r in records):
            raise ValueError("a rotation record is not a JSON object")
        root = records[0]["old_public_key"] if records else pin
        if not isinstance(root, str) or node_id_for(b64u_decode(root)) != node_id:
            raise ProofInvalid("the chain does not start at the id's own key", reason="bad_chain")
        keys, retired = [root], []
        for record in records:
            new_key = record.get("new_public_key")
            if not isinstance(new_key, str):
                raise ValueError("a rotation record names no new key")
            # Signed by the key it retires, for this id, from the previous link's key.
            check_rotation_record(
                record,
                node_id=node_id,
                old_key=keys[-1],
                new_key=new_key,
                now=now,
                max_future_skew_s=policy.params.max_future_skew_s,
            )
            keys.append(new_key)
            retired.append(parse_record_ts(record["created_at"]))
    except ProofInvalid:
        raise
    except (ValueError, KeyError, TypeError, InvalidRecord, RotationInvalid) as e:
        cause = getattr(e, "reason", "malformed")
        raise ProofInvalid(f"key chain: {e}", reason="bad_chain", cause=cause) from e
    if keys[-1] != pin:
        raise ProofInvalid("the key chain does not end at the pinned key", reason="bad_chain")
    if len(set(keys)) != len(keys):
        # Honest rotations always move to a fresh key; a loop would make "the key current at
        # a given time" ambiguous.
        raise ProofInvalid("the key chain returns to a retired key", reason="bad_chain")
    return tuple(keys), tuple(retired)


def _check_material(
    reg: Registration,
    created: datetime,
    facts: Mapping[str, IdFacts],
    *,
    policy: ProofPolicy,
    now: datetime,
    memo: ProofMemo | None,
    budget: int,
    path: frozenset[str],
) -> tuple[AdmittedVia, int, str, tuple[str, ...]]:
    """On what grounds ``reg`` admits its id, its endorsement height, its principal and the
    endorsers it runs through (nearest first)."""
    node_id = reg.node_id
    if policy.mode is AdmissionMode.OPEN:
        # Nobody admitted it: each identity answers only for itself.
        return AdmittedVia.OPEN, 0, node_id, ()
    token = reg.admission.enrollment_token
    endorsement = reg.admission.endorsement
    if token is not None:
        # Judged at the registration's date: a token that expired since still proves it.
        try:
            check_enrollment(
                token,
                node_id=node_id,
                public_key=reg.public_key,
                operator_public_key=policy.operator_public_key,
                params=policy.params,
                now=created,
            )
        except AdmissionRefused as e:
            raise ProofInvalid(str(e), reason=e.reason) from e
        # check_enrollment verified the token against this very key. In an endorsed network a
        # token admits a root that answers for itself and for what it mints; in an operator
        # network the operator admitted every node and is their one principal.
        if policy.mode is AdmissionMode.ENDORSED:
            return AdmittedVia.ENROLLMENT, 0, node_id, ()
        return AdmittedVia.ENROLLMENT, 0, policy.operator_public_key or "", ()
    if policy.mode is AdmissionMode.OPERATOR:
        raise ProofInvalid("operator admission needs an enrollment token", reason="bad_enrollment")
    if endorsement is None:
        raise ProofInvalid(
            "endorsed admission needs an endorsement or a token", reason="no_endorsement"
        )
    bad = "bad_endorsement"
    endorser = endorsement.endorser_id
    if endorser == node_id:
        raise ProofInvalid("self-endorsement", reason=bad)
    if endorser in path:
        raise ProofInvalid("endorsements form a cycle", reason=bad, endorser_id=endorser)
    if budget <= 0:
        raise ProofInvalid(
            "endorsement chain is longer than this read may follow",
            reason="endorsement_too_deep",
            bounded=True,
        )
    endorser_facts = facts.get(endorser)
    if endorser_facts is None:
        raise ProofInvalid(
            "the endorser's records were not fetched",
            reason=bad,
            endorser_id=endorser,
            bounded=True,
        )
    # (a) The endorser is not revoked: its endorsements admit nobody any more.
    if revocation_holds(endorser_facts, policy, now, memo):
        raise ProofInvalid("endorser is revoked", reason=bad, endorser_id=endorser)
    # (b) The endorser was admitted itself, by the same rules (recursively, bounded).
    try:
        endorsing = _verify(
            endorser,
            facts,
            policy=policy,
            now=now,
            memo=memo,
            budget=budget - 1,
            path=path | {node_id},
        )
    except ProofInvalid as e:
        raise ProofInvalid(
            f"endorser is not admitted: {e}",
            reason=bad,
            endorser_id=endorser,
            endorser_reason=e.reason,
            bounded=e.bounded,
        ) from e
    # (c) Signed by a key the endorser held when it endorsed: its current key, or a retired
    #     one for an endorsement dated before that key's rotation.
    signer = endorsement.signed_by
    if signer not in endorsing.keys:
        raise ProofInvalid("endorsement is not signed by a key of the endorser", reason=bad)
    index = endorsing.keys.index(signer)
    if index < len(endorsing.retired_at) and (
        parse_record_ts(endorsement.created_at) >= endorsing.retired_at[index]
    ):
        raise ProofInvalid("endorsement signed by a key the endorser had retired", reason=bad)
    # (d) It names this identity, is valid at the registration's date, and its signature holds.
    try:
        check_endorsement(
            endorsement,
            endorsee_id=node_id,
            endorsee_public_key=reg.public_key,
            revoked=_NONE,
            admitted_ids={endorser: signer},
            params=policy.params,
            now=created,
        )
    except AdmissionRefused as e:
        raise ProofInvalid(str(e), reason=e.reason) from e
    # An endorser's minted identities are its principal's: the chain's root.
    return (
        AdmittedVia.ENDORSEMENT,
        endorsing.height + 1,
        endorsing.principal,
        (
            endorser,
            *endorsing.chain,
        ),
    )


_NONE: Collection[str] = frozenset()


def revoked_through(
    node_id: str,
    facts: Mapping[str, IdFacts],
    *,
    policy: ProofPolicy,
    now: datetime,
    memo: ProofMemo | None = None,
    chain_memo: ProofMemo | None = None,
) -> str | None:
    """The revoked identity ``node_id``'s admission runs through: itself if it is revoked,
    else the nearest revoked endorser of its chain; ``None`` when there is none (see the
    module doc).

    ``facts`` holds the records of ``node_id`` and of its chain (``endorser_to_fetch``).
    ``memo`` remembers verified revocations; ``chain_memo`` the proofs verified with
    revocations set aside, which must never mix with the verdicts of ``verify_admission``
    (a proof refused for a revoked endorser verifies there). An id whose proof does not
    verify even so has no chain: ``None`` unless it is revoked itself.
    """
    if node_id in facts and revocation_holds(facts[node_id], policy, now, memo):
        return node_id
    unrevoked = {i: replace(f, revocation=None) for i, f in facts.items()}
    try:
        proof = _verify(
            node_id,
            unrevoked,
            policy=policy,
            now=now,
            memo=chain_memo,
            budget=policy.proof_params.max_endorsement_depth,
            path=frozenset(),
        )
    except ProofInvalid:
        return None
    for endorser in proof.chain:
        own = facts.get(endorser)
        if own is not None and revocation_holds(own, policy, now, memo):
            return endorser
    return None
