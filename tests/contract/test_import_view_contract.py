"""The import view's contract: ``StoreImportView`` over each store adapter (the ``store``
fixture) loads the same facts at start and reads the same established lessons per record, and
its snapshots answer the ``ImportView`` protocol the decision asks.

What it loads: every version of a record already held (stored or quarantined), each source's
history (a record held because no registry vouched for its signer says nothing about the source
it names, so it does not count), and the reasons records were rejected for (not those that
depend on the registry's state at the time).
"""

from __future__ import annotations

from lamarck.domain.rows import LessonStatus, QuarantineRow, RejectionRow
from lamarck.node.importing.pipeline import imported_row
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.port import LessonStore
from lamarck.policy.effects import HoldReason
from lamarck.policy.filters import ImportView, KnownVersion, SourceStats
from lamarck.proto.clock import FixedClock
from lamarck.proto.signed import SignedMemory
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from tests.contract.contract_factories import lesson, signed_record
from tests.factories import T0, held_row, identity

NOW = T0
SOURCE = identity(0x31)
SELF = identity(0x32)
CONTEXT = {"domain": "deploy", "environment": "staging"}


def _view(store: LessonStore) -> StoreImportView:
    book = InMemoryReputation(ReputationParams(), FixedClock(NOW))
    return StoreImportView(store, book, SELF.node_id)


def _signed(n: int, content: str) -> SignedMemory:
    return SignedMemory.from_json(signed_record(n, content, SOURCE, NOW))


def _held(qid: str, signed: SignedMemory, *reasons: str) -> QuarantineRow:
    return held_row(qid, signed, received_at=NOW, reasons=reasons)


async def test_a_stored_import_is_a_known_version_and_counts_in_its_sources_history(
    store: LessonStore,
) -> None:
    signed = _signed(1, "Run migrations before restarting the api.")
    row = imported_row(signed, lesson_id="l1", confidence=0.3, via_node_id="", now=NOW)
    await store.insert_lesson(row)
    view = _view(store)
    await view.load()
    snap: ImportView = view.snapshot(signed.memory, signed.content_hash, NOW)
    assert snap.self_node_id == SELF.node_id
    assert list(snap.known_versions(signed.memory.id)) == [
        KnownVersion(1, signed.content_hash, SOURCE.node_id)
    ]
    assert snap.source_history(SOURCE.node_id).records_seen == 1
    assert snap.previously_rejected(signed.content_hash) is None


async def test_held_records_are_known_versions_and_count_unless_no_registry_vouched(
    store: LessonStore,
) -> None:
    held = _signed(2, "Drain the queue before scaling the workers down.")
    unvouched = _signed(3, "Pin the base image by digest.")
    await store.quarantine(_held("q1", held, "low_reputation"))
    await store.quarantine(_held("q2", unvouched, HoldReason.UNKNOWN_SIGNER))
    view = _view(store)
    await view.load()
    for signed in (held, unvouched):
        snap = view.snapshot(signed.memory, signed.content_hash, NOW)
        assert [v.content_hash for v in snap.known_versions(signed.memory.id)] == [
            signed.content_hash
        ]
    history = view.snapshot(held.memory, held.content_hash, NOW).source_history(SOURCE.node_id)
    assert history.records_seen == 1


async def test_rejections_are_remembered_unless_they_depended_on_the_registry(
    store: LessonStore,
) -> None:
    await store.record_rejection(RejectionRow(SOURCE.node_id, "bad_signature", "h-bad", NOW))
    await store.record_rejection(RejectionRow(SOURCE.node_id, "registry_unavailable", "h-reg", NOW))
    view = _view(store)
    await view.load()
    record = _signed(4, "Tag the release before publishing.").memory
    # A snapshot is taken for one record's bytes: it answers for that content hash.
    assert view.snapshot(record, "h-bad", NOW).previously_rejected("h-bad") == "bad_signature"
    assert view.snapshot(record, "h-reg", NOW).previously_rejected("h-reg") is None


async def test_an_unseen_record_from_an_unseen_source_knows_nothing(store: LessonStore) -> None:
    view = _view(store)
    await view.load()
    record = _signed(5, "Rotate the keys before the audit.")
    snap = view.snapshot(record.memory, record.content_hash, NOW)
    assert list(snap.known_versions(record.memory.id)) == []
    assert snap.previously_rejected(record.content_hash) is None
    assert snap.source_history(SOURCE.node_id) == SourceStats()
    assert list(snap.established_lessons("deploy.step5", "deploy", "staging")) == []


async def test_established_lessons_are_the_active_ones_on_its_operation_and_context_surest_first(
    store: LessonStore,
) -> None:
    on = {"operation": "deploy.step6", "context": CONTEXT}
    await store.insert_lessons(
        [
            lesson("fair", confidence=0.6, **on),
            lesson("sure", confidence=0.9, **on),
            lesson("weak", confidence=0.2, **on),
            lesson("retired", confidence=0.95, status=LessonStatus.RETIRED, **on),
            lesson(
                "elsewhere",
                operation="deploy.step6",
                context={"domain": "deploy", "environment": "prod"},
                confidence=0.9,
            ),
            lesson("other-op", operation="deploy.step7", context=CONTEXT, confidence=0.9),
        ]
    )
    record = _signed(6, "Run the smoke tests after the deploy.")
    got = await _view(store).established(record.memory, floor=0.5)
    assert [e.lesson_id for e in got] == ["sure", "fair"]
    assert got[0].confidence == 0.9
    not_a_lesson = record.memory.model_copy(update={"lesson": None})
    assert await _view(store).established(not_a_lesson, floor=0.0) == ()
