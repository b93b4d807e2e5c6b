"""Runs a workload's scripted agents against real nodes through the SDK.

Each turn is one pass of ``lamarck.agent.LearningLoop`` (remember → assess → act → observe →
update): the loop recalls (its labelled unverified hints reach the act), the agent's act
asks the node about both forms (``check_operation``: the advice on file, each lesson with
its evidence class, and any conflict), picks its order with
``lamarck.fleet.agents.attempt_order``, runs the forms against the simulated
environment and records them on the loop's ``RunRecorder``; the loop records the outcome.
Both arms run in the same fleet: ``shared`` on the workload's pitfalls, ``isolated`` on each
agent's relabelled copy (``isolated_pitfall``), so no other agent's lesson can apply there.

After every round the fleet settles: the driver waits until the nodes' import counters stop
moving (bounded), the way time passes between an agent's tasks.
"""

from __future__ import annotations

import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lamarck.agent.loop import ActContext, LearningLoop, LoopParams, Task
from lamarck.agent.run import RunParams
from lamarck.client import CheckResult, Client, Lesson
from lamarck.errors import ConfigError, LamarckError, Unauthenticated
from lamarck.fleet.agents import (
    Advice,
    AgentMemory,
    Attempt,
    Said,
    attempt_order,
    fabricated_attempts,
    followed_poison,
    poison_shown,
    remember_turn,
    run_attempts,
    says_avoid,
    says_prefer,
)
from lamarck.fleet.report import ISOLATED, SHARED, NodeCounts, TurnRecord, node_counts
from lamarck.fleet.workloads import Pitfall, Workload, isolated_pitfall, succeeds
from lamarck.learning.params import ContextParams
from lamarck.operator import OperatorClient
from lamarck.proto.clock import SystemClock

__all__ = ["DriverParams", "FleetDriver", "NodeHandle", "scrape_counts"]


