"""The import pipeline over each store adapter: the one way in behaves alike on
the in-memory store and on the real Postgres one (a unique-index conflict, a quarantine row's
kept decision, an approval)."""

from __future__ import annotations

import random
import uuid

from lamarck.domain.rows import LessonFilter
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.versions import imported_row
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.port import LessonStore
from lamarck.policy.decision import ImportOutcome, ImportParams
from lamarck.proto.clock import FixedClock
from lamarck.proto.signed import SignedMemory
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from tests.contract.contract_factories import signed_record
from tests.factories import T0, identity

#: Embedding dimension of the contract suite's stores (conftest.DIM).
DIM = 8

NOW = T0
SOURCE = identity(0x21)
SELF = identity(0x22)
VIA = "lmk1" + "c" * 32


class Pins:
    """The registry knows SOURCE only when ``known``."""

    def __init__(self, known: bool) -> None:
        self.known = known

    async def pinned_key(self, node_id: str) -> str | None:
        return SOURCE.public_key_b64 if self.known and node_id == SOURCE.node_id else None

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


def _raw(n: int, content: str) -> bytes:
    return signed_record(n, content, SOURCE, NOW)


def _pipeline(store: LessonStore, known: bool) -> ImportPipeline:
    clock = FixedClock(NOW)
    book = InMemoryReputation(ReputationParams(), clock)
    return ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, book, SELF.node_id),
        pins=Pins(known),
        reputation=book,
        embedder=HashingEmbedder(dim=DIM),
        clock=clock,
        rng=random.Random(5),
    )


async def test_a_record_the_index_missed_is_a_duplicate_on_every_adapter(
    store: LessonStore,
) -> None:
    raw = _raw(1, "Run migrations before restarting the api.")
    signed = SignedMemory.from_json(raw)
    await store.insert_lesson(
        imported_row(signed, lesson_id=str(uuid.uuid4()), confidence=0.3, via_node_id="", now=NOW)
    )
    pipeline = _pipeline(store, known=True)
    result = await pipeline.import_record(raw, source=ImportSource.PEER, via_node_id=VIA)
    assert result.outcome is ImportOutcome.DUPLICATE
    [row] = await store.list_lessons(LessonFilter(statuses=None))
    assert result.lesson_id == row.id
    assert {p.via_node_id for p in row.provenance} == {"", VIA}


async def test_an_unknown_signers_bundle_is_held_and_approval_stores_the_kept_decision(
    store: LessonStore,
) -> None:
    pipeline = _pipeline(store, known=False)
    raw = _raw(2, "Drain the queue before scaling the workers down.")
    held = await pipeline.import_record(raw, source=ImportSource.BUNDLE, label="b.jsonl")
    assert (held.outcome, held.reason) == (ImportOutcome.QUARANTINE, "unknown_signer")
    assert await store.list_lessons(LessonFilter(statuses=None)) == []
    [row] = await store.list_quarantine()
    # A source nobody here has judged yet: on probation.
    assert row.confidence is not None and row.transfer_rule == "probation"
    approved = await pipeline.approve(row)
    assert approved.outcome is ImportOutcome.ACCEPT
    assert approved.transfer_rule == "probation"
    [lesson] = await store.list_lessons(LessonFilter(statuses=None))
    assert lesson.id == approved.lesson_id and lesson.confidence == row.confidence
    assert lesson.signed_record == raw
    # The same bundle again: the row it has, not a second hold.
    again = await pipeline.import_record(raw, source=ImportSource.BUNDLE)
    assert again.outcome is ImportOutcome.DUPLICATE and again.lesson_id == lesson.id
