"""The blocker (design sources: adaptive recovery) on a real 3-node fleet, 3 repetitions.

Session 1 (node 1, CLI logged out) escalates and stores a situation lesson citing the turn's
recorded outcome, which node 1 publishes; every node declares the CLI tool, so node 2 takes
the lesson; session 2 on node 2 holds it unverified (one peer's word): it never follows it
and escalates on its own evidence within 3 steps; session 3 (signed in) probes, retires and
finishes on every node holding a lesson; a wrong path never escalates.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import pytest

from lamarck.agent.recovery import TurnStatus
from lamarck.fleet.blocker import DECLARED_TOOLS, SIGN_IN, BlockerReport, run_blocker
from lamarck.fleet.supervisor import Fleet

pytestmark = pytest.mark.integration

REPEATS = 3


@pytest.fixture(scope="module")
def reports(module_fleet: Callable[..., Fleet]) -> list[BlockerReport]:
    f = module_fleet(nodes=3, declared_tools=DECLARED_TOOLS)
    out = [run_blocker(f, f"{k:02x}" * 32) for k in range(REPEATS)]
    for k, r in enumerate(out):
        print(f"run {k}: {r.figures()} not_shared={r.not_shared_reason!r} copy={r.node2_copy}")
    for key in ("session1_steps", "session2_steps"):
        values = [r.figures()[key] for r in out]
        print(
            f"blocker: {key}: mean {statistics.mean(values):.2f}, "
            f"spread {statistics.pstdev(values):.2f} over {values}"
        )
    return out


def test_session_1_escalates_and_stores_a_situation_lesson(reports: list[BlockerReport]) -> None:
    for r in reports:
        assert r.first.status is TurnStatus.BLOCKED and r.first.steps <= 3
        assert r.first.escalation is not None and r.first.escalation.user_action == SIGN_IN
        assert len(r.first.stored) == 1 and r.lesson_category == "situation"


def test_session_3_signed_in_probes_retires_the_lesson_and_finishes(
    reports: list[BlockerReport],
) -> None:
    for r in reports:
        assert [t.status for t in r.thirds] == [TurnStatus.DONE] * len(r.thirds)
        assert r.thirds[0].invalidated == r.first.stored
        # Node 2 retires the blocker lesson it proved itself in session 2.
        assert r.thirds[1].invalidated == r.second.stored


def test_a_wrong_path_is_fixed_and_never_escalates(reports: list[BlockerReport]) -> None:
    for r in reports:
        assert r.counter is not None
        assert r.counter.status is TurnStatus.DONE and r.counter.escalation is None
        assert r.counter.stored == ()


def test_the_situation_lesson_cites_the_escalated_turn_and_is_shared(
    reports: list[BlockerReport],
) -> None:
    # The lesson cites the outcome node 1 recorded for the escalated turn, so node 1
    # publishes it; node 2 declares the CLI tool and its remedies, so it takes it.
    for r in reports:
        assert len(r.lesson_evidence) == 1
        assert r.lesson_shared and r.not_shared_reason == ""
        assert r.node2_copy


def test_session_2_on_another_node_never_follows_the_unverified_peer_blocker(
    reports: list[BlockerReport],
) -> None:
    for r in reports:
        # The shared lesson is on node 2, unverified there: no decision follows it, and
        # the agent escalates on its own evidence, one step more than with the lesson.
        assert r.node2_copy
        assert r.second.status is TurnStatus.BLOCKED and r.second.steps <= 3
        assert not r.second_cites_first and r.second.stored
