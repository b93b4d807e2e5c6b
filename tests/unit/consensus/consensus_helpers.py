"""What the consensus tests share: their identities and record, votes on it (from
``tests.factories.signed_vote``), forged and tampered ones."""

from __future__ import annotations

from datetime import datetime, timedelta

from lamarck.consensus.votes import Verdict
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.vote import Vote
from tests.factories import T0, identity, memory_obj, signed_vote, uid

NOW = T0
RECORD_HASH = "ab" * 32
OTHER_HASH = "cd" * 32
MEMORY_ID = uid(1)

#: Twelve fixed identities: tests index into them.
IDS: tuple[NodeIdentity, ...] = tuple(identity(k + 1) for k in range(12))


def vote(
    who: NodeIdentity,
    verdict: Verdict,
    *,
    record_hash: str = RECORD_HASH,
    at: datetime = NOW,
    n: int = 0,
    confidence: float = 0.9,
) -> Vote:
    """A vote by ``who`` on MEMORY_ID, signed by ``who``; ``n`` varies its id (a second,
    distinct vote)."""
    return signed_vote(
        who,
        verdict,
        memory_id=MEMORY_ID,
        memory_hash=record_hash,
        at=at,
        n=n,
        confidence=confidence,
    )


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
    """A valid v2 lesson (MEMORY_ID, by IDS[0], a day old) with the given claim, domain, tags
    and content (``memory_obj``'s unless given)."""
    obj = memory_obj(
        id=MEMORY_ID,
        created=NOW - timedelta(days=1),
        confidence=confidence,
        confidence_interval={"mean": confidence},
        context={"domain": domain},
        provenance={"source_agent_id": IDS[0].node_id},
        metadata={"tags": list(tags)},
        **({"content": content} if content else {}),
    )
    return MemoryV2.from_obj(obj)
