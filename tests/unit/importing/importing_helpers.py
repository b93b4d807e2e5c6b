"""Shared builders for the import tests: valid ``MemoryV2`` records and a fake ``ImportView``."""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
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

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: A source this node's outcomes judged right a thousand times: past probation.
SEASONED = TrackRecord(confirmed=1000)
SOURCE = "lmk1" + "a" * 32
SELF = "lmk1" + "b" * 32
VIA = "lmk1" + "c" * 32
OTHER = "lmk1" + "d" * 32
RECORD_ID = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"


def ts(dt: datetime) -> str:
    """Canonical record timestamp."""
    return format_ts(dt)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif value is None and key.startswith("-"):
            out.pop(key[1:], None)
        else:
            out[key] = value
    return out


def record_obj(**over: Any) -> dict[str, Any]:
    """A wire-shaped v2 memory dict: an active, evidenced, public lesson; ``over`` deep-merges."""
    created = ts(NOW - timedelta(days=3))
    base: dict[str, Any] = {
        "schema_version": "2.0",
        "id": RECORD_ID,
        "type": "AC",
        "content": "Run database migrations before restarting the api service.",
        "confidence": 0.7,
        "access_level": "public",
        "context": {"domain": "deploy", "environment": "staging", "tools": ["alembic"]},
        "provenance": {
            "source_agent_id": SOURCE,
            "source_type": "empirical",
            "created_at": created,
            "updated_at": created,
        },
        "evidence": [
            {
                "type": "empirical",
                "description": "migration ran, service healthy",
                "timestamp": created,
                "validator": "reality",
                "outcome_id": str(uuid.UUID(int=7, version=4)),
            }
        ],
        "lesson": {"operation": "deploy.restart", "scope": "global", "status": "active"},
        "confidence_interval": {"mean": 0.7, "std_dev": 0.1},
    }
    return _merge(base, over)


def record(**over: Any) -> MemoryV2:
    """A parsed, valid ``MemoryV2`` (see ``record_obj``)."""
    return MemoryV2.from_obj(record_obj(**over))


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
