"""Three real node processes: a signed trust summary travels in Sync and moves global trust.

B confirms A's lesson with its own outcome, so B's signed summary rates A above the floor. C,
whose operator pre-trusts B, never dealt with A: the trust C gives A can only come from B's
summary, carried in B's Sync answers.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from conftest import imported, outcome, wait_for

from lamarck.client import Client
from lamarck.operator import OperatorClient
from lamarck.reputation.params import PairwiseParams
from lamarck.reputation.table import ReputationRow

pytestmark = pytest.mark.integration

#: Every node recomputes (and re-signs its summary) each second here; 60 s in production.
FAST = {"global_trust_interval_s": 1.0}


def _row(node: Any, peer: str) -> ReputationRow | None:
    with OperatorClient.from_home(node.home, timeout=20) as desk:
        rows = {r.peer: r for r in desk.reputation().rows}
    return rows.get(peer)


def test_a_summary_travels_in_sync_and_changes_the_receivers_global_trust(net: Any) -> None:
    a, b = net.start(**FAST), net.start(**FAST)
    target = f"trust-{uuid.uuid4().hex[:8]}"
    lesson = net.learn(a, target)
    copy = wait_for(lambda: imported(b, lesson.id), f"B to import {lesson.id}")
    with Client(b.agent_addr, timeout=20) as client:
        made = client.record_outcome(
            outcome("use-1", "b1" * 32, [(f"shell:build {target}", "ok", target)],
                    in_play=(copy.id,))
        )  # fmt: skip
    assert made.ids("confirmed") == [copy.id]
    judged = wait_for(
        lambda: (r := _row(b, a.node_id)) is not None and r.global_trust and r,
        "B's own global trust in A",
    )
    assert judged.pairwise > PairwiseParams().initial

    c = net.start(pretrusted_peers=[b.node_id], **FAST)
    seen = wait_for(
        lambda: (r := _row(c, a.node_id)) is not None and r.global_trust and r,
        "B's summary to reach C by Sync and give A global trust there",
    )
    # C itself never judged A: what it gives A came from B's signed summary.
    assert seen.pairwise == PairwiseParams().initial
    assert seen.global_trust is not None and seen.global_trust > 0.0
    b_at_c = _row(c, b.node_id)
    assert b_at_c is not None and b_at_c.global_trust is not None
    assert b_at_c.global_trust > seen.global_trust  # the anchor holds more than it lends
