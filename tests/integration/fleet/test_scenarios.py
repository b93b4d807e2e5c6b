"""Seed 000 §6 scenarios on one real fleet (3 admitted nodes), each run 3 times (tagged).

Each scenario runs its workload through ``FleetDriver`` (scripted agents over the SDK); the
isolated arm (each agent on its own copy of the pitfall) is the "without sharing" figure.
Mean and spread of the three repetitions are printed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lamarck.node.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.node.fleet.report import ISOLATED, SHARED, TurnRecord, learning_figures
from lamarck.node.fleet.supervisor import Fleet, FleetSpec
from lamarck.node.fleet.workloads import WorkloadParams, make_workload

pytestmark = pytest.mark.integration

REPEATS = 3


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    d: Path = tmp_path_factory.mktemp("fleet")
    f = Fleet(FleetSpec(directory=d / "f", nodes=4, base_port=23000))
    try:
        f.up(print)
        yield f
    finally:
        f.stop(print)


def _run(fleet: Fleet, name: str, k: int, **sizes: Any) -> tuple[FleetDriver, list[TurnRecord]]:
    work = make_workload(
        name, k, WorkloadParams(nodes=len(fleet.nodes), tag=f"-{name}-{k}", **sizes)
    )
    handles = [NodeHandle(n.name, n.agent_addr, n.metrics_url) for n in fleet.nodes]
    with FleetDriver(handles, work, DriverParams(), random.Random(k)) as driver:
        return driver, driver.run()


def _spread(label: str, values: list[float]) -> None:
    print(
        f"{label}: mean {statistics.mean(values):.2f}, spread {statistics.pstdev(values):.2f}"
        f" over {len(values)} runs {values}"
    )


def _b(records: list[TurnRecord], arm: str) -> list[TurnRecord]:
    return [r for r in records if r.arm == arm and r.agent == 1]


def test_seed_a_mistake_b_never_issues_the_failing_form_and_sees_the_lesson(fleet: Fleet) -> None:
    shared_steps, isolated_steps = [], []
    for k in range(REPEATS):
        _, records = _run(fleet, "seed-mistake", k)
        b = _b(records, SHARED)
        assert all(r.mistakes == 0 for r in b), b  # B never issues the failing form
        assert b[0].advised  # the node put A's lesson before B's call
        shared_steps.append(float(sum(len(r.operations) for r in b)))
        isolated_steps.append(float(sum(len(r.operations) for r in _b(records, ISOLATED))))
    _spread("B's steps with sharing", shared_steps)
    _spread("B's steps isolated", isolated_steps)
    assert statistics.mean(shared_steps) < statistics.mean(isolated_steps)


def test_fleet_learning_curve_sharing_cuts_repeated_known_mistakes(fleet: Fleet) -> None:
    reductions = []
    for k in range(REPEATS):
        _, records = _run(fleet, "fleet-learning-curve", k, agents=8, rounds=4)
        figures = learning_figures(records)
        reductions.append(figures.get("mistakes_reduction", 1.0))
    _spread("known mistakes repeated: reduction with sharing", reductions)
    assert statistics.mean(reductions) >= 0.5
