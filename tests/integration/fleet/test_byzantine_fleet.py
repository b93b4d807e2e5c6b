"""The Byzantine fleet, in the suite: 6 real nodes, 2 Byzantine (the 10-node,
3-Byzantine run is ``lamarck fleet up --nodes 10 --byzantine 3 --workload byzantine``: on 2
cores it does not fit the suite's few minutes). 3 repetitions on one fleet, each with its own
pitfalls; mean and spread printed (``-s``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import pytest

from lamarck.fleet.byzantine import ByzantineParams, run_byzantine
from lamarck.fleet.supervisor import Fleet

pytestmark = pytest.mark.integration

REPEATS = 3


@pytest.fixture(scope="module")
def fleet(module_fleet: Callable[..., Fleet]) -> Fleet:
    return module_fleet(nodes=6, byzantine=2)


def test_byzantine_nodes_reach_no_honest_prompt_end_graylisted_and_honest_lessons_travel(
    fleet: Fleet,
) -> None:
    runs = []
    for k in range(REPEATS):
        report = run_byzantine(fleet, k, ByzantineParams(), print, tag=f"-byz-{k}")
        figures = report.figures()
        print(f"run {k}: {figures}")
        by_behaviour: dict[str, set[str]] = {}
        for push in report.pushes:
            by_behaviour.setdefault(push.behaviour, set()).add(f"{push.status}:{push.reason}")
        print(f"run {k}: acks by behaviour {by_behaviour}")
        assert report.poisoned_prompts == [], report.poisoned_prompts
        assert report.poisoned_active == [], report.poisoned_active
        assert all(band == "graylisted" for band in report.graylisted.values()), report.graylisted
        assert all(report.honest_reach.values()), report.honest_reach
        assert report.sybil_refused == report.sybil_attempts > 0
        runs.append(figures)
    for key in ("byzantine_graylisted_share", "honest_lessons_reach_share", "byz_pushes_accepted"):
        values = [r[key] for r in runs]
        print(
            f"byzantine fleet: {key}: mean {statistics.mean(values):.3f}, "
            f"spread {statistics.pstdev(values):.3f} over {values}"
        )
