"""``RunRecorder``: what an agent loop calls as it works, to build an honest outcome.

::

    from lamarck.agent import RunRecorder, project_digest

    rec = RunRecorder(session_id=session, goal=task, project=project_digest("."))
    rec.lessons_in_play(recalled.lessons)             # or ids
    rec.predict("pass", 0.8)                          # Lamarckian memory "Hypothesize" (optional)
    rec.check("test", passed=False, operation="shell:pytest tests/", target="suite")
    rec.tool_call("edit", "ok", target="conftest.py", mutates=True)
    rec.check("test", passed=True, operation="shell:pytest", target="suite")
    result = rec.finish()                             # a RunResult; result.outcome is the record
    client.record_outcome(result.outcome)

The recorder only collects events; ``finish()`` derives the outcome with
:func:`lamarck.agent.run.derive_outcome`, i.e. by the node's own rules. Time comes from an
injected clock and ids from an injected random source, so a scripted run is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, Literal, Protocol

from lamarck.agent.run import (
    DEFAULT_RUN_PARAMS,
    CheckEvent,
    MutationEvent,
    Prediction,
    Run,
    RunEvent,
    RunParams,
    RunResult,
    ToolCallEvent,
    build,
    derive_outcome,
    new_uuid4,
)
from lamarck.errors import InvalidRecord
from lamarck.proto.clock import Clock, SystemClock
from lamarck.proto.timefmt import format_ts

__all__ = ["HasId", "RunRecorder"]

ToolResult = Literal["ok", "failed", "refused"]
CheckKind = Literal["test", "lint", "build"]


class HasId(Protocol):
    """Anything with a lesson ``id`` (``lamarck.client.Lesson``, a recall's lessons)."""

    @property
    def id(self) -> str:
        """The lesson id."""
        ...


class RunRecorder:
    """Collects one turn's events and derives its outcome with the node's rules."""

    def __init__(
        self,
        *,
        session_id: str,
        goal: str,
        project: str | None = None,
        turn_index: int = 0,
        memory_context: str | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        params: RunParams = DEFAULT_RUN_PARAMS,
    ) -> None:
        """Start recording; the start time is read from ``clock`` now.

        ``project`` is a project digest (:func:`lamarck.agent.project.project_digest`).
        ``clock`` defaults to the system clock and ``rng`` to a fresh ``random.Random``
        (this is the SDK's edge); tests pass a ``FixedClock`` and a seeded source.
        """
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._rng = rng if rng is not None else random.Random()
        self._params = params
        self._session_id = session_id
        self._goal = goal
        self._project = project
        self._turn_index = turn_index
        self._memory_context = memory_context
        self._started_at = format_ts(self._clock.now())
        self._events: list[RunEvent] = []
        self._in_play: list[str] = []
        self._prediction: Prediction | None = None
        self._tokens = 0
        self._result: RunResult | None = None

    # -- recording -------------------------------------------------------------------------

    def _add(self, event: RunEvent) -> None:
        if self._result is not None:
            raise InvalidRecord("the run is finished; start a new recorder", reason="finished")
        self._events.append(event)

    def tool_call(
        self,
        operation: str,
        result: ToolResult,
        *,
        target: str = "",
        mutates: bool = False,
        injected_instruction: bool = False,
    ) -> None:
        """Record a tool call: ``result`` ok, failed, or refused (it never ran)."""
        self._add(
            build(
                ToolCallEvent,
                {
                    "type": "tool_call",
                    "operation": operation,
                    "result": result,
                    "target": target,
                    "mutates": mutates,
                    "injected_instruction": injected_instruction,
                },
            )
        )

    def check(
        self,
        kind: CheckKind,
        *,
        passed: bool,
        refused: bool = False,
        operation: str = "",
        target: str = "",
        label: str = "",
    ) -> None:
        """Record a run of a check (test, lint, build); ``refused`` if it did not run.

        Runs of one ``kind``/``label``/``target`` are one check and the latest counts;
        ``label`` defaults to the kind. ``operation`` (the command) also makes it a tool step.
        """
        result = "refused" if refused else ("passed" if passed else "failed")
        self._add(
            build(
                CheckEvent,
                {
                    "type": "check",
                    "kind": kind,
                    "result": result,
                    "label": label,
                    "target": target,
                    "operation": operation,
                },
            )
        )

    def mutation(self, target: str = "") -> None:
        """Record an edit: every check run before it is now stale."""
        self._add(build(MutationEvent, {"type": "mutation", "target": target}))

    def lessons_in_play(self, lessons: Iterable[str | HasId]) -> None:
        """Name the lessons that shaped the run (ids, or objects with an ``id``)."""
        for lesson in lessons:
            lesson_id = lesson if isinstance(lesson, str) else lesson.id
            if lesson_id not in self._in_play:
                self._in_play.append(lesson_id)

    def predict(self, expected: Literal["pass", "fail"], confidence: float) -> None:
        """Record the agent's explicit prediction before it acts (the last one counts)."""
        self._prediction = build(Prediction, {"expected": expected, "confidence": confidence})

    def add_tokens(self, tokens: int) -> None:
        """Count model tokens spent in the turn."""
        if tokens < 0:
            raise InvalidRecord("tokens cannot be negative", reason="bad_tokens")
        self._tokens += tokens

    # -- reading ---------------------------------------------------------------------------

    @property
    def events(self) -> tuple[RunEvent, ...]:
        """The events recorded so far, in order."""
        return tuple(self._events)

    def run(
        self,
        *,
        claim_ok: bool = True,
        injected_instruction: bool = False,
        finished: bool = False,
        run_id: str | None = None,
    ) -> Run:
        """The run so far as a record (the ``kind: "run"`` JSON format)."""
        return build(
            Run,
            {
                "id": run_id,
                "session_id": self._session_id,
                "turn_index": self._turn_index,
                "project": self._project,
                "goal": self._goal,
                "memory_context": self._memory_context,
                "events": tuple(self._events),
                "in_play": tuple(self._in_play),
                "prediction": self._prediction,
                "claim_ok": claim_ok,
                "injected_instruction": injected_instruction,
                "tokens": self._tokens,
                "started_at": self._started_at,
                "finished_at": format_ts(self._clock.now()) if finished else None,
            },
        )

    def finish(self, *, claim_ok: bool = True, injected_instruction: bool = False) -> RunResult:
        """End the run and derive its outcome (calling it again returns the same result).

        ``claim_ok`` false: the agent's answer claimed checks that did not run, so the
        outcome is stored but teaches nothing. ``injected_instruction``: the run followed an
        instruction injected through a tool result.
        """
        if self._result is None:
            run = self.run(
                claim_ok=claim_ok,
                injected_instruction=injected_instruction,
                finished=True,
                run_id=new_uuid4(self._rng),
            )
            self._result = derive_outcome(run, now=self._clock.now(), params=self._params)
        return self._result

    def to_json(self, **run_options: Any) -> bytes:
        """The run so far as JSON (for ``lamarck record-outcome``)."""
        return self.run(**run_options).model_dump_json(exclude_none=True).encode("utf-8")
