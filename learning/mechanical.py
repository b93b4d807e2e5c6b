"""Mechanical lessons (adaptive memory, source 1): learned from the tool record, no model call.

In one run, ``failed(op A on target T) → ok(op B on T) → passed`` writes "prefer B over A for
T" with the outcome as evidence. The lesson's ``operation`` is B (the thing to do, which later
runs confirm or contradict); A and T are kept as tags, so the decision-time check on A finds it.

A pair counts only when, on T: A's latest attempt failed (A never recovered, else A was fine),
B is the first other operation that succeeded after A's first failure, and B's latest attempt
succeeded. Refused calls did not run; injected-instruction results are excluded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lamarck.domain.rows import LessonRow
from lamarck.learning.attribution import normalise_operation
from lamarck.learning.outcomes import StepResult, ToolStep, Verdict, learnable_steps

__all__ = [
    "AVOID_TAG",
    "MECHANICAL_TAG",
    "TARGET_TAG",
    "MechanicalLesson",
    "avoided_operation",
    "is_about",
    "lesson_target",
    "mechanical_claim",
    "mechanical_lessons",
    "restates",
    "reverses",
]

# Tag prefixes carrying the structured parts of a mechanical lesson.
AVOID_TAG = "avoid:"
TARGET_TAG = "target:"
MECHANICAL_TAG = "source:mechanical"


@dataclass(frozen=True, slots=True)
class MechanicalLesson:
    """ "Prefer ``prefer`` over ``avoid`` for ``target``": a lesson the loop proved."""

    prefer: str
    avoid: str
    target: str

    @property
    def content(self) -> str:
        """The one-sentence, imperative lesson text."""
        return f"Prefer `{self.prefer}` over `{self.avoid}` for {self.target}."

    @property
    def tags(self) -> tuple[str, ...]:
        """Tags that let check_operation and reversal detection find the lesson."""
        return (MECHANICAL_TAG, f"{AVOID_TAG}{self.avoid}", f"{TARGET_TAG}{self.target}")

    def reversed_by(self, other: MechanicalLesson) -> bool:
        """Whether ``other`` says the opposite about the same target."""
        return (
            self.target == other.target
            and self.prefer == other.avoid
            and self.avoid == other.prefer
        )


def _tag_value(tags: Sequence[str], prefix: str) -> str | None:
    """The value of the first tag with ``prefix``."""
    for tag in tags:
        if tag.startswith(prefix):
            return tag[len(prefix) :]
    return None


def avoided_operation(tags: Sequence[str]) -> str | None:
    """The operation a mechanical lesson says to avoid, from its tags."""
    return _tag_value(tags, AVOID_TAG)


def lesson_target(tags: Sequence[str]) -> str | None:
    """The target a mechanical lesson is about, from its tags."""
    return _tag_value(tags, TARGET_TAG)


def mechanical_lessons(steps: Sequence[ToolStep], verdict: Verdict) -> list[MechanicalLesson]:
    """Every "prefer B over A for T" pair the run proves (none unless it passed and teaches)."""
    if not (verdict.passed and verdict.teaches):
        return []
    ran = [s for s in learnable_steps(steps) if s.result is not StepResult.REFUSED]
    by_target: dict[str, list[tuple[str, StepResult]]] = {}
    for step in ran:
        if step.target:
            by_target.setdefault(step.target, []).append(
                (normalise_operation(step.operation), step.result)
            )
    found: list[MechanicalLesson] = []
    for target, seq in by_target.items():
        latest = {op: result for op, result in seq}
        for i, (op_a, result) in enumerate(seq):
            if result is not StepResult.FAILED or latest[op_a] is not StepResult.FAILED:
                continue
            if any(op == op_a for op, _ in seq[:i]):
                continue  # only A's first failure opens a pair
            op_b = next((op for op, r in seq[i + 1 :] if op != op_a and r is StepResult.OK), None)
            if op_b is not None and latest[op_b] is StepResult.OK:
                lesson = MechanicalLesson(prefer=op_b, avoid=op_a, target=target)
                if lesson not in found:
                    found.append(lesson)
    return found


def restates(lesson: MechanicalLesson, operation: str, tags: Sequence[str]) -> bool:
    """Whether a stored lesson (its ``operation`` and ``tags``) says what ``lesson`` says."""
    return (
        operation == lesson.prefer
        and avoided_operation(tags) == lesson.avoid
        and lesson_target(tags) == lesson.target
    )


def reverses(lesson: MechanicalLesson, operation: str, tags: Sequence[str]) -> bool:
    """Whether a stored lesson says the opposite of ``lesson`` for the same target."""
    return (
        operation == lesson.avoid
        and avoided_operation(tags) == lesson.prefer
        and lesson_target(tags) == lesson.target
    )


def is_about(key: str, operation: str, tags: Sequence[str], situation_tool: str | None) -> bool:
    """Whether a stored lesson is about the operation ``key``: it recommends it, says to avoid
    it, or is a situation on that tool. The decision-time check surfaces exactly these, and
    ``LessonFilter.about`` selects exactly these in both store adapters."""
    return operation == key or avoided_operation(tags) == key or situation_tool == key


def mechanical_claim(row: LessonRow) -> MechanicalLesson | None:
    """The "prefer B over A for T" a mechanical lesson's operation and tags carry, if any."""
    avoid, target = avoided_operation(row.tags), lesson_target(row.tags)
    if avoid is None or target is None:
        return None
    return MechanicalLesson(prefer=normalise_operation(row.operation), avoid=avoid, target=target)
