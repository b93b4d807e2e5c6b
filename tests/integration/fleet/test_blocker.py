"""Issue 14 §3.5, the blocker (seed 002 §4), on a real 3-node fleet, 3 repetitions.

Session 1 (node 1, CLI logged out) escalates and stores a situation lesson; session 2 on
node 2 escalates; session 3 (signed in) probes, retires and finishes on every node holding a
lesson; a wrong path never escalates. Session 2 citing node 1's lesson within 2 steps needs
the lesson to travel, which it does not (the strict xfail names why).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import pytest

from lamarck.agent.recovery import TurnStatus
from lamarck.node.fleet.blocker import SIGN_IN, BlockerReport, run_blocker
from lamarck.node.fleet.supervisor import Fleet

pytestmark = pytest.mark.integration

REPEATS = 3


@pytest.fixture(scope="module")
def reports(module_fleet: Callable[..., Fleet]) -> list[BlockerReport]:
    f = module_fleet(nodes=3)
    out = [run_blocker(f, f"{k:02x}" * 32) for k in range(REPEATS)]
    for k, r in enumerate(out):
        print(f"run {k}: {r.figures()} not_shared={r.not_shared_reason!r} ack={r.import_ack}")
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


def test_a_wrong_path_is_fixed_and_never_escalates(reports: list[BlockerReport]) -> None:
    for r in reports:
        assert r.counter is not None
        assert r.counter.status is TurnStatus.DONE and r.counter.escalation is None
        assert r.counter.stored == ()


def test_what_the_nodes_say_about_sharing_the_situation_lesson(
    reports: list[BlockerReport],
) -> None:
    # The node's own answer: a blocker recorded without outcome evidence is not published;
    # its signed record handed to node 2 is refused: no tool there declares its remedy.
    for r in reports:
        assert not r.lesson_shared and r.not_shared_reason == "no_evidence"
        assert r.import_ack.endswith("undeclared_situation"), r.import_ack


@pytest.mark.xfail(
    strict=True,
    reason="situation lessons do not travel (reported to the lead): NodeSituationMemory.store "
    "records the blocker without outcome evidence (not_shared_reason no_evidence); with "
    "evidence the publisher's self-check and every receiver's DeclaredSituationFilter refuse it "
    "as undeclared_situation, since StoreImportView is built without declared_tools "
    "(node/sharing/service.py) and no setting or RPC declares a tool's remedies to a node",
)
def test_session_2_on_another_node_escalates_within_2_steps_citing_the_lesson(
    reports: list[BlockerReport],
) -> None:
    for r in reports:
        assert r.second.status is TurnStatus.BLOCKED and r.second.steps <= 2
        assert r.second_cites_first and r.node2_dispatched_in_session_2 == 0
