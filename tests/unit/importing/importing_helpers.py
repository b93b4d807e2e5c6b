"""What the import tests share: their constants, a parsed ``MemoryV2`` (``record``, from
``tests.factories.memory_obj``) and a fake ``ImportView``."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lamarck.policy.filters import (
    Corroboration,
    DeclaredTool,
    EstablishedLesson,
    KnownVersion,
    SourceStats,
)
from lamarck.proto.memory import MemoryV2
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.transfer import TrackRecord
from tests.factories import T0, UNSIGNED_SOURCE, memory_obj

NOW = T0
#: A source this node's outcomes judged right a thousand times: past probation.
SEASONED = TrackRecord(confirmed=1000)
SOURCE = UNSIGNED_SOURCE
SELF = "lmk1" + "b" * 32
VIA = "lmk1" + "c" * 32
OTHER = "lmk1" + "d" * 32


def ts(dt: datetime) -> str:
    """Canonical record timestamp."""
    return format_ts(dt)


def record(**over: Any) -> MemoryV2:
    """A parsed, valid ``MemoryV2`` (see ``tests.factories.memory_obj``)."""
    return MemoryV2.from_obj(memory_obj(**over))


def hash_of(rec: MemoryV2) -> str:
    """A stand-in content hash (the real one is the signing input's sha256)."""
    return hashlib.sha256(rec.to_json()).hexdigest()


@dataclass
class FakeView:
    """An ``ImportView`` over plain values; every attribute can be set per test."""

    self_id: str = SELF
    reputations: dict[str, float] = field(default_factory=dict)
    corr: Corroboration = field(default_factory=Corroboration)
    established: list[EstablishedLesson] = field(default_factory=list)
    history: dict[str, SourceStats] = field(default_factory=dict)
    tools: dict[str, DeclaredTool] = field(default_factory=dict)
    versions: dict[str, list[KnownVersion]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    # A source's record here; one not named is SEASONED (past probation, its claims believed
    # up to 0.9975), so the other stages are tested apart from probation.
    tracks: dict[str, TrackRecord] = field(default_factory=dict)

    @property
    def self_node_id(self) -> str:
        return self.self_id

    def reputation(self, node_id: str) -> float:
        return self.reputations.get(node_id, 0.5)

    def track_record(self, node_id: str) -> TrackRecord:
        return self.tracks.get(node_id, SEASONED)

    def corroboration(self, record: MemoryV2) -> Corroboration:
        return self.corr

    def established_lessons(
        self, operation: str, domain: str, environment: str
    ) -> Sequence[EstablishedLesson]:
        return self.established

    def source_history(self, node_id: str) -> SourceStats:
        return self.history.get(node_id, SourceStats())

    def declared_tool(self, tool: str) -> DeclaredTool | None:
        return self.tools.get(tool)

    def known_versions(self, record_id: str) -> Sequence[KnownVersion]:
        return self.versions.get(record_id, [])

    def previously_rejected(self, content_hash: str) -> str | None:
        return self.rejected.get(content_hash)
