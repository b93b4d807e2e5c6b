"""Voter selection, and the one rule of who counts as an independent voter.

**Who counts** (``NetworkView``, this node's own view of the whole network: every admitted
identity it knows, from its registry, with its principal; never a map built from a round's or
a certificate's own members). Where the view holds more than one principal, a voter is a
principal: one voter per principal, and the source's principal never counts. Where it holds
one principal (one operator admitted every node), that operator is the trust root and each of
its identities other than the source is a voter.

**How many a quorum needs** (``NetworkView.needed``): ``min_voters`` independent voters, or,
where the network holds fewer available ones (eligible, and not graylisted by this node), all
of them, but never fewer than ``min_independent`` (2): a network without two independent
voters besides the source cannot certify anything, and its high-stakes lessons wait for an
operator. Graylisting takes voters out of the count, never principals out of the network: it
cannot turn a network of several principals into a one-principal one. A round smaller than
``min_voters`` decides only unanimously (``lamarck.consensus.tally``).

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from lamarck.consensus.params import QuorumParams
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand, is_expert

__all__ = [
    "Candidate",
    "NetworkView",
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
class NetworkView:
    """This node's own view of the network: every admitted identity it knows -> its principal.

    Built from the node's registry (its live peers, itself, and any id it is asked about);
    unknown or revoked ids are absent and count for nothing. Counting by principal, which
    identities are one voter, and how large a quorum must be are all read from here, so that
    voter choice, the tally and certificate verification apply one rule.
    """

    principal_of: Mapping[str, str]
    # Ids this node would not ask to vote (graylisted here): they count toward the network's
    # principals, not toward the voters a quorum can have.
    unavailable: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        known = {i: p for i, p in self.principal_of.items() if i and p}
        object.__setattr__(self, "principal_of", MappingProxyType(known))
        object.__setattr__(self, "unavailable", frozenset(self.unavailable))

    @property
    def principals(self) -> frozenset[str]:
        """The distinct principals the network holds, as far as this node knows."""
        return frozenset(self.principal_of.values())

    @property
    def by_principal(self) -> bool:
        """Whether voters are principals (more than one) rather than identities (one)."""
        return len(self.principals) > 1

    def voter_key(self, node_id: str) -> str:
        """What ``node_id`` counts as: its principal, or itself in a one-principal network
        ("" when this node does not know it as admitted)."""
        principal = self.principal_of.get(node_id, "")
        if not principal:
            return ""
        return principal if self.by_principal else node_id

    def excluded(self, source_id: str) -> frozenset[str]:
        """The voter keys that may not judge a record of ``source_id``: the source itself and,
        across principals, every identity of its principal."""
        keys = {source_id}
        source_key = self.voter_key(source_id)
        if source_key:
            keys.add(source_key)
        return frozenset(keys)

    def eligible(self, source_id: str) -> int:
        """How many independent voters this network holds for a record of ``source_id`` (its
        graylisted identities left out)."""
        out = self.excluded(source_id)
        ids = (i for i in self.principal_of if i != source_id and i not in self.unavailable)
        return len({self.voter_key(i) for i in ids} - out)

    def needed(self, source_id: str, params: QuorumParams) -> int:
        """The fewest voters a quorum on a record of ``source_id`` needs here: ``min_voters``,
        or every available voter where fewer exist, never fewer than ``min_independent``."""
        return max(params.min_independent, min(params.min_voters, self.eligible(source_id)))


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
    view: NetworkView,
    rng: random.Random,
    quorum: QuorumParams,
    reputation: ReputationParams,
    self_id: str = "",
) -> VoterSelection:
    """Choose up to ``quorum.voters`` voters for a record signed by ``source_id``.

    ``self_id`` is the choosing node, a candidate asked last (after every other candidate, and
    after any other identity of its principal): it holds the record because it has no proof
    of it yet, so it takes a seat only where its peers alone are too few.

    ``view`` is this node's view of the whole network (``NetworkView``): it says whether
    voters are principals and how many a quorum needs (``NetworkView.needed``). ``enough`` is
    false when fewer than that are eligible: no quorum can be formed and the record stays
    pending. The answer depends only on the candidates (not their order) and the RNG state.
    """
    by_principal = view.by_principal
    source_principal = view.principal_of.get(source_id, "")
    eligible = sorted(
        (
            c
            for c in candidates
            if c.admitted
            and c.node_id != source_id
            and c.band is not PeerBand.GRAYLISTED
            and c.principal
            and not (by_principal and source_principal and c.principal == source_principal)
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
            if held is None or _level(c, self_id) > _level(held, self_id):
                best[c.principal] = c
        unique = [c for c in unique if best[c.principal] is c]
    mine = [c for c in unique if c.node_id == self_id]
    unique = [c for c in unique if c.node_id != self_id]
    experts = [c for c in unique if c.expertise is not None and is_expert(c.expertise, reputation)]
    expert_ids = {c.node_id for c in experts}
    others = [c for c in unique if c.node_id not in expert_ids]
    chosen = tuple((experts + others + mine)[: quorum.voters])
    return VoterSelection(voters=chosen, enough=len(chosen) >= view.needed(source_id, quorum))


def _level(c: Candidate, self_id: str) -> float:
    if c.node_id == self_id:
        return -2.0  # below any peer of its principal, known expertise or not
    return -1.0 if c.expertise is None else c.expertise
