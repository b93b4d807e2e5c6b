"""The run record: what an agent did in one turn, as events, and the outcome it proves.

A *run* is the recorder's serialisation (``kind: "run"``): the tool calls, check runs and
mutations of one turn in order, the lessons in play, the agent's explicit prediction, and
whether its answer's claims matched what ran. It is what a shell hook or a non-Python agent
writes for ``lamarck record-outcome``; its JSON Schema ships as ``run_schema.json``.

:func:`derive_outcome` turns a run into the node's ``Outcome`` record by the node's own rules
(``lamarck.learning.outcomes``), never a copy of them, so a derived outcome is never
refused as ``optimistic_outcome``:

1. every event gets its position as ``order``; a check run followed by a mutation (a
   ``mutation`` event, or a tool call with ``mutates`` that was not refused) is stale;
2. a check is identified by (kind, label, target), and ``label`` defaults to the kind: a
   check is *what it verifies*, not the command line that ran it, so ``pytest tests/`` that
   failed and ``pytest`` that then passed on the same target are two runs of one check, and
   the later one counts;
3. a refused check did not run; a check naming the ``operation`` that ran it is also a tool
   step (ok / failed / refused), which is how "failed A, then B passed" becomes a
   mechanical lesson;
4. ``passed`` is the verdict of ``derive_verdict`` over those check runs; ``claim_ok`` false
   or an injected instruction means the outcome teaches nothing;
5. a single tool call marked ``injected_instruction`` is left out of the approach (the node
   excludes such steps from all learning; the outcome record has no per-step flag);
6. the agent's ``prediction`` is copied into the outcome, so the node can score it.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, Field, StringConstraints, ValidationError

from lamarck.errors import ConfigError, InvalidRecord
from lamarck.learning.mechanical import MechanicalLesson, mechanical_lessons
from lamarck.learning.outcomes import (
    CheckRun,
    StepResult,
    ToolStep,
    Verdict,
    derive_verdict,
    learnable_steps,
)
from lamarck.learning.why import why_nothing_learned
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits
from lamarck.proto.memory import (
    Count,
    RecordBlock,
    Timestamp,
    Uuid4,
    capped_text,
    load_json_object,
    max_items,
)
from lamarck.proto.outcome import Outcome, Prediction
from lamarck.proto.timefmt import format_ts, parse_ts

__all__ = [
    "DEFAULT_RUN_PARAMS",
    "RUN_SCHEMA_FILE",
    "CheckEvent",
    "MutationEvent",
    "Prediction",
    "Run",
    "RunEvent",
    "RunParams",
    "RunResult",
    "ToolCallEvent",
    "build",
    "derive_outcome",
    "new_uuid4",
    "outcome_from_document",
    "parse_run",
    "run_json_schema",
    "shipped_run_schema",
]

#: The JSON Schema of the run format, shipped next to this module.
RUN_SCHEMA_FILE = "run_schema.json"

# How a run becomes an outcome, published with the schema (JSON Schema cannot say it).
_RULES = (
    "Each event's position is its order; a check run followed by a mutation (a mutation event, "
    "or a tool_call with mutates that was not refused) is stale.",
    "A check is identified by (kind, label, target); label defaults to the kind. Only the "
    "latest run of a check counts.",
    "A refused check did not run. A check naming its operation is also a tool step "
    "(passed -> ok, failed -> failed, refused -> refused).",
    "passed holds when at least one check counted and the latest run of every check ran, "
    "passed and is not stale. claim_ok false or injected_instruction: nothing is learned.",
    "A tool_call marked injected_instruction is left out of the outcome's approach.",
    "A failed operation A on target T, then another operation B ok on T, in a run that passed: "
    "the node writes the lesson 'prefer B over A for T'.",
)

_ShortText = Annotated[str, Field(min_length=1), AfterValidator(capped_text("max_short_chars"))]
_MaybeEmptyShort = Annotated[str, AfterValidator(capped_text("max_short_chars"))]
_IdText = Annotated[str, Field(min_length=1), AfterValidator(capped_text("max_id_chars"))]
# The user's request as the agent saw it; only its first ``goal_chars`` reach the outcome.
_Goal = Annotated[
    str,
    Field(min_length=1),
    AfterValidator(capped_text("max_description_chars", multiline=True)),
]
_M = TypeVar("_M", bound=RecordBlock)
_ProjectDigest = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16,64}$")]


@dataclass(frozen=True, slots=True)
class RunParams:
    """Constants of turning a run into an outcome; validated on construction."""

    #: Characters of the user's request kept as the outcome's
    #: ``goal_digest`` (adaptive memory: ~200).
    goal_chars: int = 200

    def __post_init__(self) -> None:
        limit = DEFAULT_LIMITS.max_short_chars
        if isinstance(self.goal_chars, bool) or not isinstance(self.goal_chars, int):
            raise ConfigError("invalid goal_chars; must be an int", field="goal_chars")
        if not 1 <= self.goal_chars <= limit:
            raise ConfigError(
                f"invalid goal_chars; must be between 1 and max_short_chars ({limit})",
                field="goal_chars",
            )


#: The SDK's default run params, declared beside their class (an agent process that sets
#: nothing uses these; one that does passes its own ``RunParams``).
DEFAULT_RUN_PARAMS = RunParams()


# -- the run format ---------------------------------------------------------------------------


class ToolCallEvent(RecordBlock):
    """A tool call: its operation key, its target, and how it ended."""

    type: Literal["tool_call"]
    operation: _ShortText = Field(description="the operation key, e.g. 'shell:pytest tests/'")
    result: Literal["ok", "failed", "refused"] = Field(
        description="refused: the call never ran (permission, policy, user said no)"
    )
    target: _MaybeEmptyShort = Field(default="", description="what it acted on")
    mutates: bool = Field(
        default=False, description="it edited something: earlier check runs are stale"
    )
    injected_instruction: bool = Field(
        default=False, description="its result carried an injected instruction: not learned from"
    )


class CheckEvent(RecordBlock):
    """A run of a verification check (test, lint, build)."""

    type: Literal["check"]
    kind: Literal["test", "lint", "build"]
    result: Literal["passed", "failed", "refused"] = Field(
        description="refused: the check did not run"
    )
    label: _MaybeEmptyShort = Field(
        default="",
        description="which check (defaults to the kind): runs with one kind, label and target "
        "are one check, and its latest run counts",
    )
    target: _MaybeEmptyShort = Field(default="", description="what the check verifies")
    operation: _MaybeEmptyShort = Field(
        default="",
        description="the command that ran it; when given, the run is also a tool step",
    )


class MutationEvent(RecordBlock):
    """Something was edited: every check run before it is stale."""

    type: Literal["mutation"]
    target: _MaybeEmptyShort = ""


#: One event of a run, told apart by ``type``.
RunEvent = Annotated[ToolCallEvent | CheckEvent | MutationEvent, Field(discriminator="type")]


class Run(RecordBlock):
    """One agent turn as the recorder saw it (the ``kind: "run"`` format)."""

    schema_version: Annotated[str, StringConstraints(pattern=r"^1\.(0|[1-9][0-9]{0,3})$")] = "1.0"
    kind: Literal["run"] = "run"
    id: Uuid4 | None = Field(default=None, description="the outcome id; generated when absent")
    session_id: _IdText
    turn_index: Count = 0
    project: _ProjectDigest | None = Field(
        default=None,
        description="hex project digest (lamarck.agent.project_digest); the CLI fills it "
        "from --project DIR or the working directory when absent",
    )
    goal: _Goal = Field(description="the user's request (its first characters are kept)")
    memory_context: _ShortText | None = None
    events: Annotated[tuple[RunEvent, ...], AfterValidator(max_items("max_list_items"))] = ()
    in_play: Annotated[tuple[Uuid4, ...], AfterValidator(max_items("max_list_items"))] = Field(
        default=(), description="ids of the lessons that shaped this run"
    )
    prediction: Prediction | None = None
    claim_ok: bool = Field(default=True, description="the answer's claims match what ran")
    injected_instruction: bool = Field(
        default=False, description="the run followed an injected instruction: learn nothing"
    )
    tokens: Count = 0
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None


def parse_run(raw: bytes | str, *, limits: RecordLimits = DEFAULT_LIMITS) -> Run:
    """Parse untrusted run JSON; raise ``InvalidRecord`` (with the field) on any failure."""
    text, obj = load_json_object(raw, limits=limits)
    if obj.get("kind", "run") != "run":
        raise InvalidRecord(f"not a run record (kind {obj.get('kind')!r})", reason="not_a_run")
    try:
        return Run.model_validate_json(text, strict=True, context={"limits": limits})
    except ValidationError as exc:
        raise _invalid(exc) from None


def _invalid(exc: ValidationError) -> InvalidRecord:
    """The first problem of a failed validation as ``InvalidRecord`` naming the field."""
    found = exc.errors(include_url=False, include_input=False)
    where = ".".join(str(p) for p in found[0]["loc"]) if found else "<run>"
    message = found[0]["msg"] if found else "validation failed"
    return InvalidRecord(f"{where}: {message}"[:300], reason="malformed", field=where)


def build(model: type[_M], obj: Mapping[str, Any]) -> _M:
    """Validate ``obj`` (Python values) as ``model``; raise ``InvalidRecord`` on failure."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise _invalid(exc) from None


