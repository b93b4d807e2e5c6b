"""Team sharing: a project's lessons reach the peers that work on the same
project, without anyone listing the project in ``shared_scopes``; other peers never get them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from conftest import imported, outcome, sync_calls, wait_for

from lamarck.client import Client
from lamarck.gossip.publisher import GossipParams

pytestmark = pytest.mark.integration

TEAM, ELSEWHERE = "7e" * 32, "5a" * 32


def _project_lesson(node: Any, target: str) -> Any:
    """A lesson learned and confirmed in the team's project: publishable, still project-scoped."""
    bad, good = f"shell:make {target}", f"shell:build {target}"
    threshold = GossipParams().publish_threshold
    with Client(node.agent_addr, timeout=20) as client:
        made = client.record_outcome(
            outcome("learn", TEAM, [(bad, "failed", target), (good, "ok", target)])
        )
        [lesson_id] = made.ids("created")
        for i in range(6):
            client.record_outcome(
                outcome(f"confirm-{i}", TEAM, [(good, "ok", target)], in_play=(lesson_id,))
            )
            [lesson] = [x for x in client.list_lessons(operation=good).lessons if x.id == lesson_id]
            if lesson.confidence >= threshold:
                assert lesson.scope == f"project:{TEAM}" and lesson.shared
                return lesson
    raise AssertionError(f"lesson {lesson_id} never reached the publish threshold")


def _works_on(node: Any, project: str) -> None:
    with Client(node.agent_addr, timeout=20) as client:
        client.record_outcome(outcome("work", project, [("shell:ls", "ok", "the tree")]))


@pytest.mark.slow
def test_a_project_lesson_reaches_the_project_s_peers_and_no_one_else(net: Any) -> None:
    source, teammate, stranger = net.start(), net.start(), net.start()
    _works_on(teammate, TEAM)
    _works_on(stranger, ELSEWHERE)
    lesson = _project_lesson(source, f"team-{uuid.uuid4().hex[:8]}")
    copy = wait_for(lambda: imported(teammate, lesson.id), "the teammate to get the lesson")
    assert copy.scope == f"project:{TEAM}"
    # The stranger syncs with the source every second: several answered pulls later it still
    # has nothing of the team's project.
    seen = sync_calls(source, ok=True)
    wait_for(lambda: sync_calls(source, ok=True) >= seen + 4, "more syncs answered by the source")
    assert imported(stranger, lesson.id) is None
