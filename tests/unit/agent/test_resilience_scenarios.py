"""Adaptive recovery (gaia_resilience) as scripted runs: escalate fast on a real blocker, remember
it, probe it next time, and never escalate on a self-fixable error or a blocker with a way around.

A scripted agent is a list of intended tool calls; it stops when the guard says the turn is
blocked. The world is a fake machine (is ``gh`` installed, is it signed in). Situation lessons
live in an in-process memory, or in the node's own ``LessonService`` (its real decision and
storage rules) for the multi-session run.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from lamarck.agent.classify import ClassifierParams
from lamarck.agent.guard import (
    InMemorySituationMemory,
    SituationMemory,
    ToolGuard,
    TurnReport,
    close_turn,
    open_turn,
)
from lamarck.agent.recovery import RecoveryParams, TurnStatus
from lamarck.agent.situation import Situation, SituationLesson, ToolSpec
from lamarck.domain.rows import LessonStatus
from lamarck.learning.params import LearningParams
from lamarck.learning.scopes import project_scope
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.reputation.transfer import TransferParams

T = TypeVar("T")
SCOPE = project_scope("ab" * 32)
TOOLS = {
    "check_cli_setup": ToolSpec("check_cli_setup", subject_arg="binary"),
    "sign_in_cli": ToolSpec("sign_in_cli", interactive=True, subject_arg="binary"),
    "web_search": ToolSpec("web_search", search=True, subject_arg="query"),
}
SIGN_IN = "run `gh auth login` in a terminal and finish the browser sign-in"
INSTALL = "install the GitHub CLI (https://cli.github.com) and open a new terminal"
Call = tuple[str, dict[str, Any]]


@dataclass
class World:
    """A fake machine: the GitHub CLI and what the agent can reach without it."""

    gh_installed: bool = True
    gh_signed_in: bool = False
    dispatched: int = 0

    def dispatch(self, tool: str, args: Mapping[str, Any]) -> Any:
        self.dispatched += 1
        if tool == "check_cli_setup":
            if not self.gh_installed:
                return _declared("not_installed", INSTALL, "gh --version")
            if not self.gh_signed_in:
                return _declared("auth", SIGN_IN, "gh auth status", interactive=True)
            return {"status": "ok", "output": "gh 2.40.0, signed in"}
        if tool == "sign_in_cli":
            return {"status": "ok"}
        if tool == "web_fetch":
            return {"status_code": 401, "body": '{"message": "Requires authentication"}'}
        if tool == "web_search":
            return []
        if tool == "read_file":
            if args["path"].startswith("clone/"):
                return {"status": "ok", "content": "def main(): ..."}
            return {"status": "error", "error": f"No such file or directory: {args['path']}"}
        if tool == "run_shell":
            return self.shell(str(args["command"]))
        raise AssertionError(f"unexpected tool {tool}")

    def shell(self, command: str) -> Any:
        program = command.split()[0]
        if program == "gh":
            if not self.gh_installed:
                return {"exit_code": 127, "stderr": "bash: gh: command not found"}
            if not self.gh_signed_in:
                return {
                    "exit_code": 1,
                    "stderr": "You are not logged into any GitHub hosts. To log in, run: "
                    "gh auth login",
                }
            return {"exit_code": 0, "stdout": "#12 Fix the parser"}
        if program in ("brew", "apt-get", "winget"):
            return {"executed": False, "tier": "confirm", "error": "needs approval"}
        if program == "git" and "fetch" in command:
            return {"exit_code": 128, "stderr": "fatal: unable to access: Connection refused"}
        return {"exit_code": 0, "stdout": "ok"}

    def run_probe(self, command: str) -> Any:
        return self.shell(command)


def _declared(kind: str, unblock: str, probe: str, *, interactive: bool = False) -> Any:
    return {
        "status": "error",
        "situation": {
            "kind": kind,
            "subject": "gh",
            "interactive": interactive,
            "unblock": unblock,
            "probe": probe,
        },
    }


# The improvisation of #4428, as a scripted agent: every workaround it would try.
IMPROVISE: list[Call] = [
    ("check_cli_setup", {"binary": "gh"}),
    ("sign_in_cli", {"binary": "gh"}),
    ("web_fetch", {"url": "https://api.github.com/repos/o/r/pulls"}),
    ("web_search", {"query": "list pull requests without gh"}),
    ("run_shell", {"command": "curl -s https://api.github.com/repos/o/r/pulls"}),
    ("run_shell", {"command": "gh auth login --with-token"}),
    ("sign_in_cli", {"binary": "gh"}),
    ("run_shell", {"command": "gh pr list"}),
] * 5


def run_session(world: World, memory: SituationMemory, calls: Sequence[Call]) -> TurnReport:
    """One unattended turn of a scripted agent; it stops when the turn is blocked."""
    state = open_turn(
        memory,
        tools=TOOLS,
        params=RecoveryParams(),
        classifier=ClassifierParams(),
        unattended=True,
    )
    guard = ToolGuard(state, world.dispatch, world.run_probe)
    for tool, args in calls:
        if guard.call(tool, args).stopped:
            break
    return close_turn(state, memory)


# -- the logged-out CLI, three sessions --------------------------------------------------------


def test_logged_out_cli_escalates_within_three_steps_and_stores_the_lesson() -> None:
    world, memory = World(), InMemorySituationMemory()
    report = run_session(world, memory, IMPROVISE)
    assert report.status is TurnStatus.BLOCKED
    assert report.steps <= 3  # #4428 took 43
    assert report.escalation is not None
    assert report.escalation.user_action == SIGN_IN
    assert "gh needs a sign-in" in report.escalation.blocked
    assert len(report.stored) == 1
    (lesson,) = memory.load()
    assert (lesson.situation.subject, lesson.situation.probe) == ("gh", "gh auth status")


def test_logged_out_cli_second_session_escalates_within_two_steps_citing_the_lesson() -> None:
    world, memory = World(), InMemorySituationMemory()
    first = run_session(world, memory, IMPROVISE)
    dispatched_before = world.dispatched
    second = run_session(world, memory, [("run_shell", {"command": "gh pr list"}), *IMPROVISE])
    assert second.status is TurnStatus.BLOCKED
    assert second.steps <= 2 and second.workarounds == 0
    assert second.escalation is not None
    assert second.escalation.lesson_id == first.stored[0]
    assert first.stored[0] in second.escalation.text
    assert world.dispatched == dispatched_before  # only the probe ran, no tool call


def test_logged_out_cli_third_session_signed_in_probes_invalidates_and_finishes() -> None:
    world, memory = World(), InMemorySituationMemory()
    first = run_session(world, memory, IMPROVISE)
    world.gh_signed_in = True
    third = run_session(
        world,
        memory,
        [("run_shell", {"command": "gh pr list"}), ("run_shell", {"command": "gh pr view 12"})],
    )
    assert third.status is TurnStatus.DONE
    assert third.invalidated == (first.stored[0],)
    assert memory.load() == ()
    assert first.stored[0] in memory.retired


def test_missing_cli_escalates_within_three_steps_with_the_install_instruction() -> None:
    world, memory = World(gh_installed=False), InMemorySituationMemory()
    calls: list[Call] = [
        ("check_cli_setup", {"binary": "gh"}),
        ("run_shell", {"command": "gh pr list"}),
        ("run_shell", {"command": "brew install gh"}),
        ("run_shell", {"command": "curl -LO https://github.com/cli/cli/releases/gh.tgz"}),
        *IMPROVISE,
    ]
    report = run_session(world, memory, calls)
    assert report.status is TurnStatus.BLOCKED and report.steps <= 3
    assert report.escalation is not None and report.escalation.user_action == INSTALL
    assert "gh is not installed" in report.escalation.blocked
    assert [s.situation.kind for s in memory.load()] == ["not_installed"]


# -- counter-scenarios: over-asking is a regression ----------------------------------------------


def test_wrong_path_is_fixed_by_the_agent_and_never_escalates() -> None:
    world, memory = World(), InMemorySituationMemory()
    calls: list[Call] = [
        ("read_file", {"path": "src/mian.py"}),
        ("read_file", {"path": "src/mian.py"}),
        ("read_file", {"path": "src/main.py"}),
        ("read_file", {"path": "clone/src/main.py"}),
        ("run_shell", {"command": "pytest"}),
    ]
    report = run_session(world, memory, calls)
    assert report.status is TurnStatus.DONE
    assert report.escalation is None and report.steps == len(calls)
    assert memory.load() == ()


def test_blocker_with_a_legitimate_route_around_it_does_not_escalate() -> None:
    world, memory = World(), InMemorySituationMemory()
    calls: list[Call] = [
        ("check_cli_setup", {"binary": "gh"}),
        ("run_shell", {"command": "git fetch origin"}),  # one failed attempt: within budget
        ("read_file", {"path": "clone/README.md"}),
        ("run_shell", {"command": "git log --oneline -5"}),
        ("read_file", {"path": "clone/src/main.py"}),
    ]
    report = run_session(world, memory, calls)
    assert report.status is TurnStatus.DONE
    assert report.escalation is None and report.steps == len(calls)
    assert report.stored == ()  # never escalated, never answered: nothing learned


# -- the same three sessions against the node's own lesson service --------------------------------


def _run(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> T:
    return loop.run_until_complete(coro)


@dataclass
class ServiceMemory:
    """Situation lessons in the node's LessonService (its real storage and probe rules)."""

    service: LessonService
    store: InMemoryLessonStore
    loop: asyncio.AbstractEventLoop

    def load(self) -> Sequence[SituationLesson]:
        return _run(self.service.situation_lessons(SCOPE), self.loop)

    def store_situation(self, situation: Situation) -> str:
        row = _run(self.service.record_situation(situation, SCOPE), self.loop)
        assert row is not None
        return row.id

    def invalidate(self, lesson_id: str, reason: str) -> None:
        _run(self.service.retire(lesson_id, "agent", reason), self.loop)


