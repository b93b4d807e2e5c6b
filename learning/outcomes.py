"""Deriving an outcome's verdict from what really ran (design sources: adaptive memory), never from
a model's claim.

``passed`` is computed the way the verification footer computes it (and exactly as
``lamarck.proto.outcome.footer_passed`` does, so the two can never disagree):

1. only checks of a verifying kind (test, lint, build) count;
2. a repeated check (same kind, label and target) counts by its latest run (highest ``order``);
3. a refused check did not run: if its latest run is refused, the check is unverified;
4. a check whose latest run came before the last mutation (``mutated_after``) is stale;
5. ``passed`` holds when at least one check counted and every counted check ran, passed and
   is fresh. With no check nothing was verified, so an unverified turn proves no lesson.

``claim_ok`` false (the answer claimed tests that did not run) means the outcome teaches nothing:
it is stored as a record, but no lesson moves and none is written from it. So does an outcome
marked ``injected_instruction``; single steps so marked are excluded from all learning
(design sources: adaptive recovery).
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

# The check kinds that verify work (design sources: adaptive memory); others are recorded only.
VERIFYING_KINDS = frozenset({"test", "lint", "build"})


class StepResult(StrEnum):
    """How one tool call ended."""

    OK = "ok"
    FAILED = "failed"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call of the run, in order: the operation key, how it ended, and its target."""

    operation: str
    result: StepResult
    target: str = ""
    injected_instruction: bool = False


@dataclass(frozen=True, slots=True)
class CheckRun:
    """One run of a check at position ``order``; ``ran`` false for a refused run."""

    label: str
    kind: str
    order: int
    ran: bool
    failed: bool
    target: str = ""
    mutated_after: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the run proves: ``passed``, and whether it may teach anything at all."""

    passed: bool
    teaches: bool
    counted: tuple[str, ...] = ()
    failing: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()


def _check_key(check: CheckRun) -> str:
    """A check's identity across repeats: kind, label and target."""
    return f"{check.kind}:{check.label}@{check.target}"


def derive_verdict(
    checks: Sequence[CheckRun], *, claim_ok: bool, injected_instruction: bool = False
) -> Verdict:
    """Fold the check runs into the verdict (rules 1–5 of the module doc)."""
    latest: dict[str, CheckRun] = {}
    for check in sorted(checks, key=lambda c: c.order):
        if check.kind in VERIFYING_KINDS:  # (1)
            latest[_check_key(check)] = check  # (2) a later run replaces an earlier one
    not_run = tuple(sorted(k for k, c in latest.items() if not c.ran))  # (3)
    failing = tuple(sorted(k for k, c in latest.items() if c.ran and c.failed))
    stale = tuple(sorted(k for k, c in latest.items() if c.mutated_after))  # (4)
    passed = bool(latest) and not (not_run or failing or stale)  # (5)
    return Verdict(
        passed=passed,
        teaches=claim_ok and not injected_instruction,
        counted=tuple(sorted(latest)),
        failing=failing,
        stale=stale,
        not_run=not_run,
    )


def learnable_steps(steps: Sequence[ToolStep]) -> list[ToolStep]:
    """The steps learning may look at: everything not marked as an injected instruction."""
    return [s for s in steps if not s.injected_instruction]
