"""Recall: the plan-time "Lessons:" section and the decision-time check.

``recall`` embeds the task once, asks the store for the nearest in-scope lessons, drops those
below the relevance floor (``LessonParams.min_similarity``: a query unrelated to every lesson
gets nothing, never the least unrelated lesson), re-ranks the rest (``node/learning/ranking``)
and builds the section in rank order within the token budget (``node/learning/prompt``). What
it returns is recorded as in play for the session and as used, in one store write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lamarck.node.learning.conflicts import settle_hint, silenced
from lamarck.node.learning.consolidation import RecallGroup, collapse_groups, plan_consolidation
from lamarck.node.learning.exposure import plan_time_exposed, unproven_here
from lamarck.node.learning.prompt import build_lessons_section
from lamarck.node.learning.ranking import Candidate, idle_days, rank
from lamarck.node.learning.scopes import recall_scopes
from lamarck.node.lessons.core import LessonCore, RecalledLesson, RecallResult
from lamarck.node.lessons.knowledge import Knowledge, embeddings_of
from lamarck.node.store.port import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
)

__all__ = ["OperationCheck", "Recall"]


@dataclass(frozen=True, slots=True)
class OperationCheck:
    """What is on file for an operation: the lesson and the one line put before the call."""

    lesson: LessonRow
    preamble: str


class Recall:
    """Plan-time recall and the decision-time check over one ``LessonCore``."""

    def __init__(self, core: LessonCore) -> None:
        self._core = core
        self._knowledge = Knowledge(core)

    def _groups(self, rows: list[LessonRow]) -> tuple[RecallGroup, ...]:
        """Near-duplicates among the hits, shown once each: imported claims kept apart
        (never re-signed into one) and local lessons maintenance has not merged yet."""
        p = self._core.params
        plan = plan_consolidation(
            rows,
            embeddings_of(rows),
            p.knowledge.consolidation,
            p.context,
            negation_markers=p.knowledge.conflicts.negation_markers,
            skip=frozenset(r.id for r in rows if r.contested_with),
            similarity=self._core.similarity,
        )
        merged = (RecallGroup((m.survivor, *m.predecessors)) for m in plan.merges)
        return (*plan.groups, *merged)

    async def recall(
        self,
        task: str,
        context: Mapping[str, Any] | None,
        scope: str,
        session_id: str,
        *,
        include_claimed: bool = False,
        incognito: bool = False,
        limit: int | None = None,
    ) -> RecallResult:
        """Plan-time recall: the best active lessons for ``task`` and the "Lessons:" section.

        Returned lessons are recorded as in play for ``session_id`` (and as used), so the next
        ``record_outcome`` of that session can attribute them. In incognito nothing is recorded.
        ``limit`` (at most ``recall_limit``) asks for fewer lessons.
        """
        core = self._core
        lp = core.params.lesson
        # Read-your-writes: a lesson stored behind its vector is searchable from here on (a
        # claim's only to a recall that includes claims: no other finds it). The use marks
        # may stay behind: ranking reads idle days, which a mark seconds old does not change,
        # and waiting for the last recall's marks would put them back in this wait.
        behind = core.behind
        await behind.settle_vectors(None if include_claimed else behind.queued_beyond_claims)
        await core.load_learner()
        query = await core.embed(task)
        statuses = (LessonStatus.ACTIVE, LessonStatus.CLAIMED) if include_claimed else None
        hits = await core.store.search(
            query,
            lp.candidate_pool,
            LessonFilter(
                statuses=statuses or (LessonStatus.ACTIVE,),
                scopes=recall_scopes(scope),
                category=Category.LESSON,
            ),
            # The relevance floor: below it a lesson is not about this task, however trusted;
            # and near the best hit: a neighbour in the same domain is not about this task
            # either. Applied by the store, so the rows under it are never fetched.
            RelevanceFloor(lp.min_similarity, lp.relative_similarity),
        )
        now = core.clock.now()
        by_id = {h.lesson.id: h for h in hits}
        context_match = core.similarity_to(context)
        ranked = rank(
            [
                Candidate(
                    key=h.lesson.id,
                    cosine=h.similarity,
                    context_match=context_match(h.lesson.context),
                    confidence=h.lesson.confidence,
                    idle_days=idle_days(now, h.lesson.last_used, h.lesson.created_at),
                )
                for h in hits
            ],
            lp,
        )
        scores = {r.key: r.score for r in ranked}
        # Each group of near-duplicates once, by its best-ranked member, before the cut.
        kept = collapse_groups(
            [r.key for r in ranked], self._groups([by_id[r.key].lesson for r in ranked])
        )
        rows = [by_id[i].lesson for i in kept]
        # A contested lesson is not advice (unless this node's own reality backs it against
        # unproven claims: ``conflicts.silenced``): it is returned marked, and in play, so
        # the next outcome that tests it can settle the conflict (issue 18 §2).
        quiet = await self._silenced(rows)
        active = [r for r in rows if r.status is LessonStatus.ACTIVE and r.id not in quiet]
        # Exposure before proof (issue 12 §3.2): an imported lesson no outcome here confirmed
        # enters only a share of plan-time prompts; the decision-time check still shows it.
        # The RNG is drawn only for an unproven lesson under a share below 1.
        exposure = core.params.exposure
        unproven = {r.id: unproven_here(r.imported_from, r.confirmations) for r in active}
        active = [
            r
            for r in active
            if plan_time_exposed(
                unproven[r.id],
                core.rng.random() if unproven[r.id] and exposure.plan_share < 1.0 else 0.0,
                exposure,
            )
        ]
        wanted = lp.recall_limit if limit is None else max(1, min(limit, lp.recall_limit))
        section = build_lessons_section(
            [(r.id, r.content) for r in active], lp, core.count_tokens, limit=wanted
        )
        chosen = [by_id[i].lesson for i in section.included]
        claimed = [r for r in rows if r.status is LessonStatus.CLAIMED][:wanted]
        contested = [r for r in rows if r.status is LessonStatus.ACTIVE and r.id in quiet][:wanted]
        if not incognito:
            session = core.session(session_id)
            session.context = dict(context or {})
            for row in [*chosen, *claimed, *contested]:
                session.in_play[row.id] = None
            await core.mark_used([r.id for r in (*chosen, *claimed, *contested)], now)
        scored = tuple(
            RecalledLesson(row, by_id[row.id].similarity, scores[row.id]) for row in chosen
        )
        return RecallResult(tuple(chosen), section, tuple(claimed), scored, tuple(contested))

    async def report_use(self, lesson_id: str, session_id: str | None = None) -> LessonRow:
        """The agent used a lesson (e.g. returned by its own recall tool): in play and used."""
        core = self._core
        row = await core.store.get_lesson(lesson_id)
        if session_id is not None:
            core.session(session_id).in_play[row.id] = None
        await core.store.mark_used([row.id], core.clock.now())
        return await core.store.get_lesson(lesson_id)

    async def check(self, op_key: str, scope: str) -> OperationCheck | None:
        """Decision-time check: the lesson on file for an operation, and its one line.

        Never blocks: the model keeps the decision, the evidence is put in front of it. The
        lookup is ``LessonFilter.about``: lessons recommending the operation, saying to avoid
        it, or a situation on that tool; the most confident one is shown.
        """
        key = op_key.strip()
        if not key:
            return None
        rows = await self._core.store.list_lessons(
            LessonFilter(scopes=recall_scopes(scope), about=key, limit=1)
        )
        if not rows:
            return None
        best = rows[0]  # list order: highest confidence first
        line = " ".join(best.content.split())
        preamble = f"A lesson on file for `{key}` (confidence {best.confidence:.2f}): {line}"
        hints = await self._settle_hints(best) if await self._silenced([best]) else []
        if hints:
            # A contested lesson is not advice: the preamble names the conflict instead, and
            # what would settle it (seed 004).
            preamble = " ".join(hints)
        return OperationCheck(best, preamble)

    async def _silenced(self, rows: Sequence[LessonRow]) -> set[str]:
        """The ids among ``rows`` kept out of advice by their open conflicts (one read of
        their opponents)."""
        ids = {o for r in rows for o in r.contested_with}
        if not ids:
            return set()
        opponents = await self._core.store.get_lessons(sorted(ids))
        return {r.id for r in rows if silenced(r, opponents)}

    async def _settle_hints(self, row: LessonRow) -> list[str]:
        """One line per open conflict of ``row``: the two claims and what would settle it."""
        if not row.contested_with:
            return []
        await self._core.load_learner()
        hints: list[str] = []
        for other in await self._core.store.get_lessons(list(row.contested_with)):
            found = self._knowledge.conflict(row, other)
            if found is not None:
                first, second = (row, other) if found.first == row.id else (other, row)
                hints.append(settle_hint(found, first, second))
        return hints

    async def check_operation(self, op_key: str, scope: str) -> str | None:
        """The decision-time preamble for ``op_key``, or None (see ``check``)."""
        found = await self.check(op_key, scope)
        return None if found is None else found.preamble
