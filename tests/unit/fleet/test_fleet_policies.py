"""Fleet workloads, agent policies and tallies: pure, deterministic from a seed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet.agents import (
    Advice,
    AgentMemory,
    Attempt,
    Said,
    attempt_order,
    fabricated_attempts,
    followed_poison,
    poison_shown,
    remember_turn,
    run_attempts,
)
from lamarck.fleet.report import (
    TurnRecord,
    arm_figures,
    evidence_delay_text,
    evidence_table,
    gate_figures,
    learning_figures,
    node_counts,
    quorum_figures,
    quorum_table,
)
from lamarck.fleet.supervisor import FleetSpec
from lamarck.fleet.workloads import (
    WorkloadParams,
    isolated_pitfall,
    make_workload,
    succeeds,
)

P = make_workload("pitfalls", 0, WorkloadParams()).pitfalls[0]


def test_the_same_seed_gives_the_same_workload_and_another_seed_another() -> None:
    a = make_workload("pitfalls", 7, WorkloadParams())
    assert a == make_workload("pitfalls", 7, WorkloadParams())
    assert a.tasks != make_workload("pitfalls", 8, WorkloadParams()).tasks
    assert a.rounds == 6 and len(a.tasks) == 60
    assert all(t.projects[0] != t.projects[1] for t in a.tasks)


def test_agents_on_byzantine_nodes_are_poisoners() -> None:
    w = make_workload("pitfalls", 0, WorkloadParams(nodes=5, agents=10, byzantine_nodes=(4,)))
    assert w.poisoners == {4, 9}


def test_an_unknown_workload_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        make_workload("nope", 0, WorkloadParams())
    assert err.value.reason == "unknown_workload" and "pitfalls" in str(err.value)


def test_the_environment_swaps_forms_when_it_changes() -> None:
    assert succeeds(P, P.working, flipped=False) and not succeeds(P, P.failing, flipped=False)
    assert succeeds(P, P.failing, flipped=True) and not succeeds(P, P.working, flipped=True)


def test_the_isolated_copy_has_the_same_shape_and_belongs_to_one_agent() -> None:
    mine = isolated_pitfall(P, 3)
    assert mine.failing != P.failing and mine.failing.endswith("@a3")
    assert succeeds(mine, mine.working, flipped=False)


def test_without_advice_the_agent_tries_the_known_failing_form_first() -> None:
    order, deciding = attempt_order(
        P, [Advice(P.failing, ""), Advice(P.working, "")], AgentMemory()
    )
    assert order == (P.failing, P.working) and deciding == ()


HONEST = f"Prefer `{P.working}` over `{P.failing}` for {P.target}."
POISON = f"Prefer `{P.failing}` over `{P.working}` for {P.target}."
PROVEN, CORROBORATED, UNVERIFIED = 0, 1, 2


def test_a_lesson_against_the_failing_form_moves_the_working_one_first() -> None:
    advice = Advice(P.failing, "...", ("L1",), (Said("L1", HONEST, PROVEN, 0, 0.5),))
    order, deciding = attempt_order(P, [advice], AgentMemory())
    assert order == (P.working, P.failing) and deciding == ("L1",)


def test_proven_beats_corroborated_beats_unverified_whatever_the_confidence() -> None:
    def decide(honest: Said, poison: Said) -> tuple[str, ...]:
        advice = [Advice(P.failing, "", (), (honest,)), Advice(P.working, "", (), (poison,))]
        return attempt_order(P, advice, AgentMemory())[0]

    low_proven = Said("L1", HONEST, PROVEN, 0, 0.3)
    assert decide(low_proven, Said("L2", POISON, CORROBORATED, 5, 0.9))[0] == P.working
    assert decide(Said("L1", HONEST, CORROBORATED, 2, 0.3), Said("L2", POISON, PROVEN))[0] == (
        P.failing
    )
    # Within a class: more independent principals, then more confidence; a tie: the form the
    # habit would not try first.
    more = Said("L1", HONEST, CORROBORATED, 3, 0.3)
    assert decide(more, Said("L2", POISON, CORROBORATED, 2, 0.9))[0] == P.working
    tie_h, tie_p = (
        Said("L1", HONEST, CORROBORATED, 2, 0.5),
        Said("L2", POISON, CORROBORATED, 2, 0.5),
    )
    order, deciding = attempt_order(
        P, [Advice(P.failing, "", (), (tie_h,)), Advice(P.working, "", (), (tie_p,))], AgentMemory()
    )
    assert order == (P.working, P.failing) and set(deciding) == {"L1", "L2"}


def test_an_unresolved_conflict_tries_the_side_the_habit_would_not_and_names_both() -> None:
    # The honest side is of this node's own principal (its operator's fleet): the canary.
    sides = (
        Said("L1", HONEST, UNVERIFIED, 0, 0.29, own=True),
        Said("L2", POISON, UNVERIFIED, 0, 0.36),
    )
    advice = Advice(P.failing, "Contested ...", ("L1", "L2"), (), sides)
    order, deciding = attempt_order(P, [advice], AgentMemory())
    assert order == (P.working, P.failing) and set(deciding) == {"L1", "L2"}
    # Two plan-time hints that disagree: the same.
    order, deciding = attempt_order(P, [], AgentMemory(), list(sides))
    assert order == (P.working, P.failing) and set(deciding) == {"L1", "L2"}
    # Another principal's side is a fallback: the habit first, both named.
    strangers = (replace(sides[0], own=False), sides[1])
    order, deciding = attempt_order(P, [replace(advice, unresolved=strangers)], AgentMemory())
    assert order == (P.failing, P.working) and set(deciding) == {"L1", "L2"}
    # Sides that may decide on their own (one class, corroborated): the side against the
    # habit first, so a corroborated lie that agrees with the habit cancels nothing.
    backed = tuple(replace(s, rank=CORROBORATED, independent=2, own=False) for s in sides)
    order, _ = attempt_order(P, [replace(advice, unresolved=backed)], AgentMemory())
    assert order == (P.working, P.failing)
    # A side that agrees with the habit alone moves nothing.
    order, deciding = attempt_order(P, [Advice(P.failing, "", (), (), sides[1:])], AgentMemory())
    assert order == (P.failing, P.working) and deciding == ("L2",)


def test_the_agent_before_the_gate_keeps_its_habit_on_a_tie_or_an_unresolved_conflict() -> None:
    # The gate-off baseline: a tie or a conflict keeps the habit, so a lie that agrees with
    # the habit cancels the honest lesson (the harm the gate removes).
    honest = Said("L1", HONEST, CORROBORATED, 2, 0.5)
    lie = Said("L2", POISON, CORROBORATED, 2, 0.5, poisoned=True)
    tie = [Advice(P.failing, "", (), (honest,)), Advice(P.working, "", (), (lie,))]
    assert attempt_order(P, tie, AgentMemory(), pre_gate=True)[0] == (P.failing, P.working)
    assert attempt_order(P, tie, AgentMemory())[0] == (P.working, P.failing)
    assert followed_poison(P, tie, AgentMemory(), pre_gate=True)
    assert not followed_poison(P, tie, AgentMemory())
    sides = (replace(honest, rank=UNVERIFIED), replace(lie, rank=UNVERIFIED))
    conflict = [Advice(P.failing, "Contested", (), (), sides)]
    assert attempt_order(P, conflict, AgentMemory(), pre_gate=True)[0][0] == P.failing
    # A lone hint is still tried first: the canary is older than the gate.
    lone = [sides[0]]
    assert attempt_order(P, [], AgentMemory(), lone, pre_gate=True)[0][0] == P.working


def test_a_lone_unverified_hint_is_tried_first_and_never_beats_advice() -> None:
    hint = Said("H1", HONEST, UNVERIFIED, 0, 0.29, own=True)
    order, deciding = attempt_order(P, [], AgentMemory(), [hint])
    assert order == (P.working, P.failing) and deciding == ("H1",)
    # Another principal's lone hint is a fallback (before the gate: tried first).
    stranger = replace(hint, own=False)
    order, deciding = attempt_order(P, [], AgentMemory(), [stranger])
    assert order == (P.failing, P.working) and deciding == ("H1",)
    assert attempt_order(P, [], AgentMemory(), [stranger], pre_gate=True)[0][0] == P.working
    lie = Said("H2", POISON, UNVERIFIED, 0, 0.9)
    order, deciding = attempt_order(P, [], AgentMemory(), [lie])
    assert order == (P.failing, P.working) and deciding == ("H2",)
    proven = Advice(P.working, "", (), (Said("L3", POISON, PROVEN, 0, 0.4),))
    order, deciding = attempt_order(P, [proven], AgentMemory(), [hint])
    assert order == (P.failing, P.working) and deciding == ("L3",)


def test_a_decision_follows_a_poison_only_when_the_poison_changed_the_first_attempt() -> None:
    honest = Said("L1", HONEST, UNVERIFIED, 0, 0.29, own=True)
    lie = Said("L2", POISON, UNVERIFIED, 0, 0.36, poisoned=True)
    # Gate off: both are advice and the lie's higher confidence wins: followed.
    off = [
        Advice(P.failing, "", (), (replace(honest, decides=True),)),
        Advice(P.working, "", (), (replace(lie, decides=True),)),
    ]
    assert followed_poison(P, off, AgentMemory())
    # A conflict of unverified sides tries the honest side first, as the honest hint alone
    # is tried: a lie that agrees with the habit changes nothing.
    assert not followed_poison(P, [], AgentMemory(), [honest, lie])
    conflict = Advice(P.failing, "Contested", (), (), (honest, lie))
    assert not followed_poison(P, [conflict], AgentMemory())
    # A lie against the habit from this node's own principal is tried first: followed
    # (the canary's reach, no more); from another principal it is a fallback: not followed.
    flipped_honest = Said("L3", POISON, UNVERIFIED, 0, 0.3)
    flipped_lie = Said("L4", HONEST, UNVERIFIED, 0, 0.3, poisoned=True, own=True)
    assert followed_poison(
        P, [Advice(P.failing, "C", (), (), (flipped_honest, flipped_lie))], AgentMemory()
    )
    stranger_lie = replace(flipped_lie, own=False)
    assert not followed_poison(
        P, [Advice(P.failing, "C", (), (), (flipped_honest, stranger_lie))], AgentMemory()
    )
    assert not followed_poison(P, [], AgentMemory(), [stranger_lie])
    proven = Said("L1", HONEST, PROVEN, 0, 0.29)
    # The lie beside the habit it tells anyway, or beaten by stronger advice: not followed.
    assert not followed_poison(P, [], AgentMemory(), [lie])
    stronger = [Advice(P.failing, "", (), (proven, lie))]
    assert not followed_poison(P, stronger, AgentMemory())
    # No poison at all: never.
    assert not followed_poison(P, [], AgentMemory(), [honest])


def test_without_the_poison_an_unverified_side_left_alone_is_a_hint() -> None:
    # The honest side of a conflict the lie made would have been a plan-time hint without
    # it, so the counterfactual tries it first: a lie that forced the habit is counted.
    honest = Said("L1", HONEST, UNVERIFIED, 0, 0.29, own=True)
    lie = Said("L2", POISON, CORROBORATED, 2, 0.5, poisoned=True)
    held = Advice(P.failing, "C", (), (lie,), ())
    assert not followed_poison(P, [held], AgentMemory())  # the honest lesson not shown at all
    conflict = Advice(P.failing, "C", (), (), (lie, honest))
    order, _ = attempt_order(P, [conflict], AgentMemory())
    assert order[0] == P.working and not followed_poison(P, [conflict], AgentMemory())
    # With the gate off the side left alone is advice.
    off = Advice(P.failing, "C", (), (replace(lie, decides=True),), ())
    order, _ = attempt_order(P, [off], AgentMemory())
    assert order[0] == P.failing and not followed_poison(P, [off], AgentMemory())


def test_the_tally_counts_poisoned_decisions_of_honest_agents_only() -> None:
    def rec(poisoned: bool, poisoner: bool = False) -> TurnRecord:
        return TurnRecord(
            "shared", 0, 0, 0, 0, 0, ("b",), 0, True, False, poisoner, poisoned=poisoned
        )

    records = [rec(True), rec(True), rec(False), rec(True, poisoner=True)]
    assert arm_figures(records, "shared").poisoned_decisions == 2
    assert learning_figures(records)["shared_poisoned_decisions"] == 2.0


def test_the_evidence_table_shows_each_nodes_classes_and_poisoned_decisions() -> None:
    from rich.console import Console

    table = evidence_table(
        ["node1", "node2", "node3"],
        ["honest", "honest", "byzantine"],
        [{"proven_here": 4, "unverified": 2}, None, {"proven_here": 1}],
        [0, 3, 5],
    )
    console = Console(width=120, record=True)
    console.print(table)
    rows = {
        cells[0]: cells[2:]
        for line in console.export_text().splitlines()
        if (cells := [c.strip() for c in line.strip("│ ").split("│")])[0].startswith("node")
    }
    assert rows["node1"] == ["4", "0", "2", "0"]
    assert rows["node2"] == ["-", "-", "-", "3"]
    assert rows["node3"] == ["1", "0", "0", "-"]  # a liar's own decisions are not counted
    text = evidence_delay_text(
        {"honest_imports": 10, "honest_imports_decides": 4, "rounds_until_decides": 1.5}
    )
    assert "10;" in text and "4 came to drive decisions after 1.5 round" in text
    assert "0 corroborated" in text


def test_the_agents_own_fresh_lesson_wins_and_is_named_in_play() -> None:
    memory = remember_turn(
        AgentMemory(), P, (Attempt(P.failing, False), Attempt(P.working, True)), ("L9",)
    )
    order, deciding = attempt_order(P, [], memory)
    assert order == (P.working, P.failing) and deciding == ("L9",)


def test_attempts_stop_at_the_first_form_that_works() -> None:
    got = run_attempts((P.failing, P.working), lambda op: op == P.working)
    assert got == (Attempt(P.failing, False), Attempt(P.working, True))
    assert fabricated_attempts(P)[-1] == Attempt(P.failing, True)


def _rec(arm: str, r: int, agent: int, mistakes: int, poisoner: bool = False) -> TurnRecord:
    ops = ("a", "b") if mistakes else ("b",)
    return TurnRecord(arm, r, agent, 0, 0, 0, ops, mistakes, not mistakes, False, poisoner)


def test_a_mistake_is_a_repeat_only_when_an_earlier_round_made_it() -> None:
    records = [
        _rec("shared", 0, 0, 1),
        _rec("shared", 0, 1, 1),  # same round: not known yet
        _rec("shared", 1, 2, 1),  # known: repeated
        _rec("shared", 1, 3, 1, poisoner=True),  # poisoners are not counted
        _rec("isolated", 0, 0, 1),
        _rec("isolated", 1, 1, 1),
        _rec("isolated", 2, 2, 1),
    ]
    assert arm_figures(records, "shared").repeated_known_mistakes == 1
    figures = learning_figures(records)
    assert figures["isolated_repeated_known_mistakes"] == 2
    assert figures["mistakes_reduction"] == 0.5


def test_node_counts_read_imports_refusals_and_lessons_from_metrics() -> None:
    text = (
        "# TYPE lamarck_imports counter\n"
        'lamarck_imports_total{result="accepted",reason=""} 3.0\n'
        'lamarck_imports_total{result="rejected",reason="bad_signature"} 2.0\n'
        "# TYPE lamarck_lessons gauge\n"
        'lamarck_lessons{status="active"} 7.0\n'
    )
    c = node_counts(text)
    assert c.imported == 3 and c.rejected == {"bad_signature": 2.0}
    assert c.lessons["active"] == 7


def test_fleet_sizes_are_validated() -> None:
    with pytest.raises(ConfigError):
        WorkloadParams(pitfalls=99)
    with pytest.raises(ConfigError):
        WorkloadParams(nodes=2, byzantine_nodes=(5,))


def test_the_poisoners_workload_makes_thirty_percent_of_the_agents_fabricate() -> None:
    w = make_workload("learning-curve-poisoners", 0, WorkloadParams(nodes=5, agents=10))
    assert len(w.poisoners) == 3
    assert make_workload("fleet-learning-curve", 0, WorkloadParams()).poisoners == frozenset()


def test_a_poisoner_share_of_one_is_refused() -> None:
    with pytest.raises(ConfigError):
        WorkloadParams(poisoners_arm_share=1.0)


def test_reputation_rows_show_the_fleet_name_beside_the_id_and_list_refusals() -> None:
    from lamarck.fleet.report import reputation_rows
    from lamarck.reputation.scores import PeerBand
    from lamarck.reputation.table import ReputationRow

    row = ReputationRow(
        peer="lmk1abc",
        principal="op",
        band=PeerBand.GRAYLISTED,
        score=0.12,
        rejected={"bad_signature": 3, "replay": 0},
    )
    long_id = "lmk1" + "a" * 32
    (shown, unnamed) = reputation_rows([row, replace(row, peer=long_id)], {"lmk1abc": "node5"})
    # A label is a claim: beside the id, never instead of it.
    assert shown["peer"] == "node5 lmk1abc"
    assert unnamed["peer"] == long_id[:12] + "…"
    assert shown["band"] == "graylisted"
    assert shown["refused"] == "bad_signature 3"


def test_operators_take_the_honest_nodes_round_robin_and_the_byzantine_their_own(
    tmp_path: Path,
) -> None:
    spec = FleetSpec(directory=tmp_path, nodes=5, byzantine=1, operators=3)
    assert [spec.operator_of(i) for i in range(5)] == [0, 1, 0, 1, 2]
    honest = FleetSpec(directory=tmp_path, nodes=5, operators=2)
    assert [honest.operator_of(i) for i in range(5)] == [0, 1, 0, 1, 0]
    one = FleetSpec(directory=tmp_path, nodes=5, byzantine=1)
    assert {one.operator_of(i) for i in range(5)} == {0}
    for bad in (0, 6):
        with pytest.raises(ConfigError):
            FleetSpec(directory=tmp_path, nodes=5, operators=bad)


def test_own_principals_and_gate_off_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        FleetSpec(directory=tmp_path, nodes=5, byzantine=2, operators=2, own_principals=True)
    assert err.value.details["field"] == "operators"
    with pytest.raises(ConfigError) as err:
        FleetSpec(directory=tmp_path, nodes=5, gate_off=(5,))
    assert err.value.details["field"] == "gate_off"


def test_plausible_liars_lie_on_every_other_pitfall_and_learn_the_rest() -> None:
    work = make_workload("plausible-liars", 0, WorkloadParams(nodes=5, byzantine_nodes=(4,)))
    assert work.lies_on == frozenset(range(0, len(work.pitfalls), 2))
    assert work.lies(0, 0) and not work.lies(0, 1)
    assert make_workload("pitfalls", 0, WorkloadParams()).lies(0, 1)  # every pitfall


def test_gate_figures_split_honest_turns_by_the_nodes_gate() -> None:
    def rec(node: int, poisoned: bool, exposed: bool = True) -> TurnRecord:
        return TurnRecord(
            "shared",
            0,
            node,
            node,
            0,
            0,
            ("b",),
            0,
            True,
            False,
            poisoned=poisoned,
            exposed=exposed,
        )

    records = [rec(0, False, False), rec(1, True), rec(1, True), rec(2, True), rec(2, False)]
    f = gate_figures(records, gate_off=(1,))
    assert (f["gate_on_turns"], f["gate_on_poisoned_decisions"]) == (3.0, 1.0)
    assert (f["gate_off_turns"], f["gate_off_poisoned_decisions"]) == (2.0, 2.0)
    # Decisions a poison was before, followed or not.
    assert (f["gate_on_exposed_decisions"], f["gate_off_exposed_decisions"]) == (2.0, 2.0)


def test_a_poison_is_shown_as_advice_a_conflict_side_or_a_hint() -> None:
    lie = Said("L2", POISON, UNVERIFIED, 0, 0.3, poisoned=True)
    honest = Said("L1", HONEST, UNVERIFIED, 0, 0.3)
    assert not poison_shown([Advice(P.failing, "", (), (honest,))], [honest])
    assert poison_shown([Advice(P.failing, "", (), (lie,))])
    assert poison_shown([Advice(P.failing, "", (), (), (honest, lie))])
    assert poison_shown([], [lie])


def test_quorum_figures_count_decisions_and_pending_rounds_by_reason() -> None:
    figures = quorum_figures(
        [
            ("accepted", "accepted"),
            ("rejected", "contradicted"),
            ("certified", ""),
            ("pending", "too_few_voters"),
            ("pending", "too_few_voters"),
            ("pending", "awaiting_votes"),
        ]
    )
    assert figures["quorum_records"] == 6
    assert (figures["quorum_accepted"], figures["quorum_rejected"]) == (1, 1)
    assert figures["quorum_certified"] == 1 and figures["quorum_pending"] == 3
    assert figures["quorum_pending_too_few_voters"] == 2
    assert figures["quorum_pending_awaiting_votes"] == 1
    table = quorum_table(figures)
    assert table.caption == "2 of 6 decided by a quorum (1 more taken on a peer's certificate)"
