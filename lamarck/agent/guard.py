"""The I/O edge of the recovery policy: dispatch, probes and situation lessons.

:class:`ToolGuard` runs an agent's tool calls through a :class:`RecoveryState` (probing a
stored blocker before the call, refusing an interactive tool nobody can answer, stopping once
a budget is spent). :func:`open_turn` loads the situation lessons a turn starts from and
:func:`close_turn` stores what the turn learned (declared blockers only, after an escalation or
the user's answer) and retires the lessons a clear probe proved stale.

Where the lessons live is a :class:`SituationMemory`: :class:`InMemorySituationMemory` for
unit tests and scripted agents, :class:`NodeSituationMemory` over the SDK client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lamarck.agent.classify import ClassifierParams
from lamarck.agent.recovery import (
    Dispatch,
    Escalation,
    Observation,
    RecoveryParams,
    RecoveryState,
    Refuse,
    RunProbe,
    Stop,
    TurnStatus,
)
from lamarck.agent.situation import Situation, SituationLesson, SituationSource, ToolSpec
from lamarck.client import Client, Lesson
from lamarck.learning.situations import situation_signature

__all__ = [
    "PROBE_CLEAR_REASON",
    "GuardedCall",
    "InMemorySituationMemory",
    "NodeSituationMemory",
    "SituationMemory",
    "ToolGuard",
    "TurnReport",
    "close_turn",
    "open_turn",
]

#: Why a lesson is retired when its probe came back clear (kept in the lesson's history).
PROBE_CLEAR_REASON = "probe clear: the blocker no longer holds"


class SituationMemory(Protocol):
    """Where situation lessons are kept between turns."""

    def load(self) -> Sequence[SituationLesson]:
        """The active situation lessons."""
        ...

    def store(self, situation: Situation) -> str:
        """Remember a declared blocker (the same signature is refreshed); returns its id."""
        ...

    def invalidate(self, lesson_id: str, reason: str) -> None:
        """Retire a lesson a clear probe proved stale."""
        ...


@dataclass(slots=True)
class InMemorySituationMemory:
    """Situation lessons in a dict, by signature: for unit tests and scripted fleet agents."""

    _active: dict[str, SituationLesson] = field(default_factory=dict)
    _retired: dict[str, str] = field(default_factory=dict)  # lesson id -> reason
    _next: int = 1

    def load(self) -> Sequence[SituationLesson]:
        """The active lessons, oldest first."""
        return tuple(self._active.values())

    def store(self, situation: Situation) -> str:
        """Remember ``situation`` once per signature."""
        signature = situation_signature(situation)
        held = self._active.get(signature)
        if held is not None:
            return held.lesson_id
        lesson_id = f"situation-{self._next}"
        self._next += 1
        self._active[signature] = SituationLesson(lesson_id, situation)
        return lesson_id

    def invalidate(self, lesson_id: str, reason: str) -> None:
        """Retire the lesson (kept with its reason, as the node keeps history)."""
        for signature, lesson in list(self._active.items()):
            if lesson.lesson_id == lesson_id:
                del self._active[signature]
                self._retired[lesson_id] = reason

    @property
    def retired(self) -> dict[str, str]:
        """Retired lesson ids and why."""
        return dict(self._retired)


def _situation_of(lesson: Lesson) -> Situation | None:
    """The node's situation lesson as the policy needs it (None if it has no situation)."""
    s = lesson.situation
    if s is None:
        return None
    return Situation(
        tool=s.tool,
        subject=s.subject,
        kind=s.kind,
        source=SituationSource(s.source) if s.source == "inferred" else SituationSource.DECLARED,
        interactive=s.interactive,
        env_fingerprint=s.env_fingerprint,
        unblock=s.unblock or None,
        probe=s.probe or None,
    )


