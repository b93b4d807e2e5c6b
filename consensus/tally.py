"""``tally(electorate, votes, params) -> Pending | Accepted | Rejected``: the quorum count.

A pure function of values (etcd raft's ``quorum/majority.go`` in spirit). Of the votes given,
only those count that (1) name the electorate's record, (2) come from one of its voters,
(3) were made before the round closed, and (4) carry a valid signature by that voter's key.
A voter that cast votes with different verdicts counts for nothing (it equivocated); copies of
one verdict count once. Then, over ``n`` voters tolerating ``f = (n - 1) // 3`` faults:

* **rejected** with at least ``f + 1`` CONTRADICT (at least one of them is honest);
* otherwise **accepted** with at least ``2f + 1`` VALIDATE;
* otherwise **pending**.

Both are counted in independent voters: distinct principals where the network has more than
one (``Electorate.by_principal``), distinct voter ids otherwise. Rejection is checked first:
when honest evidence is split on a high-stakes claim, it is not believed (fail closed).
ABSTAIN votes count for neither side.

An electorate smaller than the quorum it needs (``Electorate.needed``: ``min_voters``, or
fewer where the network holds fewer independent voters, ``NetworkView.needed``) is pending.
An electorate smaller than ``min_voters`` tolerates no fault: one liar must decide nothing, so
it accepts only with a VALIDATE from every voter and rejects only with a CONTRADICT from every
voter; a split round stays pending (the record is not believed, and its source is not charged
on one voter's word).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from types import MappingProxyType

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.voters import accept_threshold, fault_tolerance, reject_threshold
from lamarck.consensus.votes import Verdict, verdict_of, verify_vote, vote_digest
from lamarck.errors import InvalidRecord, VerificationError
from lamarck.proto.timefmt import parse_ts
from lamarck.proto.vote import Vote

__all__ = [
    "Accepted",
    "Electorate",
    "IgnoreReason",
    "IgnoredVote",
    "Pending",
    "Rejected",
    "TallyResult",
    "tally",
]


@dataclass(frozen=True, slots=True)
class Electorate:
    """One voting round on one record: who may vote (id -> principal) and when it closes."""

    record_hash: str
    voters: Mapping[str, str]
    opened_at: datetime
    closes_at: datetime
    by_principal: bool
    # The fewest voters this round needs (``NetworkView.needed``); None: ``min_voters``.
    needed: int | None = None

    def __post_init__(self) -> None:
        if not self.record_hash:
            raise ValueError("Electorate.record_hash must not be empty")
        if self.opened_at.tzinfo is None or self.closes_at.tzinfo is None:
            raise ValueError("Electorate times must be timezone-aware")
        if self.closes_at < self.opened_at:
            raise ValueError("Electorate.closes_at must not be before opened_at")
        if any(not v or not p for v, p in self.voters.items()):
            raise ValueError("every voter needs an id and a principal")
        if self.needed is not None and self.needed < 1:
            raise ValueError("Electorate.needed must be at least 1")
        object.__setattr__(self, "voters", MappingProxyType(dict(self.voters)))

    @classmethod
    def open(
        cls,
        record_hash: str,
        voters: Mapping[str, str],
        *,
        now: datetime,
        by_principal: bool,
        params: QuorumParams,
        needed: int | None = None,
    ) -> Electorate:
        """A round opening ``now`` and closing ``params.vote_timeout_s`` later."""
        return cls(
            record_hash=record_hash,
            voters=voters,
            opened_at=now,
            closes_at=now + timedelta(seconds=params.vote_timeout_s),
            by_principal=by_principal,
            needed=needed,
        )

    @property
    def n(self) -> int:
        """How many voters the round has."""
        return len(self.voters)

    @property
    def f(self) -> int:
        """Faulty voters tolerated (0 for an empty round)."""
        return fault_tolerance(self.n) if self.voters else 0


class IgnoreReason(StrEnum):
    """Why a vote counted for nothing."""

    WRONG_RECORD = "wrong_record"
    NOT_A_VOTER = "not_a_voter"
    LATE = "late"
    FORGED = "forged"
    DUPLICATE = "duplicate"
    CONFLICTING = "conflicting"


@dataclass(frozen=True, slots=True)
class IgnoredVote:
    """A vote that counted for nothing, and why."""

    vote: Vote
    reason: IgnoreReason


@dataclass(frozen=True, slots=True)
class TallyResult:
    """The counted votes per verdict, the ignored ones, and the thresholds that applied."""

    validating: tuple[Vote, ...]
    contradicting: tuple[Vote, ...]
    abstaining: tuple[Vote, ...]
    ignored: tuple[IgnoredVote, ...]
    validate_count: int
    contradict_count: int
    accept_at: int
    reject_at: int
    # Why this answer, snake_case: "accepted", "contradicted", "awaiting_votes", "too_few_voters".
    reason: str

    @property
    def counted(self) -> tuple[Vote, ...]:
        """Every vote that counted, whatever its verdict (a certificate holds these)."""
        return self.validating + self.contradicting + self.abstaining


@dataclass(frozen=True, slots=True)
class Pending(TallyResult):
    """Neither threshold is met (yet): the record stays quarantined."""


@dataclass(frozen=True, slots=True)
class Accepted(TallyResult):
    """At least ``2f + 1`` independent VALIDATE and fewer than ``f + 1`` CONTRADICT."""


@dataclass(frozen=True, slots=True)
class Rejected(TallyResult):
    """At least ``f + 1`` independent CONTRADICT."""


def _first_flaw(vote: Vote, electorate: Electorate) -> IgnoreReason | None:
    if vote.memory_hash != electorate.record_hash:
        return IgnoreReason.WRONG_RECORD
    if vote.voter_id not in electorate.voters:
        return IgnoreReason.NOT_A_VOTER
    if parse_ts(vote.created_at) > electorate.closes_at:
        return IgnoreReason.LATE
    # Last: the only costly check, run for votes that would otherwise count.
    try:
        verify_vote(vote)
    except (VerificationError, InvalidRecord):
        return IgnoreReason.FORGED
    return None


def _independent(votes: Iterable[Vote], electorate: Electorate) -> int:
    if electorate.by_principal:
        return len({electorate.voters[v.voter_id] for v in votes})
    return len({v.voter_id for v in votes})


def tally(
    electorate: Electorate, votes: Iterable[Vote], params: QuorumParams
) -> Pending | Accepted | Rejected:
    """Count ``votes`` for ``electorate``: ``Pending``, ``Accepted`` or ``Rejected``."""
    ignored: list[IgnoredVote] = []
    by_voter: dict[str, list[Vote]] = {}
    for vote in votes:
        flaw = _first_flaw(vote, electorate)
        if flaw is None:
            by_voter.setdefault(vote.voter_id, []).append(vote)
        else:
            ignored.append(IgnoredVote(vote, flaw))
    counted: dict[Verdict, list[Vote]] = {v: [] for v in Verdict}
    for voter in sorted(by_voter):
        cast = sorted(by_voter[voter], key=vote_digest)
        if len({vote.verdict for vote in cast}) > 1:
            ignored.extend(IgnoredVote(v, IgnoreReason.CONFLICTING) for v in cast)
            continue
        counted[verdict_of(cast[0])].append(cast[0])
        ignored.extend(IgnoredVote(v, IgnoreReason.DUPLICATE) for v in cast[1:])
    n = electorate.n
    needed = params.min_voters if electorate.needed is None else electorate.needed
    # A round smaller than min_voters tolerates no fault: either side needs every voter.
    small = n < params.min_voters
    accept_at = (n if small else accept_threshold(n)) if n else 1
    reject_at = (n if small else reject_threshold(n)) if n else 1
    validate_count = _independent(counted[Verdict.VALIDATE], electorate)
    contradict_count = _independent(counted[Verdict.CONTRADICT], electorate)
    kind: type[Pending] | type[Accepted] | type[Rejected] = Pending
    reason = "awaiting_votes"
    if n < needed:
        reason = "too_few_voters"
    elif contradict_count >= reject_at:
        kind, reason = Rejected, "contradicted"
    elif validate_count >= accept_at:
        kind, reason = Accepted, "accepted"
    return kind(
        validating=tuple(counted[Verdict.VALIDATE]),
        contradicting=tuple(counted[Verdict.CONTRADICT]),
        abstaining=tuple(counted[Verdict.ABSTAIN]),
        ignored=tuple(ignored),
        validate_count=validate_count,
        contradict_count=contradict_count,
        accept_at=accept_at,
        reject_at=reject_at,
        reason=reason,
    )
