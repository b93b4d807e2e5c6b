"""Rows for the store contract suites: lessons, outcomes, times and vectors."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    OutcomeRow,
    ProvenanceEntry,
)
from tests.factories import lesson_row

# The dimension the conftest migrates its template database with (conftest.DIM).
DIM = 8

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
ALL = LessonFilter(statuses=None, limit=1000)


def at(seconds: float) -> datetime:
    """A fixed instant ``seconds`` after T0."""
    return T0 + timedelta(seconds=seconds)


def vec(*values: float) -> np.ndarray:
    """A DIM-dimensional float32 vector starting with ``values``."""
    out = np.zeros(DIM, dtype=np.float32)
    out[: len(values)] = values
    return out


def lesson(lesson_id: str, **fields: object) -> LessonRow:
    """An active global lesson with an embedding, at T0; ``fields`` override anything."""
    return lesson_row(lesson_id, at=T0, dim=DIM, **fields)


def outcome(outcome_id: str, created: datetime = T0, **fields: object) -> OutcomeRow:
    """A passed outcome."""
    base = OutcomeRow(
        id=outcome_id,
        session_id="s1",
        turn_index=3,
        project="project:ab12",
        passed=True,
        claim_ok=True,
        created_at=created,
        record={"checks": [{"name": "pytest", "ok": True}], "ops": ["pytest"], "n": 1.5},
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def full_lesson() -> LessonRow:
    """A lesson with every field set to something other than its default."""
    return lesson_row(
        "full",
        content="prefer uv over pip for installs",
        operation="pip install",
        scope="project:0f3a",
        status=LessonStatus.CLAIMED,
        confidence=0.3,
        created_at=at(1),
        updated_at=at(2),
        category=Category.SITUATION,
        evidence=("o1", "o2"),
        superseded_by=None,
        supersedes="older",
        last_used=at(3),
        use_count=4,
        confirmations=2,
        contradictions=1,
        confirmed_projects=("project:0f3a", "project:99"),
        context={"domain": "python", "tools": ["pip", "uv"], "constraints": {"net": False}},
        situation={"tool": "gh", "subject": "auth", "kind": "login", "interactive": True},
        tags=("python", "install"),
        memory_type="UC",
        access_level="private",
        recipients=("lmk1alice", "lmk1bob"),
        source_node_id="lmk1source",
        imported_from="lmk1via",
        original_confidence=0.8,
        transferred_confidence=0.42,
        signed_record=b'{"id":"full"}\x00\xff',
        content_hash="a" * 64,
        provenance=(
            ProvenanceEntry("lmk1source", "lmk1via", at(5), "a" * 64),
            ProvenanceEntry("lmk1source", "lmk1other", at(6), "a" * 64),
        ),
        change_reason="the suite moved to nox",
        embedding=vec(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
    )
