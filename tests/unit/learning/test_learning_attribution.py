"""Attribution is scoped by operation key: only what the run attempted moves a lesson."""

from __future__ import annotations

from lamarck.learning.attribution import Effect, attribute
from lamarck.learning.outcomes import StepResult, ToolStep, Verdict

OK, FAILED, REFUSED = StepResult.OK, StepResult.FAILED, StepResult.REFUSED
PASSED = Verdict(passed=True, teaches=True)
FAILED_RUN = Verdict(passed=False, teaches=True)


def effects(
    in_play: list[tuple[str, str]], steps: list[ToolStep], verdict: Verdict
) -> dict[str, Effect]:
    return {a.lesson_id: a.effect for a in attribute(in_play, steps, verdict)}


def test_pytest_lesson_is_not_blamed_for_failed_web_fetch() -> None:
    steps = [ToolStep("shell:pytest", OK), ToolStep("web_fetch", FAILED)]
    assert effects([("L", "shell:pytest")], steps, FAILED_RUN) == {"L": Effect.NOT_ATTRIBUTED}


def test_lesson_is_confirmed_when_its_operation_ran_and_the_run_passed() -> None:
    steps = [ToolStep("shell:pytest", OK)]
    assert effects([("L", "shell:pytest")], steps, PASSED) == {"L": Effect.CONFIRMED}


def test_lesson_is_contradicted_when_its_operation_failed_even_if_the_run_recovered() -> None:
    steps = [ToolStep("shell:pytest", FAILED), ToolStep("shell:pytest tests/", OK)]
    assert effects([("L", "shell:pytest")], steps, PASSED) == {"L": Effect.CONTRADICTED}


def test_lesson_whose_operation_was_not_attempted_is_not_attributed() -> None:
    steps = [ToolStep("git:status", OK)]
    assert effects([("L", "shell:pytest")], steps, PASSED) == {"L": Effect.NOT_ATTRIBUTED}


def test_refused_call_did_not_run_so_it_attributes_nothing() -> None:
    steps = [ToolStep("shell:pytest", REFUSED)]
    assert effects([("L", "shell:pytest")], steps, FAILED_RUN) == {"L": Effect.NOT_ATTRIBUTED}


def test_latest_attempt_of_the_operation_decides() -> None:
    steps = [ToolStep("shell:pytest", FAILED), ToolStep("shell:pytest", OK)]
    assert effects([("L", "shell:pytest")], steps, PASSED) == {"L": Effect.CONFIRMED}


def test_outcome_with_false_claim_attributes_nothing() -> None:
    steps = [ToolStep("shell:pytest", FAILED)]
    verdict = Verdict(passed=False, teaches=False)
    assert effects([("L", "shell:pytest")], steps, verdict) == {"L": Effect.NOT_ATTRIBUTED}


def test_injected_instruction_result_is_excluded_from_attribution() -> None:
    steps = [ToolStep("shell:curl", FAILED, injected_instruction=True)]
    assert effects([("L", "shell:curl")], steps, FAILED_RUN) == {"L": Effect.NOT_ATTRIBUTED}
