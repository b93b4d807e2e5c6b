"""What every part of the in-memory adapter shares: the dicts that stand for the tables, the
lock, the schema's constraints on a new lesson, and the filter a lesson must pass."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from lamarck.domain.rows import (
    LessonEvent,
    LessonFilter,
    LessonRow,
    OutcomeRow,
    QuarantineRow,
    RejectionRow,
    Vector,
)
from lamarck.errors import ConflictError, StoreError
from lamarck.learning.mechanical import is_about

__all__ = ["MemTables", "lesson_matches"]


def lesson_matches(lesson: LessonRow, flt: LessonFilter) -> bool:
    """Whether ``lesson`` passes ``flt`` (limit and offset aside).

    ``imported`` means the lesson came from a peer: ``imported_from`` is set.
    """
    if flt.statuses is not None and lesson.status not in flt.statuses:
        return False
    if flt.scopes is not None and lesson.scope not in flt.scopes:
        return False
    if flt.category is not None and lesson.category != flt.category:
        return False
    if flt.operation is not None and lesson.operation != flt.operation:
        return False
    if flt.content is not None and lesson.content != flt.content:
        return False
    if flt.about is not None and not is_about(
        flt.about,
        lesson.operation,
        lesson.tags,
        None if lesson.situation is None else lesson.situation.get("tool"),
    ):
        return False
    if flt.min_confidence is not None and lesson.confidence < flt.min_confidence:
        return False
    if flt.tags is not None and not set(flt.tags).issubset(lesson.tags):
        return False
    if flt.context is not None and any(lesson.context.get(k) != v for k, v in flt.context):
        return False
    if flt.sources is not None and lesson.imported_from not in flt.sources:
        return False
    if flt.content_hashes is not None and lesson.content_hash not in flt.content_hashes:
        return False
    return flt.imported is None or (lesson.imported_from is not None) == flt.imported


def _frozen_vector(vector: Vector | None) -> Vector | None:
    # Copy and freeze: a caller mutating its array must not change what the store holds.
    if vector is None:
        return None
    copy = np.array(vector, dtype=np.float32, copy=True).reshape(-1)
    copy.setflags(write=False)
    return copy


class MemTables:
    """The store's rows, held in dicts; every per-port part of ``InMemoryLessonStore`` reads
    and writes these.

    ``dim``, when given, is enforced on every stored embedding and every query, as the
    Postgres column ``vector(dim)`` does.
    """

    def __init__(self, dim: int | None = None) -> None:
        self._dim = dim
        self._lessons: dict[str, LessonRow] = {}
        self._outcomes: dict[str, OutcomeRow] = {}
        self._quarantine: dict[str, QuarantineRow] = {}
        self._rejections: list[RejectionRow] = []
        self._events: list[LessonEvent] = []
        self._state: dict[str, dict[str, Any]] = {}
        # One lock makes each method atomic against the others, like one SQL transaction.
        self._lock = asyncio.Lock()
        self._in_unit = False

    def _check_new(self, lesson: LessonRow, pending: Iterable[LessonRow] = ()) -> LessonRow:
        # Same constraints as the SQL schema: primary key, unique content hash, vector(dim).
        ids = {p.id for p in pending}
        if lesson.id in self._lessons or lesson.id in ids:
            raise ConflictError(f"lesson {lesson.id} exists", reason="duplicate_id")
        if lesson.content_hash is not None:
            hashes = {p.content_hash for p in pending}
            if lesson.content_hash in hashes or any(
                other.content_hash == lesson.content_hash for other in self._lessons.values()
            ):
                raise ConflictError(
                    f"a lesson with content hash {lesson.content_hash} exists",
                    reason="duplicate_content_hash",
                )
        return self._normalise(lesson)

    def _normalise(self, lesson: LessonRow) -> LessonRow:
        vector = _frozen_vector(lesson.embedding)
        if vector is not None and self._dim is not None and vector.shape[0] != self._dim:
            raise StoreError(
                f"embedding has {vector.shape[0]} dimensions, the store holds {self._dim}",
                reason="dimension_mismatch",
            )
        return dataclasses.replace(lesson, embedding=vector)

    def _matching(self, flt: LessonFilter) -> list[LessonRow]:
        return [row for row in self._lessons.values() if lesson_matches(row, flt)]
