"""Writing and editing lessons: claims, lessons with evidence, edits, access, retirement.

Edits and retirements supersede, never delete (``hard_delete`` is an explicit user action);
each is logged with who did it and why.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from lamarck.domain.rows import Category, LessonFilter, LessonRow, LessonStatus
from lamarck.errors import ConflictError, InvalidRecord, PolicyRejected
from lamarck.learning.scopes import validate_scope
from lamarck.node.crashpoint import crash_point
from lamarck.node.lessons.core import (
    AGENT_ACTOR,
    LIVE,
    LOOP_ACTOR,
    RETIRED_PREFIX,
    LessonChange,
    LessonCore,
    context_texts,
)
from lamarck.node.lessons.knowledge import Knowledge
from lamarck.proto.identity import is_node_id
from lamarck.proto.limits import DEFAULT_LIMITS

__all__ = ["ACCESS_LEVELS", "LessonEditing"]

#: Who a lesson may be shared with (the memory record's ``access_level``).
ACCESS_LEVELS = ("public", "trusted", "private")


class LessonEditing:
    """Writes and edits lessons over one ``LessonCore``."""

    def __init__(self, core: LessonCore) -> None:
        self._core = core
        self._knowledge = Knowledge(core)

    # -- writing lessons -------------------------------------------------------------------
    async def remember(
        self,
        content: str,
        operation: str,
        scope: str,
        *,
        context: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        incognito: bool = False,
    ) -> LessonRow | None:
        """A model's claim: stored claimed at the claimed level, never shown in a prompt.

        Returns ``None`` in incognito (nothing is recorded).
        """
        return await self.write_lesson(
            content, operation, scope, evidence=(), context=context, tags=tags, incognito=incognito
        )

    async def write_lesson(
        self,
        content: str,
        operation: str,
        scope: str,
        *,
        evidence: Sequence[str] = (),
        context: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        incognito: bool = False,
    ) -> LessonRow | None:
        """Store a lesson. With evidence it is born active; without it is only a claim.

        Refuses with ``EvidenceError`` evidence naming no stored outcome (``unknown_evidence``),
        an outcome that teaches nothing (``evidence_teaches_nothing``), or an outcome a lesson
        retired by the user cites (``retired_evidence``).
        """
        if incognito:
            return None
        text = self._core.check_content(content, operation)
        validate_scope(scope)
        self._core.scan([text, operation, *tags, *context_texts(context)], "lesson")
        ids = tuple(dict.fromkeys(e.strip() for e in evidence))
        projects = await self._core.check_evidence(ids) if ids else ()
        if not ids:
            # A claim is one statement (the row and its "created" event): nothing can
            # contest it, so it needs no transaction around it.
            return await self._remember(text, operation, scope, ids, context, tags, projects)
        # The lesson, its "created" event and any contest commit together (a crash leaves
        # none of them).
        async with self._core.store.atomic():
            return await self._remember(text, operation, scope, ids, context, tags, projects)

    async def _remember(
        self,
        text: str,
        operation: str,
        scope: str,
        ids: tuple[str, ...],
        context: Mapping[str, Any] | None,
        tags: Sequence[str],
        projects: tuple[str, ...],
    ) -> LessonRow:
        row = await self._core.insert_new(
            content=text,
            operation=operation,
            scope=scope,
            evidence=ids,
            context=context,
            tags=tags,
            # The projects whose outcomes proved it count toward promotion like confirmations.
            confirmed_projects=projects,
            log_as=AGENT_ACTOR,
        )
        # A lesson born active that contradicts one on file: both are contested until an
        # outcome settles it; the loop logs the contest.
        contested = await self._knowledge.contest_new(row)
        if contested:
            await self._core.log(contested, LOOP_ACTOR)
            return await self._core.store.get_lesson(row.id)
        return row

    async def edit(self, lesson_id: str, new_content: str, who: str, reason: str = "") -> LessonRow:
        """Supersede a lesson with edited content; the new row inherits evidence and confidence.

        ``reason`` (free text) is kept in the event log with ``who`` and travels with the new
        version's signed record (``lesson.reason``, ``metadata.supersedes``).
        """
        old = await self._core.store.get_lesson(lesson_id)
        if old.status not in LIVE:
            raise ConflictError(
                f"lesson {lesson_id} is {old.status.value}", reason="not_live", id=lesson_id
            )
        text = self._core.check_content(new_content, old.operation)
        self._core.scan([text, who], "lesson edit")
        now = self._core.clock.now()
        new = dataclasses.replace(
            old,
            id=self._core.new_id(),
            content=text,
            created_at=now,
            updated_at=now,
            superseded_by=None,
            supersedes=old.id,
            # Signed into the new version with the id it supersedes, so every node holding a
            # copy of the old one takes the edit as a new version of the same lesson.
            change_reason=reason,
            tags=tuple(dict.fromkeys((*old.tags, f"edited-by:{who}"))),
            embedding=await self._core.embed(text),
        )
        # Supersession and its events commit together (a crash leaves neither).
        async with self._core.store.atomic():
            await self._core.store.supersede(old.id, new)
            await self._core.log(
                [
                    LessonChange(old.id, "superseded", old.confidence, old.confidence, new.id),
                    LessonChange(new.id, "edited", old.confidence, new.confidence, reason),
                ],
                who,
            )
        return await self._core.store.get_lesson(new.id)

    async def set_access(
        self,
        lesson_id: str,
        access_level: str,
        recipients: Sequence[str] = (),
        *,
        who: str = AGENT_ACTOR,
    ) -> LessonRow:
        """Say who an own lesson may be shared with; the row changes in place.

        ``public``: every peer; ``trusted``: peers at or above the trusted threshold;
        ``private``: only ``recipients`` (node ids, at least one). Moving ``updated_at`` makes
        the next publication a newer version of the same record, so peers replace their copy;
        a copy a peer already holds cannot be called back.
        """
        if access_level not in ACCESS_LEVELS:
            raise InvalidRecord(
                f"access level must be one of {', '.join(ACCESS_LEVELS)}",
                reason="bad_access_level",
            )
        named = tuple(dict.fromkeys(r.strip() for r in recipients))
        if access_level == "private":
            if not named:
                raise InvalidRecord(
                    "a private lesson must name its recipients", reason="no_recipients"
                )
            bad = [r for r in named if not is_node_id(r)]
            if bad:
                raise InvalidRecord(
                    f"not node ids: {', '.join(bad)}", reason="bad_recipient", ids=bad
                )
            if len(named) > DEFAULT_LIMITS.max_list_items:
                raise InvalidRecord(
                    f"at most {DEFAULT_LIMITS.max_list_items} recipients", reason="too_large"
                )
        elif named:
            raise InvalidRecord(
                "recipients are only meaningful for a private lesson",
                reason="recipients_need_private",
            )
        row = await self._core.store.get_lesson(lesson_id)
        if row.imported_from is not None:
            # Who may see an imported lesson is its source's decision, signed into the record.
            raise PolicyRejected(
                f"lesson {lesson_id} was imported from {row.imported_from}",
                reason="imported_lesson",
            )
        if row.status not in LIVE:
            raise ConflictError(
                f"lesson {lesson_id} is {row.status.value}", reason="not_live", id=lesson_id
            )
        detail = f"access {access_level}" + (f" to {', '.join(named)}" if named else "")
        async with self._core.store.atomic():
            await self._core.store.update_lesson(
                dataclasses.replace(
                    row,
                    access_level=access_level,
                    recipients=named,
                    updated_at=self._core.clock.now(),
                    embedding=None,
                )
            )
            await self._core.log(
                [LessonChange(row.id, "edited", row.confidence, row.confidence, detail)], who
            )
        return await self._core.store.get_lesson(lesson_id)

    async def retire(self, lesson_id: str, who: str, reason: str = "") -> LessonRow:
        """Retire a lesson (``superseded_by = 'retired:<who>'``): kept, never re-learned.

        ``reason`` (free text) is kept in the event log with ``who`` and travels with the
        signed retirement (``lesson.reason``; ``who`` in ``metadata.superseded_by``).
        """
        who = who.strip()
        if not who or any(c.isspace() for c in who):
            raise InvalidRecord("retire needs a single-word actor", reason="bad_actor")
        row = await self._core.store.get_lesson(lesson_id)
        if row.superseded_by is not None:
            raise ConflictError(
                f"lesson {lesson_id} is already superseded or retired",
                reason="already_superseded",
                id=lesson_id,
            )
        now = self._core.clock.now()
        # The retirement and its event commit together: a crash between them would leave a
        # retired lesson without the reason, and the retry refused as already retired.
        async with self._core.store.atomic():
            await self._core.store.update_lesson(
                dataclasses.replace(
                    row,
                    status=LessonStatus.RETIRED,
                    superseded_by=f"{RETIRED_PREFIX}{who}",
                    # Signed into the retirement: every node holding a copy says why.
                    change_reason=reason,
                    updated_at=now,
                    embedding=None,
                )
            )
            crash_point("retire_written")
            await self._core.log(
                [LessonChange(row.id, "retired", row.confidence, row.confidence)],
                who,
                reason=reason,
            )
        return await self._core.store.get_lesson(lesson_id)

    async def history(self, lesson_id: str) -> builtins.list[LessonRow]:
        """Every version of a lesson, oldest first (the supersede chain)."""
        return await self._core.store.history(lesson_id)

    async def list(
        self,
        *,
        scope: str | None = None,
        statuses: tuple[LessonStatus, ...] | None = (LessonStatus.ACTIVE,),
        category: Category | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[LessonRow]:
        """Lessons for the user to see, highest confidence first."""
        scopes = (validate_scope(scope),) if scope is not None else None
        return await self._core.store.list_lessons(
            LessonFilter(
                statuses=statuses, scopes=scopes, category=category, limit=limit, offset=offset
            )
        )

    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson for good. Only for an explicit user action; rules never call it."""
        await self._core.store.hard_delete(lesson_id)
