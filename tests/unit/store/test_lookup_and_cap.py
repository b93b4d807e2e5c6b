"""A mechanical lesson is found again however old it is; the node's own
maintenance enforces the per-scope cap."""

from __future__ import annotations

import dataclasses

import pytest

from lamarck.domain.rows import LessonFilter, LessonRow, LessonStatus
from lamarck.errors import ConfigError
from lamarck.learning.params import LearningParams, LessonParams
from lamarck.learning.scopes import project_scope
from lamarck.node.maintenance import MaintenanceLoop
from lamarck.node.params import MaintenanceParams
from tests.factories import lesson_row
from tests.unit.store.lesson_service_harness import P1, Harness

BAD, GOOD, TARGET = "shell:pytest tests/", "shell:pytest", "the test suite"


def _filler(i: int, scope: str, confidence: float, h: Harness) -> LessonRow:
    return lesson_row(
        f"filler-{i:05d}",
        content=f"Filler lesson number {i} about operation {i}.",
        operation=f"shell:tool{i}",
        scope=scope,
        confidence=confidence,
        at=h.clock.now(),
        evidence=(f"o{i}",),
    )


async def test_re_proving_the_oldest_of_2000_lessons_confirms_it_instead_of_a_duplicate() -> None:
    h = Harness()  # the default cap: 200 active per scope, the old lookup read 400 rows
    first = await h.service.record_outcome(
        h.outcome("s1", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    [lesson_id] = first.ids("created")
    # 2,000 newer, more confident lessons in the same project scope bury it.
    h.clock.advance(3600)
    scope = project_scope(P1)
    await h.store.insert_lessons([_filler(i, scope, 0.9, h) for i in range(2000)])
    again = await h.service.record_outcome(
        h.outcome("s2", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    assert again.ids("created") == []
    assert again.ids("confirmed") == [lesson_id]
    same = await h.store.list_lessons(LessonFilter(statuses=None, operation=GOOD, limit=10))
    assert [r.id for r in same] == [lesson_id]


async def test_the_maintenance_loop_enforces_the_cap_on_a_running_node() -> None:
    h = Harness(LearningParams(lesson=LessonParams(max_active_per_scope=3, candidate_pool=5)))
    scope = project_scope(P1)
    await h.store.insert_lessons(
        [_filler(i, scope, 0.5 + i / 100, h) for i in range(5)]
        + [_filler(100 + i, "global", 0.5, h) for i in range(2)]
    )
    loop = MaintenanceLoop(h.service, MaintenanceParams(), h.clock)
    await loop.tick()
    active = await h.store.list_lessons(LessonFilter(scopes=(scope,), limit=10))
    # The two least confident go; the other scope, under its cap, is untouched.
    assert sorted(r.id for r in active) == ["filler-00002", "filler-00003", "filler-00004"]
    superseded = await h.store.list_lessons(
        LessonFilter(statuses=(LessonStatus.SUPERSEDED,), limit=10)
    )
    assert sorted(r.id for r in superseded) == ["filler-00000", "filler-00001"]
    assert len(await h.store.list_lessons(LessonFilter(scopes=("global",), limit=10))) == 2
    # Kept in history, with the reason.
    events = await h.store.lesson_events(["filler-00000"])
    assert [(e.kind, e.reason) for e in events] == [("superseded", "cap")]


async def test_reconcile_runs_once_its_interval_has_passed_and_not_before() -> None:
    h = Harness()
    await h.store.insert_lessons([_filler(1, "global", 0.8, h)])
    loop = MaintenanceLoop(h.service, MaintenanceParams(reconcile_interval_s=86_400), h.clock)
    await loop.tick()  # the first pass after start: cap only
    [row] = await h.store.list_lessons(LessonFilter(limit=5))
    assert row.confidence == 0.8
    h.clock.advance(86_400 + 1)
    await loop.tick()
    [row] = await h.store.list_lessons(LessonFilter(limit=5))
    assert row.confidence < 0.8  # decayed: unused for a day


def test_maintenance_params_refuse_a_non_positive_interval() -> None:
    with pytest.raises(ConfigError, match="cap_interval_s"):
        MaintenanceParams(cap_interval_s=0)
    with pytest.raises(ConfigError, match="reconcile_interval_s"):
        MaintenanceParams(reconcile_interval_s=float("nan"))
    with pytest.raises(ConfigError, match="store_stats_interval_s"):
        MaintenanceParams(store_stats_interval_s=-1.0)
    with pytest.raises(ConfigError, match="reputation_flush_interval_s"):
        MaintenanceParams(reputation_flush_interval_s=float("inf"))


async def test_a_lesson_retired_by_the_outcome_that_reverses_it_is_linked_to_its_successor() -> (
    None
):
    h = Harness()
    first = await h.service.record_outcome(
        h.outcome("s1", [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    [old] = first.ids("created")
    # The environment changed: GOOD now fails. One failing run lowers the lesson...
    await h.service.record_outcome(
        h.outcome("s2", [(GOOD, "failed", TARGET)], passed=False, in_play=[old])
    )
    # ...and the run that contradicts it again retires it AND proves the reverse, in one go.
    third = await h.service.record_outcome(
        h.outcome("s3", [(GOOD, "failed", TARGET), (BAD, "ok", TARGET)], in_play=[old])
    )
    [new] = third.ids("created")
    [row] = await h.store.get_lessons([old])
    assert row.superseded_by == new  # one history: the disproved lesson, then its reverse
    assert row.status is LessonStatus.SUPERSEDED


async def test_the_cap_counts_own_lessons_and_leaves_imported_copies_alone() -> None:
    # A node that caught up a network's lessons keeps them: the cap bounds what its own agent
    # accumulates (design sources: adaptive memory), not the network's signed records it holds.
    h = Harness(LearningParams(lesson=LessonParams(max_active_per_scope=3, candidate_pool=5)))
    peer = "lmk1" + "p" * 32
    copies = [
        dataclasses.replace(_filler(200 + i, "global", 0.3, h), imported_from=peer)
        for i in range(6)
    ]
    await h.store.insert_lessons(
        copies + [_filler(i, "global", 0.5 + i / 100, h) for i in range(5)]
    )
    loop = MaintenanceLoop(h.service, MaintenanceParams(), h.clock)
    await loop.tick()
    active = {r.id for r in await h.store.list_lessons(LessonFilter(scopes=("global",), limit=50))}
    # The two least confident own lessons go; every copy stays, though less confident still.
    assert active == {c.id for c in copies} | {"filler-00002", "filler-00003", "filler-00004"}