def run_json_schema() -> dict[str, Any]:
    """The JSON Schema of the run format, generated from :class:`Run`."""
    schema = Run.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://lamarck.dev/schema/run-1.json"
    schema["title"] = "lamarck run"
    schema["x-lamarck-rules"] = list(_RULES)
    return schema


def shipped_run_schema() -> dict[str, Any]:
    """The ``run_schema.json`` shipped in this package."""
    text = resources.files("lamarck.agent").joinpath(RUN_SCHEMA_FILE).read_text("utf-8")
    value: dict[str, Any] = json.loads(text)
    return value


# -- deriving the outcome ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run: the outcome to record, the verdict, and what the node will learn."""

    run: Run
    outcome: Outcome
    verdict: Verdict
    #: The "prefer B over A for T" lessons the node writes from this outcome (if not incognito).
    lessons: tuple[MechanicalLesson, ...]
    #: Why the run teaches no new lesson ("" when it does): see :func:`derive_outcome`.
    nothing_learned: str
    #: Whether the prediction came true (None without a prediction).
    prediction_correct: bool | None

    def outcome_json(self) -> bytes:
        """The outcome as the node's ``RecordOutcome`` takes it."""
        return self.outcome.to_json()


def new_uuid4(rng: random.Random) -> str:
    """A uuid4 drawn from ``rng`` (deterministic under a seeded source)."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _mutates(event: RunEvent) -> bool:
    if isinstance(event, MutationEvent):
        return True
    # A refused edit never ran, so it changed nothing.
    return isinstance(event, ToolCallEvent) and event.mutates and event.result != "refused"


def _steps(run: Run) -> list[ToolStep]:
    steps: list[ToolStep] = []
    for event in run.events:
        if isinstance(event, ToolCallEvent):
            steps.append(
                ToolStep(
                    event.operation,
                    StepResult(event.result),
                    event.target,
                    injected_instruction=event.injected_instruction,
                )
            )
        elif isinstance(event, CheckEvent) and event.operation:
            result = {"passed": "ok", "failed": "failed", "refused": "refused"}[event.result]
            steps.append(ToolStep(event.operation, StepResult(result), event.target))
    return steps


def _check_runs(run: Run) -> list[CheckRun]:
    last_mutation = max((i for i, e in enumerate(run.events) if _mutates(e)), default=-1)
    return [
        CheckRun(
            label=event.label or event.kind,
            kind=event.kind,
            order=i,
            ran=event.result != "refused",
            failed=event.result == "failed",
            target=event.target,
            mutated_after=i < last_mutation,
        )
        for i, event in enumerate(run.events)
        if isinstance(event, CheckEvent)
    ]


def _nothing_learned(run: Run, verdict: Verdict, lessons: list[MechanicalLesson]) -> str:
    """Why no lesson comes out of the run ("" if one does), by the node's own function."""
    return why_nothing_learned(
        verdict,
        claim_ok=run.claim_ok,
        injected_instruction=run.injected_instruction,
        learned=bool(lessons),
    )