@dataclass(slots=True)
class NodeSituationMemory:
    """Situation lessons on a node, through the SDK client.

    Reading, storing and retiring go through ``List``, ``RecordSituation`` and ``Retire``.
    A stored blocker is scoped to ``project_digest``'s project (global when empty). Only
    lessons that may drive a decision are loaded: an unverified peer situation lesson (its
    evidence class ``unverified``) never makes the agent probe, refuse or stop.
    """

    client: Client
    page_size: int = 0  # 0: the node's default page
    project_digest: str = ""

    def load(self) -> Sequence[SituationLesson]:
        """Every active situation lesson on the node."""
        out: list[SituationLesson] = []
        token = ""
        while True:
            page = self.client.list_lessons(
                category="situation",
                statuses="active",
                page_size=self.page_size,
                page_token=token,
            )
            for lesson in page.lessons:
                if lesson.evidence.evidence_class == "unverified":
                    continue
                situation = _situation_of(lesson)
                if situation is not None:
                    out.append(SituationLesson(lesson.id, situation))
            token = page.next_page_token
            if not token:
                return out

    def store(self, situation: Situation) -> str:
        """Remember a declared blocker on the node (the same signature is refreshed)."""
        return self.client.record_situation(situation, project_digest=self.project_digest).id

    def invalidate(self, lesson_id: str, reason: str) -> None:
        """Retire the lesson on the node (kept in its history with ``reason``)."""
        self.client.retire(lesson_id, reason=reason)


@dataclass(frozen=True, slots=True)
class GuardedCall:
    """One call through the guard: what was decided and what the agent gets back."""

    decision: Dispatch | Refuse | Stop
    result: Any  # the tool's result, the refusal, or None when stopped
    observation: Observation | None = None

    @property
    def stopped(self) -> bool:
        """The turn is blocked: the agent must stop and hand the escalation to the user."""
        if isinstance(self.decision, Stop):
            return True
        return self.observation is not None and self.observation.escalation is not None

    @property
    def escalation(self) -> Escalation | None:
        """The escalation, when the call stopped the turn."""
        if isinstance(self.decision, Stop):
            return self.decision.escalation
        return self.observation.escalation if self.observation else None

    @property
    def note(self) -> str | None:
        """A lesson's one-line note to prepend to the result (lesson without a probe)."""
        return self.decision.note if isinstance(self.decision, Dispatch) else None


@dataclass(slots=True)
class ToolGuard:
    """Runs tool calls through a turn's :class:`RecoveryState` (the policy's I/O edge).

    ``dispatch(tool, args)`` runs a tool and returns its result; ``run_probe(command)`` runs a
    probe a tool declared and returns its result.
    """

    state: RecoveryState
    dispatch: Callable[[str, Mapping[str, Any]], Any]
    run_probe: Callable[[str], Any]

    def call(self, tool: str, args: Mapping[str, Any], *, env_fingerprint: str = "") -> GuardedCall:
        """Probe first if a lesson says so, then dispatch, refuse or stop."""
        decision = self.state.before_call(tool, args, env_fingerprint=env_fingerprint)
        while isinstance(decision, RunProbe):
            self.state.after_probe(decision.lesson_id, self.run_probe(decision.probe))
            decision = self.state.before_call(tool, args, env_fingerprint=env_fingerprint)
        if isinstance(decision, Stop):
            return GuardedCall(decision, None)
        if isinstance(decision, Refuse):
            return GuardedCall(decision, decision.result, None)
        result = self.dispatch(tool, args)
        return GuardedCall(decision, result, self.state.observe(tool, args, result))

    def probe(self, tool: str, args: Mapping[str, Any]) -> Any:
        """Run a check of an open blocker: no budget used; a clear result closes it."""
        result = self.dispatch(tool, args)
        self.state.observe(tool, args, result, probe=True)
        return result


@dataclass(frozen=True, slots=True)
class TurnReport:
    """How a turn ended for the recovery policy."""

    status: TurnStatus
    escalation: Escalation | None
    steps: int
    workarounds: int
    stored: tuple[str, ...]  # situation lessons written
    invalidated: tuple[str, ...]  # situation lessons retired by a clear probe


def open_turn(
    memory: SituationMemory,
    *,
    tools: Mapping[str, ToolSpec],
    params: RecoveryParams,
    classifier: ClassifierParams,
    unattended: bool,
) -> RecoveryState:
    """A turn's recovery state, starting from the stored situation lessons."""
    return RecoveryState(
        tools=tools,
        params=params,
        classifier=classifier,
        unattended=unattended,
        lessons=tuple(memory.load()),
    )


def close_turn(state: RecoveryState, memory: SituationMemory) -> TurnReport:
    """Finish the turn: retire stale lessons, remember declared blockers, report."""
    status = state.finish()
    for lesson_id in state.invalidated:
        memory.invalidate(lesson_id, PROBE_CLEAR_REASON)
    stored = tuple(memory.store(s) for s in state.lessons_to_store())
    return TurnReport(
        status=status,
        escalation=state.escalation,
        steps=state.steps,
        workarounds=state.workarounds,
        stored=stored,
        invalidated=state.invalidated,
    )
