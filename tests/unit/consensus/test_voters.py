"""Voter choice: admitted, not the source, not graylisted, one per principal, experts first."""

from __future__ import annotations

import random

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.voters import (
    Candidate,
    NetworkView,
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


def view_of(cands: list[Candidate], source_principal: str = "op_source") -> NetworkView:
    """The network as the choosing node sees it: the candidates and the source."""
    return NetworkView({c.node_id: c.principal for c in cands} | {SOURCE: source_principal})


def choose(cands: list[Candidate], seed: int = 1, source_principal: str = "op_source") -> list[str]:
    picked = select_voters(
        cands,
        source_id=SOURCE,
        view=view_of(cands, source_principal),
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
        view=view_of(sybils + honest),
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


def select(cands: list[Candidate], view: NetworkView, seed: int = 0) -> tuple[list[str], bool]:
    picked = select_voters(
        cands, source_id=SOURCE, view=view, rng=random.Random(seed), quorum=QUORUM, reputation=REP
    )
    return [c.node_id for c in picked.voters], picked.enough


def network(principals: int, keys_each: int = 2) -> tuple[list[Candidate], NetworkView]:
    """``principals`` principals of ``keys_each`` keys; the source holds one key of op0."""
    cands = [
        cand(10 * p + k, principal=f"op{p}") for p in range(principals) for k in range(keys_each)
    ]
    return cands, view_of(cands, source_principal="op0")


def test_in_a_one_principal_network_identities_other_than_the_source_are_voters() -> None:
    cands, view = network(1, keys_each=6)
    chosen, enough = select(cands, view)
    assert enough and len(chosen) == 4 and view.needed(SOURCE, QUORUM) == 4
    # Three identities besides the source: a quorum of all three.
    few, few_view = network(1, keys_each=3)
    chosen, enough = select(few, few_view)
    assert enough and len(chosen) == 3 and few_view.needed(SOURCE, QUORUM) == 3


def test_with_two_principals_nobody_besides_the_sources_principal_can_certify_alone() -> None:
    cands, view = network(2, keys_each=5)
    chosen, enough = select(cands, view)
    # One principal other than the source's: one voter, below the minimum of two.
    assert len(chosen) == 1 and not enough
    assert view.eligible(SOURCE) == 1 and view.needed(SOURCE, QUORUM) == 2


def test_with_four_principals_the_three_besides_the_sources_form_a_quorum() -> None:
    cands, view = network(4)
    chosen, enough = select(cands, view)
    assert enough and len(chosen) == 3
    assert {c.principal for c in cands if c.node_id in chosen} == {"op1", "op2", "op3"}
    assert view.needed(SOURCE, QUORUM) == 3


def test_with_ten_principals_a_quorum_needs_min_voters_and_asks_up_to_voters() -> None:
    cands, view = network(10)
    wide = QuorumParams(voters=7)
    picked = select_voters(
        cands, source_id=SOURCE, view=view, rng=random.Random(0), quorum=wide, reputation=REP
    )
    assert picked.enough and picked.n == 7
    assert len({c.principal for c in picked.voters}) == 7
    assert "op0" not in {c.principal for c in picked.voters}
    assert view.needed(SOURCE, wide) == 4


def test_a_source_with_no_known_principal_leaves_only_its_own_key_out() -> None:
    cands = [cand(k) for k in range(5)]
    view = NetworkView({c.node_id: c.principal for c in cands})
    assert view.eligible(SOURCE) == 5 and view.needed(SOURCE, QUORUM) == 4


def test_a_single_principal_network_chooses_among_identities() -> None:
    cands = [cand(k, principal="operator") for k in range(6)]
    assert len(choose(cands, source_principal="operator")) == 4


def test_graylisted_voters_leave_the_count_of_voters_but_not_of_principals() -> None:
    # One operator, five nodes: the source, three honest, one graylisted here. The three
    # honest identities are a quorum (unanimous) instead of waiting for a fourth.
    cands, _ = network(1, keys_each=4)
    bad = cands[-1].node_id
    cands[-1] = cand(3, node_id=bad, principal="op0", band=PeerBand.GRAYLISTED)
    view = NetworkView(view_of(cands, "op0").principal_of, frozenset({bad}))
    chosen, enough = select(cands, view)
    assert enough and len(chosen) == 3 and bad not in chosen
    # Two principals, the other one graylisted: still counted by principal, so the source's
    # own principal's keys never become voters; nothing can be certified.
    two, two_view = network(2, keys_each=3)
    gray = frozenset(c.node_id for c in two if c.principal == "op1")
    two_view = NetworkView(two_view.principal_of, gray)
    assert two_view.by_principal and two_view.eligible(SOURCE) == 0
    assert not select(two, two_view)[1]


def test_the_choosing_node_is_asked_last_and_only_where_its_peers_are_too_few() -> None:
    me = cand(99, principal="op_me", expertise=0.95)
    wide = QuorumParams(voters=4)
    peers = [cand(k) for k in range(6)]
    for seed in range(10):
        picked = select_voters(
            [me, *peers],
            source_id=SOURCE,
            view=view_of([me, *peers]),
            rng=random.Random(seed),
            quorum=wide,
            reputation=REP,
            self_id=me.node_id,
        )
        assert me not in picked.voters and picked.n == 4
    few = [cand(k) for k in range(3)]
    picked = select_voters(
        [me, *few],
        source_id=SOURCE,
        view=view_of([me, *few]),
        rng=random.Random(0),
        quorum=wide,
        reputation=REP,
        self_id=me.node_id,
    )
    assert picked.voters[-1] == me and picked.n == 4 and picked.enough
    # Another identity of its principal speaks for it before it does.
    twin = cand(98, principal="op_me")
    picked = select_voters(
        [me, twin, *few],
        source_id=SOURCE,
        view=view_of([me, twin, *few]),
        rng=random.Random(0),
        quorum=wide,
        reputation=REP,
        self_id=me.node_id,
    )
    assert twin in picked.voters and me not in picked.voters
