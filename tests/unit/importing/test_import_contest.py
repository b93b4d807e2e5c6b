"""A peer's reversal reaches this node at import (issue 14 §3.3, issue 18): an imported lesson
that contradicts a lesson this node's own outcomes proved is linked to it at once (the next
outcome that tells them apart settles it), but a claim from another agent never silences
what this node's own reality proved: the local lesson stays advice, the copy does not."""

from __future__ import annotations

import random

from test_lesson_lifecycle import NodeB, outcome
from test_pipeline import signed_raw

from lamarck.node.importing.decision import ImportOutcome
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.learning.scopes import project_scope

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
