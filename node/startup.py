"""What a node's start-up builds before anything runs: its identity key and ``node.json`` in
its home, and its PeerService (``lamarck.node.daemon`` runs them)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from lamarck.node.api.network_side import NetworkSide
from lamarck.node.api.peer_service import PeerService
from lamarck.node.api.ready import Ready, while_ready
from lamarck.node.config import NodeSettings
from lamarck.node.params import NodeParams
from lamarck.node.store.port import LessonStore
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import identity_path, init_keys, load_private_key

__all__ = [
    "NODE_FILE",
    "load_or_create_identity",
    "peer_servicer",
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


def peer_servicer(
    settings: NodeSettings,
    identity: NodeIdentity,
    clock: Clock,
    params: NodeParams,
    *,
    bound_address: str,
    store: Ready[LessonStore],
    network: Ready[NetworkSide],
    kind: type[PeerService] = PeerService,
) -> PeerService:
    """The node's PeerService once its peer port is bound at ``bound_address``: the network
    side is served only while the store is (``starting`` otherwise), and peers are told the
    advertised address first."""
    advertised = [settings.advertise_address] if settings.advertise_address else []
    side = while_ready(store, network)
    return kind(
        identity,
        clock,
        limits=params.peer_limits,
        home=settings.home,
        addresses=[*advertised, bound_address],
        domains=settings.domains,
        sharing=lambda: side().peers,
        store=store.get,
        quorum=params.quorum,
        max_future_skew_s=params.importing.max_future_skew_s,
    )


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
