"""Outcome attestations: a node's signed verdict on one exact lesson version, from reality.

The record is ``lamarck.proto.attestation.Attestation``; its signature is made and checked by
``lamarck.proto.signing`` (``RecordKind.attestation``, the attester id bound to the key). This
module holds the rules, all pure:

* **Made** only from the attester's own outcome on a lesson it imported (``make_attestation``):
  the verdict, the lesson's content hash, and the outcome by digest only.
* **Verified** like any record (``verify_attestation``): (1) parse, (2) signature by the
  attester's key, (3) not dated in the future, (4) not expired. A receiver then admits it
  (``admit_attestation``): (5) it names the current version of a lesson the receiver holds as
  an import, (6) its attester is admitted and not revoked in the receiver's registry view,
  (7) its attester's principal is not the lesson source's.
* **Bounded** (``placement``): one live attestation per attester and lesson version, the
  newest; at most ``max_attesters_per_lesson`` attesters per version, the oldest making room.
* **Expiring**: an attestation older than ``max_age_days`` counts for nothing and is dropped;
  one about an earlier version than the lesson's current one never counts (versions are
  named by content hash, so a source's edit starts the count afresh).
* **Counted by principal** (``count_support``) in the verifier's own view: never keys, never
  the source's principal; a principal whose identities signed both verdicts counts for neither
  side (``equivocating_principals``; the node charges them).
* **Judged by reality** (``attester_events``): when this node's own outcome later confirms or
  contradicts the lesson, each attester was right or wrong, once per attester and version.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from lamarck.consensus.corroboration import Support
from lamarck.errors import InvalidRecord, PolicyRejected, VerificationError
from lamarck.params_checks import check_positive_int, check_range
from lamarck.proto.attestation import Attestation
from lamarck.proto.canonical import canonical_bytes, sha256_hex
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import DEFAULT_LIMITS
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S
from lamarck.proto.signing import RecordKind, sign_object, verify_raw
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.reputation.events import EventKind, ReputationEvent

__all__ = [
    "ATTESTER_ID_PATH",
    "CONFIRM",
    "CONTRADICT",
    "AttestationParams",
    "Placement",
    "admit_attestation",
    "attestation_bytes",
    "attester_events",
    "count_support",
    "created_at",
    "equivocating_principals",
    "equivocation_events",
    "is_live",
    "make_attestation",
    "outcome_digest",
    "placement",
    "verify_attestation",
]

#: Where an attestation names its signer; verification binds that id to the signing key.
ATTESTER_ID_PATH: tuple[str, ...] = ("attester_id",)
CONFIRM = "confirm"
CONTRADICT = "contradict"


@dataclass(frozen=True, slots=True)
class AttestationParams:
    """How long attestations count and how many a node keeps per lesson version."""

    # Days after its ``created_at`` an attestation stops counting and is dropped; > 0.
    max_age_days: float = 30.0
    # Attesters kept per lesson version (the oldest makes room for a newer one); >= 1.
    max_attesters_per_lesson: int = 64

    def __post_init__(self) -> None:
        """Validate every field."""
        check_range("max_age_days", self.max_age_days, 0.0, 36500.0, lo_open=True)
        check_positive_int("max_attesters_per_lesson", self.max_attesters_per_lesson)

    @property
    def max_age(self) -> timedelta:
        """``max_age_days`` as a duration."""
        return timedelta(days=self.max_age_days)


def outcome_digest(outcome_obj: Mapping[str, object]) -> str:
    """sha256 hex of an outcome's canonical JSON: names the evidence, reveals nothing of it."""
    return sha256_hex(canonical_bytes(outcome_obj))


def make_attestation(
    *,
    identity: NodeIdentity,
    memory_hash: str,
    confirmed: bool,
    outcome: str,
    now: datetime,
    rng: random.Random,
) -> Attestation:
    """``identity``'s signed attestation that its outcome (digest ``outcome``) confirmed or
    contradicted the lesson version ``memory_hash``."""
    obj = {
        "schema_version": "1.0",
        "kind": "attestation",
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "memory_hash": memory_hash,
        "attester_id": identity.node_id,
        "verdict": CONFIRM if confirmed else CONTRADICT,
        "outcome_digest": outcome,
        "created_at": format_ts(now),
    }
    return Attestation.from_obj(sign_object(RecordKind.attestation, obj, identity))


def attestation_bytes(attestation: Attestation) -> bytes:
    """The attestation's wire bytes: its canonical JSON, signature included."""
    return canonical_bytes(attestation.to_obj())


def created_at(attestation: Attestation) -> datetime:
    """When the attester says it attested."""
    return parse_ts(attestation.created_at)


