"""Voter choice: admitted, not the source, not graylisted, one per principal, experts first."""

from __future__ import annotations

import random

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.voters import (
    Candidate,
    accept_threshold,
    fault_tolerance,
    reject_threshold,
    select_voters,
)
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand

QUORUM = QuorumParams(voters=4)
REP = ReputationParams()
SOURCE = "lmk1source"


def cand(k: int, **over: object) -> Candidate:
    fields: dict[str, object] = {
        "node_id": f"lmk1n{k:02d}",
        "principal": f"op{k}",
        "admitted": True,
        "band": PeerBand.NEUTRAL,
        "expertise": None,
    }
    fields.update(over)
    return Candidate(**fields)  # type: ignore[arg-type]


def choose(cands: list[Candidate], seed: int = 1, by_principal: bool = True) -> list[str]:
    picked = select_voters(
        cands,
        source_id=SOURCE,
        source_principal="op_source",
        by_principal=by_principal,
        rng=random.Random(seed),
        quorum=QUORUM,
        reputation=REP,
    )
    return [c.node_id for c in picked.voters]


def test_n_voters_tolerate_a_third_minus_one_faults() -> None:
    assert [fault_tolerance(n) for n in (1, 3, 4, 6, 7, 10)] == [0, 0, 1, 1, 2, 3]
    assert (accept_threshold(7), reject_threshold(7)) == (5, 3)
    assert (accept_threshold(4), reject_threshold(4)) == (3, 2)


def test_the_unadmitted_the_source_its_principal_and_the_graylisted_are_never_chosen() -> None:
    bad = [
        cand(1, admitted=False),
        cand(2, node_id=SOURCE),
        cand(3, principal="op_source"),
        cand(4, band=PeerBand.GRAYLISTED),
        cand(5, principal=""),
    ]
    good = [cand(k) for k in range(10, 16)]
    for seed in range(20):
        chosen = choose(bad + good, seed)
        assert len(chosen) == 4
        assert set(chosen) <= {c.node_id for c in good}


def test_one_voter_per_principal() -> None:
    sybils = [cand(k, principal="mallory") for k in range(20)]
    honest = [cand(k) for k in range(30, 33)]
    picked = select_voters(
        sybils + honest,
        source_id=SOURCE,
        source_principal="op_source",
        by_principal=True,
        rng=random.Random(3),
        quorum=QUORUM,
        reputation=REP,
    )
    assert len({c.principal for c in picked.voters}) == picked.n == 4
    assert picked.enough


def test_experts_in_the_domain_are_asked_first() -> None:
    experts = [cand(k, expertise=0.8) for k in range(4)]
    novices = [cand(k, expertise=0.3) for k in range(10, 30)]
    for seed in range(10):
        assert set(choose(novices + experts, seed)) == {c.node_id for c in experts}


def test_the_choice_is_replayable_from_the_seed_and_independent_of_input_order() -> None:
    cands = [cand(k) for k in range(20)]
    assert choose(cands, 7) == choose(list(reversed(cands)), 7)
    assert len({tuple(choose(cands, s)) for s in range(10)}) > 1


def test_too_few_eligible_voters_is_not_enough_for_a_quorum() -> None:
    picked = select_voters(
        [cand(k) for k in range(3)],
        source_id=SOURCE,
        source_principal="op_source",
        by_principal=True,
        rng=random.Random(0),
        quorum=QUORUM,
        reputation=REP,
    )
    assert picked.n == 3 and not picked.enough


def test_a_single_principal_network_chooses_among_identities() -> None:
    cands = [cand(k, principal="operator") for k in range(6)]
    assert len(choose(cands, by_principal=False)) == 4
