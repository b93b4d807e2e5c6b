"""Attribution (design sources: adaptive memory): which in-play lessons an outcome confirms or
contradicts.

Scoped by operation key, so a lesson about ``pytest`` is never blamed for a failed web fetch:

1. an outcome that teaches nothing (``claim_ok`` false) attributes nothing;
2. a lesson whose operation the run never attempted (refused calls did not run, and results
   marked ``injected_instruction`` are excluded from learning) is not attributed;
3. the latest attempt of the lesson's operation failed → **contradicted**, whatever the run's
   final verdict (the run may recover by another route: that is how a lesson is unlearned);
4. the latest attempt succeeded and the run passed → **confirmed**;
5. the latest attempt succeeded but the run failed → not attributed: the failure lies elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from lamarck.learning.outcomes import StepResult, ToolStep, Verdict, learnable_steps

__all__ = [
    "Attribution",
    "Effect",
    "attribute",
    "attribute_one",
    "normalise_operation",
]


class Effect(StrEnum):
    """What an outcome does to one in-play lesson."""

    CONFIRMED = "confirmed"
    CONTRADICTED = "contradicted"
    NOT_ATTRIBUTED = "not_attributed"


@dataclass(frozen=True, slots=True)
class Attribution:
    """The effect of an outcome on one lesson, with the rule that decided it."""

    lesson_id: str
    effect: Effect
    reason: str


def normalise_operation(key: str) -> str:
    """Operation keys compare exactly, ignoring surrounding whitespace."""
    return key.strip()


def _latest_results(steps: Iterable[ToolStep]) -> dict[str, StepResult]:
    """Latest result per operation among calls that really ran."""
    latest: dict[str, StepResult] = {}
    for step in steps:
        if step.result is StepResult.REFUSED:  # (2) a refused call did not run
            continue
        latest[normalise_operation(step.operation)] = step.result
    return latest


def attribute_one(
    lesson_id: str, operation: str, latest: dict[str, StepResult], verdict: Verdict
) -> Attribution:
    """Apply rules 1–5 to one lesson given the latest result of each attempted operation."""
    if not verdict.teaches:
        return Attribution(lesson_id, Effect.NOT_ATTRIBUTED, "claim_not_ok")  # (1)
    result = latest.get(normalise_operation(operation))
    if result is None:
        return Attribution(lesson_id, Effect.NOT_ATTRIBUTED, "operation_not_attempted")  # (2)
    if result is StepResult.FAILED:
        return Attribution(lesson_id, Effect.CONTRADICTED, "operation_failed")  # (3)
    if verdict.passed:
        return Attribution(lesson_id, Effect.CONFIRMED, "operation_ok_run_passed")  # (4)
    return Attribution(lesson_id, Effect.NOT_ATTRIBUTED, "failure_elsewhere")  # (5)


def attribute(
    in_play: Sequence[tuple[str, str]], steps: Sequence[ToolStep], verdict: Verdict
) -> list[Attribution]:
    """Attribute an outcome to each in-play lesson, given as ``(lesson_id, operation)`` pairs."""
    latest = _latest_results(learnable_steps(steps))
    return [attribute_one(lid, op, latest, verdict) for lid, op in in_play]
