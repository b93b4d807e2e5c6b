"""Maintenance: decay of unused lessons, retirement below the floor, the per-scope cap.

The node runs ``reconcile`` on a schedule (``MaintenanceLoop`` in ``node/maintenance.py``), so
the cap of adaptive memory holds for the lessons a node really accumulates.
"""

from __future__ import annotations

import builtins
import dataclasses
from datetime import datetime, timedelta

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    lesson_sort_key,
)
from lamarck.learning import confidence as conf
from lamarck.learning.scopes import over_cap
from lamarck.node.lessons.core import LIVE, LOOP_ACTOR, LessonChange, LessonCore, ReconcileResult
from lamarck.node.lessons.knowledge import Knowledge

__all__ = ["Maintenance"]

_SECONDS_PER_DAY = 86_400.0


class Maintenance:
    """Reconcile passes over one ``LessonCore``."""

    def __init__(self, core: LessonCore) -> None:
        self._core = core
        self._knowledge = Knowledge(core)
        self._last_reconcile: datetime | None = None

    async def _all(
        self, statuses: tuple[LessonStatus, ...], *, imported: bool | None = None
    ) -> builtins.list[LessonRow]:
        """Every lesson with one of ``statuses`` (and, given ``imported``, of that origin), in
        id order, paged through the store."""
        page = self._core.params.lesson.max_active_per_scope
        return await self._core.store.scan_all(
            LessonFilter(statuses=statuses, imported=imported), page
        )

    async def reconcile(self) -> ReconcileResult:
        """Decay unused lessons, retire those below the level, enforce the per-scope cap.

        A lesson counts as unused if it was not used since the previous pass (or, in a first
        pass, within ``unused_window_days``). Retired and capped rows are kept, out of every
        active query; their evidence stays learnable (only a user's retirement blocks it).
        """
        cp = self._core.params.confidence
        now = self._core.clock.now()
        since = self._last_reconcile
        if since is None:
            since = now - timedelta(days=cp.unused_window_days)
        decayed: builtins.list[str] = []
        retired: builtins.list[str] = []
        changes: builtins.list[LessonChange] = []
        for row in await self._all(LIVE):
            if row.last_used is not None and row.last_used > since:
                continue
            touched = max(t for t in (row.last_used, row.updated_at, row.created_at) if t)
            idle = max(0.0, (now - touched).total_seconds() / _SECONDS_PER_DAY)
            after = conf.decay_unused(row.confidence, idle, cp)
            retire = conf.should_retire(after, cp)
            await self._core.store.update_lesson(
                dataclasses.replace(
                    row,
                    confidence=after,
                    status=LessonStatus.RETIRED if retire else row.status,
                    updated_at=now,
                    embedding=None,
                )
            )
            decayed.append(row.id)
            changes.append(LessonChange(row.id, "decayed", row.confidence, after, "unused"))
            if retire:
                retired.append(row.id)
                changes.append(LessonChange(row.id, "retired", after, after, "below_retire_level"))
        contested, merged = await self._keep_true()
        changes.extend(contested)
        changes.extend(merged)
        capped = await self._enforce_cap(now)
        changes.extend(LessonChange(c, "superseded", None, None, "cap") for c in capped)
        await self._core.log(changes, LOOP_ACTOR)
        self._last_reconcile = now
        return ReconcileResult(
            tuple(decayed),
            tuple(retired),
            tuple(capped),
            contested=tuple(dict.fromkeys(c.lesson_id for c in contested)),
            merged=tuple(c.lesson_id for c in merged if c.change == "superseded"),
        )

    async def _keep_true(
        self,
    ) -> tuple[builtins.list[LessonChange], builtins.list[LessonChange]]:
        """Contest the conflicts among active lessons that both got in (imports included),
        then merge near-duplicate local lessons; returns both change lists."""
        active = [
            r for r in await self._all((LessonStatus.ACTIVE,)) if r.category is Category.LESSON
        ]
        contested = await self._knowledge.contest_all(active)
        if contested:
            fresh = {
                r.id: r
                for r in await self._core.store.get_lessons([c.lesson_id for c in contested])
            }
            active = [fresh.get(r.id, r) for r in active]
        _, merged = await self._knowledge.consolidate(active)
        return contested, merged

    async def enforce_cap(self) -> builtins.list[str]:
        """Supersede the lessons beyond each scope's cap now, and log it; returns their ids."""
        capped = await self._enforce_cap(self._core.clock.now())
        await self._core.log(
            [LessonChange(c, "superseded", None, None, "cap") for c in capped], LOOP_ACTOR
        )
        return capped

    async def _enforce_cap(self, now: datetime) -> builtins.list[str]:
        """Supersede (by nothing) the lowest-confidence active lessons of this node's own
        beyond each scope's cap.

        The cap bounds what one agent accumulates (design sources: adaptive memory). Imported copies
        are the network's lessons, each a signed record this node keeps to verify, deduplicate and
        offer in a Sync: capping them too superseded all but 200 of a 100k catch-up at the
        next pass (one UPDATE each), and read every one of them whole every 10 minutes.
        """
        own = await self._all((LessonStatus.ACTIVE,), imported=False)
        rows = sorted(
            (r for r in own if r.category is Category.LESSON),
            key=lesson_sort_key,  # the keep order: highest confidence, then newest, then id
        )
        by_id = {r.id: r for r in rows}
        capped = over_cap(
            [(r.id, r.scope) for r in rows], self._core.params.lesson.max_active_per_scope
        )
        for lesson_id in capped:
            await self._core.store.update_lesson(
                dataclasses.replace(
                    by_id[lesson_id], status=LessonStatus.SUPERSEDED, updated_at=now, embedding=None
                )
            )
        return capped
