"""What a node's start-up builds before anything runs: its identity key and ``node.json`` in
its home, the ``NodeContext`` its servicers read, and its AgentService
(``lamarck.node.daemon`` runs them)."""

from __future__ import annotations

import importlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from lamarck.domain.embedder import Embedder
from lamarck.node.api.server import NodeContext, UnimplementedAgentService
from lamarck.node.config import NodeSettings
from lamarck.node.params import NodeParams
from lamarck.node.peer_tls import PeerTls
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import identity_path, init_keys, load_private_key
from lamarck.proto.v1 import agent_pb2_grpc

__all__ = [
    "NODE_FILE",
    "default_agent_factory",
    "load_or_create_identity",
    "node_context",
    "read_node_file",
    "write_atomically",
]

_log = logging.getLogger("lamarck.node.daemon")

#: ``<home>/node.json``: where a running node says who it is and where it listens.
NODE_FILE = "node.json"


def load_or_create_identity(home: Path) -> NodeIdentity:
    """The home's identity: loaded from ``keys/identity.pem``, created on first start."""
    path = identity_path(home)
    if path.exists():
        return load_private_key(path)
    identity = init_keys(home)
    _log.info("created node identity", extra={"node_id": identity.node_id, "path": str(path)})
    return identity


def node_context(
    settings: NodeSettings,
    identity: NodeIdentity,
    clock: Clock,
    embedder: Embedder,
    params: NodeParams,
    *,
    database: str = "",
    agent_token: str | None = None,
    operator_token: str | None = None,
    peer_tls: PeerTls | None = None,
) -> NodeContext:
    """What the servicers read, with the pieces of the node's one ``params`` they use (the
    servers never see the whole tree)."""
    return NodeContext(
        settings=settings,
        identity=identity,
        clock=clock,
        embedder=embedder,
        peer_limits=params.peer_limits,
        quorum=params.quorum,
        max_future_skew_s=params.importing.max_future_skew_s,
        health=params.health,
        learning=params.learning,
        reputation_params=params.reputation,
        database=database,
        agent_token=agent_token,
        operator_token=operator_token,
        peer_tls=peer_tls,
    )


def default_agent_factory(ctx: NodeContext) -> agent_pb2_grpc.AgentServiceServicer:
    """The AgentService of ``lamarck.node.api.agent_service``, or a placeholder without it.

    That module provides ``make_agent_servicer(ctx)`` or an ``AgentService(ctx)`` class.
    """
    try:
        # Imported by name: the module is optional (built separately), not a static dependency.
        module: Any = importlib.import_module("lamarck.node.api.agent_service")
    except ImportError:
        _log.warning("AgentService is not installed; agent calls answer UNIMPLEMENTED")
        return UnimplementedAgentService()
    if hasattr(module, "make_agent_servicer"):
        servicer: agent_pb2_grpc.AgentServiceServicer = module.make_agent_servicer(ctx)
        return servicer
    servicer = module.AgentService(ctx)
    return servicer


def read_node_file(home: Path) -> dict[str, Any] | None:
    """The running node's ``node.json``, or ``None`` when there is none (or it is torn)."""
    try:
        data = json.loads((Path(home) / NODE_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def write_atomically(path: Path, text: str) -> None:
    # Readers poll this file: write aside and rename, so they never see half of it. Mode
    # 0600 from creation: node.json holds the console's one-time login URL.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
