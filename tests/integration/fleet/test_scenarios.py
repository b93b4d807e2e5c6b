"""The fleet scenarios on one real fleet (4 admitted nodes), each run 3 times (tagged).

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
from lamarck.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.fleet.report import ISOLATED, SHARED, TurnRecord, learning_figures
from lamarck.fleet.supervisor import Fleet, NodeProcess
from lamarck.fleet.workloads import Workload, WorkloadParams, make_workload

pytestmark = pytest.mark.integration

REPEATS = 3


# These scenarios measure what one agent's lesson does for another: with no attestations
# read yet, an import stays unverified at the receiver, never advice; every node here offers
# it as a labelled hint in every plan-time prompt (share 1), which a scripted agent tries
# first when nothing contradicts it (the canary). The gate's default share is measured by
# ``lamarck fleet up``.
SHARE = 1.0


@pytest.fixture(scope="module")
def fleet(module_fleet: Callable[..., Fleet]) -> Fleet:
    """The scripted scenarios' fleet (they run one after another on it)."""
    return module_fleet(nodes=4, unverified_plan_share=SHARE)


@pytest.fixture(scope="module")
def curve_fleet(module_fleet: Callable[..., Fleet]) -> Fleet:
    """A fresh fleet for the learning curves: the unlearn scenario before them leaves its
    nodes' reputations lowered by reality (a flipped environment contradicts an honest
    source), and the curves must measure sharing, not the order the tests ran in."""
    return module_fleet(nodes=4, unverified_plan_share=SHARE)


def _run(
    fleet: Fleet, name: str, k: int, *, isolated: bool = True, **sizes: Any
) -> tuple[Workload, list[TurnRecord]]:
    work = make_workload(
        name, k, WorkloadParams(nodes=len(fleet.nodes), tag=f"-{name}-{k}", **sizes)
    )
    handles = [NodeHandle(n.name, n.agent_addr, n.metrics_url, home=n.home) for n in fleet.nodes]
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
        assert b[0].advised  # the node offered A's lesson to B (a labelled hint)
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


def _unlearn_run(
    fleet: Fleet, k: int, turn: int
) -> tuple[Workload, list[TurnRecord], list[NodeProcess]]:
    """One unlearn run with the roles turned ``turn`` places round the fleet: agent i (A, B,
    C, D) works on node (i + turn) mod 4. The stale lesson's source is contradicted by reality
    on C's and D's nodes (the environment flipped: a node cannot tell that from a lie), and a
    receiver that saw one source contradicted twice graylists it, so repetitions on one fleet
    give each run a source no receiver has judged yet; the run's own nodes are returned in
    role order."""
    nodes = [*fleet.nodes[turn:], *fleet.nodes[:turn]]
    work = make_workload(
        "unlearn-on-change",
        k,
        WorkloadParams(nodes=len(nodes), tag=f"-unlearn-on-change-{k}"),
    )
    handles = [NodeHandle(n.name, n.agent_addr, n.metrics_url, home=n.home) for n in nodes]
    with FleetDriver(handles, work, DriverParams(isolated_arm=False), random.Random(k)) as d:
        records = d.run()
    return work, [r for r in records if r.arm == SHARED], nodes


def _holding(nodes: list[NodeProcess], text: str) -> int:
    """How many of ``nodes`` hold a lesson (in any status) whose content has ``text``."""
    held = 0
    for node in nodes:
        with Client(node.agent_addr) as client:
            rows = client.list_lessons(
                statuses=["active", "superseded", "retired"], page_size=50
            ).lessons
        held += any(text in lesson.content for lesson in rows)
    return held


def test_unlearn_c_contradicts_the_lesson_and_succeeds_anyway(fleet: Fleet) -> None:
    reached = []
    for k in range(REPEATS):
        work, shared, nodes = _unlearn_run(fleet, k, turn=k)
        p = work.pitfalls[0]
        c0 = _agent(shared, SHARED, 2)[0]
        # C follows the lesson (the once-working form first), it fails now, C succeeds anyway.
        assert c0.advised and c0.operations == (p.working, p.failing), c0
        with Client(nodes[2].agent_addr) as client:
            copies = [
                lesson
                for lesson in client.list_lessons(
                    statuses=["active", "superseded", "retired"], origin="imported", page_size=50
                ).lessons
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
        # The reversal travels: every node of the fleet holds it (below the high-stakes line,
        # no quorum needed; a lesson proven on a node keeps its advice there regardless).
        reached.append(float(_holding(nodes, f"`{p.failing}` over `{p.working}`")))
    _spread("unlearn-on-change: nodes holding C's reversed lesson", reached)
    assert reached == [float(len(fleet.nodes))] * REPEATS


def test_unlearn_d_on_another_node_does_not_carry_the_stale_lesson(fleet: Fleet) -> None:
    # The fourth turn of the roles: A's node has been the stale source in no earlier run.
    work, shared, nodes = _unlearn_run(fleet, 100, turn=3)
    p = work.pitfalls[0]
    a_outcome = _agent(shared, SHARED, 0)[0].outcome_id
    c_outcome = _agent(shared, SHARED, 2)[0].outcome_id
    d0 = _agent(shared, SHARED, 3)[0]
    # Before D's run both copies reach D's node unproven there (A's and C's): one peer's
    # reversal does not silence the fleet's advice there, so D follows the more confident one
    # (printed). Either way D's outcome ends the stale copy on its node: superseded when it
    # proves the reversal (conflicts.settle_proven), retired when it contradicts the copy.
    print(f"unlearn: D's first turn tried {d0.operations} (advised: {d0.advised})")
    with Client(nodes[3].agent_addr) as client:
        check = client.check_operation(p.failing, session_id="probe-d", turn_index=0)
        stale = [
            lesson
            for lesson in client.list_lessons(statuses=["active"], page_size=50).lessons
            if f"`{p.working}` over `{p.failing}`" in lesson.content
        ]
        assert not stale, [x.content for x in stale]  # gone from D's node's prompts
        assert f"`{p.working}` over" not in check.preamble
    for node in nodes:
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
    # With no attestations read, an import is advice nowhere; it helps only as a plan-time
    # hint an agent tries, and here the isolated arm's lessons (the same target words) crowd
    # the two hint slots of a prompt: 0.18-0.36 measured (before the gate, with every import
    # advice at decision time: >= 0.9). The >= 0.9 goal comes back with corroboration.
    assert statistics.mean(reductions) > 0


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
