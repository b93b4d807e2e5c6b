"""Deriving an outcome's verdict from what really ran (seed 000 §3.1), never from a model's claim.

``passed`` is computed the way the verification footer computes it:

1. only checks of a verifying kind (test, lint, build) count;
2. a refused check did not run, and neither did one recorded with ``ran`` false;
3. a repeated check (same label and target) counts by its latest run;
4. a check whose latest run came before the last mutation is stale, so it proves nothing;
5. ``passed`` holds when at least one check counted and every counted check passed and is fresh.

``claim_ok`` false (the answer claimed tests that did not run) means the outcome teaches nothing:
it is stored as a record, but no lesson moves and none is written from it. Steps whose result the
classifier marked ``injected_instruction`` are excluded from all learning (seed 002 §3.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "VERIFYING_KINDS",
    "CheckRun",
    "StepResult",
    "ToolStep",
    "Verdict",
    "derive_verdict",
    "learnable_steps",
]

# The check kinds that verify work (seed 000 §3.1); others (e.g. "format") are recorded only.
VERIFYING_KINDS = frozenset({"test", "lint", "build"})


class StepResult(StrEnum):
    """How one tool call ended."""

    OK = "ok"
    FAILED = "failed"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call of the run, in order: the operation key, its target and how it ended."""

    operation: str
    result: StepResult
    target: str = ""
    mutated: bool = False
    injected_instruction: bool = False


@dataclass(frozen=True, slots=True)
class CheckRun:
    """One verification record: a check (test/lint/build) run at step position ``seq``."""

    label: str
    kind: str
    seq: int
    ran: bool
    failed: bool
    target: str = ""
    refused: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the run proves: ``passed``, and whether it may teach anything at all."""

    passed: bool
    teaches: bool
    counted: tuple[str, ...] = ()
    failing: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()


def _check_key(check: CheckRun) -> str:
    """A check's identity across repeats: label and target."""
    return f"{check.label}@{check.target}" if check.target else check.label


def derive_verdict(
    steps: Sequence[ToolStep], checks: Sequence[CheckRun], *, claim_ok: bool
) -> Verdict:
    """Fold the tool record and the checks into the verdict (rules 1–5 of the module doc)."""
    # (4) the position of the last mutating step; a check at or after it is fresh.
    last_mutation = max((i for i, s in enumerate(steps) if s.mutated), default=-1)
    latest: dict[str, CheckRun] = {}
    for check in checks:
        if check.kind not in VERIFYING_KINDS:  # (1)
            continue
        if check.refused or not check.ran:  # (2)
            continue
        key = _check_key(check)
        if key not in latest or check.seq >= latest[key].seq:  # (3)
            latest[key] = check
    failing = tuple(sorted(k for k, c in latest.items() if c.failed))
    stale = tuple(sorted(k for k, c in latest.items() if c.seq < last_mutation))
    passed = bool(latest) and not failing and not stale  # (5)
    return Verdict(
        passed=passed,
        teaches=claim_ok,
        counted=tuple(sorted(latest)),
        failing=failing,
        stale=stale,
    )


def learnable_steps(steps: Sequence[ToolStep]) -> list[ToolStep]:
    """The steps learning may look at: everything not marked as an injected instruction."""
    return [s for s in steps if not s.injected_instruction]
