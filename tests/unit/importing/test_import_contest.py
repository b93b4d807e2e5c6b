"""A peer's reversal reaches this node at import: an imported lesson
that contradicts a lesson this node's own outcomes proved is linked to it at once (the next
outcome that tells them apart settles it), but a claim from another agent never silences
what this node's own reality proved: the local lesson stays advice, the copy does not."""

from __future__ import annotations

import random
import uuid

from lifecycle_harness import NodeB, outcome
from pipeline_harness import ATTACKER_KEY, SOURCE_KEY, signed_raw

from lamarck.domain.rows import LessonStatus
from lamarck.errors import StoreUnavailable
from lamarck.learning.scopes import project_scope
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.policy.decision import ImportOutcome
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.events import EventKind

TARGET = "the deploy"
OLD, NEW = "shell:deploy --legacy", "shell:deploy"


def _node() -> NodeB:
    b = NodeB()
    # The node's wiring: the pipeline tells the lesson service of every active copy stored.
    b.pipeline = ImportPipeline(
        store=b.store,
        view=b.view,
        pins=b.pins,
        reputation=b.events,
        embedder=b.embedder,
        clock=b.clock,
        rng=random.Random(7),
        params=b.pipeline.params,
        on_stored=b.service.contest_new,
        on_expected=b.service.expect_imports,
    )
    return b


def _reversal() -> bytes:
    """The source learned the opposite: prefer the legacy form over the new one."""
    return signed_raw(
        content=f"Prefer `{OLD}` over `{NEW}` for {TARGET}.",
        context={"domain": "", "environment": "", "tools": []},
        lesson={"operation": OLD, "scope": "global", "status": "active"},
        metadata={"tags": ["source:mechanical", f"avoid:{NEW}", f"target:{TARGET}"]},
    )


async def test_an_imported_reversal_is_contested_and_never_silences_a_locally_proven_lesson() -> (
    None
):
    b = _node()
    learned = await b.service.record_outcome(
        outcome(b.clock, 1, [(OLD, "failed", TARGET), (NEW, "ok", TARGET)])
    )
    [local] = learned.ids("created")
    result = await b.offer(_reversal())
    assert result.outcome is ImportOutcome.ACCEPT
    [row] = await b.store.get_lessons([local])
    [copy] = await b.store.get_lessons([result.lesson_id or ""])
    assert copy.id in row.contested_with and local in copy.contested_with
    # Recalled in the project the local lesson was learned in (the copy is global).
    after = await b.service.recall(f"deploy {TARGET}", None, project_scope("a1" * 32), "s")
    assert local in after.section.included and copy.id not in after.section.included
    assert [r.id for r in after.contested] == [copy.id]  # returned marked, in play


def _fleet_lesson(identity: NodeIdentity, record: int, prefer: str, avoid: str) -> bytes:
    """A global mechanical lesson "prefer ``prefer`` over ``avoid``" from ``identity``."""
    return signed_raw(
        identity,
        id=str(uuid.UUID(int=record, version=4)),
        content=f"Prefer `{prefer}` over `{avoid}` for {TARGET}.",
        context={"domain": "", "environment": "", "tools": []},
        lesson={"operation": prefer, "scope": "global", "status": "active"},
        metadata={"tags": ["source:mechanical", f"avoid:{avoid}", f"target:{TARGET}"]},
    )


async def _two_unproven_imports(b: NodeB) -> tuple[str, str]:
    """The fleet's lesson (from one peer) and its reversal (from another), neither proven
    here: stored side by side, not contested (one peer's reversal silences nothing)."""
    stale = await b.offer(_fleet_lesson(SOURCE_KEY, 301, NEW, OLD))
    reversal = await b.offer(_fleet_lesson(ATTACKER_KEY, 302, OLD, NEW))
    assert stale.outcome is ImportOutcome.ACCEPT and reversal.outcome is ImportOutcome.ACCEPT
    ids = (stale.lesson_id or "", reversal.lesson_id or "")
    rows = await b.store.get_lessons(list(ids))
    assert all(r.contested_with == () for r in rows)
    return ids


