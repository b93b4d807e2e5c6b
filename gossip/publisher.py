"""What may leave a node, to whom, and as which signed record.

Pure functions over ``LessonRow`` values and parameters; signing uses the node identity.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.errors import ConfigError
from lamarck.gossip.share_reason import why_not_shared
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import DEFAULT_LIMITS
from lamarck.proto.memory import UUID4_PATTERN, MemoryV2, estimate_std_dev
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts

__all__ = [
    "ENDED",
    "PUBLISHED_STATUSES",
    "GossipParams",
    "lesson_record",
    "lesson_version",
    "may_publish",
    "sign_lesson",
]


@dataclass(frozen=True, slots=True)
class GossipParams:
    """Every gossip constant; validated on construction."""

    # Children of each node in a record's dissemination tree (gossipsub's D), >= 1, once the
    # network is larger than direct_push_max.
    fanout: int = 6
    # Up to this many allowed peers, the origin pushes to every one of them itself and nobody
    # forwards: exactly N-1 messages and one hop (measured in bench/sharing.py), >= 0.
    direct_push_max: int = 32
    # Outbox deliveries to distinct peers in flight at once, >= 1.
    delivery_concurrency: int = 16
    # Hops a record travels at most; a receiver forwards while hop_count + 1 < hop_limit, >= 1.
    # The fanout tree reaches 1 + 6 + ... + 6^(hop_limit-1) nodes: 4 hops stop at 1,555 (the
    # simulator measured 18 % reach at N = 10,000), 8 reach 2.0 million (docs/scale.md).
    # Duplicates are dropped by content hash, so a larger limit adds no loops.
    hop_limit: int = 8
    # Peers one anti-entropy round pulls from (a seeded sample when there are more), >= 1: a
    # round over every peer grows with N (the simulator: ~28 minutes at N = 10,000 against a
    # 60 s interval); a sample repairs the same with bounded work.
    sync_peers_per_round: int = 8
    # Smallest local confidence a lesson needs to be published, in [0, 1].
    publish_threshold: float = 0.6
    # First retry delay of an outbox delivery, seconds > 0; doubles on each failure...
    retry_base_s: float = 1.0
    # ...up to this ceiling, seconds >= retry_base_s.
    retry_max_s: float = 300.0
    # Seconds between two anti-entropy Sync rounds, > 0.
    anti_entropy_interval_s: float = 60.0
    # Hex prefix length of the hash-summary buckets in Sync, 1..4 (16**n buckets).
    sync_prefix_len: int = 2
    # Records per Publish batch and per Sync page, >= 1.
    batch_size: int = 64
    # Project scopes (``project:<digest>``) this node's operator
    # explicitly shares with every peer.
    shared_scopes: frozenset[str] = frozenset()
    # Team sharing: a project's lessons go to the peers that declare the same project (the
    # same digest), without listing the scope in ``shared_scopes``.
    team_sharing: bool = True
    # Most project scopes one peer's declaration is kept with (a bound on what a peer can
    # make this node remember), >= 1.
    max_declared_projects: int = 256
    # Tag that marks a user-context (UC) memory as shareable; UC is private otherwise.
    uc_share_tag: str = "shareable"

    def __post_init__(self) -> None:
        if self.direct_push_max < 0:
            raise ConfigError("invalid direct_push_max: must be at least 0")
        for name in (
            "fanout",
            "hop_limit",
            "batch_size",
            "delivery_concurrency",
            "max_declared_projects",
            "sync_peers_per_round",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"invalid {name}: must be at least 1")
        if not 1 <= self.sync_prefix_len <= 4:
            raise ConfigError("invalid sync_prefix_len: must be between 1 and 4")
        for name in ("publish_threshold",):
            v = getattr(self, name)
            if not math.isfinite(v) or not 0.0 <= v <= 1.0:
                raise ConfigError(f"invalid {name}: must be between 0 and 1, got {v!r}")
        for name in ("retry_base_s", "retry_max_s", "anti_entropy_interval_s"):
            v = getattr(self, name)
            if not math.isfinite(v) or v <= 0:
                raise ConfigError(f"invalid {name}: must be a finite number > 0, got {v!r}")
        if self.retry_max_s < self.retry_base_s:
            raise ConfigError("invalid retry_max_s: must be >= retry_base_s")
        for scope in self.shared_scopes:
            if not scope.startswith("project:"):
                raise ConfigError(f"invalid shared_scopes: {scope!r} is not a project scope")


#: Statuses of a lesson that ended here: published so that every holder ends its copy too.
ENDED = (LessonStatus.RETIRED, LessonStatus.SUPERSEDED)
#: Every status a local lesson may be published in.
PUBLISHED_STATUSES = (LessonStatus.ACTIVE, *ENDED)


def may_publish(row: LessonRow, params: GossipParams) -> bool:
    """Whether a local lesson may leave this node at all.

    Only this node's own lessons with evidence (never claims, never imported copies: those
    travel as their original bytes), scope ``global``, an explicitly shared project scope, or
    (team sharing) any project scope, which then goes only to that project's peers; a
    UC memory only when tagged ``uc_share_tag``; a ``private`` row only when it names its
    recipients. An active lesson also needs confidence at least ``publish_threshold``; a
    retired or superseded one does not: its signed newer version (status retired/superseded)
    is how every node holding a copy learns to take it out of its prompts.
    """
    return why_not_shared(row, params) is None


def _context(ctx: dict[str, Any]) -> dict[str, Any]:
    # A local row's context is whatever the run recorded; the wire keeps only typed fields.
    out: dict[str, Any] = {
        "domain": str(ctx.get("domain", "")),
        "environment": str(ctx.get("environment", "")),
    }
    tools = ctx.get("tools")
    if isinstance(tools, list | tuple):
        out["tools"] = [str(t) for t in tools if isinstance(t, str) and t]
    constraints = ctx.get("constraints")
    if isinstance(constraints, dict):
        out["constraints"] = {
            str(k): v for k, v in constraints.items() if isinstance(k, str) and isinstance(v, str)
        }
    for key in ("scale", "timing", "users"):
        if isinstance(ctx.get(key), str) and ctx[key]:
            out[key] = ctx[key]
    return out


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Situation fields a memory record may carry (the record's ``situation`` block).
_SITUATION_FIELDS = ("tool", "subject", "kind", "env_fingerprint", "unblock", "probe")
# What the record's ``metadata.superseded_by`` admits: a successor's uuid4 or retired:<who>.
_SUPERSEDED_BY = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}|retired:[a-z0-9_-]{0,64}",
    re.ASCII,
)


_UUID4 = re.compile(UUID4_PATTERN, re.ASCII)
# Characters a record's multi-line text may not hold (``proto.memory``): control characters
# other than newline and tab.
_UNSIGNABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _signable_reason(text: str) -> str:
    """An author's reason as a record carries it: without control characters, clipped to the
    record's limit for descriptions; deterministic, so a row signs to the same bytes."""
    return _UNSIGNABLE.sub("", text).strip()[: DEFAULT_LIMITS.max_description_chars]


