"""What an operator reads from two real nodes that idle after sharing: labels and counters.

Two node processes on a real Redis, each with a ``label`` setting. A's lessons reach B; one
of them is then retired at A. While the two idle through several anti-entropy rounds
(a Sync every second), neither node's duplicate-import counter may move: a re-offer of a
record the puller already holds (stored, retired or held) is not a fresh duplicate import.
The same run checks that ``lamarck node status``, ``lamarck reputation`` (and ``show`` by
label) and ``lamarck lessons list`` print each peer's label beside its id.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from conftest import imported, sync_calls, wait_for
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.client import Client
from lamarck.operator import OperatorClient

pytestmark = pytest.mark.integration

runner = CliRunner()

#: Anti-entropy rounds both nodes must idle through (each node Syncs once a second).
IDLE_ROUNDS = 4


def _duplicates(node: Any) -> int:
    """The node's duplicate-import counter, as ``lamarck node status`` reads it."""
    with OperatorClient.from_home(node.home) as op:
        status = op.status()
    return sum(status["imports"].get("duplicate", {}).values())


def _cli(node: Any, *args: str) -> str:
    # Wide enough that no table cell wraps.
    result = runner.invoke(app, [*args, "--home", str(node.home)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.stdout


def _idle_rounds(a: Any, b: Any, rounds: int) -> None:
    """Wait until each node has answered ``rounds`` more Syncs from the other."""
    start = (sync_calls(a, ok=True), sync_calls(b, ok=True))
    wait_for(
        lambda: (
            sync_calls(a, ok=True) >= start[0] + rounds
            and sync_calls(b, ok=True) >= start[1] + rounds
        ),
        f"{rounds} idle anti-entropy rounds",
    )


def test_idle_nodes_count_no_new_duplicates_and_show_labels_beside_ids(net: Any) -> None:
    a, b = net.start(label="alpha"), net.start(label="beta")
    kept = net.learn(a, f"keep-{uuid.uuid4().hex[:8]}")
    gone = net.learn(a, f"gone-{uuid.uuid4().hex[:8]}")
    wait_for(lambda: imported(b, kept.id), "B to import A's first lesson")
    copy = wait_for(lambda: imported(b, gone.id), "B to import A's second lesson")
    with Client(a.agent_addr, timeout=20) as client:
        client.retire(gone.id, reason="obsolete")

    def retired_at_b() -> bool:
        with Client(b.agent_addr, timeout=20) as client:
            return client.get_lesson(copy.id).status == "retired"

    wait_for(retired_at_b, "A's retirement to reach B")
    # Settle: deliveries already in flight (a push crossing a pull) may still land once.
    _idle_rounds(a, b, 2)
    before = (_duplicates(a), _duplicates(b))

    _idle_rounds(a, b, IDLE_ROUNDS)

    assert (_duplicates(a), _duplicates(b)) == before

    # Labels: learned from the registry, shown beside the id, never instead of it.
    with OperatorClient.from_home(b.home) as op:
        status = op.status()
    assert status["node_label"] == "beta"
    assert status["labels"][a.node_id] == "alpha"
    text = _cli(b, "node", "status")
    assert f"beta {b.node_id}" in text
    assert f"alpha {a.node_id}" in text  # live peers
    table = _cli(b, "reputation")
    assert f"alpha {a.node_id[:12]}" in table
    shown = json.loads(_cli(b, "reputation", "show", "alpha", "--json"))
    assert shown["peer"] == a.node_id and shown["label"] == "alpha"
    listed = _cli(b, "lessons", "list", "--status", "active")
    assert "imported from alpha" in listed
