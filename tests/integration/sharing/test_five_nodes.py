"""Five real node processes on a real Redis: a lesson learned on one reaches all the others.

One peer is killed (SIGKILL: no clean deregistration, its registry entry lingers until the
TTL) before the lesson is published; after a restart on the same home it catches up through
the outbox retry or its anti-entropy Sync.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from conftest import expected_transfer, imported, wait_for

from lamarck.client import Client

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_lesson_reaches_every_peer_and_a_killed_peer_after_its_restart(net: Any) -> None:
    # Receivers show an unverified import in every plan-time prompt (a labelled hint).
    a, *others = [net.start(), *(net.start(unverified_plan_share=1.0) for _ in range(4))]
    killed = others.pop()
    killed.process.kill()
    killed.returncode = killed.process.wait(timeout=30)
    target = f"api-{uuid.uuid4().hex[:8]}"

    lesson = net.learn(a, target)

    want = expected_transfer(lesson.confidence)
    for peer in others:
        copy = wait_for(lambda p=peer: imported(p, lesson.id), f"{peer.node_id} to import")
        assert copy.source_node_id == a.node_id
        assert copy.confidence == pytest.approx(want)
        with Client(peer.agent_addr, timeout=20) as client:
            recalled = client.recall(f"build {target}", session_id="five-1")
        assert copy.id in [x.id for x in recalled.hints]
        assert copy.id not in [x.id for x in recalled.lessons]

    restarted = net.start(killed.home)
    copy = wait_for(lambda: imported(restarted, lesson.id), "the killed peer to catch up")
    assert copy.source_node_id == a.node_id
    assert copy.confidence == pytest.approx(want)
