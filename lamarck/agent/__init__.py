"""``lamarck.agent``: the agent-side SDK — record a run, key a project, build an outcome.

* :class:`RunRecorder` (``lamarck.agent.recorder``): tool calls, checks, mutations, lessons in
  play and a prediction, then ``finish()`` derives the outcome by the node's own rules.
* :func:`project_digest` (``lamarck.agent.project``): the project key of a checkout.
* The run format (``lamarck.agent.run``): ``Run``, ``parse_run``, ``derive_outcome``; its
  JSON Schema ships as ``run_schema.json``.
"""

from lamarck.agent.project import project_digest, project_scope_of
from lamarck.agent.recorder import RunRecorder
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

__all__ = [
    "CheckEvent",
    "MutationEvent",
    "Prediction",
    "Run",
    "RunParams",
    "RunRecorder",
    "RunResult",
    "ToolCallEvent",
    "derive_outcome",
    "parse_run",
    "project_digest",
    "project_scope_of",
]