@dataclass(frozen=True, slots=True)
class DriverParams:
    """Timing of a run, validated when built."""

    # The nodes' gossip interval: a round settles no sooner than two of them. > 0.
    gossip_interval_s: float = 0.2
    # Import counters unchanged for this long: the round has settled. > 0.
    quiet_s: float = 0.6
    # Bound on one round settling. > 0.
    settle_timeout_s: float = 15.0
    # Per-call deadline of the SDK. > 0.
    rpc_timeout_s: float = 30.0
    # Run the isolated arm as well (the baseline of the learning figures).
    isolated_arm: bool = True
    # After every round, read each node's lessons to time honest lessons' evidence.
    track_evidence: bool = False
    # The agents' own rules: the learning loop's, its context capture's and its recorder's.
    loop: LoopParams = field(default_factory=LoopParams)
    context: ContextParams = field(default_factory=ContextParams)
    run: RunParams = field(default_factory=RunParams)

    def __post_init__(self) -> None:
        """Refuse non-positive or non-finite times."""
        for name in ("gossip_interval_s", "quiet_s", "settle_timeout_s", "rpc_timeout_s"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not 0 < v < float("inf"):
                raise ConfigError(f"invalid {name}={v!r}: must be finite and > 0", field=name)


@dataclass(frozen=True, slots=True)
class NodeHandle:
    """Where the driver reaches one node."""

    name: str
    agent_addr: str
    metrics_url: str
    byzantine: bool = False
    #: The node's home, where the operator token is read (``None``: no operator token).
    home: Path | None = None
    #: The node's id: what a lesson names as its source ("" when unknown).
    node_id: str = ""
    #: Whether the node runs the influence gate; its agents then follow the gate's rule, else
    #: the agent before the gate (``attempt_order``'s ``pre_gate``: the measuring baseline).
    influence_gate: bool = True


def scrape_counts(url: str, timeout_s: float = 5.0) -> NodeCounts | None:
    """A node's counters from its metrics endpoint (None if it does not answer)."""
    if not url:
        return None
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as reply:
            return node_counts(reply.read().decode())
    except (urllib.error.URLError, OSError):
        return None


@dataclass
class FleetDriver:
    """Runs one workload over the nodes; collects a ``TurnRecord`` per turn."""

    nodes: Sequence[NodeHandle]
    workload: Workload
    params: DriverParams
    rng: random.Random
    records: list[TurnRecord] = field(default_factory=list)
    learned: list[int] = field(default_factory=list)  # lessons created, per node
    _clients: list[Client] = field(default_factory=list)
    _operators: list[OperatorClient] = field(default_factory=list)
    _memories: dict[tuple[str, int], AgentMemory] = field(default_factory=dict)
    _ids: random.Random = field(default_factory=random.Random)
    # (node, lesson text) -> the round an honest peer lesson was first seen there: held,
    # corroborated, driving decisions (``track_evidence``).
    arrived: dict[tuple[int, str], int] = field(default_factory=dict)
    corroborated: dict[tuple[int, str], int] = field(default_factory=dict)
    decides: dict[tuple[int, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.nodes) <= max(self.workload.agent_nodes, default=0):
            raise ConfigError(
                f"workload {self.workload.name!r} needs {max(self.workload.agent_nodes) + 1} "
                f"nodes, the fleet has {len(self.nodes)}",
                reason="too_few_nodes",
            )
        self.learned = [0] * len(self.nodes)
        # The loops draw outcome and session ids from this: seeded by the workload's own
        # targets too, so two runs on one fleet (same seed, another workload or tag) never
        # reuse an outcome id, which the node would answer as a duplicate and learn nothing.
        targets = ",".join(p.target for p in self.workload.pitfalls)
        self._ids = random.Random(f"{self.rng.random()}:{self.workload.name}:{targets}")

    def __enter__(self) -> FleetDriver:
        self._clients = [
            Client(n.agent_addr, timeout=self.params.rpc_timeout_s) for n in self.nodes
        ]
        self._operators = [
            OperatorClient(n.agent_addr, home=n.home, timeout=self.params.rpc_timeout_s)
            for n in self.nodes
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for c in self._clients:
            c.close()
        for op in self._operators:
            op.close()

    def poisoner(self, agent: int) -> bool:
        """Whether ``agent`` fabricates its runs (its own flag, or it runs on a Byzantine node)."""
        node = self.workload.agent_nodes[agent]
        return agent in self.workload.poisoners or self.nodes[node].byzantine

    def counts(self) -> list[NodeCounts | None]:
        """Every node's counters now."""
        return [scrape_counts(n.metrics_url) for n in self.nodes]

    def evidence_classes(self) -> list[dict[str, int] | None]:
        """Every node's active lessons by evidence class, for that node (None: no answer)."""
        out: list[dict[str, int] | None] = []
        for lessons in self._active_lessons():
            counts: dict[str, int] = {}
            for lesson in lessons or ():
                k = lesson.evidence.evidence_class
                counts[k] = counts.get(k, 0) + 1
            out.append(None if lessons is None else counts)
        return out

    def _active_lessons(self) -> list[list[Lesson] | None]:
        out: list[list[Lesson] | None] = []
        for client in self._clients:
            lessons: list[Lesson] = []
            token = ""
            try:
                while True:
                    page = client.list_lessons(statuses="active", page_token=token)
                    lessons.extend(page.lessons)
                    token = page.next_page_token
                    if not token:
                        break
            except LamarckError:
                out.append(None)
                continue
            out.append(lessons)
        return out

    def track_evidence(self, r: int) -> None:
        """After round ``r``: note, at each honest node, the round each honest peer lesson
        about a shared pitfall (it tells the working form) was first held, first held
        corroborated and first driving decisions (corroborated or proven here)."""
        liars = {n.node_id for n in self.nodes if n.byzantine}
        for i, lessons in enumerate(self._active_lessons()):
            if lessons is None or self.nodes[i].byzantine:
                continue
            for lesson in lessons:
                if lesson.origin != "imported" or lesson.source_node_id in liars:
                    continue
                if not any(
                    says_prefer(lesson.content, p.working) or says_avoid(lesson.content, p.failing)
                    for p in self.workload.pitfalls
                ):
                    continue  # not about the shared arm's pitfalls
                key = (i, lesson.content)
                self.arrived.setdefault(key, r)
                if lesson.evidence.evidence_class == "corroborated":
                    self.corroborated.setdefault(key, r)
                if lesson.evidence.decides:
                    self.decides.setdefault(key, r)

    def evidence_delays(self) -> dict[str, float]:
        """Honest peer lessons at honest nodes: how many arrived, how many came to drive
        decisions (corroborated, or proven here by a tried hint) and how many were
        corroborated, with the mean rounds from arrival to each."""
        out: dict[str, float] = {"honest_imports": float(len(self.arrived))}
        for name, lifted in (("decides", self.decides), ("corroborated", self.corroborated)):
            delays = [lifted[k] - self.arrived[k] for k in lifted if k in self.arrived]
            out[f"honest_imports_{name}"] = float(len(delays))
            if delays:
                out[f"rounds_until_{name}"] = round(sum(delays) / len(delays), 2)
        return out

    def poisoned_by_node(self, arm: str = SHARED) -> list[int]:
        """Per node, the decisions its honest agents made in ``arm`` that followed a poison."""
        out = [0] * len(self.nodes)
        for r in self.records:
            if r.arm == arm and not r.poisoner and r.poisoned:
                out[r.node] += 1
        return out

    def run(self, on_round: Callable[[int], None] | None = None) -> list[TurnRecord]:
        """Every round, then a settle; ``on_round(r)`` after each (for progress)."""
        arms = (SHARED, ISOLATED) if self.params.isolated_arm else (SHARED,)
        for r in range(self.workload.rounds):
            for task in self.workload.round_tasks(r):
                for arm in arms:
                    self._task(arm, task.round, task.agent, task.pitfall, task.projects)
            self.settle()
            if self.params.track_evidence:
                self.track_evidence(r)
            if on_round is not None:
                on_round(r)
        return self.records

    def settle(self) -> None:
        """Wait (bounded) until what the round taught has been delivered.

        At least two gossip intervals (every node's publish scan has run since the round's
        last outcome), then until every node's outbox is empty (a Publish is imported when it
        returns) and the import counters have stayed still for ``quiet_s``. Counters alone
        are not enough: a publish not yet scanned looks exactly like a quiet fleet.
        """
        time.sleep(2 * self.params.gossip_interval_s)  # the origin's publish scan
        deadline = time.monotonic() + self.params.settle_timeout_s
        last = self._import_total()
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(self.params.quiet_s / 3)
            now = self._import_total()
            if now != last:
                last, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since >= self.params.quiet_s:
                if self._outboxes_empty():
                    return
                quiet_since = time.monotonic()

    def _outboxes_empty(self) -> bool:
        """Whether no node holds an undelivered gossip row (a node that does not answer: no)."""
        for op in self._operators:
            try:
                network = op.status().get("network") or {}
            except Unauthenticated:
                # A handle without its node's home has no operator token: every settle would
                # wait out its whole bound. That is the caller's mistake, not a quiet node.
                raise
            except LamarckError:
                return False
            if int(network.get("outbox", {}).get("depth", 0)) > 0:
                return False
        return True

    def _import_total(self) -> float:
        return sum(sum(c.imports.values()) for c in self.counts() if c is not None)

    # -- one task ------------------------------------------------------------------------

    def _task(self, arm: str, r: int, agent: int, pitfall: int, projects: tuple[str, str]) -> None:
        base = self.workload.pitfalls[pitfall]
        p = base if arm == SHARED else isolated_pitfall(base, agent)
        node = self.workload.agent_nodes[agent]
        client = self._clients[node]
        loop = LearningLoop(
            client,
            project=projects[0],
            params=self.params.loop,
            context_params=self.params.context,
            run_params=self.params.run,
            clock=SystemClock(),
            rng=self._ids,
        )
        turns = list(projects)
        if arm == SHARED and self.poisoner(agent) and self.workload.lies(agent, pitfall):
            # A liar records its fabricated run more often than the task's two turns.
            turns += [projects[k % 2] for k in range(self.workload.lie_turns - 2)]
        for turn, project in enumerate(turns):
            loop = (
                loop
                if turn == 0
                else LearningLoop(
                    client,
                    project=project,
                    params=self.params.loop,
                    context_params=self.params.context,
                    run_params=self.params.run,
                    clock=SystemClock(),
                    rng=self._ids,
                )
            )
            self._turn(loop, client, arm, r, agent, node, pitfall, p, project, turn)

    def _turn(
        self,
        loop: LearningLoop,
        client: Client,
        arm: str,
        r: int,
        agent: int,
        node: int,
        pitfall: int,
        p: Pitfall,
        project: str,
        turn: int,
    ) -> None:
        session = f"{arm}-r{r}-a{agent}"
        key = (arm, agent)
        memory = self._memories.get(key, AgentMemory())
        flipped = self.workload.flipped(r)
        liar = self.poisoner(agent) and self.workload.lies(agent, pitfall)
        seen: dict[str, object] = {}

        def act(ctx: ActContext) -> None:
            if liar:
                attempts = fabricated_attempts(p)
                ctx.recorder.lessons_in_play(x for _, x in memory.preferred.values() if x)
                seen["advised"] = False
            else:
                advice = [
                    _advice(client, op, session, project, turn, self._poison(p, flipped))
                    for op in (p.failing, p.working)
                ]
                hints = [said(x, self._poison(p, flipped)) for x in ctx.hints]
                # The plan-time conflicts no side holds are unresolved sides too.
                advice.append(
                    Advice(
                        "plan",
                        "",
                        unresolved=tuple(
                            said(x, self._poison(p, flipped))
                            for c in ctx.conflicts
                            if not c.holds
                            for x in c.sides
                        ),
                    )
                )
                pre_gate = not self.nodes[node].influence_gate
                order, deciding = attempt_order(p, advice, memory, hints, pre_gate=pre_gate)
                seen["poisoned"] = followed_poison(p, advice, memory, hints, pre_gate=pre_gate)
                seen["exposed"] = poison_shown(advice, hints)
                ctx.recorder.lessons_in_play(deciding)
                attempts = run_attempts(order, lambda op: succeeds(p, op, flipped=flipped))
                own = memory.preferred.get(p.target)
                seen["advised"] = bool(deciding) and not (own and own[1] in deciding)
            for a in attempts:
                ctx.recorder.check(
                    "test", passed=a.ok, operation=a.operation, target=p.target, label="build"
                )
            seen["attempts"] = attempts

        report = loop.run(
            Task(f"build the {p.target} target", {"domain": "build"}),
            act,
            session_id=session,
            turn_index=turn,
        )
        attempts: tuple[Attempt, ...] = seen["attempts"]  # type: ignore[assignment]
        created = report.extracted.created
        self.learned[node] += len(created)
        self._memories[key] = remember_turn(memory, p, attempts, created)
        failing_now = p.working if flipped else p.failing
        self.records.append(
            TurnRecord(
                arm=arm,
                round=r,
                agent=agent,
                node=node,
                pitfall=pitfall,
                turn=turn,
                operations=tuple(a.operation for a in attempts),
                mistakes=0 if liar else sum(a.operation == failing_now for a in attempts),
                first_ok=bool(attempts) and attempts[0].ok,
                advised=bool(seen["advised"]),
                poisoner=self.poisoner(agent),  # a liar, honest on this pitfall or not
                created=created,
                outcome_id=report.update.outcome_id,
                poisoned=bool(seen.get("poisoned", False)),
                exposed=bool(seen.get("exposed", False)),
            )
        )

    def _poison(self, p: Pitfall, flipped: bool) -> Callable[[Lesson], bool]:
        """Which lessons are known poison for ``p``: those telling the form that fails now
        over the one that works (the inverted pitfall lesson), whoever signed them. A liar's
        honest lesson is no poison: following it is the right decision."""
        bad, good = (p.working, p.failing) if flipped else (p.failing, p.working)

        def poisoned(lesson: Lesson) -> bool:
            return says_avoid(lesson.content, good) or says_prefer(lesson.content, bad)

        return poisoned


def _never(lesson: Lesson) -> bool:
    return False


def said(lesson: Lesson, poisoned: Callable[[Lesson], bool] = _never) -> Said:
    """A lesson the node showed, with its evidence, as the policy reads it; ``poisoned``
    marks known poison (for the measurement, never for the policy)."""
    e = lesson.evidence
    return Said(
        lesson.id,
        lesson.content,
        e.rank,
        e.independent_principals,
        lesson.confidence,
        poisoned=poisoned(lesson),
        decides=e.decides,
        own=e.own_principal,
    )


def advice_of(op: str, check: CheckResult, poisoned: Callable[[Lesson], bool] = _never) -> Advice:
    """The check's advice and the sides of its unresolved conflicts."""
    return Advice(
        op,
        check.preamble,
        check.lesson_ids,
        tuple(said(x, poisoned) for x in check.lessons),
        tuple(said(x, poisoned) for c in check.conflicts if not c.holds for x in c.sides),
    )


def _advice(
    client: Client,
    op: str,
    session: str,
    project: str,
    turn: int,
    poisoned: Callable[[Lesson], bool],
) -> Advice:
    check = client.check_operation(op, session_id=session, project_digest=project, turn_index=turn)
    return advice_of(op, check, poisoned)
