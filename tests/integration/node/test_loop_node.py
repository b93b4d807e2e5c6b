"""The SDK's learning loop and situation memory against a real node process (adaptive recovery's
logged-out CLI included: its situation lesson is stored, probed and retired on the node)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest

from lamarck.agent.guard import NodeSituationMemory
from lamarck.agent.loop import ActContext, LearningLoop, LoopParams, Task
from lamarck.agent.recovery import TurnStatus
from lamarck.agent.run import RunParams
from lamarck.agent.situation import Situation
from lamarck.client import Client
from lamarck.fleet.blocker import IMPROVISE, SIGN_IN, CliWorld, session
from lamarck.learning.params import ContextParams
from lamarck.proto.clock import FixedClock

pytestmark = pytest.mark.integration

PROJECT = "ef" * 32


def fix_the_test(ctx: ActContext) -> None:
    ctx.recorder.check("test", passed=False, operation="shell:pytest tests/", target="suite")
    ctx.recorder.check("test", passed=True, operation="shell:pytest", target="suite")


def test_learning_loop_records_an_honest_outcome_and_the_node_learns_from_it(
    node_process: Any,
) -> None:
    node = node_process()
    with Client(node.agent_addr, timeout=20) as client:
        loop = LearningLoop(
            client,
            project=PROJECT,
            params=LoopParams(),
            context_params=ContextParams(),
            run_params=RunParams(),
            clock=FixedClock(datetime(2026, 3, 1, tzinfo=UTC)),
            rng=random.Random(11),
        )
        task = Task("make the test suite pass", {"domain": "python"})
        first = loop.run(task, fix_the_test, session_id="loop-1")
        assert first.update.outcome_id == first.result.outcome.id
        assert not first.update.duplicate
        assert first.observation.actual == "pass"
        # The failed-then-passing pair on one target teaches "prefer B over A".
        assert first.extracted.created, first.extracted.nothing_learned
        assert loop.calibration.predictions == 1

        memory = NodeSituationMemory(client, project_digest=PROJECT)
        assert list(memory.load()) == []
        gh = Situation.declared(
            tool="check_cli_setup", subject="gh", kind="auth", probe="gh auth status"
        )
        stored = memory.store(gh)
        assert memory.store(gh) == stored  # the same signature is refreshed, not duplicated
        [held] = memory.load()
        assert held.lesson_id == stored and held.situation.probe == "gh auth status"


# -- adaptive recovery: the logged-out CLI, three sessions, through the SDK against a real node
# ------
# The script (machine, tools, improvising agent, session) is the fleet blocker scenario's own.


def test_logged_out_cli_is_remembered_on_the_node_probed_next_time_and_retired_once_clear(
    node_process: Any,
) -> None:
    node = node_process()
    world = CliWorld()
    with Client(node.agent_addr, timeout=20) as client:
        # Session 1: escalate within 3 steps; the declared blocker goes to the node.
        first = session(world, client, IMPROVISE, PROJECT)
        assert first.status is TurnStatus.BLOCKED and first.steps <= 3
        assert first.escalation is not None and first.escalation.user_action == SIGN_IN
        [lesson_id] = first.stored
        lesson = client.get_lesson(lesson_id)
        assert lesson.category == "situation" and lesson.status == "active"
        assert lesson.situation is not None and lesson.situation.probe == "gh auth status"
        assert lesson.scope == f"project:{PROJECT}"

        # Session 2: the lesson's probe still fails: escalate within 2 steps, citing it.
        before = world.dispatched
        second = session(
            world, client, [("run_shell", {"command": "gh pr list"}), *IMPROVISE], PROJECT
        )
        assert second.status is TurnStatus.BLOCKED and second.steps <= 2
        assert second.workarounds == 0 and world.dispatched == before
        assert second.escalation is not None and second.escalation.lesson_id == lesson_id
        assert second.stored in ((), (lesson_id,))

        # Session 3: signed in; the probe is clear, the lesson is retired, the work finishes.
        world.signed_in = True
        third = session(
            world,
            client,
            [("run_shell", {"command": "gh pr list"}), ("run_shell", {"command": "gh pr view 12"})],
            PROJECT,
        )
        assert third.status is TurnStatus.DONE and third.invalidated == (lesson_id,)
        assert client.get_lesson(lesson_id).status == "retired"
        assert list(NodeSituationMemory(client).load()) == []
