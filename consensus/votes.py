"""Votes: a voter's signed verdict on one exact record, from its own outcomes only.

The record is ``lamarck.proto.vote.Vote`` and its signature is made and checked by
``lamarck.proto.signing`` (``RecordKind.vote``, the voter id bound to the key); this module
holds the rules: what a voter may say given its evidence, and how a vote is made and checked.

**A voter votes from its own empirical evidence only.** Holding the same lesson is not
evidence: without outcomes of its own on that operation, a voter abstains. The evidence of a
vote is the ids of the outcomes on the side it took.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lamarck.consensus.params import QuorumParams
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.signing import RecordKind, sign_object, verify_object
from lamarck.proto.timefmt import format_ts
from lamarck.proto.vote import Vote

__all__ = [
    "VOTER_ID_PATH",
    "OwnOutcome",
    "Verdict",
    "make_vote",
    "verdict_from_outcomes",
    "verdict_of",
    "verify_vote",
    "vote_digest",
]

#: Where a vote names its signer; verification binds that id to the signing key.
VOTER_ID_PATH: tuple[str, ...] = ("voter_id",)


class Verdict(StrEnum):
    """What a voter says about a record; values are the wire words of ``proto.vote``."""

    VALIDATE = "confirm"
    CONTRADICT = "contradict"
    ABSTAIN = "abstain"


@dataclass(frozen=True, slots=True)
class OwnOutcome:
    """One of the voter's own outcomes on the record's operation: did the task pass?"""

    outcome_id: str
    success: bool


def verdict_from_outcomes(
    outcomes: Iterable[OwnOutcome], params: QuorumParams
) -> tuple[Verdict, tuple[str, ...], float]:
    """The verdict the voter's own outcomes support, its evidence ids and its confidence.

    The side with more outcomes wins if it has at least ``min_outcomes_for_verdict``; a tie or
    too few outcomes abstains. Confidence is the winning side's share of the outcomes.
    """
    unique = {o.outcome_id: o for o in outcomes}
    passed = sorted(o.outcome_id for o in unique.values() if o.success)
    failed = sorted(o.outcome_id for o in unique.values() if not o.success)
    total = len(passed) + len(failed)
    if len(passed) > len(failed) and len(passed) >= params.min_outcomes_for_verdict:
        return Verdict.VALIDATE, tuple(passed), len(passed) / total
    if len(failed) > len(passed) and len(failed) >= params.min_outcomes_for_verdict:
        return Verdict.CONTRADICT, tuple(failed), len(failed) / total
    return Verdict.ABSTAIN, (), 0.0


def make_vote(
    *,
    identity: NodeIdentity,
    memory_id: str,
    memory_hash: str,
    outcomes: Iterable[OwnOutcome],
    now: datetime,
    rng: random.Random,
    params: QuorumParams,
) -> Vote:
    """The voter's signed vote on the record ``memory_hash``, from its own ``outcomes``."""
    verdict, evidence, confidence = verdict_from_outcomes(outcomes, params)
    obj = {
        "schema_version": "1.0",
        "kind": "vote",
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "memory_id": memory_id,
        "memory_hash": memory_hash,
        "voter_id": identity.node_id,
        "verdict": verdict.value,
        "confidence": confidence,
        "outcome_ids": list(evidence),
        "created_at": format_ts(now),
    }
    return Vote.from_obj(sign_object(RecordKind.vote, obj, identity))


def verify_vote(vote: Vote) -> None:
    """Check the vote's signature by its voter's key; ``VerificationError`` if it fails."""
    verify_object(RecordKind.vote, vote.to_obj(), signer_id_path=VOTER_ID_PATH)


def verdict_of(vote: Vote) -> Verdict:
    """The vote's verdict as a ``Verdict``."""
    return Verdict(vote.verdict)


def vote_digest(vote: Vote) -> str:
    """The signed hash naming this exact vote ("" for an unsigned one)."""
    return vote.signature.hash if vote.signature is not None else ""