def is_live(attestation: Attestation, now: datetime, params: AttestationParams) -> bool:
    """Whether the attestation still counts at ``now`` (younger than ``max_age_days``)."""
    return now - created_at(attestation) <= params.max_age


def verify_attestation(
    raw: bytes,
    *,
    now: datetime,
    params: AttestationParams,
    max_future_skew_s: float = DEFAULT_MAX_FUTURE_SKEW_S,
) -> Attestation:
    """The attestation in ``raw`` once its own checks hold; raises otherwise.

    (1) ``raw`` is at most the record limit and parses as an attestation (``InvalidRecord``);
    (2) its canonical bytes are signed by the attester's key, the attester id bound to it
    (``VerificationError``: ``not_canonical | malformed | key_mismatch | hash_mismatch |
    bad_signature``); (3) it is not dated more than ``max_future_skew_s`` ahead of ``now``
    (``future_timestamp``); (4) it is not older than ``max_age_days`` (``expired``).
    """
    # (1) Size first: nobody makes us parse megabytes before refusing them.
    if len(raw) > DEFAULT_LIMITS.max_record_bytes:
        raise InvalidRecord(
            f"attestation is {len(raw)} bytes, limit {DEFAULT_LIMITS.max_record_bytes}",
            reason="too_large",
        )
    attestation = Attestation.from_json(raw)
    if attestation.signature is None:
        raise InvalidRecord("an attestation needs a signature block", reason="malformed")
    # (2)
    verify_raw(RecordKind.attestation, raw, signer_id_path=ATTESTER_ID_PATH)
    at = created_at(attestation)
    # (3) After the signature, so a future date is only ever blamed on its signer.
    if at > now + timedelta(seconds=max_future_skew_s):
        raise VerificationError(
            f"attestation dated {attestation.created_at}, in the future", reason="future_timestamp"
        )
    # (4)
    if not is_live(attestation, now, params):
        raise VerificationError(
            f"attestation of {attestation.created_at} is older than {params.max_age_days:g} days",
            reason="expired",
        )
    return attestation


def admit_attestation(
    attestation: Attestation,
    *,
    current_hash: str | None,
    attester_principal: str | None,
    source_principal: str,
) -> None:
    """Whether a receiver keeps a verified attestation; ``PolicyRejected`` says why not.

    ``current_hash`` is the content hash of the current version of the imported lesson the
    receiver holds for the attested one (None: it holds none); the principals are the
    receiver's own registry view (None: not admitted, or revoked).
    """
    # (5) An attestation travels with its lesson: one about a lesson not held is an orphan,
    #     one about an older version no longer counts.
    if current_hash is None:
        raise PolicyRejected("no lesson held for this attestation", reason="orphan_attestation")
    if attestation.memory_hash != current_hash:
        raise PolicyRejected(
            "the attestation names an earlier version of the lesson", reason="stale_attestation"
        )
    # (6) Identities are not free: only an admitted, unrevoked attester speaks.
    if not attester_principal:
        raise PolicyRejected(
            f"attester {attestation.attester_id} is not admitted here", reason="unknown_attester"
        )
    # (7) The source's own principal is not independent support for its lesson.
    if source_principal and attester_principal == source_principal:
        raise PolicyRejected(
            "the attester is of the lesson source's principal", reason="source_attestation"
        )


@dataclass(frozen=True, slots=True)
class Placement:
    """What storing one attestation does: keep it or not, and which attesters' rows it ends."""

    keep: bool
    evict: tuple[str, ...] = ()


def placement(
    held: Sequence[Attestation], incoming: Attestation, params: AttestationParams
) -> Placement:
    """Where ``incoming`` goes among ``held`` (the attestations kept for its lesson version).

    One per attester: a newer one from the same attester replaces its older one, an older or
    equally old one is not kept. A new attester joins while fewer than
    ``max_attesters_per_lesson`` are kept; beyond that it displaces the oldest (by time, then
    attester id) if it is newer than that one, else it is not kept.
    """
    same = [a for a in held if a.memory_hash == incoming.memory_hash]
    mine = [a for a in same if a.attester_id == incoming.attester_id]
    if mine:
        newest = max(mine, key=created_at)
        if created_at(incoming) <= created_at(newest):
            return Placement(keep=False)
        return Placement(keep=True, evict=(incoming.attester_id,))
    attesters = {a.attester_id: created_at(a) for a in same}
    if len(attesters) < params.max_attesters_per_lesson:
        return Placement(keep=True)
    oldest = min(attesters, key=lambda who: (attesters[who], who))
    if created_at(incoming) <= attesters[oldest]:
        return Placement(keep=False)
    return Placement(keep=True, evict=(oldest,))


