"""Rows for the store contract suites: lessons, outcomes, quarantined records, signed records,
times and vectors, and the rows the filter tests select among."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    OutcomeRow,
    ProvenanceEntry,
    QuarantineRow,
)
from lamarck.node.store.port import LessonStore
from lamarck.proto.identity import NodeIdentity
from tests.factories import lesson_row, numbered_record

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


async def filter_fixture(store: LessonStore) -> None:
    """Ten lessons that differ in one field each (scope, status, category, source...): what
    the filter tests select among."""
    await store.insert_lessons(
        [
            lesson("g-hi", confidence=0.9),
            lesson("g-lo", confidence=0.2),
            lesson("g-new", confidence=0.5, created_at=at(10)),
            lesson("g-old", confidence=0.5, created_at=at(0)),
            lesson("p1", scope="project:1", confidence=0.6),
            lesson("p2", scope="project:2", confidence=0.6, operation="git push"),
            lesson("claim", status=LessonStatus.CLAIMED, confidence=0.3),
            lesson("sit", category=Category.SITUATION, confidence=0.7),
            lesson("imp", imported_from="lmk1peer", source_node_id="lmk1src", confidence=0.4),
            lesson("ret", status=LessonStatus.RETIRED, confidence=0.1),
        ]
    )


def exact_order(rows: list[LessonRow], query: np.ndarray) -> list[tuple[str, float]]:
    """``(id, cosine)`` of every row against ``query``, best first, ties by id."""
    sims = []
    for row in rows:
        assert row.embedding is not None
        e = row.embedding.astype(np.float64)
        q = query.astype(np.float64)
        sims.append((row.id, float(e @ q / (np.linalg.norm(e) * np.linalg.norm(q)))))
    return sorted(sims, key=lambda p: (-p[1], p[0]))


def quarantined(qid: str, digest: str, seconds: float = 0) -> QuarantineRow:
    """A pending quarantine row."""
    return QuarantineRow(
        id=qid,
        content_hash=digest,
        source_node_id="lmk1src",
        reasons=("low_reputation", "unverified_claim"),
        received_at=at(seconds),
        signed_record=b'{"x": 1}',
    )


def signed_record(n: int, content: str, signer: NodeIdentity, now: datetime, **over: Any) -> bytes:
    """The bytes of record ``n`` (``numbered_record``) saying ``content`` that ``signer``
    signed two days before ``now``: confidence 0.7, operation ``deploy.step<n>``; ``over`` as
    in ``memory_obj``."""
    return numbered_record(
        n,
        signer,
        content=content,
        created=now - timedelta(days=2),
        confidence=0.7,
        confidence_interval={"mean": 0.7},
        lesson={"operation": f"deploy.step{n}"},
        **over,
    ).raw
