"""``lamarck.agent``: the agent-side SDK — record a run, recover from blockers, learn in a loop.

* Recording (``recorder``, ``run``, ``project``): :class:`RunRecorder` collects tool calls,
  checks, mutations, lessons in play and a prediction; ``finish()`` derives the outcome by the
  node's own rules. :func:`project_digest` keys a checkout. The run format (``Run``,
  ``parse_run``, ``derive_outcome``) ships its JSON Schema as ``run_schema.json``.
* Adaptive recovery (``situation``, ``classify``, ``recovery``, ``guard``): the
  :class:`Situation` contract and :func:`validate_situation`, the generic
  :func:`classify_result`, the :class:`RecoveryState` rules, and :class:`ToolGuard` with
  :func:`open_turn` / :func:`close_turn` over a :class:`SituationMemory` (in memory, or
  :class:`NodeSituationMemory` on a node).
* Lamarckian memory, the learning loop (``loop``): :class:`LearningLoop` runs REMEMBER → ASSESS →
  ENGAGE → HYPOTHESIZE → ACT → OBSERVE → UPDATE → EXTRACT over a node.
"""

from lamarck.agent.classify import Classification, ClassifierParams, classify_result, read_result
from lamarck.agent.guard import (
    InMemorySituationMemory,
    NodeSituationMemory,
    SituationMemory,
    ToolGuard,
    TurnReport,
    close_turn,
    open_turn,
)
from lamarck.agent.loop import (
    ActContext,
    ActReport,
    Engagement,
    Hypothesis,
    LearningLoop,
    LoopParams,
    LoopReport,
    Phase,
    Task,
)
from lamarck.agent.project import project_digest, project_scope_of
from lamarck.agent.recorder import RunRecorder
from lamarck.agent.recovery import (
    Dispatch,
    Escalation,
    RecoveryParams,
    RecoveryState,
    Refuse,
    RunProbe,
    Stop,
    TurnStatus,
)
from lamarck.agent.run import (
    CheckEvent,
    MutationEvent,
    Prediction,
    Run,
    RunParams,
    RunResult,
    ToolCallEvent,
    derive_outcome,
    parse_run,
)
from lamarck.agent.situation import (
    BLOCKER_KINDS,
    KINDS,
    Situation,
    ToolSpec,
    validate_situation,
)

__all__ = [
    "BLOCKER_KINDS",
    "KINDS",
    "ActContext",
    "ActReport",
    "CheckEvent",
    "Classification",
    "ClassifierParams",
    "Dispatch",
    "Engagement",
    "Escalation",
    "Hypothesis",
    "InMemorySituationMemory",
    "LearningLoop",
    "LoopParams",
    "LoopReport",
    "MutationEvent",
    "NodeSituationMemory",
    "Phase",
    "Prediction",
    "RecoveryParams",
    "RecoveryState",
    "Refuse",
    "Run",
    "RunParams",
    "RunProbe",
    "RunRecorder",
    "RunResult",
    "Situation",
    "SituationMemory",
    "Stop",
    "Task",
    "ToolCallEvent",
    "ToolGuard",
    "ToolSpec",
    "TurnReport",
    "TurnStatus",
    "classify_result",
    "close_turn",
    "derive_outcome",
    "open_turn",
    "parse_run",
    "project_digest",
    "project_scope_of",
    "read_result",
    "validate_situation",
]
