"""Issue 14 §3 scenarios on one real fleet (4 admitted nodes), each run 3 times (tagged).

Each scenario runs its workload through ``FleetDriver`` (scripted agents over the SDK); the
isolated arm (each agent on its own copy of the pitfall) is the "without sharing" figure.
Mean and spread of the three repetitions are printed (``-s`` shows them).
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable
from typing import Any

import pytest

from lamarck.client import Client
from lamarck.node.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.node.fleet.report import ISOLATED, SHARED, TurnRecord, learning_figures
from lamarck.node.fleet.supervisor import Fleet
from lamarck.node.fleet.workloads import Workload, WorkloadParams, make_workload

pytestmark = pytest.mark.integration

REPEATS = 3


@pytest.fixture(scope="module")
def fleet(module_fleet: Callable[..., Fleet]) -> Fleet:
    """The scripted scenarios' fleet (they run one after another on it)."""
    return module_fleet(nodes=4)


@pytest.fixture(scope="module")
def curve_fleet(module_fleet: Callable[..., Fleet]) -> Fleet:
    """A fresh fleet for the learning curves: the unlearn scenario before them leaves its
    nodes' reputations lowered by reality (a flipped environment contradicts an honest
    source), and the curves must measure sharing, not the order the tests ran in."""
    return module_fleet(nodes=4)


def _run(
    fleet: Fleet, name: str, k: int, *, isolated: bool = True, **sizes: Any
) -> tuple[Workload, list[TurnRecord]]:
    work = make_workload(
        name, k, WorkloadParams(nodes=len(fleet.nodes), tag=f"-{name}-{k}", **sizes)
    )
    handles = [NodeHandle(n.name, n.agent_addr, n.metrics_url) for n in fleet.nodes]
    params = DriverParams(isolated_arm=isolated)
    with FleetDriver(handles, work, params, random.Random(k)) as driver:
        return work, driver.run()


def _spread(label: str, values: list[float]) -> None:
    print(
        f"{label}: mean {statistics.mean(values):.3f}, spread {statistics.pstdev(values):.3f}"
        f" over {len(values)} runs {values}"
    )


def _agent(records: list[TurnRecord], arm: str, agent: int) -> list[TurnRecord]:
    return [r for r in records if r.arm == arm and r.agent == agent]


def test_seed_a_mistake_b_never_issues_the_failing_form_and_sees_the_lesson(fleet: Fleet) -> None:
    shared_steps, isolated_steps = [], []
    for k in range(REPEATS):
        _, records = _run(fleet, "seed-mistake", k)
        b = _agent(records, SHARED, 1)
        assert all(r.mistakes == 0 for r in b), b  # B never issues the failing form
        assert b[0].advised  # the node put A's lesson before B's call
        shared_steps.append(float(sum(len(r.operations) for r in b)))
        isolated_steps.append(float(sum(len(r.operations) for r in _agent(records, ISOLATED, 1))))
    _spread("seed-mistake: B's steps with sharing", shared_steps)
    _spread("seed-mistake: B's steps isolated", isolated_steps)
    assert statistics.mean(shared_steps) < statistics.mean(isolated_steps)


def test_learn_what_worked_b_takes_a_s_route_at_the_first_attempt(fleet: Fleet) -> None:
    shared, isolated = [], []
    for k in range(REPEATS):
        work, records = _run(fleet, "learn-what-worked", k)
        b = _agent(records, SHARED, 1)[0]
        assert b.operations[0] == work.pitfalls[0].working, b  # A's non-obvious route first
        shared.append(float(b.first_ok))
        isolated.append(float(_agent(records, ISOLATED, 1)[0].first_ok))
    _spread("learn-what-worked: B's first-attempt success with sharing", shared)
    _spread("learn-what-worked: B's first-attempt success isolated", isolated)
    assert shared == [1.0] * REPEATS
    assert isolated == [0.0] * REPEATS


def _history_text(client: Client, lesson_id: str) -> str:
    """Every outcome id a lesson's history names: its events and the records they hold."""
    parts = []
    for e in client.history(lesson_id):
        parts.append(e.outcome_id)
        parts.append(e.record_json.decode(errors="replace"))
    return "\n".join(parts)


def _unlearn_run(fleet: Fleet, k: int) -> tuple[Workload, list[TurnRecord]]:
    work, records = _run(fleet, "unlearn-on-change", k, isolated=False)
    return work, [r for r in records if r.arm == SHARED]


