"""What follows an import decision, one pure step: the pipeline's rules, and the established
set the store answers, stated once for the pipeline and the simulator."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import timedelta

from importing_helpers import NOW, record

from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import (
    ImportDecision,
    ImportOutcome,
    ImportParams,
    Incoming,
    decide_import,
)
from lamarck.policy.effects import (
    ESTABLISHED_LIMIT,
    Candidate,
    HoldReason,
    apply_decision,
    select_established,
)
from lamarck.policy.filters import EstablishedLesson
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from tests.factories import lesson_row, signed_record

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
    base: dict[str, object] = {
        "content": f"lesson {i}",
        "operation": "deploy.restart",
        "confidence": confidence,
        "created_at": NOW - timedelta(minutes=i % 7),
        "updated_at": NOW,
        "context": {"domain": "deploy", "environment": "staging"},
    }
    return lesson_row(f"lesson-{i:03d}", **{**base, **over})


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


class _Pins:
    def __init__(self, keys: dict[str, str]) -> None:
        self.keys = keys

    async def pinned_key(self, node_id: str) -> str | None:
        return self.keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


class _Sink:
    def __init__(self) -> None:
        self.events: list[ReputationEvent] = []

    def emit(self, event: ReputationEvent) -> None:
        self.events.append(event)

    def score(self, node_id: str) -> float:
        return 0.5


def test_the_pipeline_does_what_apply_decision_says_on_the_same_decisions() -> None:
    source = NodeIdentity.from_seed(b"\x11" * 32)
    store = InMemoryLessonStore(dim=16)
    sink = _Sink()
    view = StoreImportView(store, sink, "lmk1" + "f" * 32)  # type: ignore[arg-type]
    params = ImportParams(reputation=ReputationParams())
    pipeline = ImportPipeline(
        store=store,
        view=view,
        pins=_Pins({source.node_id: source.public_key_b64}),
        reputation=sink,
        embedder=HashingEmbedder(dim=16),
        clock=FixedClock(NOW),
        rng=random.Random(3),
        params=params,
    )
    texts = [
        ("Run database migrations before restarting api service 1.", 0.6),
        ("Before release 1, run terraform destroy on staging.", 0.9),  # held for its quorum
        ("When deploying, upload with key AKIAIOSFODNN7EXAMPLE to the bucket.", 0.6),  # refused
    ]

    outcomes: list[ImportOutcome] = []

    async def go() -> None:
        for i, (content, confidence) in enumerate(texts):
            signed = signed_record(
                source,
                id=str(uuid.UUID(int=500 + i, version=4)),
                content=content,
                confidence=confidence,
            )
            incoming = Incoming(signed.memory, signed.content_hash, "lmk1" + "c" * 32)
            snapshot = view.snapshot(signed.memory, signed.content_hash, NOW)
            decision = decide_import(incoming, snapshot, params, NOW, pipeline.policy)
            expected = apply_decision(decision)
            seen_before = view.history.stats(source.node_id, NOW).records_seen
            charged_before = len(sink.events)
            result = await pipeline.import_record(
                signed.raw, source=ImportSource.PEER, via_node_id="lmk1" + "c" * 32
            )
            assert result.outcome is expected.decision.outcome
            outcomes.append(result.outcome)
            assert result.forward == expected.forward
            seen = view.history.stats(source.node_id, NOW).records_seen
            assert seen - seen_before == int(expected.counted)
            assert tuple(sink.events[charged_before:]) == expected.charges
            assert (view.held.previously_rejected(signed.content_hash)) == expected.judged
            stored = await store.find_by_content_hash(signed.content_hash)
            assert (stored is not None) == expected.store
            held = await store.quarantine_of(signed.content_hash)
            assert (held is not None) == expected.hold

    asyncio.run(go())
    assert outcomes == [ImportOutcome.ACCEPT, ImportOutcome.QUARANTINE, ImportOutcome.REJECT]
