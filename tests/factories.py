"""Records the suite builds in many places, built one way: a stored lesson (``lesson_row``,
and the publishable local lesson the sharing tests start from, ``publishable_lesson``), its
embedding (``unit_vector``), a quarantine row holding a signed record (``held_row``), and an
outcome record as the dict an agent sends (``kind: outcome``), with one ``pytest`` check that
passed or failed. Every builder takes keyword overrides for any field."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from lamarck.domain.rows import LessonRow, LessonStatus, QuarantineRow
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts

#: The instant a built lesson is made and last updated at unless a test gives its own.
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def unit_vector(dim: int, *values: float) -> np.ndarray:
    """A ``dim``-dimensional float32 vector starting with ``values`` (none given: 1.0, the
    unit vector along the first axis), zeros after."""
    out = np.zeros(dim, dtype=np.float32)
    values = values or (1.0,)
    out[: len(values)] = values
    return out


def lesson_row(
    lesson_id: str = "l",
    *,
    at: datetime = T0,
    dim: int | None = None,
    **fields: Any,
) -> LessonRow:
    """An active global lesson about ``pytest`` (content ``lesson <id>``, confidence 0.5) made
    and last updated ``at``; ``dim`` gives it an embedding (``unit_vector(dim)``); ``fields``
    replace any field (a ``created_at`` alone leaves ``updated_at`` at ``at``)."""
    base: dict[str, Any] = dict(
        id=lesson_id,
        content=f"lesson {lesson_id}",
        operation="pytest",
        scope="global",
        status=LessonStatus.ACTIVE,
        confidence=0.5,
        created_at=at,
        updated_at=at,
    )
    if dim is not None:
        base["embedding"] = unit_vector(dim)
    base.update(fields)
    return LessonRow(**base)


def held_row(
    held_id: str,
    record: SignedMemory,
    *,
    received_at: datetime = T0,
    reasons: tuple[str, ...] = ("unverified_high_confidence", "statistical_outlier"),
    **fields: Any,
) -> QuarantineRow:
    """A pending quarantine row holding the signed ``record`` (its bytes, hash and source),
    held for the two reasons a confident record from an unknown peer gets; ``fields``
    replace the rest (``state``, ``confidence``, ``transfer_rule``)."""
    return QuarantineRow(
        id=held_id,
        content_hash=record.content_hash,
        source_node_id=record.source_agent_id,
        reasons=reasons,
        received_at=received_at,
        signed_record=record.raw,
        **fields,
    )


def publishable_lesson(**fields: Any) -> LessonRow:
    """A local lesson this node would publish: confirmed by one outcome, about
    ``deploy.restart``, confidence 0.8, made two days and updated one day before ``T0``."""
    base: dict[str, Any] = dict(
        content="Run database migrations before restarting the api service.",
        operation="deploy.restart",
        confidence=0.8,
        created_at=T0 - timedelta(days=2),
        updated_at=T0 - timedelta(days=1),
        evidence=("0b9c2d3e-4a5b-4c6d-8e7f-0123456789ab",),
    )
    base.update(fields)
    return lesson_row(base.pop("id", "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"), **base)


def outcome_obj(
    *,
    outcome_id: str,
    session_id: str,
    turn_index: int,
    project: str,
    goal_digest: str,
    steps: Sequence[tuple[str, str, str | None]],
    created_at: datetime | str,
    passed: bool = True,
    claim_ok: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """One turn's outcome: ``steps`` are ``(operation_key, outcome, target)`` in order;
    ``created_at`` a time (or the exact text to send); ``extra`` adds fields (``in_play``,
    ``injected_instruction``, ...) or replaces the defaults (``tokens``, ``wall_s``)."""
    return {
        "schema_version": "1.0",
        "kind": "outcome",
        "id": outcome_id,
        "session_id": session_id,
        "turn_index": turn_index,
        "project": project,
        "goal_digest": goal_digest,
        "approach": [
            {"operation_key": op, "outcome": result, "target": target}
            for op, result, target in steps
        ],
        "checks": [
            {
                "label": "pytest",
                "target": "",
                "kind": "test",
                "order": 0,
                "ran": True,
                "failed": not passed,
                "mutated_after": False,
            }
        ],
        "passed": passed,
        "claim_ok": claim_ok,
        "steps": len(steps),
        "tokens": 100,
        "wall_s": 1.0,
        "created_at": created_at if isinstance(created_at, str) else format_ts(created_at),
        **extra,
    }