class _Adapter:
    """``SituationMemory`` over ``ServiceMemory`` (``store`` is the protocol's name)."""

    def __init__(self, inner: ServiceMemory) -> None:
        self.inner = inner

    def load(self) -> Sequence[SituationLesson]:
        return self.inner.load()

    def store(self, situation: Situation) -> str:
        return self.inner.store_situation(situation)

    def invalidate(self, lesson_id: str, reason: str) -> None:
        self.inner.invalidate(lesson_id, reason)


@pytest.fixture
def node_memory() -> Iterator[_Adapter]:
    loop = asyncio.new_event_loop()
    store = InMemoryLessonStore(dim=64)
    service = LessonService(
        store,
        HashingEmbedder(64),
        FixedClock(),
        LearningParams(),
        rng=random.Random(3),
        transfer=TransferParams(),
    )
    try:
        yield _Adapter(ServiceMemory(service, store, loop))
    finally:
        loop.close()


def test_three_sessions_against_the_nodes_lesson_service(node_memory: _Adapter) -> None:
    world = World()
    first = run_session(world, node_memory, IMPROVISE)
    assert first.status is TurnStatus.BLOCKED and first.steps <= 3
    (lesson_id,) = first.stored
    second = run_session(world, node_memory, [("run_shell", {"command": "gh pr list"})])
    assert second.steps <= 2 and second.escalation is not None
    assert second.escalation.lesson_id == lesson_id
    world.gh_signed_in = True
    third = run_session(world, node_memory, [("run_shell", {"command": "gh pr list"})])
    assert third.status is TurnStatus.DONE and third.invalidated == (lesson_id,)
    row = _run(node_memory.inner.store.get_lesson(lesson_id), node_memory.inner.loop)
    assert row.status is LessonStatus.RETIRED
    assert node_memory.load() == []
