"""Outcome attestations between real node processes on a real Redis.

Admission ``open`` makes every node its own principal. A lesson learned on A reaches B, C and
D; the outcomes of B's and C's agents confirm it, so B and C each sign an attestation that
their push carries to D; a node started afterwards gets them by anti-entropy Sync. The
counting itself (two independent principals make the copy corroborated) is proven in
``tests/unit/sharing/test_attestations_node.py``; here the wiring is: made on the outcome,
pushed, served by Sync, verified and kept by the receiver's own registry view.
"""

from __future__ import annotations

import urllib.request
import uuid
from typing import Any

import pytest
from conftest import imported, outcome, wait_for

from lamarck.client import Client

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _attestations(node: Any, result: str, reason: str = "") -> int:
    """How many attestations ``node`` counted with this result (and reason), from its metrics."""
    with urllib.request.urlopen(node.metrics_url, timeout=5) as response:
        lines = response.read().decode().splitlines()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in lines
        if line.startswith("lamarck_attestations_total{")
        and f'result="{result}"' in line
        and f'reason="{reason}"' in line
    )


def test_outcomes_on_two_nodes_reach_a_third_and_a_latecomer_as_attestations(net: Any) -> None:
    a, b, c, d = (net.start() for _ in range(4))
    target = f"att-{uuid.uuid4().hex[:8]}"
    lesson = net.learn(a, target)
    copies = {
        n.node_id: wait_for(lambda n=n: imported(n, lesson.id), f"{n.node_id} to import")
        for n in (b, c, d)
    }

    for node, session in ((b, "b-use"), (c, "c-use")):
        copy = copies[node.node_id]
        with Client(node.agent_addr, timeout=20) as client:
            made = client.record_outcome(
                outcome(
                    session,
                    "b0" * 32,
                    [(f"shell:build {target}", "ok", target)],
                    in_play=(copy.id,),
                )
            )
        assert made.ids("confirmed") == [copy.id]
        assert _attestations(node, "made", "confirm") == 1

    wait_for(lambda: _attestations(d, "kept") >= 2, "D to keep B's and C's attestations")
    # The source holds its own lesson, not an import: what it is sent about it counts nothing.
    assert _attestations(a, "kept") == 0

    late = net.start()
    wait_for(lambda: imported(late, lesson.id), "the latecomer to import the lesson")
    wait_for(lambda: _attestations(late, "kept") >= 2, "the latecomer to Sync the attestations")
