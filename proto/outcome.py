"""The outcome record: what really happened in one agent turn (adaptive memory §3.1).

An outcome is derived by the loop from what ran, never asked of the model. It is the only
thing that moves a lesson's confidence: ``in_play`` names the memories that shaped the run,
``approach`` what was tried, ``checks`` what verified it.

The footer rule is data here: each check run carries its ``order`` in the turn and whether
anything was ``mutated_after`` it, so ``footer_passed`` can recompute the verdict, and a
record whose ``passed`` is more optimistic than its own checks is rejected.

``prediction`` is the agent's explicit forecast before it acted (Lamarckian memory "Hypothesize"):
stored with the outcome, so the node can measure prediction accuracy and calibration.
``schema_version`` defaults to ``"1.0"`` when a writer leaves it out, as the schema says.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from lamarck.errors import InvalidRecord
from lamarck.proto.limits import RecordLimits
from lamarck.proto.memory import (
    Count,
    NodeId,
    Probability,
    RecordBlock,
    RecordModel,
    Signature,
    Timestamp,
    Uuid4,
    capped_text,
    max_items,
)

__all__ = [
    "DEFAULT_OUTCOME_VERSION",
    "ApproachStep",
    "CheckRun",
    "Outcome",
    "Prediction",
    "footer_passed",
]

#: The version an outcome written without ``schema_version`` is read as.
DEFAULT_OUTCOME_VERSION = "1.0"

_ShortText = Annotated[str, Field(min_length=1), AfterValidator(capped_text("max_short_chars"))]
_MaybeEmptyShort = Annotated[str, AfterValidator(capped_text("max_short_chars"))]
_IdText = Annotated[str, Field(min_length=1), AfterValidator(capped_text("max_id_chars"))]
# The first ~200 characters of the user's request: may span lines.
_Goal = Annotated[
    str, Field(min_length=1), AfterValidator(capped_text("max_short_chars", multiline=True))
]


class ApproachStep(RecordBlock):
    """One tool operation of the turn, in order: its operation key and how it ended."""

    operation_key: _ShortText
    outcome: Literal["ok", "failed", "refused"]
    target: _ShortText | None = None


class CheckRun(RecordBlock):
    """One run of a verification check (test, lint or build) during the turn.

    A check is identified by (kind, label, target); it may run several times, and only its
    latest run (highest ``order``) counts. ``ran`` is false for a refused check.
    """

    label: _ShortText
    target: _MaybeEmptyShort = ""
    kind: Literal["test", "lint", "build"]
    order: Count = Field(description="position of this run in the turn; unique per outcome")
    ran: bool
    failed: bool
    mutated_after: bool = Field(description="something was edited after this run (stale)")


class Prediction(RecordBlock):
    """The agent's explicit prediction before acting (Lamarckian memory "Hypothesize")."""

    expected: Literal["pass", "fail"] = Field(description="what the agent expects the run to do")
    confidence: Probability = Field(description="how sure it is, 0..1")


def footer_passed(checks: Iterable[CheckRun]) -> bool:
    """The verification footer's verdict over ``checks``.

    True iff at least one check exists and the latest run of every check ran, did not fail
    and was not followed by a mutation. With no checks nothing was verified, so it is False:
    an unverified turn cannot prove a lesson.
    """
    latest: dict[tuple[str, str, str], CheckRun] = {}
    for run in sorted(checks, key=lambda c: c.order):
        latest[(run.kind, run.label, run.target)] = run
    return bool(latest) and all(
        r.ran and not r.failed and not r.mutated_after for r in latest.values()
    )


class Outcome(RecordModel):
    """One turn's outcome record (schema 1.x)."""

    _majors: ClassVar[tuple[int, ...]] = (1,)
    _always_written: ClassVar[tuple[str, ...]] = ("schema_version", "kind")

    schema_version: Annotated[str, StringConstraints(pattern=r"^1\.(0|[1-9][0-9]{0,3})$")] = (
        DEFAULT_OUTCOME_VERSION
    )
    kind: Literal["outcome"] = "outcome"
    id: Uuid4
    session_id: _IdText
    turn_index: Count
    project: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16,64}$")] = Field(
        description="hex digest of the project (never a path: paths are user data)"
    )
    memory_context: _ShortText | None = None
    goal_digest: _Goal = Field(description="the first ~200 characters of the user request")
    approach: Annotated[tuple[ApproachStep, ...], AfterValidator(max_items("max_list_items"))] = ()
    checks: Annotated[tuple[CheckRun, ...], AfterValidator(max_items("max_list_items"))] = ()
    passed: bool = Field(description="the footer verdict; never more optimistic than checks")
    claim_ok: bool = Field(description="the answer's test claims match what ran")
    steps: Count
    tokens: Count
    wall_s: Annotated[float, Field(ge=0.0, le=1e9)]
    in_play: Annotated[tuple[Uuid4, ...], AfterValidator(max_items("max_list_items"))] = Field(
        default=(), description="ids of the memories that shaped this run"
    )
    created_at: Timestamp
    injected_instruction: bool = Field(
        default=False, description="a result carried an injected instruction: learn nothing"
    )
    prediction: Prediction | None = Field(
        default=None, description="the agent's forecast before it acted (its hypothesis)"
    )
    recorded_by: NodeId | None = Field(default=None, description="the node that recorded it")
    signature: Signature | None = None

    @classmethod
    def _from_checked(cls, text: str, obj: Mapping[str, Any], *, limits: RecordLimits) -> Self:
        # The schema gives schema_version a default; a writer that leaves it out (a shell
        # hook, a hand-written run) gets it, as every other defaulted field.
        if "schema_version" not in obj:
            obj = {"schema_version": DEFAULT_OUTCOME_VERSION, **obj}
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return super()._from_checked(text, obj, limits=limits)

    @model_validator(mode="after")
    def _check_outcome(self) -> Self:
        orders = [c.order for c in self.checks]
        if len(set(orders)) != len(orders):
            raise InvalidRecord("two check runs share one order index", reason="malformed")
        if self.passed and not footer_passed(self.checks):
            raise InvalidRecord(
                "passed is true but the latest run of some check did not pass, went stale, "
                "or no check ran",
                reason="optimistic_outcome",
            )
        return self

    def footer_passed(self) -> bool:
        """Recompute the footer verdict from this record's own checks."""
        return footer_passed(self.checks)
