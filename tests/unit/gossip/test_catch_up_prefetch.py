"""Anti-entropy catch-up: each Sync page is embedded a chunk at a time ahead of the pipeline,
with the pipeline's answers unchanged, and a long pull says how far it got."""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from lamarck.domain.embedder import (
    Embedder,
    Vectors,
)
from lamarck.domain.rows import LessonFilter
from lamarck.gossip.publisher import GossipParams
from lamarck.gossip.sync import SyncPage, SyncQuery
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.batch import BatchImportParams, PrimedEmbedder
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.sharing.anti_entropy import AntiEntropy
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from lamarck.reputation.scores import PeerBand

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "importing"))
from importing_helpers import NOW

from tests.factories import signed_record

SOURCE = NodeIdentity.from_seed(b"\x71" * 32)
SELF = NodeIdentity.from_seed(b"\x72" * 32)
PEER = "lmk1" + "d" * 32
DIM = 32


class _Pins:
    async def pinned_key(self, node_id: str) -> str | None:
        return SOURCE.public_key_b64 if node_id == SOURCE.node_id else None

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


class _Counting(Embedder):
    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=DIM)
        self.calls: list[int] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return self.inner.embed(texts)


class _Peer:
    """Serves the records in pages of ``size``."""

    def __init__(self, raws: list[bytes], size: int) -> None:
        self._records = [(sha256_hex(r), r) for r in raws]
        self._size = size

    async def sync_page(
        self,
        peer: str,
        query: SyncQuery,
        certificates: dict[str, bytes],
        declared: object,
        attestations: object = None,
    ) -> SyncPage:
        start = int(query.cursor or 0)
        end = start + self._size
        return SyncPage(tuple(self._records[start:end]), str(end), more=end < len(self._records))


def _raws(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        signed = signed_record(
            SOURCE,
            id=str(uuid.UUID(int=5000 + i, version=4)),
            content=f"Pin the resolver of service {i} before its nightly build.",
            lesson={"operation": f"build.step{i}"},
        )
        out.append(signed.raw)
    return out


def _anti_entropy(
    embedder: Embedder,
    peer: _Peer,
    primed: PrimedEmbedder | None,
    batch: BatchImportParams | None,
) -> tuple[AntiEntropy, InMemoryLessonStore]:
    store = InMemoryLessonStore()
    clock = FixedClock(NOW)
    book = InMemoryReputation(ReputationParams(), clock)
    pipeline = ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, book, SELF.node_id),
        pins=_Pins(),
        reputation=book,
        embedder=embedder,
        clock=clock,
        rng=random.Random(5),
    )
    return (
        AntiEntropy(
            store,
            SELF,
            GossipParams(),
            pipeline=pipeline,
            client=peer,  # type: ignore[arg-type]
            band_of=lambda _: PeerBand.TRUSTED,
            live_peers=lambda: [PEER],
            clock=clock,
            rng=random.Random(0),
            primed=primed,
            batch=batch,
        ),
        store,
    )


def test_a_pull_embeds_each_page_a_chunk_at_a_time(caplog: pytest.LogCaptureFixture) -> None:
    counting = _Counting()
    batch = BatchImportParams(chunk=4, max_primed=8, progress_every=5)
    primed = PrimedEmbedder(counting, batch)
    node, store = _anti_entropy(primed, _Peer(_raws(10), size=6), primed, batch)

    with caplog.at_level(logging.INFO, logger="lamarck.node.sharing"):
        received = asyncio.run(node.sync_with(PEER, set(), []))

    assert received == 10
    stored = asyncio.run(store.list_lessons(LessonFilter(statuses=None, limit=100)))
    assert len(stored) == 10
    # Pages of 6 and 4, chunks of 4: the model ran once per chunk, never per record.
    assert counting.calls == [4, 2, 4]
    assert primed.primed == 0
    assert node.catching_up == {}
    assert any("catching up from" in r.getMessage() for r in caplog.records)


def test_without_a_primed_embedder_a_pull_imports_one_record_at_a_time() -> None:
    counting = _Counting()
    node, _ = _anti_entropy(counting, _Peer(_raws(3), size=2), None, None)
    assert asyncio.run(node.sync_with(PEER, set(), [])) == 3
    assert counting.calls == [1, 1, 1]
