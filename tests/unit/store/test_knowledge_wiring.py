"""The knowledge rules wired into the lesson service (in-memory store): conflicts contested at write
and at maintenance, settled narrowly by the next outcome that tests them, near-duplicates merged,
context variables learned and persisted, contested lessons kept out of the advice."""

from __future__ import annotations

import dataclasses

import pytest

from lamarck.domain.rows import LessonFilter, LessonRow, LessonStatus
from lamarck.learning.params import LearningParams, LessonParams
from lamarck.learning.scopes import project_scope
from lamarck.node.lessons.core import LEARNER_STATE_KEY
from lamarck.reputation.events import EventKind
from tests.factories import lesson_row
from tests.unit.store.lesson_service_harness import P1, Harness

SCOPE = project_scope(P1)
IMP = "00000000-0000-4000-8000-0000000000aa"
OP = "shell:uv sync"
YES = "`uv sync` works with the lockfile in this repo"
NO = "`uv sync` does not work with the lockfile in this repo"
ALL = LessonFilter(statuses=None, limit=10_000)


@pytest.fixture
def h() -> Harness:
    return Harness()


async def _evidence(h: Harness, session: str = "seed") -> str:
    """A stored outcome that teaches, to cite as evidence."""
    o = h.outcome(session, [("shell:true", "ok", "x")])
    await h.service.record_outcome(o)
    return o.id


async def _pair(h: Harness, context: dict[str, str] | None = None) -> tuple[LessonRow, LessonRow]:
    """Two active lessons that contradict, written one after the other."""
    ev = await _evidence(h)
    yes = await h.service.write_lesson(YES, OP, SCOPE, evidence=[ev], context=context)
    no = await h.service.write_lesson(NO, OP, SCOPE, evidence=[ev], context=context)
    assert yes is not None and no is not None
    return await h.store.get_lesson(yes.id), await h.store.get_lesson(no.id)


async def test_writing_a_contradicting_lesson_contests_both(h: Harness) -> None:
    yes, no = await _pair(h)
    assert yes.contested_with == (no.id,) and no.contested_with == (yes.id,)
    kinds = [e.kind for e in await h.store.lesson_events([yes.id, no.id])]
    assert kinds.count("contested") == 2
    # Confidence and status do not move by being contested.
    assert yes.confidence == no.confidence == pytest.approx(0.5)
    assert yes.status is no.status is LessonStatus.ACTIVE


async def test_a_lesson_in_another_context_never_conflicts(h: Harness) -> None:
    ev = await _evidence(h)
    yes = await h.service.write_lesson(YES, OP, SCOPE, evidence=[ev], context={"domain": "web"})
    no = await h.service.write_lesson(NO, OP, SCOPE, evidence=[ev], context={"domain": "ml"})
    assert yes is not None and no is not None
    assert (await h.store.get_lesson(yes.id)).contested_with == ()
    assert (await h.store.get_lesson(no.id)).contested_with == ()


async def test_recall_keeps_contested_lessons_out_of_the_advice_and_in_play(h: Harness) -> None:
    yes, no = await _pair(h)
    result = await h.service.recall("uv sync with the lockfile", {}, SCOPE, "S")
    assert yes.id not in result.section.included and no.id not in result.section.included
    assert {r.id for r in result.contested} == {yes.id, no.id}
    assert all(r.contested_with for r in result.contested)
    assert set(h.service._core.session("S").in_play) >= {yes.id, no.id}


async def test_the_decision_time_check_names_the_conflict_and_what_settles_it(
    h: Harness,
) -> None:
    await _pair(h)
    preamble = await h.service.check_operation(OP, SCOPE)
    assert preamble is not None
    assert preamble.startswith("Contested on") and YES in preamble and NO in preamble
    assert "neither side is advice until the next run of" in preamble
    assert f"`{OP.lower()}`" in preamble.lower()


async def test_the_next_outcome_settles_the_conflict_by_the_rule(h: Harness) -> None:
    yes, no = await _pair(h)
    o = h.outcome("S", [(OP, "ok", "deps")], in_play=[yes.id, no.id])
    result = await h.service.record_outcome(o)
    won, lost = await h.store.get_lessons([yes.id, no.id])
    assert won.confidence == pytest.approx(0.7)  # 0.5 + 0.2, under the 0.8 cap
    assert won.verified_against == (no.id,) and won.contested_with == ()
    assert o.id in won.evidence and won.status is LessonStatus.ACTIVE
    assert lost.confidence == pytest.approx(0.2)  # 0.5 - 0.3, above the 0.1 floor
    assert lost.status is LessonStatus.SUPERSEDED and lost.superseded_by == yes.id
    assert o.id in lost.evidence
    assert {c.lesson_id for c in result.changes} == {yes.id, no.id}
    assert result.ids("superseded") == [no.id] and result.ids("confirmed") == [yes.id]


async def test_an_outcome_that_cannot_tell_them_apart_leaves_both_contested(h: Harness) -> None:
    yes, no = await _pair(h)
    # Another operation ran: neither claim was tested.
    o = h.outcome("S", [("shell:make", "ok", "deps")], in_play=[yes.id, no.id])
    await h.service.record_outcome(o)
    after = await h.store.get_lessons([yes.id, no.id])
    assert [r.contested_with for r in after] == [(no.id,), (yes.id,)]
    assert [r.confidence for r in after] == [yes.confidence, no.confidence]


