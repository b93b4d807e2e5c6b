"""Voter selection: who is asked to vote on a high-stakes record.

Eligible: admitted, not the record's source, not graylisted, with a known principal; where the
network has more than one principal, not of the source's principal, and one voter per principal
(fifty keys of one operator are one voter). Experts in the record's domain are asked first;
within each group the order comes from a seeded ``random.Random``, so an attacker cannot know
in advance whom it would have to corrupt, and a test can replay the choice.

``n`` voters tolerate ``f = (n - 1) // 3`` faulty ones: a record is accepted with ``2f + 1``
VALIDATE and rejected with ``f + 1`` CONTRADICT (``lamarck.consensus.tally``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from lamarck.consensus.params import QuorumParams
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand, is_expert

__all__ = [
    "Candidate",
    "VoterSelection",
    "accept_threshold",
    "fault_tolerance",
    "reject_threshold",
    "select_voters",
]


def fault_tolerance(n: int) -> int:
    """How many faulty voters ``n`` voters tolerate: ``(n - 1) // 3``."""
    if n < 1:
        raise ValueError("a quorum needs at least one voter")
    return (n - 1) // 3


def accept_threshold(n: int) -> int:
    """VALIDATE votes (distinct voters and principals) that accept: ``2f + 1``."""
    return 2 * fault_tolerance(n) + 1


def reject_threshold(n: int) -> int:
    """CONTRADICT votes that reject: ``f + 1`` (at least one of them honest)."""
    return fault_tolerance(n) + 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """A peer that might vote: its principal, admission, band and expertise in the domain.

    ``expertise`` is None where this node knows nothing of the peer in that domain.
    """

    node_id: str
    principal: str
    admitted: bool
    band: PeerBand
    expertise: float | None = None


@dataclass(frozen=True, slots=True)
class VoterSelection:
    """The chosen voters, in the order they were chosen, and what they tolerate."""

    voters: tuple[Candidate, ...]
    enough: bool

    @property
    def n(self) -> int:
        """How many voters were chosen."""
        return len(self.voters)

    @property
    def f(self) -> int:
        """Faulty voters tolerated (0 if none were chosen)."""
        return fault_tolerance(self.n) if self.voters else 0

    @property
    def principal_of(self) -> dict[str, str]:
        """Voter id -> principal, for the tally's electorate."""
        return {c.node_id: c.principal for c in self.voters}


def select_voters(
    candidates: Iterable[Candidate],
    *,
    source_id: str,
    source_principal: str,
    by_principal: bool,
    rng: random.Random,
    quorum: QuorumParams,
    reputation: ReputationParams,
) -> VoterSelection:
    """Choose up to ``quorum.voters`` voters for a record signed by ``source_id``.

    ``by_principal`` is true where the network has more than one principal
    (``lamarck.reputation.principals.counts_by_principal``). ``enough`` is false when fewer
    than ``quorum.min_voters`` are eligible: no quorum can be formed and the record stays
    pending. The answer depends only on the candidates (not their order) and the RNG state.
    """
    eligible = sorted(
        (
            c
            for c in candidates
            if c.admitted
            and c.node_id != source_id
            and c.band is not PeerBand.GRAYLISTED
            and c.principal
            and not (by_principal and c.principal == source_principal)
        ),
        key=lambda c: c.node_id,
    )
    # Duplicated ids (a candidate listed twice) are one candidate.
    unique = list({c.node_id: c for c in eligible}.values())
    rng.shuffle(unique)
    if by_principal:
        best: dict[str, Candidate] = {}
        for c in unique:
            held = best.get(c.principal)
            # The most expert identity speaks for its principal; ties keep the shuffled first.
            if held is None or _level(c) > _level(held):
                best[c.principal] = c
        unique = [c for c in unique if best[c.principal] is c]
    experts = [c for c in unique if c.expertise is not None and is_expert(c.expertise, reputation)]
    expert_ids = {c.node_id for c in experts}
    others = [c for c in unique if c.node_id not in expert_ids]
    chosen = tuple((experts + others)[: quorum.voters])
    return VoterSelection(voters=chosen, enough=len(chosen) >= quorum.min_voters)


def _level(c: Candidate) -> float:
    return -1.0 if c.expertise is None else c.expertise
