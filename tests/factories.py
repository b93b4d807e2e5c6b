"""Records the suite builds in many places, built one way: a stored lesson (``lesson_row``,
and the publishable local lesson the sharing tests start from, ``publishable_lesson``), its
embedding (``unit_vector``), a quarantine row holding a signed record (``held_row``), an
outcome record as the dict an agent sends (``kind: outcome``), with one ``pytest`` check that
passed or failed, a node's keys (``identity``), the lesson record peers exchange as a wire
dict (``memory_obj``) and signed by its source (``signed_record``; one of many told apart by
number, ``numbered_record``), and the signed vote (``signed_vote``) and attestation
(``attestation``) peers send about one. Every builder takes keyword overrides for any field;
times are arguments (``T0`` unless given), and ids and keys come from numbers or seeds, the
same every run.

Also a node's servicers and servers wired as the daemon wires them, without a daemon: a
PeerService over a stand-in network side (``peer_service``), and the two real servers before
the store exists (``serve_node``), with the parts a test publishes as the daemon does once
started."""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from lamarck.consensus.attestation import Attestation, make_attestation
from lamarck.consensus.params import QuorumParams
from lamarck.consensus.votes import Verdict
from lamarck.domain.rows import LessonRow, LessonStatus, QuarantineRow
from lamarck.learning.params import SecretParams
from lamarck.node.api.limits import PeerLimits
from lamarck.node.api.network_side import NetworkSide
from lamarck.node.api.node_status import ReputationSource
from lamarck.node.api.operator_service import make_operator_servicer
from lamarck.node.api.peer_service import PeerService
from lamarck.node.api.ready import Ready
from lamarck.node.api.server import NodeServers, UnimplementedAgentService, build_servers
from lamarck.node.config import NodeSettings
from lamarck.node.lessons.service import LessonService
from lamarck.node.params import node_params
from lamarck.node.startup import peer_servicer
from lamarck.node.store.port import LessonStore
from lamarck.policy.chain import secret_filter as chain_secret_filter
from lamarck.policy.filters import SecretFilter
from lamarck.proto.clock import Clock, SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S, SignedMemory
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts
from lamarck.proto.vote import Vote
from lamarck.reputation.port import ReputationSink

