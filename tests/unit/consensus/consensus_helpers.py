"""Shared builders for the consensus tests: identities, signed and forged votes, records."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from lamarck.consensus.votes import Verdict
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts
from lamarck.proto.vote import Vote

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RECORD_HASH = "ab" * 32
OTHER_HASH = "cd" * 32
MEMORY_ID = str(uuid.UUID(int=1, version=4))

#: Twelve fixed identities: tests index into them.
IDS: tuple[NodeIdentity, ...] = tuple(
    NodeIdentity.from_seed(bytes([k + 1]) * 32) for k in range(12)
)


def uid(n: int) -> str:
    """A deterministic uuid4 string."""
    return str(uuid.UUID(int=n, version=4))


def vote(
    who: NodeIdentity,
    verdict: Verdict,
    *,
    record_hash: str = RECORD_HASH,
    at: datetime = NOW,
    n: int = 0,
    confidence: float = 0.9,
) -> Vote:
    """A vote by ``who``, signed by ``who``; ``n`` varies its id (a second, distinct vote)."""
    obj: dict[str, Any] = {
        "schema_version": "1.0",
        "kind": "vote",
        "id": uid(1000 + n),
        "memory_id": MEMORY_ID,
        "memory_hash": record_hash,
        "voter_id": who.node_id,
        "verdict": verdict.value,
        "confidence": confidence if verdict is not Verdict.ABSTAIN else 0.0,
        "outcome_ids": [] if verdict is Verdict.ABSTAIN else [uid(2000 + n)],
        "created_at": format_ts(at),
    }
    return Vote.from_obj(sign_object(RecordKind.vote, obj, who))


def forged(in_name_of: NodeIdentity, verdict: Verdict, *, by: NodeIdentity) -> Vote:
    """A vote naming ``in_name_of`` as voter but signed by ``by``: a forgery."""
    real = vote(by, verdict).to_obj()
    real["voter_id"] = in_name_of.node_id
    return Vote.from_obj(real)


def tampered(original: Vote) -> Vote:
    """``original`` with its verdict flipped after signing (the signature no longer holds)."""
    obj = original.to_obj()
    obj["verdict"] = "contradict" if obj["verdict"] == "confirm" else "confirm"
    obj["outcome_ids"] = obj["outcome_ids"] or [uid(3000)]
    return Vote.from_obj(obj)


def record(
    *,
    confidence: float = 0.7,
    domain: str = "deploy",
    tags: tuple[str, ...] = (),
    content: str = "",
) -> MemoryV2:
    """A valid v2 lesson with the given claim, domain, tags and content."""
    created = format_ts(NOW - timedelta(days=1))
    return MemoryV2.from_obj(
        {
            "schema_version": "2.0",
            "id": MEMORY_ID,
            "type": "AC",
            "content": content or "Run database migrations before restarting the api service.",
            "confidence": confidence,
            "context": {"domain": domain, "environment": "staging"},
            "provenance": {
                "source_agent_id": IDS[0].node_id,
                "source_type": "empirical",
                "created_at": created,
                "updated_at": created,
            },
            "metadata": {"tags": list(tags)},
            "confidence_interval": {"mean": confidence, "std_dev": 0.1},
        }
    )
