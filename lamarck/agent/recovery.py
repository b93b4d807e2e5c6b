"""The recovery policy of adaptive recovery: stop, ask, and remember. A pure core.

One :class:`RecoveryState` per turn holds the open blockers (by subject) and a workaround
count for each. The agent loop asks it before every call and tells it every result::

    state = RecoveryState(tools=specs, params=RecoveryParams(), classifier=ClassifierParams(),
                          unattended=True, lessons=memory.load())
    decision = state.before_call("run_shell", {"command": "gh pr list"})
    while isinstance(decision, RunProbe):                  # a stored blocker: probe first
        state.after_probe(decision.lesson_id, run_probe(decision.probe))
        decision = state.before_call("run_shell", {"command": "gh pr list"})
    if isinstance(decision, Dispatch):
        state.observe("run_shell", args, result := run(...))
    ...                                                    # Refuse and Stop are results too

The rules:

1. **No interactive tool without a human.** With ``unattended`` set (eval harness, API server,
   scheduler, a scripted fleet agent), a call to an interactive tool is refused before dispatch;
   the refusal is a normal result (``executed: False``, a ``permission`` situation) and counts
   against the budget like any refused call.
2. **A bounded workaround budget per subject.** After a blocker on subject S, each further call
   that fails, is refused, or returns a situation of S's kind uses one of S's workarounds;
   successful calls and probes do not. When S has used its budget (``max_workarounds_after_
   declared`` after a declared blocker, ``max_workarounds_after_inferred`` after an inferred
   one: a regex is less sure than a tool), the turn stops dispatching and escalates. A blocker
   closes, resetting its count, when a probe of S comes back clear, a call on S succeeds, or
   the user answers.
3. **Blockers get their own recovery prompt** (:meth:`RecoveryState.recovery_prompt`): the
   blocker, the budget left, and the two legal moves.
4. **The escalation contract**: what is blocked, what the user must do, what the agent will do
   next, built from the situation's fields alone (:class:`Escalation`). A turn that escalated
   ends ``blocked``, which is not ``done``.

Probe-first use of stored situation lessons is the node's own pure decision
(``decide_before_dispatch``): a matching lesson with a probe is probed before the call; still
blocked escalates at once citing the lesson (no workaround spent); clear invalidates the lesson
and the call goes on; a lesson without a probe becomes a one-line note. Lessons only make the
agent ask sooner: nothing here skips a call silently, adds a command or grants anything.

Nothing here does I/O: probes, dispatch, loading and storing lessons are the caller's
(see :mod:`lamarck.agent.guard`). The lessons it is given must be ones that may drive a
decision (proven here or corroborated): the guard's loader never passes an unverified peer
situation lesson.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lamarck.agent.classify import Classification, ClassifierParams, read_result
from lamarck.agent.situation import (
    Situation,
    SituationLesson,
    SituationSource,
    ToolSpec,
    subject_of,
)
from lamarck.errors import InvalidRecord
from lamarck.learning.situations import (
    Escalate,
    Note,
    Probe,
    SituationCall,
    decide_before_dispatch,
    validate_for_learning,
)
from lamarck.params_checks import check_int, check_rule

__all__ = [
    "Dispatch",
    "Escalation",
    "Observation",
    "RecoveryParams",
    "RecoveryState",
    "Refuse",
    "RunProbe",
    "Stop",
    "TurnStatus",
    "build_escalation",
]

# How each blocker kind reads in "what is blocked" (Rule 4).
_KIND_TEXT = {
    "auth": "needs a sign-in",
    "insufficient_scopes": "is signed in without the permissions (scopes) this task needs",
    "not_installed": "is not installed",
    "permission": "was refused permission",
    "locked": "is locked by something else",
    "quota": "is out of quota (rate limited)",
}


@dataclass(frozen=True, slots=True)
class RecoveryParams:
    """The numbers of the recovery policy (design sources: adaptive recovery), validated when
    built."""

    # Workarounds allowed after a blocker a tool declared, before escalating (adaptive
    # recovery: 2). Integer >= 1.
    max_workarounds_after_declared: int = 2
    # Workarounds allowed after a blocker the generic classifier inferred (adaptive recovery: 4, a
    # regex is less sure than a tool). Integer >= max_workarounds_after_declared.
    max_workarounds_after_inferred: int = 4

    def __post_init__(self) -> None:
        """Validate every field and their order."""
        check_int("max_workarounds_after_declared", self.max_workarounds_after_declared, 1)
        check_int("max_workarounds_after_inferred", self.max_workarounds_after_inferred, 1)
        check_rule(
            self.max_workarounds_after_inferred >= self.max_workarounds_after_declared,
            "max_workarounds_after_inferred",
            "must be >= max_workarounds_after_declared (an inferred blocker is less sure)",
        )

    def budget(self, source: SituationSource) -> int:
        """Workarounds allowed after a blocker from ``source``."""
        if source is SituationSource.DECLARED:
            return self.max_workarounds_after_declared
        return self.max_workarounds_after_inferred


class TurnStatus(StrEnum):
    """Where a turn stands: still going, finished, or stopped on a blocker (not done)."""

    RUNNING = "running"
    DONE = "done"
    BLOCKED = "blocked"


@dataclass(frozen=True, slots=True)
class Escalation:
    """What the user is told when the turn stops on a blocker (Rule 4), from fields alone."""

    situation: Situation
    blocked: str  # what is blocked
    user_action: str  # what the user must do
    next_step: str  # what the agent will do next
    steps: int  # steps the turn took before escalating (probes included)
    workarounds: int  # calls spent working around the blocker (the wasted steps)
    lesson_id: str | None = None  # the stored lesson this escalation cites

    @property
    def text(self) -> str:
        """The three lines, never trimmed."""
        lines = (
            f"Blocked: {self.blocked}",
            f"You need to: {self.user_action}",
            f"Next: {self.next_step}",
        )
        return "\n".join(lines)

    def with_next_step(self, next_step: str) -> Escalation:
        """The same escalation with a next step a closing model call wrote (tools withheld)."""
        text = next_step.strip()
        return dataclasses.replace(self, next_step=text) if text else self


def build_escalation(
    situation: Situation, *, steps: int, workarounds: int, lesson_id: str | None = None
) -> Escalation:
    """The deterministic escalation for ``situation`` (Rule 4)."""
    s = situation
    what = _KIND_TEXT.get(s.kind, f"hit a {s.kind} situation")
    blocked = f"`{s.tool}` cannot go on: {s.subject} {what}."
    if s.interactive:
        blocked += " Only a person at the keyboard can clear it."
    if lesson_id:
        blocked += f" (Known blocker on this machine: lesson {lesson_id}.)"
    if s.unblock:
        user_action = s.unblock
    else:
        user_action = (
            f"check {s.subject} yourself; the tool did not say what clears it "
            "(this was read from its output)."
        )
    if s.probe:
        next_step = f"once you have done it, I will check with `{s.probe}` and carry on."
    else:
        next_step = f"once you have done it, I will retry `{s.tool}` on {s.subject} and carry on."
    return Escalation(s, blocked, user_action, next_step, steps, workarounds, lesson_id)


# -- decisions before a call ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Run the call; prepend ``note`` (from a lesson without a probe) to its result if set."""

    subject: str
    note: str | None = None


