"""Bundle Import embeds a streamed bundle a chunk at a time ahead of the pipeline,
with one ack per line exactly as one record at a time."""

from __future__ import annotations

import asyncio
import random
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from lamarck.domain.embedder import (
    Embedder,
    Vectors,
)
from lamarck.node.api.agent_service import AgentServicer
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.batch import BatchImportParams, PrimedEmbedder
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import agent_pb2
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "importing"))
from importing_helpers import NOW

from lamarck.learning.params import LearningParams
from lamarck.reputation.transfer import TransferParams
from tests.factories import signed_record

SELF = NodeIdentity.from_seed(b"\x81" * 32)
DIM = 32


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


def _bundle(n: int) -> bytes:
    lines = []
    for i in range(n):
        signed = signed_record(
            SELF,
            id=str(uuid.UUID(int=9000 + i, version=4)),
            content=f"Drain the queue of worker {i} before its upgrade.",
            lesson={"operation": f"ops.drain{i}"},
        )
        lines.append(signed.raw)
    return b"\n".join([*lines, b"", b'{"not": "a record"}']) + b"\n"


def _acks(embedder: Embedder, primed: PrimedEmbedder | None, bundle: bytes) -> list[str]:
    store = InMemoryLessonStore(dim=DIM)
    clock = FixedClock(NOW)
    book = InMemoryReputation(ReputationParams(), clock)
    pipeline = ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, book, SELF.node_id),
        pins=None,
        reputation=book,
        embedder=embedder,
        clock=clock,
        rng=random.Random(1),
    )
    service = LessonService(
        store, embedder, clock, LearningParams(), rng=random.Random(2), transfer=TransferParams()
    )
    servicer = AgentServicer(service, SELF, clock, store=store, pipeline=pipeline, primed=primed)

    async def parts() -> AsyncIterator[agent_pb2.ImportRequest]:
        # Cut mid-line: lines complete across parts.
        for start in range(0, len(bundle), 4000):
            yield agent_pb2.ImportRequest(jsonl=bundle[start : start + 4000])

    response = asyncio.run(servicer.Import(parts(), None))
    return [f"{a.index}:{a.status}:{a.reason}" for a in response.acks]


def test_a_bundle_is_embedded_ahead_with_the_acks_of_one_record_at_a_time() -> None:
    bundle = _bundle(9)
    one = _Counting()
    expected = _acks(one, None, bundle)
    counting = _Counting()
    primed = PrimedEmbedder(counting, BatchImportParams(chunk=4, max_primed=8))
    assert _acks(primed, primed, bundle) == expected
    assert len(expected) == 10  # nine records and the malformed line; the blank has none
    assert one.calls == [1] * 9
    # Fewer model calls than records: each part's lines were embedded together.
    assert len(counting.calls) < 9 and sum(counting.calls) == 9
    assert primed.primed == 0


def test_reading_ahead_a_deeply_nested_line_finds_nothing_and_does_not_recurse() -> None:
    from lamarck.node.importing.batch import record_content, record_operation

    deep = b'{"content": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    assert record_content(deep) is None and record_operation(deep) is None
