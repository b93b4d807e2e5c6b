"""Mechanical lessons: failed(A on T) → ok(B on T) → passed writes "prefer B over A for T"."""

from __future__ import annotations

from lamarck.learning.mechanical import (
    MechanicalLesson,
    avoided_operation,
    lesson_target,
    mechanical_lessons,
)
from lamarck.learning.outcomes import StepResult, ToolStep, Verdict

OK, FAILED, REFUSED = StepResult.OK, StepResult.FAILED, StepResult.REFUSED
PASSED = Verdict(passed=True, teaches=True)
A, B, T = "shell:pytest tests/", "shell:pytest", "the test suite"


def test_failed_then_succeeded_alternative_on_same_target_writes_prefer_b_over_a() -> None:
    steps = [ToolStep(A, FAILED, T), ToolStep(B, OK, T)]
    [lesson] = mechanical_lessons(steps, PASSED)
    assert lesson == MechanicalLesson(prefer=B, avoid=A, target=T)
    assert lesson.content == f"Prefer `{B}` over `{A}` for {T}."
    assert avoided_operation(lesson.tags) == A and lesson_target(lesson.tags) == T


def test_no_mechanical_lesson_unless_the_run_passed_and_teaches() -> None:
    steps = [ToolStep(A, FAILED, T), ToolStep(B, OK, T)]
    assert mechanical_lessons(steps, Verdict(passed=False, teaches=True)) == []
    assert mechanical_lessons(steps, Verdict(passed=True, teaches=False)) == []


def test_alternative_on_another_target_is_not_a_pair() -> None:
    steps = [ToolStep(A, FAILED, T), ToolStep(B, OK, "docs")]
    assert mechanical_lessons(steps, PASSED) == []


def test_operation_that_recovered_itself_is_not_avoided() -> None:
    steps = [ToolStep(A, FAILED, T), ToolStep(B, OK, T), ToolStep(A, OK, T)]
    assert mechanical_lessons(steps, PASSED) == []


def test_refused_and_injected_steps_are_not_evidence() -> None:
    assert mechanical_lessons([ToolStep(A, REFUSED, T), ToolStep(B, OK, T)], PASSED) == []
    injected = [ToolStep(A, FAILED, T), ToolStep(B, OK, T, injected_instruction=True)]
    assert mechanical_lessons(injected, PASSED) == []


def test_reversed_lesson_is_recognised() -> None:
    old = MechanicalLesson(prefer=B, avoid=A, target=T)
    assert old.reversed_by(MechanicalLesson(prefer=A, avoid=B, target=T))
    assert not old.reversed_by(MechanicalLesson(prefer=A, avoid=B, target="docs"))
