"""Records the suite builds in many places, built one way: a stored lesson (``lesson_row``,
and the publishable local lesson the sharing tests start from, ``publishable_lesson``), its
embedding (``unit_vector``), a quarantine row holding a signed record (``held_row``), and an
outcome record as the dict an agent sends (``kind: outcome``), with one ``pytest`` check that
passed or failed. Every builder takes keyword overrides for any field.

Also a node's servicers and servers wired as the daemon wires them, without a daemon: a
PeerService over a stand-in network side (``peer_service``), and the two real servers before
the store exists (``serve_node``), with the parts a test publishes as the daemon does once
started."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from lamarck.consensus.params import QuorumParams
from lamarck.domain.rows import LessonRow, LessonStatus, QuarantineRow
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
from lamarck.proto.clock import Clock, SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S, SignedMemory
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.port import ReputationSink

#: The instant a built lesson is made and last updated at unless a test gives its own.
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def unit_vector(dim: int, *values: float) -> np.ndarray:
    """A ``dim``-dimensional float32 vector starting with ``values`` (none given: 1.0, the
    unit vector along the first axis), zeros after."""
    out = np.zeros(dim, dtype=np.float32)
    values = values or (1.0,)
    out[: len(values)] = values
    return out


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
