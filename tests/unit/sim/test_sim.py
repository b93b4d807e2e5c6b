"""The simulator: calibrated against the real network, and running the shipped cores."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

import pytest

from lamarck.consensus import taint as taint_core
from lamarck.consensus.params import QuorumParams
from lamarck.errors import ConfigError
from lamarck.gossip import router as router_core
from lamarck.learning import attribution as attribution_core
from lamarck.learning.attribution import Attribution, Effect
from lamarck.learning.outcomes import ToolStep, Verdict
from lamarck.node.lessons import outcomes as lessons_outcomes
from lamarck.policy import decision as decision_core
from lamarck.policy.decision import ImportDecision, ImportOutcome
from lamarck.proto.outcome import Outcome
from lamarck.reputation.params import ReputationParams
from lamarck.sim.calibration import push_calibration, tree_depth
from lamarck.sim.params import SimParams
from lamarck.sim.records import LessonKind, honest_lesson, subtle_poison
from lamarck.sim.scenarios import identities_for, run_main, run_sybil, workload_pitfalls
from lamarck.sim.state import SimCores


@pytest.mark.parametrize("n", [5, 10, 20])
def test_direct_push_sends_n_minus_1_records_per_lesson_in_one_hop(n: int) -> None:
    figs = push_calibration(n, 32, lessons=3, seed=7)
    assert figs.messages_per_lesson == n - 1
    assert figs.max_hops == 1
    assert figs.all_reached


@pytest.mark.parametrize("n", [5, 10, 20])
def test_tree_sends_n_minus_1_records_at_depth_ceil_log6_n(n: int) -> None:
    figs = push_calibration(n, 0, lessons=3, seed=7)
    assert figs.messages_per_lesson == n - 1
    assert figs.max_hops == tree_depth(n, 6) == math.ceil(math.log(n, 6))
    assert figs.all_reached


def test_simulator_runs_the_shipped_import_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    # If every receiver rejects, nobody forwards: only the origin's six tree children get it.
    def reject_all(*_args: object, **_kw: object) -> ImportDecision:
        return ImportDecision(outcome=ImportOutcome.REJECT, reasons=("patched",))

    monkeypatch.setattr(decision_core, "decide_import", reject_all)
    figs = push_calibration(20, 0, lessons=2, seed=7)
    assert figs.messages_per_lesson == 6
    assert not figs.all_reached


def test_simulator_lays_trees_with_the_shipped_tree_order(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = router_core.tree_order

    def spy(content_hash: str, origin: str, members: Iterable[str]) -> list[str]:
        calls.append(content_hash)
        return original(content_hash, origin, members)

    monkeypatch.setattr(router_core, "tree_order", spy)
    push_calibration(20, 0, lessons=2, seed=7)
    assert len(set(calls)) == 2


def test_same_seed_gives_the_same_figures() -> None:
    params = SimParams(nodes=30, byzantine_share=0.2, lessons=3, attack_records=3, horizon_s=120)
    ids = identities_for(30, 3)
    a = run_main(dataclasses.replace(params, seed=3), SimCores(), ids).values
    b = run_main(dataclasses.replace(params, seed=3), SimCores(), identities_for(30, 3)).values
    assert a == b


def test_overt_poison_is_held_everywhere_and_a_filter_hit_alone_graylists_nobody() -> None:
    params = SimParams(
        nodes=30,
        byzantine_share=0.1,
        lessons=3,
        attackers=1,
        attack_records=6,
        loss=0.0,
        horizon_s=120,
        seed=5,
    )
    figs = run_main(params, SimCores(), identities_for(30, 5)).values
    assert figs["overt_accepted"] == 0
    # Filters hold; only provable faults and reality charge: the flood the filters catch
    # costs its sender nothing, so it is graylisted only where reality judged its subtle
    # poison (every honest node graylisted it when filter hits were charged as poison).
    assert figs["graylisted_by_all_share"] < 0.5


def test_fleet_agents_write_the_simulated_lessons() -> None:
    p = workload_pitfalls(1)[0]
    good, bad = honest_lesson(p), subtle_poison(p)
    assert good is not None and bad is not None
    assert (good.prefer, good.avoid) == (p.working, p.failing)
    assert good.reversed_by(bad)
    assert LessonKind.SUBTLE != LessonKind.HONEST


def test_sybil_flood_is_capped_by_endorser_and_holds_one_voter_seat_at_most() -> None:
    figs = run_sybil(20, 1, QuorumParams(), ReputationParams()).values
    assert figs["sybil_admitted"] == 8
    assert figs["sybil_voter_seats"] <= 1
    assert figs["sybil_voter_seats"] < figs["sybil_accept_threshold"]


def test_params_refuse_a_byzantine_share_out_of_range() -> None:
    with pytest.raises(ConfigError):
        SimParams(byzantine_share=1.5)
    with pytest.raises(ConfigError):
        SimParams(loss=float("nan"))


def test_graylisted_sources_lessons_are_swept_by_the_shipped_taint_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plans: list[frozenset[str]] = []
    original = taint_core.taint_plan

    def spy(
        lessons: Iterable[taint_core.LessonFacts],
        in_play: Mapping[str, tuple[str, ...]],
        tainted: frozenset[str],
        retracted: frozenset[str] = frozenset(),
    ) -> taint_core.TaintPlan:
        plans.append(tainted)
        return original(lessons, in_play, tainted, retracted)

    monkeypatch.setattr(taint_core, "taint_plan", spy)
    params = SimParams(
        nodes=30, byzantine_share=0.2, lessons=3, attack_records=4, horizon_s=120, seed=3
    )
    swept = run_main(params, SimCores(), identities_for(30, 3)).values
    assert plans and all(plans)
    assert swept["tainted"] > 0
    kept = run_main(
        dataclasses.replace(params, taint_sweep=False), SimCores(), identities_for(30, 3)
    ).values
    assert kept["tainted"] == 0


def test_agent_outcomes_are_judged_by_the_shipped_verdict_and_attribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    verdicts: list[bool] = []
    effects: list[Effect] = []
    derive, attribute = lessons_outcomes.outcome_verdict, attribution_core.attribute

    def spy_verdict(outcome: Outcome) -> Verdict:
        verdict = derive(outcome)
        verdicts.append(verdict.passed)
        return verdict

    def spy_attribute(
        in_play: Sequence[tuple[str, str]], steps: Sequence[ToolStep], verdict: Verdict
    ) -> list[Attribution]:
        out = attribute(in_play, steps, verdict)
        effects.extend(a.effect for a in out)
        return out

    monkeypatch.setattr(lessons_outcomes, "outcome_verdict", spy_verdict)
    monkeypatch.setattr(attribution_core, "attribute", spy_attribute)
    params = SimParams(nodes=30, byzantine_share=0.2, lessons=3, attack_records=4, horizon_s=120)
    run_main(dataclasses.replace(params, seed=3), SimCores(), identities_for(30, 3))
    assert verdicts and all(verdicts)  # the agent always ends on the working form
    # Honest lessons followed are confirmed; a followed subtle poison is contradicted.
    assert Effect.CONFIRMED in effects and Effect.CONTRADICTED in effects


def test_without_attribution_no_outcome_charges_a_source(monkeypatch: pytest.MonkeyPatch) -> None:
    params = SimParams(
        nodes=30, byzantine_share=0.2, lessons=3, attack_records=4, horizon_s=120, seed=3
    )
    judged = run_main(params, SimCores(), identities_for(30, 3)).values
    monkeypatch.setattr(attribution_core, "attribute", lambda in_play, steps, verdict: [])
    blind = run_main(params, SimCores(), identities_for(30, 3)).values
    assert blind["graylisted_by_all_share"] <= judged["graylisted_by_all_share"]
    assert blind != judged


def test_simulator_applies_the_pipelines_post_decision_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The simulator restates nothing after the decision: it calls the shared step.
    from lamarck.policy import effects as effects_core

    seen: list[ImportOutcome] = []
    original = effects_core.apply_decision

    def spy(decision: ImportDecision, **kw: object) -> effects_core.Effects:
        seen.append(decision.outcome)
        return original(decision, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(effects_core, "apply_decision", spy)
    push_calibration(10, 0, lessons=2, seed=7)
    assert ImportOutcome.ACCEPT in seen


def _poison_run(gate: bool) -> Mapping[str, float]:
    params = SimParams(
        nodes=60,
        byzantine_share=0.3,
        lessons=4,
        attack_records=4,
        horizon_s=120,
        seed=1,
        influence_gate=gate,
    )
    return run_main(params, SimCores(), identities_for(60, 1)).values


def test_a_tie_between_a_lie_and_an_honest_lesson_is_a_poisoned_decision() -> None:
    off = _poison_run(False)
    assert off["poisoned_ties"] > 0
    assert off["poison_harm"] >= off["poisoned_ties"]
    assert off["poisoned_decisions"] >= off["poison_harm"]


def test_the_influence_gate_keeps_unverified_lies_from_deciding() -> None:
    on, off = _poison_run(True), _poison_run(False)
    assert off["poison_harm"] > 0
    assert on["poison_harm"] == 0
    assert on["poisoned_ties"] == 0
    # A lie reaches a prompt only as a labelled hint in the plan-time share.
    assert on["poison_hints"] <= on["poison_accepted"]


def test_the_simulators_shortcuts_change_no_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    # Filter verdicts and authority readings kept per record, the directory sorted once,
    # timestamps parsed once:
    # the same seeded run without them gives the same figures.
    from lamarck.proto import timefmt
    from lamarck.sim import engine, influence

    params = SimParams(nodes=40, byzantine_share=0.3, lessons=3, attack_records=4, horizon_s=90)
    fast = run_main(params, SimCores(), identities_for(40, 1)).values
    monkeypatch.setattr(engine, "shared_verdicts", lambda p: p)
    monkeypatch.setattr(
        engine.SimNetwork, "others", lambda self, peer: sorted(self.view(peer) - {peer.node_id})
    )
    monkeypatch.setattr(timefmt, "_parse_str", timefmt._parse_str.__wrapped__)
    monkeypatch.setattr(
        influence.Influence,
        "about_authority",
        lambda self, h, op, content, p: influence.influence_core.authority_by_lexicon(
            op, (), content, p
        ),
    )
    slow = run_main(params, SimCores(), identities_for(40, 1)).values
    assert fast == slow
    assert fast["poison_accepted"] > 0


def test_evidence_kept_by_count_and_tree_positions_by_dict_change_no_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The gate's evidence kept per (proven here, confirming principals, authority) with the
    # principals named by count, and each node's place in a tree found by a dict: the same
    # seeded run with every node's principals named and the tree order scanned gives the same
    # figures.
    from lamarck.sim import engine, influence

    params = SimParams(nodes=60, byzantine_share=0.3, lessons=4, attack_records=4, horizon_s=120)
    fast = run_main(params, SimCores(), identities_for(60, 1)).values
    monkeypatch.setattr(influence, "_EVIDENCE_KEPT", 3)  # answers dropped and asked again
    evicting = run_main(params, SimCores(), identities_for(60, 1)).values
    monkeypatch.setattr(influence.Influence, "evidence", influence.Influence.evidence_by_principal)
    monkeypatch.setattr(engine, "_IndexedOrder", list)
    slow = run_main(params, SimCores(), identities_for(60, 1)).values
    assert fast == evicting == slow
    assert fast["poison_hints"] > 0 and fast["poison_accepted"] > 0