#: The instant a built lesson is made and last updated at unless a test gives its own.
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: The id a built memory record has unless a test gives its own (the publishable lesson's).
RECORD_ID = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"
#: The source a built memory record names unless it is signed (a node id no key backs).
UNSIGNED_SOURCE = "lmk1" + "a" * 32


def uid(n: int) -> str:
    """The uuid4 string numbered ``n``: the same every run."""
    return str(uuid.UUID(int=n, version=4))


def identity(seed: int) -> NodeIdentity:
    """The node whose Ed25519 seed is the byte ``seed`` (0-255) 32 times: the same keys and
    node id every run, so a test's identities are named by number."""
    return NodeIdentity.from_seed(bytes([seed]) * 32)


def unit_vector(dim: int, *values: float) -> np.ndarray:
    """A ``dim``-dimensional float32 vector starting with ``values`` (none given: 1.0, the
    unit vector along the first axis), zeros after."""
    out = np.zeros(dim, dtype=np.float32)
    values = values or (1.0,)
    out[: len(values)] = values
    return out


def secret_filter(params: SecretParams | None = None) -> SecretFilter:
    """The import's secret filter (``policy.chain.secret_filter``) with ``params`` (default:
    the node's default secret params)."""
    return chain_secret_filter(params or SecretParams())


def lesson_row(
    lesson_id: str = "l",
    *,
    at: datetime = T0,
    dim: int | None = None,
    **fields: Any,
) -> LessonRow:
    """An active global lesson about ``pytest`` (content ``lesson <id>``, confidence 0.5) made
    and last updated ``at``; ``dim`` gives it an embedding (``unit_vector(dim)``); ``fields``
    replace any field (a ``created_at`` alone leaves ``updated_at`` at ``at``)."""
    base: dict[str, Any] = dict(
        id=lesson_id,
        content=f"lesson {lesson_id}",
        operation="pytest",
        scope="global",
        status=LessonStatus.ACTIVE,
        confidence=0.5,
        created_at=at,
        updated_at=at,
    )
    if dim is not None:
        base["embedding"] = unit_vector(dim)
    base.update(fields)
    return LessonRow(**base)


def held_row(
    held_id: str,
    record: SignedMemory,
    *,
    received_at: datetime = T0,
    reasons: tuple[str, ...] = ("unverified_high_confidence", "statistical_outlier"),
    **fields: Any,
) -> QuarantineRow:
    """A pending quarantine row holding the signed ``record`` (its bytes, hash and source),
    held for the two reasons a confident record from an unknown peer gets; ``fields``
    replace the rest (``state``, ``confidence``, ``transfer_rule``)."""
    return QuarantineRow(
        id=held_id,
        content_hash=record.content_hash,
        source_node_id=record.source_agent_id,
        reasons=reasons,
        received_at=received_at,
        signed_record=record.raw,
        **fields,
    )


def publishable_lesson(**fields: Any) -> LessonRow:
    """A local lesson this node would publish: confirmed by one outcome, about
    ``deploy.restart``, confidence 0.8, made two days and updated one day before ``T0``."""
    base: dict[str, Any] = dict(
        content="Run database migrations before restarting the api service.",
        operation="deploy.restart",
        confidence=0.8,
        created_at=T0 - timedelta(days=2),
        updated_at=T0 - timedelta(days=1),
        evidence=("0b9c2d3e-4a5b-4c6d-8e7f-0123456789ab",),
    )
    base.update(fields)
    return lesson_row(base.pop("id", "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"), **base)


def outcome_obj(
    *,
    outcome_id: str,
    session_id: str,
    turn_index: int,
    project: str,
    goal_digest: str,
    steps: Sequence[tuple[str, str, str | None]],
    created_at: datetime | str,
    passed: bool = True,
    claim_ok: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """One turn's outcome: ``steps`` are ``(operation_key, outcome, target)`` in order;
    ``created_at`` a time (or the exact text to send); ``extra`` adds fields (``in_play``,
    ``injected_instruction``, ...) or replaces the defaults (``tokens``, ``wall_s``)."""
    return {
        "schema_version": "1.0",
        "kind": "outcome",
        "id": outcome_id,
        "session_id": session_id,
        "turn_index": turn_index,
        "project": project,
        "goal_digest": goal_digest,
        "approach": [
            {"operation_key": op, "outcome": result, "target": target}
            for op, result, target in steps
        ],
        "checks": [
            {
                "label": "pytest",
                "target": "",
                "kind": "test",
                "order": 0,
                "ran": True,
                "failed": not passed,
                "mutated_after": False,
            }
        ],
        "passed": passed,
        "claim_ok": claim_ok,
        "steps": len(steps),
        "tokens": 100,
        "wall_s": 1.0,
        "created_at": created_at if isinstance(created_at, str) else format_ts(created_at),
        **extra,
    }


# -- a node's servicers and servers, wired as the daemon wires them ---------------------------


def peer_service(home: Path, sharing: Any, *, limits: PeerLimits | None = None) -> PeerService:
    """A PeerService whose network side is ``sharing`` (a stand-in with what the test's calls
    read), served as a started node serves it; its store is not ready (no RequestVote)."""
    return PeerService(
        NodeIdentity.generate(),
        SystemClock(),
        limits=limits or PeerLimits(),
        home=home,
        addresses=(),
        domains=(),
        sharing=lambda: sharing,
        store=Ready[LessonStore]("the node").get,
        quorum=QuorumParams(),
        max_future_skew_s=DEFAULT_MAX_FUTURE_SKEW_S,
    )


@dataclass
class ServedNode:
    """A node's two real servers (every interceptor) before its store exists, its
    PeerService, and the parts the daemon publishes once started (a test ``set``s them)."""

    servers: NodeServers
    peer: PeerService
    #: The clock the servicers read.
    clock: Clock
    store: Ready[LessonStore]
    lessons: Ready[LessonService]
    network: Ready[NetworkSide]
    book: Ready[ReputationSink]
    table: Ready[ReputationSource]


async def serve_node(
    settings: NodeSettings,
    *,
    identity: NodeIdentity,
    clock: Clock,
    operator_token: str,
    agent_token: str | None = None,
    peer_kind: type[PeerService] = PeerService,
) -> ServedNode:
    """Start the servers of a node on ``settings`` with the daemon's PeerService (of
    ``peer_kind``) and OperatorService and a placeholder AgentService; stop them with
    ``served.servers.stop``."""
    params = node_params(settings)
    store = Ready[LessonStore]("the node")
    lessons = Ready[LessonService]("the node")
    network = Ready[NetworkSide]("sharing")
    book = Ready[ReputationSink]("the reputation book")
    table = Ready[ReputationSource]("the reputation table")
    made: list[PeerService] = []

    def peer(bound: str) -> PeerService:
        made.append(
            peer_servicer(
                settings,
                identity,
                clock,
                params,
                bound_address=bound,
                store=store,
                network=network,
                kind=peer_kind,
            )
        )
        return made[0]

    def known_peer(metadata: Any) -> str | None:
        side = network.peek()
        return side.membership.known_peer(metadata) if side is not None else None

    servers = await build_servers(
        settings,
        peer_limits=params.peer_limits,
        peer_tls=None,
        operator_token=operator_token,
        agent_token=agent_token,
        known_peer=known_peer,
        peer_servicer=peer,
        agent_servicer=UnimplementedAgentService(),
        operator_servicer=make_operator_servicer(
            identity.node_id,
            clock,
            health=params.health,
            learning=params.learning,
            store=store,
            network=network,
            book=book,
            table=table,
        ),
    )
    return ServedNode(servers, made[0], clock, store, lessons, network, book, table)


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


def memory_obj(
    *,
    created: datetime = T0 - timedelta(days=3),
    evidence_at: datetime | None = None,
    outcome_id: str = uid(7),
    **over: Any,
) -> dict[str, Any]:
    """A wire-shaped v2 memory record (unsigned): an active, public lesson about
    ``deploy.restart`` (domain ``deploy``, confidence 0.7) made ``created``, its one piece of
    evidence reality's verdict on ``outcome_id`` at ``evidence_at`` (when it was made unless
    given). ``over`` deep-merges: a dict
    merges into the field's dict (``lesson={"operation": ...}`` keeps scope and status), any
    other value replaces it, and a ``"-key": None`` entry removes ``key`` at that level."""
    stamp = format_ts(created)
    base: dict[str, Any] = {
        "schema_version": "2.0",
        "id": RECORD_ID,
        "type": "AC",
        "content": "Run database migrations before restarting the api service.",
        "confidence": 0.7,
        "access_level": "public",
        "context": {"domain": "deploy", "environment": "staging", "tools": ["alembic"]},
        "provenance": {
            "source_agent_id": UNSIGNED_SOURCE,
            "source_type": "empirical",
            "created_at": stamp,
            "updated_at": stamp,
        },
        "evidence": [
            {
                "type": "empirical",
                "description": "migration ran, service healthy",
                "timestamp": format_ts(evidence_at or created),
                "validator": "reality",
                "outcome_id": outcome_id,
            }
        ],
        "lesson": {"operation": "deploy.restart", "scope": "global", "status": "active"},
        "confidence_interval": {"mean": 0.7, "std_dev": 0.1},
    }
    return _merge(base, over)


def signed_record(by: NodeIdentity, **over: Any) -> SignedMemory:
    """``memory_obj(**over)`` naming ``by`` as its source and signed by ``by`` (``.raw`` is
    the bytes a peer sends)."""
    obj = memory_obj(**over)
    obj["provenance"]["source_agent_id"] = by.node_id
    return SignedMemory.sign(MemoryV2.from_obj(obj), by)


def numbered_record(n: int, by: NodeIdentity, **over: Any) -> SignedMemory:
    """Record ``n`` signed by ``by``, one of many a test tells apart by number: id ``uid(n)``,
    a content naming ``n``, a confident claim (0.95), its evidence outcome ``uid(1000 + n)``;
    ``over`` as in ``memory_obj``."""
    fields: dict[str, Any] = dict(
        id=uid(n),
        content=f"Run database migrations before restarting api service {n}.",
        confidence=0.95,
        confidence_interval={"mean": 0.95},
        outcome_id=uid(1000 + n),
    )
    return signed_record(by, **{**fields, **over})


def signed_vote(
    by: NodeIdentity,
    verdict: Verdict,
    *,
    memory_id: str,
    memory_hash: str,
    at: datetime = T0,
    n: int = 0,
    confidence: float = 0.9,
    **over: Any,
) -> Vote:
    """``by``'s vote on the record ``memory_id`` whose content hash is ``memory_hash``, cast
    ``at`` and signed by ``by``: vote ``uid(1000 + n)`` naming its own outcome
    ``uid(2000 + n)`` (an abstention names none and carries no confidence). ``over`` replaces
    top-level fields before signing."""
    obj: dict[str, Any] = {
        "schema_version": "1.0",
        "kind": "vote",
        "id": uid(1000 + n),
        "memory_id": memory_id,
        "memory_hash": memory_hash,
        "voter_id": by.node_id,
        "verdict": verdict.value,
        "confidence": confidence if verdict is not Verdict.ABSTAIN else 0.0,
        "outcome_ids": [] if verdict is Verdict.ABSTAIN else [uid(2000 + n)],
        "created_at": format_ts(at),
        **over,
    }
    return Vote.from_obj(sign_object(RecordKind.vote, obj, by))


def attestation(
    by: NodeIdentity,
    memory_hash: str,
    confirmed: bool = True,
    *,
    at: datetime = T0,
    outcome: str = "ee" * 32,
    seed: int | str = 0,
) -> Attestation:
    """``by``'s signed attestation, made ``at``, that its outcome (digest ``outcome``)
    confirmed (or contradicted) the lesson version ``memory_hash``; ``seed`` seeds the
    ``random.Random`` its id is drawn from."""
    return make_attestation(
        identity=by,
        memory_hash=memory_hash,
        confirmed=confirmed,
        outcome=outcome,
        now=at,
        rng=random.Random(seed),
    )
