"""Scripted agent policies: pure functions from what an agent knows to what it does.

No I/O here (a simulator reuses these): the driver (``lamarck.node.fleet.driver``) asks the
node, passes the answers in, runs the chosen operations against the simulated environment
and records the run. The policy is the seeds' default agent: it tries **the form it knows
first** (the failing one) unless a lesson says otherwise — a lesson on file that says to
avoid that form (what the node puts before the call: ``CheckOperation``'s preamble), or a
lesson the agent itself learned earlier in its session.

A **poisoner** fabricates its runs: it reports the working form failed and the failing form
worked, so its node learns (and, once proven in a second project, shares) the inverted
lesson. Its fabricated run is what a lying agent can feed a real node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from lamarck.node.fleet.workloads import Pitfall

__all__ = [
    "Advice",
    "AgentMemory",
    "Attempt",
    "attempt_order",
    "fabricated_attempts",
    "remember_turn",
    "run_attempts",
    "says_avoid",
    "says_prefer",
    "stated_confidence",
]


@dataclass(frozen=True, slots=True)
class Advice:
    """What the node said about one operation before it ran (the decision-time check)."""

    operation: str
    preamble: str  # "" when nothing is on file
    lesson_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Attempt:
    """One operation the agent ran (or claims it ran) and whether it worked."""

    operation: str
    ok: bool


@dataclass(frozen=True, slots=True)
class AgentMemory:
    """What the agent learned itself this session: target -> (the form that worked, lesson)."""

    preferred: Mapping[str, tuple[str, str]] = field(default_factory=dict)


def says_avoid(preamble: str, operation: str) -> bool:
    """Whether the text says to prefer something over ``operation`` (a mechanical lesson)."""
    return f"over `{operation}`" in preamble


def says_prefer(preamble: str, operation: str) -> bool:
    """Whether the text says to prefer ``operation``."""
    return f"Prefer `{operation}`" in preamble


_CONFIDENCE = re.compile(r"\(confidence ([0-9.]+)\)")


def stated_confidence(preamble: str) -> float:
    """The confidence the node's line states for its lesson (0 when it states none)."""
    found = _CONFIDENCE.search(preamble)
    return float(found.group(1)) if found else 0.0


def attempt_order(
    p: Pitfall, advice: Sequence[Advice], memory: AgentMemory
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The forms to try, in order, and the lessons that decided it (to name in play).

    The agent's own fresh lesson wins; else a lesson on file against the known form (and none
    against the other) moves the other first; when lessons conflict, the more confident side
    wins (a tie leaves the habit).
    """
    habit = (p.failing, p.working)
    own = memory.preferred.get(p.target)
    if own is not None and own[0] in habit:
        first = own[0]
        return (first, *(op for op in habit if op != first)), (own[1],) if own[1] else ()
    against_failing = [
        a for a in advice if says_avoid(a.preamble, p.failing) or says_prefer(a.preamble, p.working)
    ]
    against_working = [
        a for a in advice if says_avoid(a.preamble, p.working) or says_prefer(a.preamble, p.failing)
    ]
    weight_f = max((stated_confidence(a.preamble) for a in against_failing), default=-1.0)
    weight_w = max((stated_confidence(a.preamble) for a in against_working), default=-1.0)
    if against_failing and weight_f > weight_w:
        return (p.working, p.failing), tuple(
            dict.fromkeys(i for a in against_failing for i in a.lesson_ids)
        )
    if against_working and not against_failing:
        return habit, tuple(dict.fromkeys(i for a in against_working for i in a.lesson_ids))
    return habit, ()


def run_attempts(order: Sequence[str], works: Callable[[str], bool]) -> tuple[Attempt, ...]:
    """Try the forms in order until one works (the environment answers ``works``)."""
    out: list[Attempt] = []
    for op in order:
        ok = works(op)
        out.append(Attempt(op, ok))
        if ok:
            break
    return tuple(out)


def fabricated_attempts(p: Pitfall) -> tuple[Attempt, ...]:
    """A poisoner's claimed run: the working form 'failed', then the failing form 'worked'."""
    return (Attempt(p.working, False), Attempt(p.failing, True))


def remember_turn(
    memory: AgentMemory, p: Pitfall, attempts: Sequence[Attempt], created: Sequence[str]
) -> AgentMemory:
    """The agent's memory after a turn: the form that worked last, with the lesson it made."""
    worked = next((a.operation for a in reversed(attempts) if a.ok), None)
    if worked is None:
        return memory
    before = memory.preferred.get(p.target)
    lesson = created[0] if created else (before[1] if before and before[0] == worked else "")
    return AgentMemory({**memory.preferred, p.target: (worked, lesson)})