def _sides(
    attestations: Iterable[Attestation],
    *,
    memory_hash: str,
    principals: Mapping[str, str],
    source_principal: str,
    now: datetime,
    params: AttestationParams,
) -> dict[str, set[str]]:
    """Each counted principal's verdicts on ``memory_hash`` (live, admitted, not the source's)."""
    sides: dict[str, set[str]] = {}
    for a in attestations:
        if a.memory_hash != memory_hash or not is_live(a, now, params):
            continue
        principal = principals.get(a.attester_id, "")
        if not principal or principal == source_principal:
            continue
        sides.setdefault(principal, set()).add(a.verdict)
    return sides


def count_support(
    attestations: Iterable[Attestation],
    *,
    memory_hash: str,
    principals: Mapping[str, str],
    source_principal: str,
    now: datetime,
    params: AttestationParams,
    certified: bool = False,
) -> Support:
    """The independent support for the lesson version ``memory_hash``, by principal.

    ``principals`` is the verifier's own registry view (admitted, unrevoked id -> principal),
    never what an attestation claims; ``source_principal`` is the lesson source's there ("":
    none). Counted: live attestations of that exact version by admitted attesters of other
    principals than the source's; a principal with both verdicts is on neither side.
    """
    sides = _sides(
        attestations,
        memory_hash=memory_hash,
        principals=principals,
        source_principal=source_principal,
        now=now,
        params=params,
    )
    return Support(
        confirming=frozenset(p for p, v in sides.items() if v == {CONFIRM}),
        contradicting=frozenset(p for p, v in sides.items() if v == {CONTRADICT}),
        certified=certified,
    )


def equivocating_principals(
    attestations: Iterable[Attestation],
    *,
    memory_hash: str,
    principals: Mapping[str, str],
    now: datetime,
    params: AttestationParams,
) -> frozenset[str]:
    """The principals whose identities signed both verdicts on ``memory_hash`` (live ones)."""
    sides = _sides(
        attestations,
        memory_hash=memory_hash,
        principals=principals,
        source_principal="",
        now=now,
        params=params,
    )
    return frozenset(p for p, v in sides.items() if len(v) > 1)


def equivocation_events(
    attestations: Iterable[Attestation],
    *,
    memory_hash: str,
    principals: Mapping[str, str],
    now: datetime,
    params: AttestationParams,
) -> tuple[ReputationEvent, ...]:
    """One ``attestation_equivocation`` per attester of an equivocating principal."""
    held = [a for a in attestations if a.memory_hash == memory_hash and is_live(a, now, params)]
    guilty = equivocating_principals(
        held, memory_hash=memory_hash, principals=principals, now=now, params=params
    )
    attesters = sorted({a.attester_id for a in held if principals.get(a.attester_id) in guilty})
    return tuple(
        ReputationEvent(
            kind=EventKind.ATTESTATION_EQUIVOCATION,
            node_id=who,
            at=now,
            record_hash=memory_hash,
            detail=f"principal {principals[who]} attested both verdicts on one lesson version",
        )
        for who in attesters
    )


def attester_events(
    attestations: Iterable[Attestation],
    *,
    record_hash: str,
    reality_confirmed: bool,
    at: datetime,
    exclude: frozenset[str] = frozenset(),
) -> tuple[ReputationEvent, ...]:
    """The attesters' events once this node's own outcome judged the lesson ``record_hash``.

    Each attester with one verdict on that version is right (``attestation_right``) when its
    verdict is reality's, else wrong (``attestation_wrong``); an attester with both is not
    judged, nor are the ids in ``exclude`` (this node itself). The events are keyed by record
    hash, so an attester is judged once per lesson version however many outcomes follow.
    """
    sides: dict[str, set[str]] = {}
    for a in attestations:
        if a.memory_hash == record_hash and a.attester_id not in exclude:
            sides.setdefault(a.attester_id, set()).add(a.verdict)
    events: list[ReputationEvent] = []
    judged = "confirmed" if reality_confirmed else "contradicted"
    for attester in sorted(sides):
        if len(sides[attester]) != 1:
            continue
        (verdict,) = sides[attester]
        right = (verdict == CONFIRM) == reality_confirmed
        events.append(
            ReputationEvent(
                kind=EventKind.ATTESTATION_RIGHT if right else EventKind.ATTESTATION_WRONG,
                node_id=attester,
                at=at,
                record_hash=record_hash,
                detail=f"attested {verdict}; reality {judged} the lesson",
            )
        )
    return tuple(events)