@dataclass(frozen=True, slots=True)
class RunProbe:
    """Run ``probe`` (declared by tool code) first, report it with ``after_probe``, ask again."""

    lesson_id: str
    probe: str
    subject: str


@dataclass(frozen=True, slots=True)
class Refuse:
    """Rule 1: not dispatched; ``result`` is the refusal to hand the agent as the tool result."""

    result: dict[str, Any]
    escalation: Escalation | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    """The turn is blocked: dispatch nothing more; tell the user ``escalation``."""

    escalation: Escalation


@dataclass(frozen=True, slots=True)
class Observation:
    """What a result meant, and the escalation it triggered (if it used up a budget)."""

    classification: Classification
    escalation: Escalation | None = None


@dataclass(slots=True)
class _Blocker:
    situation: Situation
    budget: int
    workarounds: int = 0
    # Came from a tool's result (not from the policy's own refusal): may become a lesson.
    learnable: bool = True


@dataclass(slots=True)
class RecoveryState:
    """The recovery policy's state for one turn (design sources: adaptive recovery). Pure: no
    I/O."""

    tools: Mapping[str, ToolSpec]
    params: RecoveryParams
    classifier: ClassifierParams
    # Nobody can answer an interactive flow (eval, API server, scheduler, scripted agent).
    unattended: bool
    lessons: Sequence[SituationLesson] = ()
    steps: int = 0
    injected_instruction: bool = False
    _open: dict[str, _Blocker] = field(default_factory=dict)
    _seen: list[_Blocker] = field(default_factory=list)
    _probe_results: dict[str, bool] = field(default_factory=dict)
    _invalidated: list[str] = field(default_factory=list)
    _escalation: Escalation | None = None
    _wasted: int = 0
    _answered: bool = False
    _done: bool = False

    # -- reading -------------------------------------------------------------------------
    def spec(self, tool: str) -> ToolSpec:
        """The tool's spec (an unknown tool is an ordinary, non-interactive one)."""
        return self.tools.get(tool) or ToolSpec(tool)

    @property
    def status(self) -> TurnStatus:
        """``blocked`` once escalated (until the user answers), ``done`` once finished."""
        if self._escalation is not None:
            return TurnStatus.BLOCKED
        return TurnStatus.DONE if self._done else TurnStatus.RUNNING

    @property
    def escalation(self) -> Escalation | None:
        """The escalation that blocked the turn, if any."""
        return self._escalation

    @property
    def workarounds(self) -> int:
        """Calls spent working around blockers this turn (the wasted steps), each once."""
        return self._wasted

    @property
    def invalidated(self) -> tuple[str, ...]:
        """Lessons a clear probe proved stale: the edge retires them."""
        return tuple(self._invalidated)

    def open_blockers(self) -> dict[str, Situation]:
        """The open blockers by subject."""
        return {s: b.situation for s, b in self._open.items()}

    def remaining(self, subject: str) -> int | None:
        """Workarounds left for an open blocker on ``subject`` (None: no blocker open)."""
        b = self._open.get(subject)
        return None if b is None else max(0, b.budget - b.workarounds)

    def lessons_to_store(self) -> list[Situation]:
        """Declared blockers to remember: only after the turn escalated or the user answered.

        Never an inferred situation, an injected one, a transient kind, or the policy's own
        refusal; the node refuses the same again (``validate_for_learning``).
        """
        if self._escalation is None and not self._answered:
            return []
        out: list[Situation] = []
        for b in self._seen:
            if not b.learnable:
                continue
            try:
                out.append(validate_for_learning(b.situation))
            except InvalidRecord:
                continue
        return out

    def recovery_prompt(self) -> str | None:
        """Rule 3: the prompt replacing "fix the error" while a blocker is open (None if none)."""
        if not self._open:
            return None
        lines = []
        for subject, b in self._open.items():
            s = b.situation
            left = max(0, b.budget - b.workarounds)
            what = _KIND_TEXT.get(s.kind, s.kind)
            lines.append(f"`{s.tool}` reported that {subject} {what}; {left} workaround(s) left.")
        lines.append(
            "Two moves are allowed: a genuinely different, safe approach that does not need "
            "the blocked thing, or stop and ask the user. Do not retry the same thing."
        )
        return "\n".join(lines)

    # -- before a call ----------------------------------------------------------------------
    def before_call(
        self, tool: str, args: Mapping[str, Any], *, env_fingerprint: str = ""
    ) -> Dispatch | RunProbe | Refuse | Stop:
        """What to do with a call about to be dispatched."""
        if self._escalation is not None:
            return Stop(self._escalation)
        spec = self.spec(tool)
        subject = subject_of(spec, args)
        decision = decide_before_dispatch(
            SituationCall(tool, subject, env_fingerprint),
            self.lessons,
            probe_blocked=self._probe_results,
        )
        if isinstance(decision, Probe):
            return RunProbe(decision.lesson_id, decision.probe, subject)
        if isinstance(decision, Escalate):
            lesson = next(x for x in self.lessons if x.lesson_id == decision.lesson_id)
            self._escalation = build_escalation(
                lesson.situation,
                steps=self.steps,
                workarounds=self.workarounds,
                lesson_id=lesson.lesson_id,
            )
            return Stop(self._escalation)
        self._invalidate(decision.invalidate)
        if spec.interactive and self.unattended:
            return self._refuse(spec, subject)
        note = decision.note if isinstance(decision, Note) else None
        return Dispatch(subject, note)

    def _invalidate(self, lesson_ids: Sequence[str]) -> None:
        if not lesson_ids:
            return
        gone = set(lesson_ids)
        self._invalidated.extend(i for i in lesson_ids if i not in self._invalidated)
        self.lessons = tuple(x for x in self.lessons if x.lesson_id not in gone)

    def _refuse(self, spec: ToolSpec, subject: str) -> Refuse:
        """Rule 1: an interactive tool and nobody to answer it."""
        result: dict[str, Any] = {
            "status": "refused",
            "executed": False,
            "error": (
                f"`{spec.name}` needs a person at the keyboard and this run is unattended; "
                "it was not started."
            ),
            "situation": {"kind": "permission", "subject": subject},
        }
        seen = self._observe(spec, {}, result, learnable=False)
        return Refuse(result, seen.escalation)

    # -- after a call -----------------------------------------------------------------------
    def after_probe(self, lesson_id: str, result: Any) -> bool:
        """Record a lesson's probe result; returns whether it is still blocked.

        A probe is checking, not working around: it uses no budget. Any situation or a failed
        probe means still blocked.
        """
        self.steps += 1
        lesson = next((x for x in self.lessons if x.lesson_id == lesson_id), None)
        tool = lesson.situation.tool if lesson else "probe"
        c = read_result(ToolSpec(tool), {}, result, params=self.classifier)
        blocked = c.situation is not None or c.outcome != "ok"
        self._probe_results[lesson_id] = blocked
        if not blocked and lesson is not None:
            self._close(lesson.situation.subject)
        return blocked

    def observe(
        self, tool: str, args: Mapping[str, Any], result: Any, *, probe: bool = False
    ) -> Observation:
        """Classify a dispatched call's result and apply the budget (Rule 2).

        ``probe=True`` marks a call that only checks whether a blocker still holds: it uses no
        budget, and a clear probe closes the blocker on its subject.
        """
        spec = self.spec(tool)
        if probe:
            self.steps += 1
            c = read_result(spec, args, result, params=self.classifier)
            self.injected_instruction |= c.injected_instruction
            if c.situation is None and c.outcome == "ok":
                self._close(subject_of(spec, args))
            return Observation(c)
        return self._observe(spec, args, result, learnable=True)

    def _observe(
        self, spec: ToolSpec, args: Mapping[str, Any], result: Any, *, learnable: bool
    ) -> Observation:
        self.steps += 1
        c = read_result(spec, args, result, params=self.classifier)
        self.injected_instruction |= c.injected_instruction
        subject = c.situation.subject if c.situation else subject_of(spec, args)
        if self._escalation is not None:
            return Observation(c, self._escalation)
        # (2) every open blocker counts this call if it failed, was refused, or hit its kind.
        counted = False
        for b in self._open.values():
            same_kind = c.situation is not None and c.situation.kind == b.situation.kind
            if c.outcome != "ok" or same_kind:
                b.workarounds += 1
                counted = True
        self._wasted += int(counted)
        if c.outcome == "ok" and not c.blocker:
            self._close(subject)
        elif c.blocker and c.situation is not None:
            self._open_blocker(c.situation, learnable=learnable and not c.injected_instruction)
        spent = [b for b in self._open.values() if b.workarounds >= b.budget]
        if spent:
            b = spent[0]
            self._escalation = build_escalation(
                b.situation, steps=self.steps, workarounds=self.workarounds
            )
        return Observation(c, self._escalation)

    def _open_blocker(self, situation: Situation, *, learnable: bool) -> None:
        current = self._open.get(situation.subject)
        declared = situation.source is SituationSource.DECLARED
        if current is None:
            b = _Blocker(situation, self.params.budget(situation.source), learnable=learnable)
            self._open[situation.subject] = b
            self._seen.append(b)
        elif declared and current.situation.source is not SituationSource.DECLARED:
            # A tool's own word replaces a regex's guess (and its tighter budget applies).
            current.situation = situation
            current.budget = self.params.budget(situation.source)
            current.learnable = learnable

    def _close(self, subject: str) -> None:
        self._open.pop(subject, None)

    # -- the user and the end ---------------------------------------------------------------
    def user_answered(self, subject: str | None = None) -> None:
        """The user did what was asked ("I've done it"): close the blocker(s) and go on."""
        self._answered = True
        if subject is None:
            self._open.clear()
        else:
            self._close(subject)
        self._escalation = None

    def finish(self) -> TurnStatus:
        """The agent finished its answer: ``done`` unless the turn is blocked."""
        if self._escalation is None:
            self._done = True
        return self.status
