"""Knowledge that stays true applied over the store: conflicts contested and settled,
near-duplicates merged.

The rules are pure (``learning/conflicts.py``, ``consolidation.py``); this part reads the
rows they need, writes exactly what their plans say, and logs each change. Every other part of
the lesson service builds one ``Knowledge`` over the shared ``LessonCore``:

* ``contest_new``: after an active lesson is stored, the lessons that could contradict it (the
  reversed mechanical lesson by its target tag, and those about the same operation within the
  claim similarity by a vector search) are checked against it and each conflict contested;
* ``settle_in_play``: an outcome's attributions settle the open conflicts of the lessons in play,
  and the uncontested ones (two imports unproven here) of the lessons it tested and proved;
* ``apply_settlement``: the two rows of a settlement, and nothing else, are written;
* ``contest_all`` and ``consolidate``: the maintenance pass over every active lesson.
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
)
from lamarck.errors import StoreError
from lamarck.learning.attribution import Attribution, Effect, normalise_operation
from lamarck.learning.conflicts import (
    Conflict,
    LessonUpdate,
    Settlement,
    apply_update,
    conflict_between,
    contest,
    detect_conflicts,
    has_local_evidence,
    settle_outcome,
    settle_proven,
)
from lamarck.learning.consolidation import ConsolidationPlan, apply_merge, plan_consolidation
from lamarck.learning.mechanical import TARGET_TAG, mechanical_claim
from lamarck.learning.scopes import GLOBAL, recall_scopes
from lamarck.node.lessons.core import LessonChange, LessonCore
from lamarck.node.store.memory import lesson_matches
from lamarck.reputation.events import ReputationEvent

__all__ = ["ExpectedImports", "InPlaySettlements", "Knowledge", "embeddings_of"]

_log = logging.getLogger(__name__)

#: How far under ``min_claim_similarity`` the rivals' vector search reaches (float noise).
_FLOOR_SLACK = 1e-6


def embeddings_of(rows: Iterable[LessonRow]) -> dict[str, npt.NDArray[np.floating[Any]]]:
    """The stored vectors of ``rows`` by id (rows without one are left out)."""
    return {r.id: r.embedding for r in rows if r.embedding is not None}


@dataclasses.dataclass(frozen=True, slots=True)
class InPlaySettlements:
    """What an outcome's settlements changed: the lessons they moved (attribution skips
    them), the changes to log and the reputation events for imported parties' sources."""

    settled: frozenset[str] = frozenset()
    changes: tuple[LessonChange, ...] = ()
    reality: tuple[ReputationEvent, ...] = ()
    settlements: tuple[Settlement, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class ExpectedImports:
    """The operations of the copies an import is about to store, and those of them that a
    lesson this node's own outcomes back is about (``LessonStore.proven_operations``)."""

    operations: frozenset[str]
    proven: frozenset[str]

    def rules_out(self, row: LessonRow) -> bool:
        """Whether ``row`` (a copy just stored) can have no rival an import contests: its
        operation was expected and nothing proven here is about it. Never for a mechanical
        lesson: its reverse is found by its target, about another operation."""
        if mechanical_claim(row) is not None:
            return False
        operation = normalise_operation(row.operation)
        return operation in self.operations and operation not in self.proven


def _without(ids: Sequence[str], gone: str) -> tuple[str, ...]:
    return tuple(i for i in ids if i != gone)


def _with(ids: Sequence[str], new: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*ids, new)))


