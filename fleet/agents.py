"""Scripted agent policies: pure functions from what an agent knows to what it does.

No I/O here (a simulator reuses these): the driver (``lamarck.fleet.driver``) asks the
node, passes the answers in, runs the chosen operations against the simulated environment
and records the run. The policy is the seeds' default agent: it tries **the form it knows
first** (the failing one) unless a lesson says otherwise — the agent's own fresh lesson, or
advice on file (``CheckOperation``'s lessons, each with its evidence class). It follows the
influence rule: proven here over corroborated over unverified, then more independent
principals, then more confidence. An unverified lesson is never advice: a plan-time hint
(recall's labelled hints) of this node's own principal (its operator's fleet) is at most
tried first when no advice speaks (the canary that lets an honest lesson be proven here, and
a fleet under one operator learn across its nodes); another principal's hint is a fallback,
tried once the habit failed, until it is corroborated.

When the evidence does not decide — an exact tie, an unresolved conflict, hints that
disagree — the agent tries first the form its habit would not when that side may decide or
is of its own principal (the habit comes next if it fails), and every side is in play, so
the outcome proves one side here after at most two tries. A
side that tells the habit adds nothing the agent would not do anyway; letting it cancel the
other side would give a lie that agrees with the habit a reach a lone lie never has (it
could silence every honest hint), while trying the other side first gives a lie no more
than the canary already gives it alone.

A **poisoner** fabricates its runs: it reports the working form failed and the failing form
worked, so its node learns (and, once proven in a second project, shares) the inverted
lesson. Its fabricated run is what a lying agent can feed a real node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from lamarck.fleet.workloads import Pitfall

__all__ = [
    "Advice",
    "AgentMemory",
    "Attempt",
    "Said",
    "attempt_order",
    "fabricated_attempts",
    "followed_poison",
    "poison_shown",
    "remember_turn",
    "run_attempts",
    "says_avoid",
    "says_prefer",
]


@dataclass(frozen=True, slots=True)
class Said:
    """One lesson the node showed, with its evidence: the class's rank (0 proven here, 1
    corroborated, 2 unverified), its independent principals and its confidence."""

    lesson_id: str
    content: str
    rank: int
    independent: int = 0
    confidence: float = 0.0
    #: A known poison: it tells the form that fails over the one that works (the measuring
    #: harness knows; the agent does not read it).
    poisoned: bool = False
    #: Whether the node lets it drive decisions (proven here or corroborated, or any lesson
    #: with the gate off); ``None``: read from the class (proven or corroborated).
    decides: bool | None = None
    #: An unverified import from a node of this node's own principal (its operator's fleet):
    #: the only hint the agent tries first (the canary); others are fallbacks.
    own: bool = False

    @property
    def advice(self) -> bool:
        """Whether the node would give it as advice when nothing contradicts it."""
        return self.rank < 2 if self.decides is None else self.decides

    def key(self) -> tuple[int, int, float]:
        """Strongest first: class, independent support, confidence (never recency)."""
        return (self.rank, -self.independent, -self.confidence)


@dataclass(frozen=True, slots=True)
class Advice:
    """What the node said about one operation before it ran (the decision-time check).

    ``lessons`` are its advice (proven here or corroborated, and a side that holds in a
    conflict); ``unresolved`` every side of a conflict on file that no side holds.
    """

    operation: str
    preamble: str  # "" when nothing is on file
    lesson_ids: tuple[str, ...] = ()
    lessons: tuple[Said, ...] = ()
    unresolved: tuple[Said, ...] = ()


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


def _sides(p: Pitfall, said: Sequence[Said]) -> tuple[list[Said], list[Said]]:
    """The lessons among ``said`` for the working form first, and those for the failing one."""
    unique = list({s.lesson_id: s for s in said}.values())
    working = [
        s for s in unique if says_avoid(s.content, p.failing) or says_prefer(s.content, p.working)
    ]
    failing = [
        s for s in unique if says_avoid(s.content, p.working) or says_prefer(s.content, p.failing)
    ]
    return working, failing


def _ids(*groups: Sequence[Said]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s.lesson_id for g in groups for s in g))


def attempt_order(
    p: Pitfall,
    advice: Sequence[Advice],
    memory: AgentMemory,
    hints: Sequence[Said] = (),
    *,
    pre_gate: bool = False,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The forms to try, in order, and the lessons that decided it (to name in play).

    The agent's own fresh lesson wins. Else the advice on file: the strongest side by
    evidence (class, independent support, confidence) decides. When nothing decides — an
    exact tie, an unresolved conflict (on file, or between plan-time hints), or only hints —
    a side telling the form the habit does not try first is tried first when it may decide
    on its own or is of this node's own principal (the canary; in a conflict the habit's
    side adds nothing, see the module docstring); another principal's unverified side is a
    fallback, tried once the habit failed. Every lesson that took part is named, so the
    outcome judges it.

    ``pre_gate`` is the agent of a node with the influence gate off (the measuring baseline:
    the node and its agents as before the gate): an exact tie or an unresolved conflict keeps
    the habit, as it did when the node showed one lesson and a tie went to the newer one.
    """
    habit = (p.failing, p.working)
    other = (p.working, p.failing)
    own = memory.preferred.get(p.target)
    if own is not None and own[0] in habit:
        first = own[0]
        return (first, *(op for op in habit if op != first)), (own[1],) if own[1] else ()
    for_working, for_failing = _sides(p, [s for a in advice for s in a.lessons])
    if for_working or for_failing:
        best_w = min((s.key() for s in for_working), default=None)
        best_f = min((s.key() for s in for_failing), default=None)
        if best_w is not None and (best_f is None or best_w < best_f):
            return other, _ids(for_working)
        if best_f is not None and (best_w is None or best_f < best_w):
            return habit, _ids(for_failing)
        # An exact tie: the other form first (before the gate: the habit).
        return (habit if pre_gate else other), _ids(for_working, for_failing)
    open_w, open_f = _sides(p, [s for a in advice for s in a.unresolved])
    hint_w, hint_f = _sides(p, hints)
    deciding = _ids(open_w, open_f, hint_w, hint_f)
    if pre_gate:
        if open_w or open_f or (hint_w and hint_f):
            return habit, deciding
        return (other if hint_w else habit), deciding
    # The side against the habit goes first when it may decide on its own (an unresolved
    # conflict of sides of one class) or is of this node's own principal (the canary);
    # another principal's unverified side is a fallback, tried once the habit failed.
    first_other = any(s.advice or s.own for s in open_w) or any(s.own for s in hint_w)
    return (other if first_other else habit), deciding


