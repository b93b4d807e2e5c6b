"""An in-process node with its agent service over gRPC (the ``node`` and ``other`` fixtures) and
the lesson its loop learns: shared by the agent-service tests."""

from __future__ import annotations

import hashlib
import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
import numpy as np
import numpy.typing as npt

from lamarck.client import AsyncClient
from lamarck.domain.embedder import Embedder
from lamarck.learning.params import LearningParams
from lamarck.node.api.agent_service import AgentServicer
from lamarck.node.api.interceptors import ErrorInterceptor
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import agent_pb2_grpc
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from lamarck.reputation.transfer import TransferParams
from tests.factories import outcome_obj

PROJECT = "a1" * 32

BAD, GOOD, TARGET = "shell:pytest tests/", "shell:pytest", "the test suite"
CONTEXT = {"domain": "python-testing", "environment": "linux", "tools": ["pytest"]}


class TinyEmbedder(Embedder):
    """Deterministic bag-of-words hashing: related texts are similar."""

    name = "tiny"
    dim = 64

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, 0] = 0.1  # never a zero vector
            for word in re.findall(r"\w+", text.lower()):
                slot = int(hashlib.sha256(word.encode()).hexdigest(), 16) % (self.dim - 1) + 1
                out[row, slot] += 1.0
            out[row] /= np.linalg.norm(out[row])
        return out


@dataclass
class Node:
    """One in-process node: its store, clock, identity, server and SDK client."""

    store: InMemoryLessonStore
    clock: FixedClock
    identity: NodeIdentity
    server: grpc.aio.Server
    address: str
    client: AsyncClient
    stub: agent_pb2_grpc.AgentServiceStub
    pipeline: ImportPipeline
    registry: Registry | None
    n: int = 0

    def outcome(
        self,
        session: str,
        steps: Sequence[tuple[str, str, str | None]],
        *,
        passed: bool = True,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An outcome record (as the dict the SDK sends) for one turn."""
        self.n += 1
        return outcome_obj(
            outcome_id=str(uuid.UUID(int=random.Random(self.n).getrandbits(128), version=4)),
            session_id=session,
            turn_index=self.n,
            project=PROJECT,
            goal_digest=f"make the test suite pass, turn {self.n}",
            steps=steps,
            created_at=self.clock.now(),
            passed=passed,
            **(extra or {}),
        )


class Registry:
    """``KeyPins`` over the identities a node's registry knows (none: no registry at all)."""

    def __init__(self, known: Sequence[NodeIdentity]) -> None:
        self.keys = {i.node_id: i.public_key_b64 for i in known}

    async def pinned_key(self, node_id: str) -> str | None:
        return self.keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


async def start_node(
    seed: int,
    known: Sequence[NodeIdentity] | None = None,
    learning: LearningParams | None = None,
) -> Node:
    """Build a node around a fresh in-memory store and serve it on loopback; ``known`` are
    the identities its registry knows (``None``: the node has no registry)."""
    store = InMemoryLessonStore(dim=TinyEmbedder.dim)
    clock = FixedClock()
    identity = NodeIdentity.from_seed(bytes([seed]) * 32)
    service = LessonService(
        store,
        TinyEmbedder(),
        clock,
        learning or LearningParams(),
        rng=random.Random(seed),
        transfer=TransferParams(),
    )
    book = InMemoryReputation(ReputationParams(), clock)
    registry = Registry(known) if known is not None else None
    pipeline = ImportPipeline(
        params=ImportParams(),
        store=store,
        view=StoreImportView(store, book, identity.node_id),
        pins=registry,
        reputation=book,
        embedder=TinyEmbedder(),
        clock=clock,
        rng=random.Random(seed),
    )
    servicer = AgentServicer(
        service, identity, clock, store=store, pipeline=pipeline, sink=lambda: book
    )
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    agent_pb2_grpc.add_AgentServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    address = f"127.0.0.1:{port}"
    client = AsyncClient(address, timeout=10.0)
    channel = grpc.aio.insecure_channel(address)
    stub = agent_pb2_grpc.AgentServiceStub(channel)
    return Node(store, clock, identity, server, address, client, stub, pipeline, registry)


async def learn(node: Node, session: str = "s1") -> str:
    """Failed BAD on TARGET → ok GOOD on TARGET → passed: the loop learns one lesson."""
    result = await node.client.record_outcome(
        node.outcome(session, [(BAD, "failed", TARGET), (GOOD, "ok", TARGET)])
    )
    [lesson_id] = result.ids("created")
    return lesson_id
