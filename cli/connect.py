"""Finding the node that runs on a home, and an SDK client to it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lamarck.client import Client
from lamarck.errors import CliError, LamarckError

__all__ = [
    "NODE_FILE",
    "client_for",
    "fleet_dir",
    "fleet_labels",
    "fleet_node_home",
    "known_labels",
    "running_node",
]

#: Written by the daemon (``lamarck.node.startup.NODE_FILE``); read here without importing
#: the daemon, whose imports (store, servers, embedder) would slow every command's start.
NODE_FILE = "node.json"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


#: The fleet's state file (``lamarck.fleet.supervisor.FLEET_FILE``), read here without
#: importing the fleet.
FLEET_FILE = "fleet.json"


def fleet_dir() -> Path:
    """Where ``lamarck fleet up`` runs by default: ``$LAMARCK_FLEET_DIR``, else ~/.lamarck-fleet."""
    return Path(os.environ.get("LAMARCK_FLEET_DIR") or "~/.lamarck-fleet").expanduser()


def _running_fleet_entries() -> list[dict[str, Any]]:
    """The node entries of the fleet running in ``fleet_dir()`` (empty when none runs)."""
    try:
        state = json.loads((fleet_dir() / FLEET_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(state, dict):
        return []
    pid = state.get("supervisor_pid")
    if not isinstance(pid, int) or not _pid_alive(pid):
        return []
    nodes = state.get("nodes")
    return [n for n in (nodes if isinstance(nodes, list) else []) if isinstance(n, dict)]


def _fleet_nodes() -> dict[str, Path]:
    """The nodes of the fleet running in ``fleet_dir()``, by name (empty when none runs)."""
    return {
        str(n["name"]): Path(str(n["home"]))
        for n in _running_fleet_entries()
        if n.get("name") and n.get("home")
    }


def fleet_labels() -> dict[str, str]:
    """The running fleet's node names (node1..N) by node id, to show beside the ids."""
    return {
        str(n["node_id"]): str(n["name"])
        for n in _running_fleet_entries()
        if n.get("name") and n.get("node_id")
    }


def known_labels(home: Path) -> dict[str, str]:
    """Node id -> human label, to show beside the ids: the running fleet's names (node1..N),
    then the labels the node on ``home`` knows from its registry (its enrollment tokens and
    registrations: they win). The node's are left out if it cannot be asked (not running, no
    operator token readable): the ids are shown alone then, never guessed."""
    labels = fleet_labels()
    try:
        # Imported here: the operator client is only needed on this path.
        from lamarck.operator import OperatorClient

        with OperatorClient.from_home(home) as op:
            served = op.status().get("labels") or {}
    except (LamarckError, OSError):
        return labels
    labels.update({str(k): str(v) for k, v in served.items() if v})
    return labels


def _fleet_hint() -> str:
    """A sentence naming the running fleet's nodes, or "" when no fleet runs."""
    names = sorted(_fleet_nodes(), key=lambda n: (len(n), n))
    if not names:
        return ""
    return f"; a fleet runs in {fleet_dir()} ({', '.join(names)}): pass --node {names[0]}"


def fleet_node_home(name: str) -> Path:
    """The home of the running fleet's node ``name``; ``CliError(reason="unknown_node")``."""
    home = _fleet_nodes().get(name)
    if home is None:
        hint = _fleet_hint() or f"; no fleet runs in {fleet_dir()}"
        raise CliError(
            f"{name} is neither a directory nor a running fleet's node{hint}",
            reason="unknown_node",
        )
    return home


def running_node(home: Path) -> dict[str, Any]:
    """The running node's ``node.json``; ``CliError(reason="node_not_running")`` if none runs.

    The message names the running fleet's nodes when one runs, so that ``lamarck node status``
    typed on a machine running ``make run`` says what to pass.
    """
    path = home / NODE_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CliError(
            f"no node is running on {home} (no {NODE_FILE}){_fleet_hint()}",
            reason="node_not_running",
        ) from None
    except (OSError, ValueError) as e:
        raise CliError(f"cannot read {path}: {e}", reason="node_not_running") from e
    if not isinstance(info, dict):
        raise CliError(f"{path} is not a JSON object", reason="node_not_running")
    pid = info.get("pid")
    if not isinstance(pid, int) or not _pid_alive(pid):
        # A node killed hard (SIGKILL, power loss) cannot remove its node.json.
        raise CliError(
            f"no node is running on {home} ({NODE_FILE} names pid {pid}, which has exited)"
            f"{_fleet_hint()}",
            reason="node_not_running",
        )
    return info


def client_for(home: Path) -> Client:
    """An SDK client to the node running on ``home`` (checked alive first, for a clear error)."""
    running_node(home)
    return Client.from_home(home)
