"""Situations (design sources: adaptive recovery): declared blockers remembered as lessons, probed
before a call."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Sequence

from lamarck.domain.rows import Category, LessonFilter, LessonRow, LessonStatus
from lamarck.errors import EvidenceError
from lamarck.learning.scopes import recall_scopes, validate_scope
from lamarck.learning.situations import (
    Escalate,
    Note,
    Probe,
    Proceed,
    Situation,
    SituationCall,
    SituationLesson,
    SituationSource,
    decide_before_dispatch,
    shows_blocker,
    situation_signature,
    validate_for_learning,
)
from lamarck.node.lessons.core import LessonCore

__all__ = ["Situations"]


class Situations:
    """Situation lessons over one ``LessonCore``."""

    def __init__(self, core: LessonCore) -> None:
        self._core = core

    async def record_situation(
        self,
        situation: Situation,
        scope: str,
        *,
        evidence: Sequence[str] = (),
        incognito: bool = False,
    ) -> LessonRow | None:
        """Remember a declared blocker after the turn escalated or the user answered.

        Inferred situations, injected instructions and transient kinds are refused
        (``InvalidRecord``); the same signature already on file is refreshed, not duplicated
        (new evidence is added to it). ``evidence`` names recorded outcomes of the turns that
        met the blocker: each must show a failed or refused call to the situation's tool
        (``EvidenceError`` ``evidence_not_the_blocker`` otherwise). Without evidence the
        lesson stays on this node (``no_evidence``); with it, it may be shared.
        """
        if incognito:
            return None
        validate_for_learning(situation)
        validate_scope(scope)
        self._core.scan(
            [situation.tool, situation.subject, situation.unblock or "", situation.probe or ""],
            "situation",
        )
        ids = tuple(dict.fromkeys(evidence))
        if ids:
            await self._core.check_evidence(ids)
            await self._check_shows_blocker(situation, ids)
        signature = situation_signature(situation)
        current = await self._core.store.list_lessons(
            # This node's own lesson: a peer's copy of the same blocker is refreshed by its
            # signer, and this node's meeting it is evidence of its own.
            LessonFilter(
                scopes=(scope,),
                category=Category.SITUATION,
                operation=signature,
                imported=False,
            )
        )
        if current:
            held = current[0]
            now = self._core.clock.now()
            await self._core.store.mark_used([held.id], now)
            added = [i for i in ids if i not in held.evidence]
            if added:
                # The blocker met again: the new turn's outcome backs the lesson too (a new
                # version, so peers holding it get the evidence).
                row = await self._core.store.get_lesson(held.id)
                await self._core.store.update_lesson(
                    dataclasses.replace(
                        row,
                        evidence=self._core.cap_evidence((*row.evidence, *added)),
                        updated_at=now,
                    )
                )
            return await self._core.store.get_lesson(held.id)
        lesson = SituationLesson("", situation)
        now = self._core.clock.now()
        row = LessonRow(
            id=self._core.new_id(),
            content=lesson.content,
            operation=signature,
            scope=scope,
            status=LessonStatus.ACTIVE,
            # A declared blocker is a fact the tool itself reported: born like a proven lesson.
            confidence=self._core.params.confidence.birth,
            created_at=now,
            updated_at=now,
            category=Category.SITUATION,
            evidence=ids,
            situation={
                "tool": situation.tool,
                "subject": situation.subject,
                "kind": situation.kind,
                "interactive": situation.interactive,
                "env_fingerprint": situation.env_fingerprint,
                "unblock": situation.unblock,
                "probe": situation.probe,
                "source": situation.source.value,
            },
            embedding=await self._core.embed(lesson.content),
        )
        await self._core.store.insert_lesson(row)
        return row

    async def _check_shows_blocker(self, situation: Situation, ids: Sequence[str]) -> None:
        """Every cited outcome must be a turn where the situation's tool failed or was refused."""
        for outcome_id in ids:
            row = await self._core.store.get_outcome(outcome_id)
            approach = row.record.get("approach") or ()
            if not shows_blocker(situation, approach):
                raise EvidenceError(
                    f"outcome {outcome_id} shows no failed or refused call to "
                    f"{situation.tool!r}: it is not the turn that met this blocker",
                    reason="evidence_not_the_blocker",
                    ids=[outcome_id],
                )

    async def situation_lessons(self, scope: str) -> builtins.list[SituationLesson]:
        """Active situation lessons visible from ``scope``."""
        rows = await self._core.store.list_lessons(
            LessonFilter(
                scopes=recall_scopes(scope),
                category=Category.SITUATION,
                limit=self._core.params.lesson.max_active_per_scope,
            )
        )
        out: builtins.list[SituationLesson] = []
        for row in rows:
            s = row.situation or {}
            out.append(
                SituationLesson(
                    row.id,
                    Situation(
                        tool=str(s.get("tool", "")),
                        subject=str(s.get("subject", "")),
                        kind=str(s.get("kind", "")),
                        source=SituationSource(str(s.get("source", "declared"))),
                        interactive=bool(s.get("interactive", False)),
                        env_fingerprint=str(s.get("env_fingerprint", "")),
                        unblock=s.get("unblock"),
                        probe=s.get("probe"),
                    ),
                )
            )
        return out

    async def before_dispatch(
        self,
        call: SituationCall,
        scope: str,
        *,
        probe_blocked: dict[str, bool] | None = None,
    ) -> Probe | Escalate | Note | Proceed:
        """Probe-first decision for a call; a clear probe invalidates the lesson it checked."""
        decision = decide_before_dispatch(
            call, await self.situation_lessons(scope), probe_blocked=probe_blocked
        )
        if isinstance(decision, Proceed | Note):
            now = self._core.clock.now()
            for lesson_id in decision.invalidate:
                row = await self._core.store.get_lesson(lesson_id)
                await self._core.store.update_lesson(
                    dataclasses.replace(
                        row, status=LessonStatus.RETIRED, updated_at=now, embedding=None
                    )
                )
        return decision
