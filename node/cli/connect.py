"""Finding the node that runs on a home, and an SDK client to it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lamarck.client import Client
from lamarck.errors import CliError

__all__ = ["NODE_FILE", "client_for", "running_node"]

#: Written by the daemon (``lamarck.node.daemon.NODE_FILE``); read here without importing
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


def running_node(home: Path) -> dict[str, Any]:
    """The running node's ``node.json``; ``CliError(reason="not_running")`` if none runs."""
    path = home / NODE_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CliError(
            f"no node is running on {home} (no {NODE_FILE})", reason="not_running"
        ) from None
    except (OSError, ValueError) as e:
        raise CliError(f"cannot read {path}: {e}", reason="not_running") from e
    if not isinstance(info, dict):
        raise CliError(f"{path} is not a JSON object", reason="not_running")
    pid = info.get("pid")
    if not isinstance(pid, int) or not _pid_alive(pid):
        # A node killed hard (SIGKILL, power loss) cannot remove its node.json.
        raise CliError(
            f"no node is running on {home} ({NODE_FILE} names pid {pid}, which has exited)",
            reason="not_running",
        )
    return info


def client_for(home: Path) -> Client:
    """An SDK client to the node running on ``home`` (checked alive first, for a clear error)."""
    running_node(home)
    return Client.from_home(home)