@pytest.mark.xfail(
    strict=False,
    reason="issue 12's high-stakes rule holds a record claiming confidence above 0.8 for a "
    "quorum: A's lesson, confirmed in two projects, claims more than 0.8, so C's node holds it "
    "awaiting_quorum until voters with their own outcomes validate it, and the fleet driver's "
    "rounds move faster than quorum rounds (judging the rule on the believed confidence instead "
    "let Byzantine lessons into honest prompts in the Byzantine fleet scenario: kept as is)",
)
def test_unlearn_c_contradicts_the_lesson_and_succeeds_anyway(fleet: Fleet) -> None:
    for k in range(REPEATS):
        work, shared = _unlearn_run(fleet, k)
        p = work.pitfalls[0]
        c0 = _agent(shared, SHARED, 2)[0]
        # C follows the lesson (the once-working form first), it fails now, C succeeds anyway.
        assert c0.advised and c0.operations == (p.working, p.failing), c0
        with Client(fleet.nodes[2].agent_addr) as client:
            copies = [
                lesson
                for lesson in client.list_lessons(origin="imported", page_size=50).lessons
                if p.target in lesson.content and f"`{p.working}` over" in lesson.content
            ]
            contradicted = [
                lesson.id
                for lesson in copies
                for e in client.history(lesson.id)
                if e.kind == "contradicted" and e.outcome_id == c0.outcome_id
            ]
        assert contradicted, copies  # its confidence fell on C's outcome
        assert c0.created  # and C's run wrote the reversed lesson


@pytest.mark.xfail(
    strict=True,
    reason="node gap (reported to the lead), measured after import-time contesting landed: C's "
    "reversed lesson (global, promoted on node 3) reaches neither node 1 (A's origin), node 2 "
    "nor node 4 (none of them lists it in any status), so D on node 4 still follows the stale "
    "copy (its own outcome contradicts and supersedes it; the 'no active stale lesson' checks "
    "pass only after that), and nodes 1 and 2 keep the stale lesson active with only A's "
    "outcome in its history",
)
def test_unlearn_d_on_another_node_does_not_carry_the_stale_lesson(fleet: Fleet) -> None:
    work, shared = _unlearn_run(fleet, 100)
    p = work.pitfalls[0]
    a_outcome = _agent(shared, SHARED, 0)[0].outcome_id
    c_outcome = _agent(shared, SHARED, 2)[0].outcome_id
    d_node = fleet.nodes[3]
    with Client(d_node.agent_addr) as client:
        check = client.check_operation(p.failing, session_id="probe-d", turn_index=0)
        stale = [
            lesson
            for lesson in client.list_lessons(statuses=["active"], page_size=50).lessons
            if f"`{p.working}` over `{p.failing}`" in lesson.content
        ]
        assert not stale, [x.content for x in stale]  # gone from D's node's prompts
        assert f"`{p.working}` over" not in check.preamble
    for node in fleet.nodes:
        with Client(node.agent_addr) as client:
            live = [
                lesson
                for lesson in client.list_lessons(statuses=["active"], page_size=50).lessons
                if p.target in lesson.content
            ]
            text = "\n".join(_history_text(client, x.id) for x in live)
        assert a_outcome in text and c_outcome in text, (node.name, json.dumps(text[:400]))


def _curve(fleet: Fleet, k: int, **sizes: Any) -> dict[str, float]:
    _, records = _run(fleet, "fleet-learning-curve", k, agents=8, rounds=4, **sizes)
    figures = learning_figures(records)
    print(f"run {k}: {figures}")
    return figures


def test_fleet_learning_curve_sharing_cuts_repeated_known_mistakes(curve_fleet: Fleet) -> None:
    reductions = [_curve(curve_fleet, k).get("mistakes_reduction", 1.0) for k in range(REPEATS)]
    _spread("fleet-learning-curve: known mistakes repeated, reduction with sharing", reductions)
    assert statistics.mean(reductions) >= 0.9


def test_fleet_learning_curve_with_30pct_poisoners_honest_agents_do_no_worse(
    fleet: Fleet,
) -> None:
    shared, isolated = [], []
    for k in range(REPEATS):
        figures = _curve(fleet, 10 + k, poisoner_share=0.3)
        shared.append(figures["shared_repeated_known_mistakes"])
        isolated.append(figures["isolated_repeated_known_mistakes"])
    _spread("30% poisoners: honest agents' repeated known mistakes with sharing", shared)
    _spread("30% poisoners: the same agents isolated", isolated)
    assert statistics.mean(shared) <= statistics.mean(isolated)