def derive_outcome(
    run: Run,
    *,
    now: datetime,
    outcome_id: str | None = None,
    project: str | None = None,
    params: RunParams,
) -> RunResult:
    """The outcome ``run`` proves, by the node's rules (module doc, rules 1–5).

    ``outcome_id`` is used when the run has no ``id``; ``project`` when it names none.
    ``now`` dates the outcome when the run has no ``finished_at``.
    """
    chosen_project = run.project or project
    if not chosen_project:
        raise InvalidRecord(
            "the run names no project: pass a project digest (lamarck.agent.project_digest)",
            reason="no_project",
        )
    chosen_id = run.id or outcome_id
    if not chosen_id:
        raise InvalidRecord("the run has no id and none was given", reason="no_id")
    finished = parse_ts(run.finished_at) if run.finished_at else now
    started = parse_ts(run.started_at) if run.started_at else finished
    steps = _steps(run)
    checks = _check_runs(run)
    verdict = derive_verdict(
        checks, claim_ok=run.claim_ok, injected_instruction=run.injected_instruction
    )
    kept = learnable_steps(steps)
    record: dict[str, Any] = {
        "schema_version": "1.0",
        "kind": "outcome",
        "id": chosen_id,
        "session_id": run.session_id,
        "turn_index": run.turn_index,
        "project": chosen_project,
        "goal_digest": run.goal[: params.goal_chars],
        "approach": [
            {"operation_key": s.operation, "outcome": s.result.value}
            | ({"target": s.target} if s.target else {})
            for s in kept
        ],
        "checks": [
            {
                "label": c.label,
                "target": c.target,
                "kind": c.kind,
                "order": c.order,
                "ran": c.ran,
                "failed": c.failed,
                "mutated_after": c.mutated_after,
            }
            for c in checks
        ],
        "passed": verdict.passed,
        "claim_ok": run.claim_ok,
        "steps": len(steps),
        "tokens": run.tokens,
        "wall_s": max(0.0, (finished - started).total_seconds()),
        "in_play": list(dict.fromkeys(run.in_play)),
        "created_at": format_ts(finished),
        "injected_instruction": run.injected_instruction,
    }
    if run.memory_context:
        record["memory_context"] = run.memory_context
    if run.prediction is not None:
        # Stored with the outcome: the node measures prediction accuracy and calibration.
        record["prediction"] = run.prediction.model_dump(mode="json")
    outcome = Outcome.from_obj(record)
    lessons = mechanical_lessons(steps, verdict)
    predicted = run.prediction
    return RunResult(
        run=run,
        outcome=outcome,
        verdict=verdict,
        lessons=tuple(lessons),
        nothing_learned=_nothing_learned(run, verdict, lessons),
        prediction_correct=(
            None if predicted is None else (predicted.expected == "pass") == verdict.passed
        ),
    )


def outcome_from_document(
    raw: bytes | str,
    *,
    now: datetime,
    rng: random.Random,
    project: str | None,
    params: RunParams,
    limits: RecordLimits = DEFAULT_LIMITS,
) -> tuple[Outcome, RunResult | None]:
    """The outcome a JSON document stands for: a run (derived) or an outcome record (as is).

    A run missing its ``id`` gets one from ``rng``, and its ``project`` from ``project``; a
    run without events is refused (``InvalidRecord(reason="no_events")``); an outcome record
    is parsed by the node's model unchanged (with its own verdict check).
    """
    _, obj = load_json_object(raw, limits=limits)
    if obj.get("kind") == "outcome":
        return Outcome.from_json(raw, limits=limits), None
    run = parse_run(raw, limits=limits)
    if not run.events:
        # Nothing ran, so nothing can pass, fail or teach: recording it would only add a
        # failed outcome that no event explains.
        raise InvalidRecord(
            "the run has no events: send what ran (tool calls, checks, mutations)",
            reason="no_events",
            field="events",
        )
    result = derive_outcome(
        run,
        now=now,
        outcome_id=new_uuid4(rng),
        project=project,
        params=params,
    )
    return result.outcome, result
