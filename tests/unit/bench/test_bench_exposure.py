"""bench/exposure.py's tallies: what the honest agents were shown is counted as documented."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lamarck.client import CheckResult, Conflict, RecallResult
from lamarck.fleet.workloads import WorkloadParams, make_workload

# `bench` is a directory at the repository root, importable from there (not installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.exposure import ExposureTally, summary

WORK = make_workload("fleet-learning-curve", 0, WorkloadParams(nodes=2, agents=4, rounds=1))
P = WORK.pitfalls[0]
HONEST = f"Prefer `{P.working}` over `{P.failing}` for {P.target}."
POISON = f"Prefer `{P.failing}` over `{P.working}` for {P.target}."


def _lesson(content: str, origin: str = "imported", confirmations: int = 0) -> Any:
    return SimpleNamespace(
        id=content[:20] + origin, content=content, origin=origin, success_count=confirmations
    )


def _tally() -> ExposureTally:
    return ExposureTally(WORK, frozenset({3}))


def test_only_honest_agents_of_the_shared_arm_are_counted() -> None:
    t = _tally()
    assert t.honest_shared("shared-r0-a1")
    assert not t.honest_shared("shared-r2-a3")  # a poisoner
    assert not t.honest_shared("isolated-r0-a1")
    assert t.shared_agent("shared-r1-a3") == 3 and t.shared_agent("probe") is None


def test_poisoned_is_advice_for_the_failing_form_only() -> None:
    t = _tally()
    assert t.poisoned(POISON) and not t.poisoned(HONEST)
    assert not t.poisoned(f"Prefer `{P.failing}@a1` over `{P.working}@a1`.")  # isolated copy


def test_plan_time_exposure_counts_unproven_imports_and_poison() -> None:
    t = _tally()
    shown = (
        _lesson(HONEST),
        _lesson(POISON),
        _lesson(HONEST, confirmations=2),
        _lesson(HONEST, "local"),
    )
    t.recalled("shared-r0-a0", RecallResult(shown[:2], "", hints=shown[2:]))
    t.recalled("shared-r0-a3", RecallResult(shown, ""))  # a poisoner's prompt: not counted
    f = t.figures()
    assert f["plan_prompts"] == 1
    assert f["imported_per_prompt"] == 3 and f["unproven_per_prompt"] == 2
    assert f["poisoned_plan_exposures"] == 1 and f["poisoned_unproven_plan_exposures"] == 1


def test_a_contested_preamble_is_not_counted_as_poisoned_advice() -> None:
    t = _tally()
    poison = _lesson(POISON)
    t.checked("shared-r0-a0", CheckResult(f"A lesson on file: {POISON}", "", "", (), (poison,)))
    conflict = Conflict("op", (_lesson(HONEST), poison))
    t.checked("shared-r0-a0", CheckResult("Contested on ...", "", "", (), (), (conflict,)))
    f = t.figures()
    assert (f["checks"], f["poisoned_decision_exposures"], f["contested_checks"]) == (2, 1, 1)


def test_contradictions_are_split_by_who_recorded_them() -> None:
    t = _tally()
    t.outcome("shared-r1-a3", [_lesson(HONEST), _lesson(HONEST, "local"), _lesson(POISON)])
    t.outcome("shared-r1-a0", [_lesson(POISON), _lesson(HONEST)])
    f = t.figures()
    assert f["liar_contradicted"] == 2 and f["liar_contradicted_imported"] == 1
    assert f["poison_contradicted"] == 1


def test_summary_ratios_are_to_the_share_one_baseline() -> None:
    base = {"steps_saved": 10.0, "shared_repeated_known_mistakes": 4.0, "unproven_per_prompt": 2.0}
    cautious = {
        "steps_saved": 9.0,
        "shared_repeated_known_mistakes": 1.0,
        "unproven_per_prompt": 0.0,
    }
    flat = summary({1.0: {"poisoners": base}, 0.25: {"poisoners": cautious}})
    assert flat["share025_poisoners_steps_saved_ratio"] == 0.9
    assert flat["share025_poisoners_repeated_mistakes_ratio"] == 0.25
    assert flat["share025_poisoners_unproven_exposure_ratio"] == 0.0
    assert "share1_poisoners_steps_saved_ratio" not in flat
