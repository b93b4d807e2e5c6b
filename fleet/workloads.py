"""Fleet workloads: pure data, deterministic from a seed (a simulator reuses them).

The simulated environment is a set of **pitfalls**: for each target a failing form of a
command (the one agents know and try first) and a working form. A **task** gives one agent
one target, worked in two projects one after the other (a change in a library and in its
consumer): the second turn is where an agent's own fresh lesson is proven in another
project, which is what makes it global and shareable (``LessonParams.promotion_projects``).

Rounds are the workload's clock: every agent does its task of a round, then the fleet
settles (gossip delivers) before the next round. A mistake is **known** in a round when some
agent issued that failing form in an earlier round; issuing it again is a *repeated known
mistake*, the figure sharing should drive down.

Workload names (``WORKLOADS``): ``pitfalls`` (recurring pitfalls), ``seed-mistake``,
``learn-what-worked``, ``unlearn-on-change``, ``fleet-learning-curve`` and
``learning-curve-poisoners`` (30 % of the agents fabricate their runs) and
``plausible-liars`` (the Byzantine nodes' agents invert every other pitfall and learn the
rest honestly). A scenario's
``flip_round`` swaps the working and failing forms from that round on (the environment
changed).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from lamarck.errors import ConfigError

__all__ = [
    "TARGETS",
    "WORKLOADS",
    "Pitfall",
    "Task",
    "Workload",
    "WorkloadParams",
    "isolated_pitfall",
    "make_workload",
    "pitfall_for",
    "project_digest_for",
    "succeeds",
]

#: Targets of the recurring pitfalls and scripted scenarios (what a task is about), in order.
TARGETS = (
    "docs",
    "migrations",
    "wheel",
    "fixtures",
    "schema",
    "assets",
    "protos",
    "lockfile",
    "locales",
    "changelog",
    "vendored-deps",
    "api-client",
)


@dataclass(frozen=True, slots=True)
class Pitfall:
    """One target with a failing and a working form of its command."""

    target: str
    failing: str  # the form agents know and try first; it fails
    working: str  # the non-obvious form that works


@dataclass(frozen=True, slots=True)
class Task:
    """One agent's work in one round: a target, in two projects, one turn each."""

    round: int
    agent: int
    pitfall: int  # index into ``Workload.pitfalls``
    projects: tuple[str, str]


@dataclass(frozen=True, slots=True)
class Workload:
    """Agents, the node each runs on, the pitfalls, and the tasks round by round."""

    name: str
    seed: int
    pitfalls: tuple[Pitfall, ...]
    agent_nodes: tuple[int, ...]  # agent i runs on node agent_nodes[i]
    poisoners: frozenset[int]  # agents that record fabricated outcomes
    tasks: tuple[Task, ...]
    flip_round: int | None = None  # from this round on the forms are swapped
    # The pitfalls the poisoners lie about (None: every one); on the others they work
    # honestly, so their nodes share honest lessons too and keep their standing.
    lies_on: frozenset[int] | None = None
    # Turns a liar records for each task it lies on (the task's two, then fabricated runs
    # in the same projects): fabricating costs a liar nothing, so its node's lesson reaches
    # the confidence a well-confirmed lesson claims.
    lie_turns: int = 2

    def lies(self, agent: int, pitfall: int) -> bool:
        """Whether ``agent``, a poisoner, fabricates its run on ``pitfall``."""
        return self.lies_on is None or pitfall in self.lies_on

    @property
    def rounds(self) -> int:
        """How many rounds the tasks span."""
        return 1 + max((t.round for t in self.tasks), default=-1)

    def round_tasks(self, r: int) -> tuple[Task, ...]:
        """The tasks of round ``r``, in agent order."""
        return tuple(t for t in self.tasks if t.round == r)

    def flipped(self, r: int) -> bool:
        """Whether the environment is swapped in round ``r``."""
        return self.flip_round is not None and r >= self.flip_round