def lesson_version(row: LessonRow) -> int:
    """The record version of a row state: microseconds of ``updated_at`` since the epoch.

    Every change of a signed field (content, confidence, counts, access level, status) moves
    ``updated_at`` forward, so the version bumps with each change as the protocol requires;
    re-signing an unchanged row gives the same version (and the same bytes), while a changed
    row is a newer version, never an equivocation. Publish, Sync and Export all use it.
    """
    return max(1, (row.updated_at - _EPOCH) // timedelta(microseconds=1))


def _situation(situation: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: situation[k] for k in _SITUATION_FIELDS if situation.get(k)}
    out["interactive"] = bool(situation.get("interactive", False))
    out["source"] = str(situation.get("source") or "declared")
    return out


def lesson_record(row: LessonRow, node_id: str) -> dict[str, Any]:
    """The wire memory (unsigned, schema 2.0) for a local lesson; deterministic for one row state.

    The one encoder of a local lesson: Publish, Sync and Export all sign this, so the same row
    state gives the same bytes (Ed25519 is deterministic) and the same content hash on every
    path: a republish or a re-export is a duplicate everywhere. The record id is the lesson id;
    the status (a retirement included) and this node's counts are part of the signed record.
    """
    stamp = format_ts(row.updated_at)
    evidence = [
        {
            "type": "empirical",
            "description": "local outcome",
            "timestamp": stamp,
            "validator": "reality",
            "outcome_id": outcome_id,
        }
        for outcome_id in row.evidence[-DEFAULT_LIMITS.max_evidence :]
    ]
    metadata: dict[str, Any] = {
        "success_count": row.confirmations,
        "failure_count": row.contradictions,
        "tags": list(row.tags[: DEFAULT_LIMITS.max_tags]),
    }
    if row.superseded_by is not None and _SUPERSEDED_BY.fullmatch(row.superseded_by):
        metadata["superseded_by"] = row.superseded_by
    lesson: dict[str, Any] = {
        "operation": row.operation,
        "scope": row.scope,
        "status": row.status.value,
        "version": lesson_version(row),
    }
    # Only rows written since reasons are kept say why and what they supersede: a row written
    # before must sign to the very bytes it always did (same version, other bytes would be
    # an equivocation).
    if row.change_reason is not None:
        if row.supersedes is not None and _UUID4.fullmatch(row.supersedes):
            metadata["supersedes"] = row.supersedes
        reason = _signable_reason(row.change_reason)
        if reason:
            lesson["reason"] = reason
    obj: dict[str, Any] = {
        "schema_version": "2.0",
        "id": row.id,
        "type": row.memory_type,
        "content": row.content,
        "confidence": row.confidence,
        "access_level": row.access_level,
        "context": _context(row.context),
        "provenance": {
            "source_agent_id": node_id,
            "source_type": "empirical" if row.evidence else "inferred",
            "created_at": format_ts(min(row.created_at, row.updated_at)),
            "updated_at": stamp,
        },
        "evidence": evidence,
        "metadata": metadata,
        "lesson": lesson,
        "confidence_interval": {
            "mean": row.confidence,
            "std_dev": estimate_std_dev(row.confirmations, row.contradictions),
        },
    }
    if row.situation is not None:
        obj["situation"] = _situation(row.situation)
    if row.access_level == "private":
        obj["recipients"] = list(row.recipients)
    return obj


def sign_lesson(row: LessonRow, identity: NodeIdentity) -> SignedMemory:
    """Sign a local lesson as a Memory record with the node identity."""
    return SignedMemory.sign(MemoryV2.from_obj(lesson_record(row, identity.node_id)), identity)
