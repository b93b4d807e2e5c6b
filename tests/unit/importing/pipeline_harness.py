"""The import pipeline over the in-memory store with pinned keys and recorded reputation
events: the harness the import tests share, and the signed records they send it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from datetime import datetime
from typing import Any, TypeVar

from importing_helpers import NOW, SEASONED

from lamarck.domain.rows import LessonFilter
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportResult, ImportSource
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams, ImportPolicy
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.transfer import TrackRecord
from tests.factories import identity, signed_record

T = TypeVar("T")

SOURCE_KEY = identity(1)
ATTACKER_KEY = identity(2)
SELF_KEY = identity(3)
SOURCE = SOURCE_KEY.node_id
ATTACKER = ATTACKER_KEY.node_id
SELF = SELF_KEY.node_id
VIA = "lmk1" + "c" * 32
VIA2 = "lmk1" + "e" * 32
DIM = 64


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion."""
    return asyncio.run(coro)


class Pins:
    """A ``KeyPins`` over dicts."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {
            SOURCE: SOURCE_KEY.public_key_b64,
            ATTACKER: ATTACKER_KEY.public_key_b64,
            SELF: SELF_KEY.public_key_b64,
        }
        self.revoked: set[str] = set()

    async def pinned_key(self, node_id: str) -> str | None:
        return self.keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        return node_id in self.revoked

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


class RotatedPins(Pins):
    """``Pins`` that also know when a rotation retired a key (``KeyHistory``)."""

    def __init__(self) -> None:
        super().__init__()
        self.retired: dict[tuple[str, str], datetime] = {}

    async def key_valid_at(self, node_id: str, key: str, at: datetime) -> bool:
        retired = self.retired.get((node_id, key))
        return retired is not None and at <= retired


class Events:
    """A ``ReputationSink`` that keeps what it is told."""

    def __init__(self) -> None:
        self.events: list[ReputationEvent] = []

    def emit(self, event: ReputationEvent) -> None:
        self.events.append(event)

    def kinds_for(self, node_id: str) -> list[EventKind]:
        return [e.kind for e in self.events if e.node_id == node_id]


class Harness:
    """A pipeline over an in-memory store, fixed clock, seeded ids and dict pins."""

    def __init__(
        self,
        reputation: dict[str, float] | None = None,
        *,
        params: ImportParams | None = None,
        policy: ImportPolicy | None = None,
        embedder: HashingEmbedder | None = None,
        pins: Pins | None = None,
    ) -> None:
        self.clock = FixedClock(NOW)
        self.store = InMemoryLessonStore(dim=DIM)
        self.pins = pins or Pins()
        self.events = Events()
        self.scores = reputation or {}
        # Sources' records here; one not named is SEASONED (past probation).
        self.tracks: dict[str, TrackRecord] = {}
        self.embedder = embedder or HashingEmbedder(dim=DIM)
        self.view = StoreImportView(self.store, self, SELF)
        self.pipeline = ImportPipeline(
            store=self.store,
            view=self.view,
            pins=self.pins,
            reputation=self.events,
            embedder=self.embedder,
            clock=self.clock,
            rng=random.Random(7),
            params=params or ImportParams(reputation=ReputationParams()),
            policy=policy,
        )

    def score(self, node_id: str) -> float:
        return self.scores.get(node_id, 0.5)

    def track_record(self, node_id: str) -> TrackRecord:
        return self.tracks.get(node_id, SEASONED)

    async def offer(self, raw: bytes, via: str = VIA) -> ImportResult:
        return await self.pipeline.import_record(raw, source=ImportSource.PEER, via_node_id=via)

    async def held(self) -> tuple[list[Any], list[Any]]:
        """Everything stored that a rejected record must not alter."""
        lessons = await self.store.list_lessons(LessonFilter(statuses=None, limit=10_000))
        quarantine = await self.store.list_quarantine(state=None)
        return sorted(lessons, key=lambda r: r.id), quarantine


def signed_raw(by: NodeIdentity = SOURCE_KEY, **over: Any) -> bytes:
    """The bytes of ``signed_record`` by ``by`` (by default this harness's source)."""
    return signed_record(by, **over).raw
