"""What follows an import decision, one pure step: the pipeline's rules, and the established
set the store answers, stated once for the pipeline and the simulator."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from importing_helpers import NOW, record

from lamarck.node.importing.decision import ImportDecision, ImportOutcome
from lamarck.node.importing.effects import (
    ESTABLISHED_LIMIT,
    Candidate,
    apply_decision,
    select_established,
)
from lamarck.node.importing.filters import EstablishedLesson
from lamarck.node.importing.view import HoldReason, StoreImportView
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.port import LessonRow, LessonStatus
from lamarck.reputation.events import EventKind, ReputationEvent

_EVENT = ReputationEvent(kind=EventKind.REJECTED, node_id="src", at=NOW)


def test_a_held_record_counts_in_its_sources_history_as_a_stored_one_does() -> None:
    held = apply_decision(ImportDecision(ImportOutcome.QUARANTINE, reasons=("awaiting_quorum",)))
    stored = apply_decision(ImportDecision(ImportOutcome.ACCEPT, confidence=0.3, forward=True))
    assert held.hold and held.counted and not held.store and not held.forward
    assert stored.store and stored.counted and stored.forward


def test_a_signer_nobody_vouched_for_is_held_never_counted_never_forwarded() -> None:
    fx = apply_decision(
        ImportDecision(ImportOutcome.ACCEPT, confidence=0.3, forward=True),
        hold=HoldReason.UNKNOWN_SIGNER,
    )
    assert fx.hold and not fx.store and not fx.counted and not fx.forward
    assert fx.decision.reasons == (HoldReason.UNKNOWN_SIGNER,)
    dup = apply_decision(ImportDecision(ImportOutcome.DUPLICATE), hold=HoldReason.UNKNOWN_SIGNER)
    assert not dup.hold and not dup.counted


def test_a_refusal_is_remembered_and_charged_only_when_recorded() -> None:
    refused = ImportDecision(ImportOutcome.REJECT, reasons=("replay",), events=(_EVENT,))
    assert apply_decision(refused).charges == (_EVENT,)
    assert apply_decision(refused).judged == "replay"
    quiet = apply_decision(refused, recorded=False)
    assert quiet.charges == () and quiet.judged is None and not quiet.counted


def test_an_approved_held_record_is_not_counted_twice() -> None:
    fx = apply_decision(ImportDecision(ImportOutcome.ACCEPT, confidence=0.3), counted_before=True)
    assert fx.store and not fx.counted


def _row(i: int, confidence: float, **over: object) -> LessonRow:
    base = {
        "id": f"lesson-{i:03d}",
        "content": f"lesson {i}",
        "operation": "deploy.restart",
        "scope": "global",
        "status": LessonStatus.ACTIVE,
        "confidence": confidence,
        "created_at": NOW - timedelta(minutes=i % 7),
        "updated_at": NOW,
        "context": {"domain": "deploy", "environment": "staging"},
    }
    base.update(over)
    return LessonRow(**base)  # type: ignore[arg-type]


def test_the_established_set_is_the_one_the_node_reads_from_its_store() -> None:
    rows = [_row(i, 0.5 + (i % 9) * 0.05) for i in range(70)]
    rows += [
        _row(100, 0.99, operation="deploy.other"),
        _row(101, 0.99, context={"domain": "deploy", "environment": "prod"}),
        _row(102, 0.99, context={"domain": "build", "environment": "staging"}),
        _row(103, 0.99, status=LessonStatus.RETIRED),
    ]
    store = InMemoryLessonStore(dim=8)

    async def read() -> tuple[EstablishedLesson, ...]:
        for r in rows:
            await store.insert_lesson(r)
        view = StoreImportView(store, None, "self")  # type: ignore[arg-type]
        return await view.established(record(), 0.6)

    from_store = asyncio.run(read())
    held = [
        Candidate(
            EstablishedLesson(r.id, r.content, r.confidence),
            r.operation,
            r.context.get("domain"),
            r.context.get("environment"),
            r.created_at,
            r.status is LessonStatus.ACTIVE,
        )
        for r in rows
    ]
    assert select_established(record(), held, 0.6) == from_store
    assert len(from_store) == ESTABLISHED_LIMIT
