"""The blocker (design sources: adaptive recovery) on a fleet: a logged-out CLI met on one node,
met again on another, then cleared.

Sessions are scripted agents running their tool calls through ``lamarck.agent``'s recovery
policy (``open_turn`` / ``ToolGuard`` / ``close_turn``) with the situation lessons on their
node (``NodeSituationMemory`` over RecordSituation). A turn that met a declared blocker
records its outcome (``RecordOutcome``: the calls it made, the blocked tool's among them
failed or refused) and the situation lesson cites that outcome as its evidence, so the node
may share it; every node of the fleet declares the tool (``DECLARED_TOOLS``, the node setting
``declared_tools``), so each peer takes it.

1. node 1, CLI logged out: the agent escalates and the declared blocker is stored there,
   machine-wide (a blocker is a fact about the machine, not about a project: adaptive recovery),
   and published;
2. node 2, still logged out: the lesson arrived; its probe still fails, so the agent escalates
   on its own evidence: the peer lesson is unverified there (one peer's word), so it never
   drives the decision;
3. CLI signed in: on every node holding a blocker lesson the agent probes, the lesson is
   retired, the work finishes.

Counter-scenario: a wrong path (a self-fixable error) is corrected and never escalates.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lamarck.agent.classify import ClassifierParams
from lamarck.agent.guard import (
    GuardedCall,
    NodeSituationMemory,
    ToolGuard,
    TurnReport,
    close_turn,
    open_turn,
)
from lamarck.agent.recorder import RunRecorder
from lamarck.agent.recovery import RecoveryParams, Refuse, TurnStatus
from lamarck.agent.situation import Situation, SituationLesson, ToolSpec, subject_of
from lamarck.client import Client, Lesson
from lamarck.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.fleet.supervisor import Fleet
from lamarck.fleet.workloads import Workload

__all__ = [
    "DECLARED_TOOLS",
    "IMPROVISE",
    "SIGN_IN",
    "TOOLS",
    "WRONG_PATH",
    "BlockerReport",
    "Call",
    "CliWorld",
    "EvidencedSituationMemory",
    "run_blocker",
    "session",
]

#: The scripted agents' tools, as the recovery policy knows them.
TOOLS = {
    "check_cli_setup": ToolSpec("check_cli_setup", subject_arg="binary"),
    "sign_in_cli": ToolSpec("sign_in_cli", interactive=True, subject_arg="binary"),
    "web_search": ToolSpec("web_search", search=True, subject_arg="query"),
}
#: The remedy the logged-out CLI declares (the escalation's user action).
SIGN_IN = "run `gh auth login` in a terminal and finish the browser sign-in"
#: The probe the logged-out CLI declares.
PROBE = "gh auth status"
#: What every node of a blocker fleet declares (``--declared-tools``, one JSON object each):
#: the tool that reports the blocker, with the remedies its code declares. A situation
#: lesson about another tool, or with another unblock or probe, is refused on import.
DECLARED_TOOLS: tuple[str, ...] = (
    json.dumps({"tool": "check_cli_setup", "unblock": [SIGN_IN], "probe": [PROBE]}),
)
#: One scripted tool call: the tool's name and its arguments.
Call = tuple[str, dict[str, Any]]

#: Every workaround an improvising agent tries (the #4428 run took 43 steps).
IMPROVISE: list[Call] = [
    ("check_cli_setup", {"binary": "gh"}),
    ("sign_in_cli", {"binary": "gh"}),
    ("web_fetch", {"url": "https://api.github.com/repos/o/r/pulls"}),
    ("web_search", {"query": "list pull requests without gh"}),
    ("run_shell", {"command": "curl -s https://api.github.com/repos/o/r/pulls"}),
    ("run_shell", {"command": "gh auth login --with-token"}),
    ("run_shell", {"command": "gh pr list"}),
] * 5
#: A self-fixable error: a wrong path, then the right one.
WRONG_PATH: list[Call] = [
    ("read_file", {"path": "src/mian.py"}),
    ("run_shell", {"command": "ls src"}),
    ("read_file", {"path": "src/main.py"}),
]


@dataclass
class CliWorld:
    """A simulated machine with the GitHub CLI, signed in or not."""

    signed_in: bool = False
    dispatched: int = 0

    def dispatch(self, tool: str, args: Mapping[str, Any]) -> Any:
        """Run one tool call."""
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
                    "probe": PROBE,
                },
            }
        if tool == "sign_in_cli":
            return {"status": "ok"}
        if tool == "web_fetch":
            return {"status_code": 401, "body": '{"message": "Requires authentication"}'}
        if tool == "web_search":
            return []
        if tool == "read_file":
            if args["path"] == "src/main.py":
                return {"status": "ok", "content": "def main(): ..."}
            return {"status": "error", "error": f"No such file or directory: {args['path']}"}
        if tool == "run_shell":
            return self.shell(str(args["command"]))
        return {"status": "error", "error": f"unknown tool {tool}"}

    def shell(self, command: str) -> Any:
        """Run one shell command (and a lesson's probe)."""
        if command.startswith("gh ") and not self.signed_in:
            return {
                "exit_code": 1,
                "stderr": "You are not logged into any GitHub hosts. To log in, run: gh auth login",
            }
        return {"exit_code": 0, "stdout": "#12 Fix the parser"}


@dataclass(slots=True)
class EvidencedSituationMemory:
    """Situation lessons on a node whose stores cite ``evidence`` (the recorded outcome of
    the turn that met the blocker): what lets the node share them."""

    node: NodeSituationMemory
    evidence: tuple[str, ...] = ()

    def load(self) -> Sequence[SituationLesson]:
        """The node's active situation lessons."""
        return self.node.load()

    def store(self, situation: Situation) -> str:
        """Remember a declared blocker, citing ``evidence``."""
        return self.node.client.record_situation(
            situation, project_digest=self.node.project_digest, evidence=self.evidence
        ).id

    def invalidate(self, lesson_id: str, reason: str) -> None:
        """Retire a lesson a clear probe proved stale."""
        self.node.invalidate(lesson_id, reason)


def _record_call(recorder: RunRecorder, tool: str, args: Mapping[str, Any], g: GuardedCall) -> None:
    """Put one call in the turn's record: how it ended (a call never dispatched is left out)."""
    if isinstance(g.decision, Refuse):
        outcome: Literal["ok", "failed", "refused"] = "refused"
    elif g.observation is not None:
        outcome = g.observation.classification.outcome
    else:
        return
    target = subject_of(TOOLS.get(tool) or ToolSpec(tool), args)
    recorder.tool_call(tool, outcome, target=target)


def session(
    world: CliWorld,
    client: Client,
    calls: Sequence[Call],
    project: str,
    *,
    machine_wide: bool = False,
    session_id: str = "blocker",
) -> TurnReport:
    """One unattended turn whose situation lessons live on the client's node.

    A turn that leaves a declared blocker to remember first records its outcome (the calls it
    made) and the lesson cites it. ``machine_wide``: the lesson is global rather than scoped
    to ``project`` (the fleet shares it with every peer).
    """
    node = NodeSituationMemory(client, project_digest="" if machine_wide else project)
    memory = EvidencedSituationMemory(node)
    state = open_turn(
        memory, tools=TOOLS, params=RecoveryParams(), classifier=ClassifierParams(), unattended=True
    )
    guard = ToolGuard(state, world.dispatch, world.shell)
    recorder = RunRecorder(
        session_id=session_id, goal="list the open pull requests", project=project
    )
    for tool, args in calls:
        g = guard.call(tool, args)
        _record_call(recorder, tool, args, g)
        if g.stopped:
            break
    if state.lessons_to_store():
        # The escalated turn's outcome: the evidence that the blocker was met here.
        result = client.record_outcome(recorder.finish().outcome)
        memory.evidence = (result.outcome_id,)
    return close_turn(state, memory)


@dataclass
class BlockerReport:
    """One run of the scenario."""

    first: TurnReport
    second: TurnReport
    thirds: list[TurnReport] = field(default_factory=list)
    counter: TurnReport | None = None
    lesson_category: str = ""
    lesson_evidence: tuple[str, ...] = ()  # the outcome ids node 1's lesson cites
    lesson_shared: bool = False
    not_shared_reason: str = ""
    node2_copy: str = ""  # the id of node 2's copy of node 1's lesson ("" when none arrived)
    second_cites_first: bool = False
    node2_dispatched_in_session_2: int = 0

    def figures(self) -> dict[str, float]:
        """Steps and outcomes of the sessions."""
        return {
            "session1_steps": float(self.first.steps),
            "session1_blocked": float(self.first.status is TurnStatus.BLOCKED),
            "session2_steps": float(self.second.steps),
            "session2_cites_lesson": float(self.second_cites_first),
            "session3_done": float(all(t.status is TurnStatus.DONE for t in self.thirds)),
            "situation_lesson_shared": float(self.lesson_shared),
            "situation_lesson_on_node2": float(bool(self.node2_copy)),
            "counter_escalated": float(
                self.counter is not None and self.counter.escalation is not None
            ),
        }


def fleet_settle(fleet: Fleet) -> None:
    """Give gossip its time: two publish scans and an outbox round (bounded by the driver)."""
    handles = [NodeHandle(n.name, n.agent_addr, n.metrics_url, home=n.home) for n in fleet.nodes]
    params = DriverParams(gossip_interval_s=fleet.spec.gossip_interval_s, isolated_arm=False)
    work = Workload("settle", 0, (), (0,), frozenset(), ())
    with FleetDriver(handles, work, params, random.Random(0)) as driver:
        driver.settle()


def _copy_of(client: Client, original: Lesson) -> str:
    """The id of the receiving node's active copy of ``original`` (its signer's situation
    lesson: the same signature, from the same node), or ""."""
    page = client.list_lessons(
        category="situation", statuses="active", origin="imported", operation=original.operation
    )
    for lesson in page.lessons:
        if lesson.source_node_id == original.source_node_id:
            return lesson.id
    return ""


def run_blocker(fleet: Fleet, project: str) -> BlockerReport:
    """Sessions 1 (node 1), 2 (node 2), 3 (every node holding a lesson), counter (node 3)."""
    a, b = fleet.nodes[0], fleet.nodes[1]
    c = fleet.nodes[2 % len(fleet.nodes)]
    world = CliWorld()
    tag = project[:12]
    with Client(a.agent_addr, timeout=60) as ca, Client(b.agent_addr, timeout=60) as cb:
        first = session(world, ca, IMPROVISE, project, machine_wide=True, session_id=f"{tag}-1")
        lesson = ca.get_lesson(first.stored[0]) if first.stored else None
        report_fields: dict[str, Any] = {}
        if lesson is not None:
            report_fields = {
                "lesson_category": lesson.category,
                "lesson_evidence": tuple(lesson.evidence_outcome_ids),
                "lesson_shared": lesson.shared,
                "not_shared_reason": lesson.not_shared_reason,
            }
        fleet_settle(fleet)
        copy = _copy_of(cb, lesson) if lesson is not None else ""
        before = world.dispatched
        second = session(
            world,
            cb,
            [("run_shell", {"command": "gh pr list"}), *IMPROVISE],
            project,
            machine_wide=True,
            session_id=f"{tag}-2",
        )
        cited_id = second.escalation.lesson_id if second.escalation is not None else None
        report = BlockerReport(
            first=first,
            second=second,
            node2_copy=copy,
            second_cites_first=bool(copy)
            and cited_id == copy
            and second.stored in ((), (cited_id,)),
            node2_dispatched_in_session_2=world.dispatched - before,
            **report_fields,
        )
        world.signed_in = True
        done = [("run_shell", {"command": "gh pr list"}), ("run_shell", {"command": "gh pr view"})]
        for k, client in enumerate((ca, cb)):
            report.thirds.append(
                session(world, client, done, project, machine_wide=True, session_id=f"{tag}-3{k}")
            )
    with Client(c.agent_addr, timeout=60) as cc:
        report.counter = session(
            CliWorld(signed_in=True), cc, WRONG_PATH, project, session_id=f"{tag}-c"
        )
    return report