async def test_an_outcome_that_proves_one_of_two_uncontested_imports_settles_their_conflict() -> (
    None
):
    b = _node()
    stale, reversal = await _two_unproven_imports(b)
    # A run here follows the reversal and it holds: the environment agrees with it now.
    result = await b.service.record_outcome(
        outcome(b.clock, 1, [(OLD, "ok", TARGET)], in_play=[reversal])
    )
    won, lost = await b.store.get_lessons([reversal, stale])
    assert lost.status is LessonStatus.SUPERSEDED and lost.superseded_by == reversal
    assert won.status is LessonStatus.ACTIVE and won.verified_against == (stale,)
    assert won.confirmations == 1  # the settlement's step, not attribution's on top
    assert {c.lesson_id for c in result.changes} == {reversal, stale}
    # The winner is the loser's next version: its history holds both lessons.
    assert [r.id for r in await b.store.history(reversal)] == [stale, reversal]
    # The stale copy's source hears reality's verdict, the winner's its confirmation.
    kinds = {(e.node_id, e.kind) for e in result.reality}
    assert (SOURCE_KEY.node_id, EventKind.LESSON_CONTRADICTED) in kinds
    assert (ATTACKER_KEY.node_id, EventKind.LESSON_CONFIRMED) in kinds


async def test_a_failed_run_of_one_uncontested_import_crowns_nothing() -> None:
    b = _node()
    stale, reversal = await _two_unproven_imports(b)
    # The run follows the stale copy and it fails: attribution lowers it, but the opposite
    # claim this node never tried is not promoted over it (it may be one peer's fabrication).
    result = await b.service.record_outcome(
        outcome(b.clock, 1, [(NEW, "failed", TARGET)], in_play=[stale])
    )
    assert result.ids("contradicted") == [stale]
    [rev] = await b.store.get_lessons([reversal])
    assert rev.status is LessonStatus.ACTIVE and rev.confirmations == 0
    assert rev.verified_against == ()


def _searches(b: NodeB) -> list[str]:
    """Counts the store's vector searches (a contest's rivals are read by one)."""
    seen: list[str] = []
    real = b.store.search

    async def spy(*args: object, **kwargs: object) -> object:
        seen.append("search")
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    b.store.search = spy  # type: ignore[method-assign]
    return seen


def _plain(record: int, operation: str) -> bytes:
    """An ordinary (not mechanical) lesson about ``operation``."""
    return signed_raw(
        id=str(uuid.UUID(int=record, version=4)),
        content=f"Run `{operation}` with the cache warmed first.",
        lesson={"operation": operation, "scope": "global", "status": "active"},
    )


async def test_an_import_told_ahead_skips_the_rivals_search_where_nothing_is_proven() -> None:
    """Told the operations of the copies to come, the service reads once which of them a
    lesson proven here is about: a copy on any other operation searches for no rival (it
    could contest none), one on a proven operation, and a mechanical reversal, still do,
    and the reversal is still contested. The end of the import ends it."""
    b = _node()
    learned = await b.service.record_outcome(
        outcome(b.clock, 1, [(OLD, "failed", TARGET), (NEW, "ok", TARGET)])
    )
    [local] = learned.ids("created")
    [proven] = await b.store.get_lessons([local])
    searches = _searches(b)
    assert proven.operation == NEW  # the reversal's own operation (OLD) is not proven here
    await b.pipeline.expect(["shell:lint", proven.operation, OLD])  # OLD: the reversal's
    assert (await b.offer(_plain(401, "shell:lint"))).outcome is ImportOutcome.ACCEPT
    assert searches == []  # nothing proven here is about shell:lint
    assert (await b.offer(_plain(402, proven.operation))).outcome is ImportOutcome.ACCEPT
    assert searches == ["search"]
    reversal = await b.offer(_reversal())
    assert len(searches) == 2
    [row] = await b.store.get_lessons([local])
    assert reversal.lesson_id in row.contested_with
    await b.pipeline.expect([])  # the import ended: every copy is searched again
    assert (await b.offer(_plain(403, "shell:lint"))).outcome is ImportOutcome.ACCEPT
    assert len(searches) == 3


async def test_an_outcome_during_an_import_ends_what_it_was_told_ahead() -> None:
    """A lesson proven here after the import was told of its operations: the next copy on
    that operation is searched for rivals (what was read ahead no longer holds)."""
    b = _node()
    searches = _searches(b)
    await b.pipeline.expect([NEW])
    await b.service.record_outcome(outcome(b.clock, 1, [(NEW, "ok", TARGET)]))
    before = len(searches)
    assert (await b.offer(_plain(411, NEW))).outcome is ImportOutcome.ACCEPT
    assert len(searches) == before + 1


async def test_a_store_that_cannot_say_what_is_proven_leaves_every_copy_searched() -> None:
    b = _node()
    searches = _searches(b)

    async def down(operations: object) -> set[str]:
        raise StoreUnavailable("down", reason="unavailable")

    b.store.proven_operations = down  # type: ignore[method-assign,assignment]
    await b.pipeline.expect(["shell:lint"])
    assert (await b.offer(_plain(421, "shell:lint"))).outcome is ImportOutcome.ACCEPT
    assert searches == ["search"]