def poison_shown(advice: Sequence[Advice], hints: Sequence[Said] = ()) -> bool:
    """Whether a known poison was before the agent: advice, a conflict side or a hint."""
    return any(s.poisoned for a in advice for s in (*a.lessons, *a.unresolved)) or any(
        s.poisoned for s in hints
    )


def followed_poison(
    p: Pitfall,
    advice: Sequence[Advice],
    memory: AgentMemory,
    hints: Sequence[Said] = (),
    *,
    pre_gate: bool = False,
) -> bool:
    """Whether the agent's decision followed a poisoned lesson: its first attempt differs
    from the one it makes with every poisoned lesson taken away (``Said.poisoned``);
    ``pre_gate`` as for :func:`attempt_order`.

    Counterfactual, so a poison that only sat beside the habit is not counted, and a tie or
    a conflict a poison forced (the habit kept where the honest lesson alone would have
    been tried) is.
    """
    if not poison_shown(advice, hints):
        return False
    clean: list[Advice] = []
    honest_hints = [s for s in hints if not s.poisoned]
    for a in advice:
        kept, freed = _without_poison(p, a)
        clean.append(kept)
        honest_hints.extend(freed)
    first = attempt_order(p, advice, memory, hints, pre_gate=pre_gate)[0][0]
    return first != attempt_order(p, clean, memory, honest_hints, pre_gate=pre_gate)[0][0]


def _without_poison(p: Pitfall, a: Advice) -> tuple[Advice, list[Said]]:
    """What the check would have said with no poisoned lesson on file, and the hints that
    would have been shown instead: a conflict left with one side only is no conflict, so
    its sides that may decide are advice and the others what an unverified lesson in no
    conflict is at plan time, a hint (every relevant one, at the default share)."""
    lessons = [s for s in a.lessons if not s.poisoned]
    open_ = [s for s in a.unresolved if not s.poisoned]
    freed: list[Said] = []
    working, failing = _sides(p, open_)
    if open_ and not (working and failing) and len(open_) < len(a.unresolved):
        lessons.extend(s for s in open_ if s.advice)
        freed = [s for s in open_ if not s.advice]
        open_ = []
    return Advice(a.operation, a.preamble, a.lesson_ids, tuple(lessons), tuple(open_)), freed


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