class Knowledge:
    """Contest, settle and consolidate over one ``LessonCore``."""

    def __init__(self, core: LessonCore) -> None:
        self._core = core
        # What the import under way told of its next copies (``expect``); None: nothing.
        self._expected: ExpectedImports | None = None

    # -- conflicts ---------------------------------------------------------------------------
    async def expect(self, operations: Sequence[str]) -> None:
        """The operations of the copies about to be stored (a catch-up's next chunk; empty:
        the import ended). Which of them a proven lesson is about is read in one query, so
        that ``contest_new(only_proven_here=True)`` skips its search for every copy on an
        operation nothing proven here is about (most of a catch-up: an import stores no
        evidence of this node's own). If the store cannot say, every copy is searched."""
        self._expected = None
        if not operations:
            return
        wanted = frozenset(normalise_operation(o) for o in operations)
        try:
            proven = await self._core.store.proven_operations(sorted(wanted))
        except StoreError as e:
            _log.warning("reading the proven operations of an import failed: %s", e)
            return
        self._expected = ExpectedImports(wanted, frozenset(proven))

    def forget_expected(self) -> None:
        """A lesson may have become proven here (an outcome, a lesson written or edited):
        what ``expect`` read no longer holds, and every copy is searched until the next."""
        self._expected = None

    def conflict(self, a: LessonRow, b: LessonRow) -> Conflict | None:
        """The conflict between two stored lessons by the node's rule and learned similarity."""
        return conflict_between(
            a,
            b,
            embeddings_of((a, b)),
            self._core.params.knowledge.conflicts,
            self._core.similarity,
        )

    async def _rivals(self, row: LessonRow) -> builtins.list[LessonRow]:
        """The active lessons that could contradict ``row``, found by index, with their vectors.

        ``conflict_between`` needs, of the lessons whose scope meets ``row``'s, either the
        mechanical lesson saying the reverse (the same target: one lookup by its target tag
        among the lessons about the operation) or one about the same operation whose vector is
        within ``min_claim_similarity`` (a vector search under that floor). Neither reads every
        lesson about a common operation, so the check does not grow with the store. A lesson whose
        vector still waits behind a reply is read with it filled in.
        """
        core = self._core
        p = core.params
        base = LessonFilter(
            statuses=(LessonStatus.ACTIVE,),
            scopes=None if row.scope == GLOBAL else recall_scopes(row.scope),
            category=Category.LESSON,
            limit=p.lesson.max_active_per_scope,
        )
        found: dict[str, LessonRow] = {}
        claim = mechanical_claim(row)
        if claim is not None:
            reverse = dataclasses.replace(
                base, about=claim.prefer, tags=(f"{TARGET_TAG}{claim.target}",)
            )
            found.update((r.id, r) for r in await core.store.list_lessons(reverse))
        [me] = await core.with_vectors([row])
        if me.embedding is not None:
            same_operation = dataclasses.replace(base, operation=normalise_operation(row.operation))
            # The floor a hair below the rule's: the store's cosine and numpy's may differ in
            # the last bits, and conflict_between decides exactly on the rows returned.
            floor = RelevanceFloor(p.knowledge.conflicts.min_claim_similarity - _FLOOR_SLACK, 0.0)
            hits = await core.store.search(me.embedding, base.limit, same_operation, floor)
            found.update((h.lesson.id, h.lesson) for h in hits)
            # Rows written a moment ago whose vector is still queued are not in the search.
            if waiting := [i for i in core.behind.queued if i != row.id]:
                found.update(
                    (r.id, r)
                    for r in await core.store.get_lessons(waiting)
                    if r.id not in found and lesson_matches(r, same_operation)
                )
        found.pop(row.id, None)
        return await core.with_vectors(list(found.values()))

    async def contest_new(
        self, row: LessonRow, *, only_proven_here: bool = False
    ) -> builtins.list[LessonChange]:
        """Contest every lesson a just-stored active lesson contradicts; returns the changes
        (the caller logs them). ``only_proven_here``: only against lessons this node's own
        outcomes back (an import meeting another unproven import waits for an outcome or
        the reconcile pass, so a reversal from one peer cannot silence a whole fleet's
        advice at once)."""
        if row.status is not LessonStatus.ACTIVE or row.category is not Category.LESSON:
            return []
        expected = self._expected
        if only_proven_here and expected is not None and expected.rules_out(row):
            # Only a lesson proven here is contested, and none is about this operation.
            return []
        await self._core.load_learner()
        changes: builtins.list[LessonChange] = []
        current = row
        for other in await self._rivals(row):
            if other.id == row.id or other.id in current.contested_with:
                continue
            if only_proven_here and not has_local_evidence(other):
                continue
            found = self.conflict(current, other)
            if found is not None:
                rows = {current.id: current, other.id: other}
                written = await self.write_contest(found, rows)
                current = written[current.id]
                changes.extend(self._contest_changes(found, rows))
        return changes

    async def write_contest(
        self, conflict: Conflict, rows: Mapping[str, LessonRow]
    ) -> dict[str, LessonRow]:
        """Mark both sides contested (only the flag moves); returns the rows as written."""
        out: dict[str, LessonRow] = {}
        for update in contest(conflict, rows):
            row = rows[update.lesson_id]
            assert update.contested_with is not None  # contest always names the other side
            written = dataclasses.replace(
                row, contested_with=_with(row.contested_with, update.contested_with)
            )
            await self._core.store.update_lesson(dataclasses.replace(written, embedding=None))
            out[row.id] = written
        return out

    @staticmethod
    def _contest_changes(
        conflict: Conflict, rows: Mapping[str, LessonRow]
    ) -> builtins.list[LessonChange]:
        return [
            LessonChange(u.lesson_id, u.kind, u.confidence_before, u.confidence_after, u.reason)
            for u in contest(conflict, rows)
        ]

    async def apply_settlement(
        self, settlement: Settlement, rows: Mapping[str, LessonRow]
    ) -> builtins.list[LessonChange]:
        """Write the settlement's two updates (and nothing else); returns the changes."""
        core = self._core
        now = core.clock.now()
        changes: builtins.list[LessonChange] = []
        for update in settlement.updates:
            written = self._settled_row(rows[update.lesson_id], update, settlement, now=now)
            await core.store.update_lesson(dataclasses.replace(written, embedding=None))
            changes.append(
                LessonChange(
                    update.lesson_id,
                    update.kind,
                    update.confidence_before,
                    update.confidence_after,
                    update.reason,
                )
            )
        return changes

    def _settled_row(
        self, row: LessonRow, update: LessonUpdate, settlement: Settlement, *, now: datetime
    ) -> LessonRow:
        other = settlement.conflict.other(row.id)
        after = apply_update(
            row, update, now=now, max_evidence=self._core.params.lesson.max_evidence
        )
        verified = row.verified_against
        supersedes = row.supersedes
        if update.verified_against is not None:
            verified = _with(verified, update.verified_against)
            # The winner is the loser's next version when it has no earlier one: its history
            # then holds both lessons and both sides' outcomes (design sources: adaptive memory), as
            # a reversal
            # learned from the settling outcome already does (``supersedes`` set at insert).
            if supersedes is None:
                supersedes = other
        return dataclasses.replace(
            after,
            contested_with=_without(row.contested_with, other),
            verified_against=verified,
            supersedes=supersedes,
        )

    async def settle_in_play(
        self, lessons: Sequence[LessonRow], attributions: Sequence[Attribution], outcome_id: str
    ) -> InPlaySettlements:
        """Settle the open conflicts of the in-play lessons this outcome tells apart, then
        the uncontested conflicts of the in-play lessons it tested (``conflicts.settle_proven``).

        A conflict whose other side is gone (superseded, retired) or no longer conflicts is
        closed on this side without a settlement; its lesson is attributed as usual.
        """
        core = self._core
        tested = {a.lesson_id for a in attributions if a.effect is not Effect.NOT_ATTRIBUTED}
        contested = [r for r in lessons if r.contested_with]
        if not contested and not any(r.id in tested for r in lessons):
            return InPlaySettlements()
        partner_ids = [i for r in contested for i in r.contested_with]
        rows: dict[str, LessonRow] = {r.id: r for r in lessons}
        partners = await core.store.get_lessons([i for i in partner_ids if i not in rows])
        for r in await core.with_vectors(partners):
            rows[r.id] = r
        settled: set[str] = set()
        changes: builtins.list[LessonChange] = []
        reality: builtins.list[ReputationEvent] = []
        plans: builtins.list[Settlement] = []

        async def apply(plan: Settlement, on: dict[str, LessonRow]) -> None:
            changes.extend(await self.apply_settlement(plan, on))
            settled.update(plan.lesson_ids)
            reality.extend(plan.reputation)
            plans.append(plan)

        for lesson in contested:
            for other_id in lesson.contested_with:
                if lesson.id in settled or other_id in settled:
                    continue
                me, other = rows[lesson.id], rows.get(other_id)
                found = None if other is None else self.conflict(me, other)
                if found is None:
                    closed = dataclasses.replace(
                        me, contested_with=_without(me.contested_with, other_id)
                    )
                    await core.store.update_lesson(dataclasses.replace(closed, embedding=None))
                    rows[me.id] = closed
                    continue
                plan = settle_outcome(
                    found,
                    rows,
                    attributions,
                    outcome_id=outcome_id,
                    at=core.clock.now(),
                    p=core.params.knowledge.conflicts,
                )
                if plan is not None:
                    await apply(plan, rows)
        # Conflicts nobody contested: two imports unproven here wait for an outcome
        # (``contest_new``); this one settles those it proves a side of.
        for lesson in lessons:
            if lesson.id not in tested or lesson.id in settled:
                continue
            for other in await self._rivals(rows[lesson.id]):
                me = rows[lesson.id]
                if me.id in settled or other.id in settled or other.id == me.id:
                    continue
                if other.id in me.contested_with:
                    continue  # an open conflict: the loop above had its say
                found = self.conflict(me, other)
                if found is None:
                    continue
                pair = {me.id: me, other.id: rows.get(other.id, other)}
                plan = settle_proven(
                    found,
                    pair,
                    attributions,
                    outcome_id=outcome_id,
                    at=core.clock.now(),
                    p=core.params.knowledge.conflicts,
                )
                if plan is not None:
                    await apply(plan, pair)
        return InPlaySettlements(frozenset(settled), tuple(changes), tuple(reality), tuple(plans))

    # -- maintenance -------------------------------------------------------------------------
    async def contest_all(self, active: Sequence[LessonRow]) -> builtins.list[LessonChange]:
        """Contest every conflicting pair among ``active`` not contested yet (lessons that both
        got in: two imports, or an import and a local lesson)."""
        await self._core.load_learner()
        p = self._core.params
        found = detect_conflicts(
            active,
            embeddings_of(active),
            p.knowledge.conflicts,
            p.context,
            similarity=self._core.similarity,
        )
        rows = {r.id: r for r in active}
        changes: builtins.list[LessonChange] = []
        for conflict in found:
            a, b = rows[conflict.first], rows[conflict.second]
            if b.id in a.contested_with and a.id in b.contested_with:
                continue
            pair = {a.id: a, b.id: b}
            rows.update(await self.write_contest(conflict, pair))
            changes.extend(self._contest_changes(conflict, pair))
        return changes

    async def consolidate(
        self, active: Sequence[LessonRow]
    ) -> tuple[ConsolidationPlan, builtins.list[LessonChange]]:
        """Merge near-duplicate local lessons (contested ones wait); returns the plan and the
        changes. The survivor keeps its id and becomes a newer version of its record."""
        core = self._core
        await core.load_learner()
        p = core.params
        plan = plan_consolidation(
            active,
            embeddings_of(active),
            p.knowledge.consolidation,
            p.context,
            negation_markers=p.knowledge.conflicts.negation_markers,
            skip=frozenset(r.id for r in active if r.contested_with),
            similarity=core.similarity,
        )
        rows = {r.id: r for r in active}
        now = core.clock.now()
        changes: builtins.list[LessonChange] = []
        for merge in plan.merges:
            survivor, *gone = apply_merge(rows, merge, now=now)
            for row in (survivor, *gone):
                await core.store.update_lesson(dataclasses.replace(row, embedding=None))
            changes.append(
                LessonChange(
                    survivor.id,
                    "merged",
                    survivor.confidence,
                    survivor.confidence,
                    f"absorbed {', '.join(merge.predecessors)}; "
                    f"{merge.evidence_total} outcomes, {len(merge.evidence)} kept",
                )
            )
            changes.extend(
                LessonChange(
                    g.id, "superseded", g.confidence, g.confidence, f"merged into {survivor.id}"
                )
                for g in gone
            )
        return plan, changes
