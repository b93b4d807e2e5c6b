"""Two real node processes on a real Redis: a lesson learned on A reaches B.

Each node runs as ``python -m lamarck.node.daemon`` with embedded Postgres and the hashing
embedder, registers in a per-test Redis namespace (admission ``open``: tests only), publishes
through its outbox and pulls through anti-entropy Sync. A's edit of a lesson reaches B as a
new version of B's copy (B's own evidence kept), and A's retirement with its reason.
"""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import expected_transfer, fixtures, imported, outcome, sync_calls, wait_for

from lamarck.client import Client

pytestmark = pytest.mark.integration


def test_a_lesson_learned_on_a_reaches_b_with_the_transferred_confidence(net: Any) -> None:
    # B shows an unverified import in every plan-time prompt (as a labelled hint, never
    # advice), so the test sees it without drawing for it.
    a, b = net.start(), net.start(unverified_plan_share=1.0)
    target = f"docs-{uuid.uuid4().hex[:8]}"
    lesson = net.learn(a, target)

    copy = wait_for(lambda: imported(b, lesson.id), f"B to import {lesson.id}")

    assert copy.source_node_id == a.node_id
    assert copy.original_confidence == pytest.approx(lesson.confidence)
    assert copy.confidence == pytest.approx(expected_transfer(lesson.confidence))
    with Client(b.agent_addr, timeout=20) as client:
        recalled = client.recall(f"build {target}", session_id="b-1")
        check = client.check_operation(copy.operation, session_id="b-1")
    # Unverified at B: a labelled hint at plan time, never advice, never in the preamble.
    assert copy.id not in [x.id for x in recalled.lessons]
    [hint] = [x for x in recalled.hints if x.id == copy.id]
    assert hint.evidence.evidence_class == "unverified" and hint.evidence.peers == 1
    assert f"[{hint.evidence.label}] {copy.content}" in recalled.section
    assert copy.id not in check.lesson_ids and copy.content not in check.preamble


def test_a_node_stopped_before_the_publish_gets_the_lesson_after_restart(net: Any) -> None:
    a, b = net.start(), net.start()
    b_home = b.home
    assert b.stop() == 0
    lesson = net.learn(a, f"svc-{uuid.uuid4().hex[:8]}")

    b = net.start(b_home)

    copy = wait_for(lambda: imported(b, lesson.id), f"restarted B to get {lesson.id}")
    assert copy.source_node_id == a.node_id
    assert copy.confidence == pytest.approx(expected_transfer(lesson.confidence))


def test_what_b_learned_about_a_by_using_its_lesson_survives_bs_restart(net: Any) -> None:
    a, b = net.start(), net.start()
    target = f"rep-{uuid.uuid4().hex[:8]}"
    first = net.learn(a, target)
    copy = wait_for(lambda: imported(b, first.id), "B to import A's first lesson")
    # B's agent uses A's lesson and the task passes: reality confirms A.
    with Client(b.agent_addr, timeout=20) as client:
        made = client.record_outcome(
            outcome("use-1", "b0" * 32, [(f"shell:build {target}", "ok", target)],
                    in_play=(copy.id,))
        )  # fmt: skip
    assert made.ids("confirmed") == [copy.id]
    assert b.stop() == 0
    b = net.start(b.home)

    second = net.learn(a, f"rep2-{uuid.uuid4().hex[:8]}")
    later = wait_for(lambda: imported(b, second.id), "restarted B to import A's second lesson")
    # A fresh source would get exactly expected_transfer; A's confirmed record lifts it.
    assert later.confidence > expected_transfer(second.confidence) + 1e-9


def test_an_edit_and_a_retirement_on_a_reach_bs_copy_keeping_bs_evidence_and_the_reason(
    net: Any,
) -> None:
    a, b = net.start(), net.start()
    target = f"edit-{uuid.uuid4().hex[:8]}"
    lesson = net.learn(a, target)
    copy = wait_for(lambda: imported(b, lesson.id), "B to import A's lesson")
    with Client(b.agent_addr, timeout=20) as client:
        made = client.record_outcome(
            outcome("use-1", "b0" * 32, [(f"shell:build {target}", "ok", target)],
                    in_play=(copy.id,))
        )  # fmt: skip
        assert made.ids("confirmed") == [copy.id]
        confirmed = client.get_lesson(copy.id)
    assert confirmed.confidence > copy.confidence and confirmed.success_count == 1

    text = f"Build {target} with the build tool, never make."
    with Client(a.agent_addr, timeout=20) as client:
        edited = client.edit(lesson.id, text, reason="clearer")

    def b_copy(content: str, status: str = "active") -> Any:
        with Client(b.agent_addr, timeout=20) as client:
            now = client.get_lesson(copy.id)
        return now if now.content == content and now.status == status else None

    # B's copy: the same local id, A's new text, B's own evidence and confidence kept.
    after = wait_for(lambda: b_copy(text), "A's edit to reach B's copy")
    assert after.success_count == 1
    assert after.evidence_outcome_ids == confirmed.evidence_outcome_ids
    # Its transferred part follows A's claim (and A's standing here, which B's confirmation
    # raised); the margin B's own outcome added stays on top of it.
    assert after.confidence >= confirmed.confidence
    assert json.loads(after.record_json)["id"] == edited.id

    with Client(a.agent_addr, timeout=20) as client:
        client.retire(edited.id, reason="the build moved to nox")
    wait_for(lambda: b_copy(text, "retired"), "A's retirement to reach B's copy")
    with Client(b.agent_addr, timeout=20) as client:
        history = client.history(copy.id)
    kinds = [(e.kind, e.actor) for e in history]
    assert ("edited", a.node_id) in kinds
    [retired] = [e for e in history if e.kind == "retired"]
    assert (retired.actor, retired.reason) == (
        a.node_id,
        "retired by agent at its source: the build moved to nox",
    )


def _served_syncs(node: Any) -> int:
    return sync_calls(node, ok=True)


def test_an_incognito_node_learns_from_peers_but_shares_nothing(net: Any) -> None:
    hidden, b = net.start(incognito=True), net.start()
    secret = net.learn(hidden, f"private-{uuid.uuid4().hex[:8]}")
    public = net.learn(b, f"public-{uuid.uuid4().hex[:8]}")

    # The incognito node still imports: the network is up and B's lesson reaches it.
    wait_for(lambda: imported(hidden, public.id), "the incognito node to import B's lesson")
    # B pulls from it every second; two answered Syncs after the learn have had their chance.
    served = _served_syncs(hidden)
    wait_for(lambda: _served_syncs(hidden) >= served + 2, "B to sync twice with the hidden node")
    assert imported(b, secret.id) is None


def test_a_node_whose_registry_is_unreachable_still_starts_and_serves(
    net: Any, tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    node = fixtures.start_node(
        tmp_path / "lonely",
        **{**net.flags(), "redis_url": f"redis://127.0.0.1:{closed}/0"},
    )
    try:
        with Client(node.agent_addr, timeout=20) as client:
            assert client.list_lessons().lessons == ()
        assert "sharing from the peer cache" in node.stderr()
    finally:
        assert node.stop() == 0
