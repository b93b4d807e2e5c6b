"""Exposure before proof through the lesson service: an unproven imported lesson stays out of
plan-time prompts (share 0) but is named at decision time; a local confirmation lets it in."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from datetime import UTC, datetime

from lamarck.node.embedding import HashingEmbedder
from lamarck.node.learning.exposure import ExposureParams
from lamarck.node.learning.params import LearningParams
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.port import LessonRow, LessonStatus
from lamarck.node.store.service import LessonService
from lamarck.proto.clock import FixedClock

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIM = 64
TEXT = "Run the migrations with alembic upgrade head before restarting the api service."
OP = "shell:alembic upgrade head"


def service(share: float) -> tuple[LessonService, InMemoryLessonStore]:
    """A lesson service holding one imported lesson nobody here has confirmed."""
    store = InMemoryLessonStore(dim=DIM)
    embedder = HashingEmbedder(dim=DIM)
    svc = LessonService(
        store,
        embedder,
        FixedClock(NOW),
        LearningParams(exposure=ExposureParams(plan_share=share)),
        rng=random.Random(3),
    )
    row = LessonRow(
        id="6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab",
        content=TEXT,
        operation=OP,
        scope="global",
        status=LessonStatus.ACTIVE,
        confidence=0.6,
        created_at=NOW,
        updated_at=NOW,
        imported_from="lmk1" + "s" * 32,
        original_confidence=0.8,
        content_hash="ab" * 32,
        embedding=embedder.embed([TEXT])[0],
    )
    asyncio.run(store.insert_lesson(row))
    return svc, store


def recalled(svc: LessonService) -> list[str]:
    """Ids in the plan-time section for the lesson's own task."""
    result = asyncio.run(svc.recall(TEXT, None, "global", "s1", incognito=True))
    return [r.id for r in result.lessons]


def test_an_unproven_import_is_kept_out_of_plan_time_but_named_at_decision_time() -> None:
    svc, _ = service(0.0)
    assert recalled(svc) == []
    found = asyncio.run(svc.check(OP, "global"))
    assert found is not None and found.lesson.imported_from is not None


def test_a_local_confirmation_lets_it_into_plan_time_prompts() -> None:
    svc, store = service(0.0)
    row = asyncio.run(store.get_lesson("6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"))
    asyncio.run(store.update_lesson(dataclasses.replace(row, confirmations=1)))
    assert recalled(svc) == [row.id]


def test_share_one_exposes_it_everywhere() -> None:
    svc, _ = service(1.0)
    assert recalled(svc) == ["6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"]
