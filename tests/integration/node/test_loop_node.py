"""The SDK's learning loop and situation memory against a real node process (seed 002 §4's
logged-out CLI included: its situation lesson is stored, probed and retired on the node)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from lamarck.agent.classify import ClassifierParams
from lamarck.agent.guard import NodeSituationMemory, ToolGuard, TurnReport, close_turn, open_turn
from lamarck.agent.loop import ActContext, LearningLoop, LoopParams, Task
from lamarck.agent.recovery import RecoveryParams, TurnStatus
from lamarck.agent.run import RunParams
from lamarck.agent.situation import Situation, ToolSpec
from lamarck.client import Client
from lamarck.node.learning.params import ContextParams
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


# -- seed 002 §4: the logged-out CLI, three sessions, through the SDK against a real node ------

TOOLS = {
    "check_cli_setup": ToolSpec("check_cli_setup", subject_arg="binary"),
    "sign_in_cli": ToolSpec("sign_in_cli", interactive=True, subject_arg="binary"),
    "web_search": ToolSpec("web_search", search=True, subject_arg="query"),
}
SIGN_IN = "run `gh auth login` in a terminal and finish the browser sign-in"
Call = tuple[str, dict[str, Any]]


@dataclass
class World:
    """A fake machine with the GitHub CLI, signed in or not."""

    signed_in: bool = False
    dispatched: int = 0

    def dispatch(self, tool: str, args: Mapping[str, Any]) -> Any:
        self.dispatched += 1
        if tool == "check_cli_setup":
            if self.signed_in:
                return {"status": "ok", "output": "gh 2.40.0, signed in"}
            return {
                "status": "error",
                "situation": {
                    "kind": "auth",
                    "subject": "gh",
                    "interactive": True,
                    "unblock": SIGN_IN,
                    "probe": "gh auth status",
                },
            }
        if tool == "sign_in_cli":
            return {"status": "ok"}
        if tool == "web_fetch":
            return {"status_code": 401, "body": '{"message": "Requires authentication"}'}
        if tool == "web_search":
            return []
        if tool == "run_shell":
            return self.shell(str(args["command"]))
        raise AssertionError(f"unexpected tool {tool}")

    def shell(self, command: str) -> Any:
        if command.startswith("gh ") and not self.signed_in:
            return {
                "exit_code": 1,
                "stderr": "You are not logged into any GitHub hosts. To log in, run: gh auth login",
            }
        return {"exit_code": 0, "stdout": "#12 Fix the parser"}


# Every workaround an improvising agent would try (#4428 took 43 steps).
IMPROVISE: list[Call] = [
    ("check_cli_setup", {"binary": "gh"}),
    ("sign_in_cli", {"binary": "gh"}),
    ("web_fetch", {"url": "https://api.github.com/repos/o/r/pulls"}),
    ("web_search", {"query": "list pull requests without gh"}),
    ("run_shell", {"command": "curl -s https://api.github.com/repos/o/r/pulls"}),
    ("run_shell", {"command": "gh auth login --with-token"}),
    ("run_shell", {"command": "gh pr list"}),
] * 5


def session(world: World, client: Client, calls: Sequence[Call]) -> TurnReport:
    """One unattended turn whose situation lessons live on the node (loaded fresh each time)."""
    memory = NodeSituationMemory(client, project_digest=PROJECT)
    state = open_turn(
        memory,
        tools=TOOLS,
        params=RecoveryParams(),
        classifier=ClassifierParams(),
        unattended=True,
    )
    guard = ToolGuard(state, world.dispatch, world.shell)
    for tool, args in calls:
        if guard.call(tool, args).stopped:
            break
    return close_turn(state, memory)


def test_logged_out_cli_is_remembered_on_the_node_probed_next_time_and_retired_once_clear(
    node_process: Any,
) -> None:
    node = node_process()
    world = World()
    with Client(node.agent_addr, timeout=20) as client:
        # Session 1: escalate within 3 steps; the declared blocker goes to the node.
        first = session(world, client, IMPROVISE)
        assert first.status is TurnStatus.BLOCKED and first.steps <= 3
        assert first.escalation is not None and first.escalation.user_action == SIGN_IN
        [lesson_id] = first.stored
        lesson = client.get_lesson(lesson_id)
        assert lesson.category == "situation" and lesson.status == "active"
        assert lesson.situation is not None and lesson.situation.probe == "gh auth status"
        assert lesson.scope == f"project:{PROJECT}"

        # Session 2: the lesson's probe still fails: escalate within 2 steps, citing it.
        before = world.dispatched
        second = session(world, client, [("run_shell", {"command": "gh pr list"}), *IMPROVISE])
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
        )
        assert third.status is TurnStatus.DONE and third.invalidated == (lesson_id,)
        assert client.get_lesson(lesson_id).status == "retired"
        assert list(NodeSituationMemory(client).load()) == []