@dataclass(frozen=True, slots=True)
class WorkloadParams:
    """Sizes of a generated workload, validated when built."""

    nodes: int = 5  # node processes. Integer >= 1.
    agents: int = 10  # scripted agents, spread over the nodes round-robin. Integer >= 1.
    rounds: int = 6  # rounds of the recurring-pitfalls workload. Integer >= 1.
    pitfalls: int = 8  # distinct pitfalls. Integer in [1, len(TARGETS)].
    projects_per_agent: int = 3  # the agent's repositories. Integer >= 2.
    poisoner_share: float = 0.0  # share of agents that fabricate outcomes. In [0, 1).
    byzantine_nodes: tuple[int, ...] = ()  # nodes whose agents all fabricate outcomes
    # Appended to every target, so repeated runs on one fleet never meet each other's lessons.
    tag: str = ""
    # Share of poisoners in the ``learning-curve-poisoners`` workload. In [0, 1).
    poisoners_arm_share: float = 0.3

    def __post_init__(self) -> None:
        """Validate every size."""
        for name, low in (("nodes", 1), ("agents", 1), ("rounds", 1), ("projects_per_agent", 2)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                raise ConfigError(f"invalid {name}={value!r}: must be >= {low}", field=name)
        if not 1 <= self.pitfalls <= len(TARGETS):
            raise ConfigError(
                f"invalid pitfalls={self.pitfalls}: must be in [1, {len(TARGETS)}]",
                field="pitfalls",
            )
        for name in ("poisoner_share", "poisoners_arm_share"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value < 1.0:
                raise ConfigError(f"invalid {name}={value!r}: must be in [0, 1)", field=name)
        if any(not 0 <= n < self.nodes for n in self.byzantine_nodes):
            raise ConfigError("byzantine_nodes must name nodes", field="byzantine_nodes")


def project_digest_for(seed: int, agent: int, k: int) -> str:
    """The project digest of agent ``agent``'s ``k``-th repository (64 hex digits)."""
    return hashlib.sha256(f"fleet:{seed}:agent{agent}:project{k}".encode()).hexdigest()


def pitfall_for(target: str, tag: str = "") -> Pitfall:
    """The pitfall of ``target`` (tagged): ``make T`` fails, ``make -C build T`` works."""
    t = f"{target}{tag}"
    return Pitfall(t, f"shell:make {t}", f"shell:make -C build {t}")


def isolated_pitfall(p: Pitfall, agent: int) -> Pitfall:
    """The same pitfall relabelled as agent ``agent``'s own: the isolated arm's environment.

    Identical in shape (a failing and a working form), but no other agent ever meets it, so
    no lesson but the agent's own can apply: the same agents, isolated, on the same nodes.
    """
    t = f"{p.target}@a{agent}"
    return Pitfall(t, f"{p.failing}@a{agent}", f"{p.working}@a{agent}")


def succeeds(p: Pitfall, operation: str, *, flipped: bool) -> bool:
    """The environment: whether ``operation`` works on ``p`` (forms swapped when flipped)."""
    return operation == (p.failing if flipped else p.working)


def _agents(params: WorkloadParams, rng: random.Random) -> tuple[tuple[int, ...], frozenset[int]]:
    nodes = tuple(i % params.nodes for i in range(params.agents))
    byz = {i for i, n in enumerate(nodes) if n in params.byzantine_nodes}
    honest = [i for i in range(params.agents) if i not in byz]
    extra = round(params.poisoner_share * params.agents) - len(byz)
    if extra > 0:
        byz |= set(rng.sample(honest, min(extra, len(honest) - 1)))
    return nodes, frozenset(byz)


def _projects(seed: int, agent: int, params: WorkloadParams, rng: random.Random) -> tuple[str, str]:
    a, b = rng.sample(range(params.projects_per_agent), 2)
    return project_digest_for(seed, agent, a), project_digest_for(seed, agent, b)


def _recurring(name: str, seed: int, params: WorkloadParams) -> Workload:
    rng = random.Random(seed)
    pitfalls = tuple(pitfall_for(t, params.tag) for t in TARGETS[: params.pitfalls])
    nodes, poisoners = _agents(params, rng)
    tasks = tuple(
        Task(r, a, rng.randrange(len(pitfalls)), _projects(seed, a, params, rng))
        for r in range(params.rounds)
        for a in range(params.agents)
    )
    return Workload(name, seed, pitfalls, nodes, poisoners, tasks)


def _scripted(
    name: str, seed: int, params: WorkloadParams, steps: tuple[int, ...], flip: int | None
) -> Workload:
    """Agent i works target 0 in round i, on node i mod nodes: A, then B, then C..."""
    rng = random.Random(seed)
    agents = len(steps)
    nodes = tuple(i % params.nodes for i in range(agents))
    sizes = WorkloadParams(nodes=params.nodes, agents=agents)
    tasks = tuple(
        Task(r, agent, 0, _projects(seed, agent, sizes, rng)) for r, agent in enumerate(steps)
    )
    # The seed picks the target: distinct words, so repeated runs never read as near-duplicates.
    target = pitfall_for(TARGETS[seed % len(TARGETS)], params.tag)
    return Workload(name, seed, (target,), nodes, frozenset(), tasks, flip)


def _seed_mistake(seed: int, params: WorkloadParams) -> Workload:
    # A (node 0) hits the failing form and finds the working one; B (node 1) needs the same.
    return _scripted("seed-mistake", seed, params, (0, 1), None)


def _learn_what_worked(seed: int, params: WorkloadParams) -> Workload:
    return _scripted("learn-what-worked", seed, params, (0, 1), None)


def _unlearn(seed: int, params: WorkloadParams) -> Workload:
    # A learns, B confirms; the environment flips; C contradicts and succeeds; D follows.
    return _scripted("unlearn-on-change", seed, params, (0, 1, 2, 3), 2)


def _curve(seed: int, params: WorkloadParams) -> Workload:
    return _recurring("fleet-learning-curve", seed, params)


def _curve_poisoners(seed: int, params: WorkloadParams) -> Workload:
    # The same recurring pitfalls with a share of the agents fabricating their runs.
    share = params.poisoner_share or params.poisoners_arm_share
    return _recurring("learning-curve-poisoners", seed, replace(params, poisoner_share=share))


def _pitfalls(seed: int, params: WorkloadParams) -> Workload:
    return _recurring("pitfalls", seed, params)


def _plausible_liars(seed: int, params: WorkloadParams) -> Workload:
    # The recurring pitfalls; the Byzantine nodes' agents invert every other pitfall's lesson
    # and learn the rest honestly (liars that keep their standing). Each lie is recorded in
    # three runs, so the liar's node claims about 0.8 for it (0.5 at
    # birth, then up to +0.15 a run).
    base = _recurring("plausible-liars", seed, params)
    return replace(base, lies_on=frozenset(range(0, len(base.pitfalls), 2)), lie_turns=3)


#: Every named workload: name -> builder(seed, params).
WORKLOADS: dict[str, Callable[[int, WorkloadParams], Workload]] = {
    "pitfalls": _pitfalls,
    "seed-mistake": _seed_mistake,
    "learn-what-worked": _learn_what_worked,
    "unlearn-on-change": _unlearn,
    "fleet-learning-curve": _curve,
    "learning-curve-poisoners": _curve_poisoners,
    "plausible-liars": _plausible_liars,
}


def make_workload(name: str, seed: int, params: WorkloadParams) -> Workload:
    """The workload ``name`` built from ``seed`` and ``params``; ``ConfigError`` if unknown."""
    try:
        builder = WORKLOADS[name]
    except KeyError:
        known = ", ".join(sorted(WORKLOADS))
        raise ConfigError(
            f"unknown workload {name!r} (known: {known})", reason="unknown_workload"
        ) from None
    return builder(seed, params)