async def test_nothing_but_the_two_lessons_in_conflict_moves(h: Harness) -> None:
    """Forty neighbours in the same scope, on the same operation and near in meaning (some in
    another context, some on a neighbouring operation): none changes when the conflict is
    settled."""
    ev = await _evidence(h)
    for i in range(20):
        await h.service.write_lesson(
            f"`uv sync` works with the lockfile in this repo on runner {i}",
            OP,
            SCOPE,
            evidence=[ev],
            context={"domain": f"other-{i}"},
        )
        await h.service.write_lesson(
            f"`uv lock` works with the lockfile in this repo on runner {i}",
            "shell:uv lock",
            SCOPE,
            evidence=[ev],
        )
    yes, no = await _pair(h, {"domain": "python"})
    before = {r.id: r for r in await h.store.list_lessons(ALL)}
    events_before = len(await h.store.lesson_events(list(before)))
    neighbours = set(before) - {yes.id, no.id}
    assert len(neighbours) == 40 and all(not before[i].contested_with for i in neighbours)
    await h.service.record_outcome(h.outcome("S", [(OP, "ok", "deps")], in_play=[yes.id, no.id]))
    after = {r.id: r for r in await h.store.list_lessons(ALL)}
    moved = {i for i in before if after[i] != before[i]}
    assert moved == {yes.id, no.id}
    new_events = (await h.store.lesson_events(list(before)))[events_before:]
    assert {e.lesson_id for e in new_events} == {yes.id, no.id}


async def test_an_imported_loser_becomes_a_reputation_event_about_its_source(
    h: Harness,
) -> None:
    yes, _ = await _pair(h)
    # Replace the negated side by an imported copy of it (a conflict that got in by import).
    await h.service.retire(_.id, "alice")
    now = h.clock.now()
    imported = lesson_row(
        IMP,
        at=now,
        content=NO,
        operation=OP,
        scope=SCOPE,
        confidence=0.6,
        imported_from="lmk1source",
        source_node_id="lmk1source",
        original_confidence=0.9,
        content_hash="c" * 64,
        embedding=(await h.store.get_lesson(yes.id)).embedding,
    )
    await h.store.insert_lesson(
        dataclasses.replace(imported, embedding=h.service._core.embedder.embed([NO])[0])
    )
    yes = dataclasses.replace(await h.store.get_lesson(yes.id), contested_with=())
    await h.store.update_lesson(yes)
    result = await h.service.reconcile()
    assert set(result.contested) == {yes.id, IMP}
    o = h.outcome("S", [(OP, "ok", "deps")], in_play=[yes.id, IMP])
    out = await h.service.record_outcome(o)
    [event] = out.reality
    assert event.kind is EventKind.LESSON_CONTRADICTED and event.node_id == "lmk1source"
    assert (await h.store.get_lesson(IMP)).superseded_by == yes.id


async def test_reconcile_merges_near_duplicates_keeping_counts_and_history(h: Harness) -> None:
    evs = [await _evidence(h, f"e{i}") for i in range(3)]
    ids = []
    for i, ev in enumerate(evs):
        row = await h.service.write_lesson(
            "Run `pytest -q` from the repository root, not from tests/" + "." * i,
            "shell:pytest -q",
            SCOPE,
            evidence=[ev],
        )
        assert row is not None
        ids.append(row.id)
    result = await h.service.reconcile()
    rows = {r.id: r for r in await h.store.get_lessons(ids)}
    survivors = [r for r in rows.values() if r.status is LessonStatus.ACTIVE]
    assert len(survivors) == 1
    [survivor] = survivors
    assert sorted(result.merged) == sorted(set(ids) - {survivor.id})
    assert set(survivor.evidence) == set(evs)
    for i in result.merged:
        assert rows[i].superseded_by == survivor.id
    kinds = [e.kind for e in await h.store.lesson_events([survivor.id])]
    assert "merged" in kinds


async def test_predictions_across_a_difference_are_learned_and_persisted(h: Harness) -> None:
    ev = await _evidence(h)
    row = await h.service.write_lesson(
        "Build with `make all`",
        "shell:make all",
        SCOPE,
        evidence=[ev],
        context={"environment": "linux"},
    )
    assert row is not None
    for i in range(3):
        o = h.outcome(f"T{i}", [("shell:make all", "ok", "build")], in_play=[row.id])
        await h.service.record_outcome(o, context={"environment": "macos"})
    stored = await h.store.get_state(LEARNER_STATE_KEY)
    assert stored is not None
    assert stored["variables"]["environment"] == {"correct": 3, "incorrect": 0}


async def test_a_contradiction_is_found_among_many_surer_lessons_on_its_operation() -> None:
    # The check asks the store for the lessons that could contradict the new one (a vector
    # search under the claim similarity), not for the first ones about the operation by
    # confidence: twelve surer lessons on the same tool, more than a page of that lookup, do
    # not hide the contradiction.
    h = Harness(LearningParams(lesson=LessonParams(max_active_per_scope=5)))
    ev = await _evidence(h)
    yes = await h.service.write_lesson(YES, OP, SCOPE, evidence=[ev])
    assert yes is not None
    topics = ("caches wheels", "needs python 3.11", "reads pyproject", "writes a venv")
    for n in range(12):
        text = f"`uv sync` {topics[n % 4]} in checkout {n}"
        other = await h.service.write_lesson(text, OP, SCOPE, evidence=[ev])
        assert other is not None
        stored = await h.store.get_lesson(other.id)
        await h.store.update_lesson(dataclasses.replace(stored, confidence=0.9, embedding=None))
    no = await h.service.write_lesson(NO, OP, SCOPE, evidence=[ev])
    assert no is not None
    assert (await h.store.get_lesson(no.id)).contested_with == (yes.id,)
    assert (await h.store.get_lesson(yes.id)).contested_with == (no.id,)
