"""Issue 14 §3.5, the blocker (seed 002 §4) on a fleet: a logged-out CLI met on one node,
met again on another, then cleared.

Sessions are scripted agents running their tool calls through ``lamarck.agent``'s recovery
policy (``open_turn`` / ``ToolGuard`` / ``close_turn``) with the situation lessons on their
node (``NodeSituationMemory`` over RecordSituation):

1. node 1, CLI logged out: the agent escalates and the declared blocker is stored there;
2. node 2, still logged out: escalates within 2 steps *citing the lesson* only if the lesson
   travelled; what the nodes say about sharing it is reported (``shared``,
   ``not_shared_reason`` of the lesson; the import ack of its signed record on node 2);
3. CLI signed in: on every node holding a blocker lesson the agent probes, the lesson is
   retired, the work finishes.

Counter-scenario: a wrong path (a self-fixable error) is corrected and never escalates.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lamarck.agent.classify import ClassifierParams
from lamarck.agent.guard import NodeSituationMemory, ToolGuard, TurnReport, close_turn, open_turn
from lamarck.agent.recovery import RecoveryParams, TurnStatus
from lamarck.agent.situation import ToolSpec
from lamarck.client import Client
from lamarck.node.fleet.attacks import AttackParams, LessonSpec, signed_lesson
from lamarck.node.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.node.fleet.supervisor import Fleet
from lamarck.node.fleet.workloads import Workload
from lamarck.proto.clock import SystemClock
from lamarck.proto.keys import identity_path, load_private_key

__all__ = [
    "IMPROVISE",
    "SIGN_IN",
    "TOOLS",
    "WRONG_PATH",
    "BlockerReport",
    "Call",
    "CliWorld",
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
                    "probe": "gh auth status",
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


def session(world: CliWorld, client: Client, calls: Sequence[Call], project: str) -> TurnReport:
    """One unattended turn whose situation lessons live on the client's node."""
    memory = NodeSituationMemory(client, project_digest=project)
    state = open_turn(
        memory, tools=TOOLS, params=RecoveryParams(), classifier=ClassifierParams(), unattended=True
    )
    guard = ToolGuard(state, world.dispatch, world.shell)
    for tool, args in calls:
        if guard.call(tool, args).stopped:
            break
    return close_turn(state, memory)


@dataclass
class BlockerReport:
    """One run of the scenario."""

    first: TurnReport
    second: TurnReport
    thirds: list[TurnReport] = field(default_factory=list)
    counter: TurnReport | None = None
    lesson_category: str = ""
    lesson_shared: bool = False
    not_shared_reason: str = ""
    import_ack: str = ""  # the lesson's signed record imported on node 2: status:reason
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
            "counter_escalated": float(
                self.counter is not None and self.counter.escalation is not None
            ),
        }


def _signed_situation(fleet: Fleet, client: Client, lesson_id: str) -> bytes:
    """Node 1's lesson as the signed record a peer would receive (node 1's key, with the
    lesson's own outcome evidence): what node 2 would decide if it arrived."""
    lesson = client.get_lesson(lesson_id)
    s = lesson.situation
    assert s is not None
    fields = {
        "tool": s.tool,
        "subject": s.subject,
        "kind": s.kind,
        "interactive": s.interactive,
        "unblock": s.unblock,
        "probe": s.probe,
        "source": s.source or "declared",
    }
    spec = LessonSpec(
        content=lesson.content,
        operation=f"tool:{s.tool}",
        situation=tuple((k, v) for k, v in fields.items() if v not in ("", None)),
    )
    key = load_private_key(identity_path(fleet.nodes[0].home))
    return signed_lesson(spec, key, SystemClock().now(), AttackParams())


def fleet_settle(fleet: Fleet) -> None:
    """Give gossip its time: two publish scans and an outbox round (bounded by the driver)."""
    handles = [NodeHandle(n.name, n.agent_addr, n.metrics_url) for n in fleet.nodes]
    params = DriverParams(gossip_interval_s=fleet.spec.gossip_interval_s, isolated_arm=False)
    work = Workload("settle", 0, (), (0,), frozenset(), ())
    with FleetDriver(handles, work, params, random.Random(0)) as driver:
        driver.settle()


def run_blocker(fleet: Fleet, project: str) -> BlockerReport:
    """Sessions 1 (node 1), 2 (node 2), 3 (every node holding a lesson), counter (node 3)."""
    a, b = fleet.nodes[0], fleet.nodes[1]
    c = fleet.nodes[2 % len(fleet.nodes)]
    world = CliWorld()
    with Client(a.agent_addr, timeout=60) as ca, Client(b.agent_addr, timeout=60) as cb:
        first = session(world, ca, IMPROVISE, project)
        lesson_id = first.stored[0] if first.stored else ""
        category, shared, why, ack = "", False, "", ""
        if lesson_id:
            lesson = ca.get_lesson(lesson_id)
            category, shared, why = lesson.category, lesson.shared, lesson.not_shared_reason
        fleet_settle(fleet)
        before = world.dispatched
        second = session(world, cb, [("run_shell", {"command": "gh pr list"}), *IMPROVISE], project)
        raw = _signed_situation(fleet, ca, lesson_id) if lesson_id else b""
        if raw:
            # After session 2, as a diagnostic: would node 2 take the record if it arrived?
            result = cb.import_bundle(raw + b"\n", source_label="blocker-scenario")
            ack = f"{result.acks[0].status}:{result.acks[0].reason}" if result.acks else ""
        cited_id = second.escalation.lesson_id if second.escalation is not None else None
        report = BlockerReport(
            first=first,
            second=second,
            lesson_category=category,
            lesson_shared=shared,
            not_shared_reason=why,
            import_ack=ack,
            second_cites_first=bool(cited_id) and second.stored in ((), (cited_id,)),
            node2_dispatched_in_session_2=world.dispatched - before,
        )
        world.signed_in = True
        done = [("run_shell", {"command": "gh pr list"}), ("run_shell", {"command": "gh pr view"})]
        for client in (ca, cb):
            report.thirds.append(session(world, client, done, project))
    with Client(c.agent_addr, timeout=60) as cc:
        report.counter = session(CliWorld(signed_in=True), cc, WRONG_PATH, project)
    return report
