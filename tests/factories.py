"""Records the suite builds in many places, built one way: an outcome record as the dict an
agent sends (``kind: outcome``), with one ``pytest`` check that passed or failed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from lamarck.proto.timefmt import format_ts


def outcome_obj(
    *,
    outcome_id: str,
    session_id: str,
    turn_index: int,
    project: str,
    goal_digest: str,
    steps: Sequence[tuple[str, str, str | None]],
    created_at: datetime,
    passed: bool = True,
    claim_ok: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """One turn's outcome: ``steps`` are ``(operation_key, outcome, target)`` in order;
    ``extra`` adds fields (``in_play``, ``injected_instruction``, ...)."""
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
        "created_at": format_ts(created_at),
        **extra,
    }
