"""Start, watch and stop real node processes on one machine (fleets, benches, tests).

One copy of the launch machinery: ``lamarck fleet up`` and ``bench/sharing.py`` both start
nodes with it. A node is ``python -m lamarck.node.daemon`` with flags built from
``NodeSettings`` field names (:func:`node_command`); it is *serving* once the ``node.json``
it writes in its home names its own pid and says so (:func:`await_serving`). Every process
started here runs in a session of its own, so a Ctrl-C at the terminal reaches only the
supervisor, which then stops the nodes first and the shared servers after them.

* :class:`SharedPostgres` — one embedded PostgreSQL (pgserver) with a database per node, or
  databases made on a server the user names by DSN.
* :func:`check_ports_free` — refuse a busy port before anything starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from lamarck.errors import ConfigError, StoreUnavailable
from lamarck.node.store.embedded import EmbeddedPostgres, default_server_settings

__all__ = [
    "LaunchParams",
    "NodeProcess",
    "SharedPostgres",
    "await_serving",
    "check_ports_free",
    "node_command",
    "node_env",
    "pid_alive",
    "port_is_free",
    "spawn_node",
    "stop_nodes",
    "stop_pid",
]


@dataclass(frozen=True, slots=True)
class LaunchParams:
    """Bounds of starting and stopping node processes, validated when built."""

    # Bound on every node of a group serving (first start runs initdb on a loaded machine). > 0.
    start_timeout_s: float = 180.0
    # Bound on a node's clean stop after SIGTERM; it is killed after that. > 0.
    stop_timeout_s: float = 20.0
    # How often node.json files are read while waiting (a bounded poll, not a guess). > 0.
    poll_s: float = 0.05
    # Connections the shared PostgreSQL accepts (each node keeps a pool). Integer >= 20.
    postgres_max_connections: int = 400

    def __post_init__(self) -> None:
        """Refuse non-positive or non-finite bounds."""
        for name in ("start_timeout_s", "stop_timeout_s", "poll_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 < value < float("inf"):
                raise ConfigError(f"invalid {name}={value!r}: must be finite and > 0", field=name)
        if self.postgres_max_connections < 20:
            raise ConfigError(
                "invalid postgres_max_connections: must be at least 20",
                field="postgres_max_connections",
            )


def node_command(home: Path, flags: Mapping[str, Any]) -> list[str]:
    """The command line of a node on ``home``: ``flags`` are ``NodeSettings`` field names.

    ``None``/``False`` leave a flag out, ``True`` passes a boolean flag, a list or tuple
    repeats it.
    """
    argv = [sys.executable, "-m", "lamarck.node.daemon", "--home", str(home)]
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list | tuple):
            argv += [f"{flag}={item}" for item in value]
        else:
            # ``--flag=value``: a value may start with "-" (a base64url key does, 1 in 64).
            argv.append(f"{flag}={value}")
    return argv


def node_env() -> dict[str, str]:
    """Our environment without any ``LAMARCK_*`` setting (flags say everything)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LAMARCK_")}


@dataclass
class NodeProcess:
    """A node process and where to reach it (filled in from its ``node.json``)."""

    name: str
    home: Path
    log_path: Path
    process: subprocess.Popen[bytes]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        """The node's process id."""
        return self.process.pid

    @property
    def node_id(self) -> str:
        """The node's id ("" before it serves)."""
        return str(self.info.get("node_id", ""))

    @property
    def agent_addr(self) -> str:
        """The agent API address as the node reported it."""
        return str(self.info.get("agent_listen", ""))

    @property
    def peer_addr(self) -> str:
        """The peer API address as the node reported it."""
        return str(self.info.get("listen", ""))

    @property
    def metrics_url(self) -> str:
        """The Prometheus endpoint ("" when metrics are off)."""
        return str(self.info.get("metrics_url", ""))

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the node's output (for error messages)."""
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]


def spawn_node(
    name: str, home: Path, flags: Mapping[str, Any], *, log_path: Path | None = None
) -> NodeProcess:
    """Start a node without waiting; stdout and stderr go to ``log_path`` (``home/node.log``)."""
    home.mkdir(parents=True, exist_ok=True)
    log = log_path if log_path is not None else home / "node.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            node_command(home, flags),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=node_env(),
            # Its own session: a terminal's Ctrl-C reaches the supervisor only, which stops
            # the nodes in order (nodes before the servers they use).
            start_new_session=True,
        )
    return NodeProcess(name=name, home=home, log_path=log, process=process)


def _read_info(home: Path, pid: int) -> dict[str, Any] | None:
    try:
        info = json.loads((home / "node.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    # A node.json left by an earlier process on this home is not this node's.
    return info if isinstance(info, dict) and info.get("pid") == pid else None


def await_serving(nodes: Sequence[NodeProcess], params: LaunchParams) -> None:
    """Wait (bounded poll of each ``node.json``) until every node serves; fill in ``info``.

    Raises ``StoreUnavailable`` (reason ``node_exited``) with the log tail when a node exits,
    and reason ``start_timeout`` when some are not serving in time.
    """
    deadline = time.monotonic() + params.start_timeout_s
    waiting = list(nodes)
    while waiting:
        for node in list(waiting):
            if node.process.poll() is not None:
                raise StoreUnavailable(
                    f"{node.name} exited with {node.process.returncode} while starting:\n"
                    + node.log_tail(),
                    reason="node_exited",
                )
            info = _read_info(node.home, node.pid)
            if info is not None and info.get("serving"):
                node.info = info
                waiting.remove(node)
        if waiting and time.monotonic() > deadline:
            names = ", ".join(n.name for n in waiting)
            raise StoreUnavailable(
                f"not serving within {params.start_timeout_s:.0f}s: {names}",
                reason="start_timeout",
            )
        if waiting:
            time.sleep(params.poll_s)  # a bounded poll of the nodes' own reports


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (a zombie of ours counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
    return True


def stop_pid(pid: int, timeout_s: float, poll_s: float) -> bool:
    """SIGTERM ``pid``, wait up to ``timeout_s``, SIGKILL if still there; True if it stopped
    on SIGTERM."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return False
        time.sleep(poll_s)
    return True


def stop_nodes(nodes: Sequence[NodeProcess], params: LaunchParams) -> list[int]:
    """SIGTERM every node, wait for all, kill whoever outlives ``stop_timeout_s``; exit codes."""
    for node in nodes:
        if node.process.poll() is None:
            node.process.send_signal(signal.SIGTERM)
    codes = []
    deadline = time.monotonic() + params.stop_timeout_s
    for node in nodes:
        try:
            codes.append(node.process.wait(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            node.process.kill()
            codes.append(node.process.wait(timeout=10))
    return codes


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (TCP): nothing listens there.
    Connections a stopped fleet left in TIME-WAIT do not count: the nodes' servers set
    ``SO_REUSEADDR`` as the probe does, so a fleet started again at once can bind."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def check_ports_free(host: str, ports: Sequence[int]) -> None:
    """Refuse with ``ConfigError`` (reason ``port_busy``) naming the first busy port."""
    for port in ports:
        if not 0 < port < 65536:
            raise ConfigError(f"port {port} is out of range", reason="bad_port", field="base_port")
        if not port_is_free(host, port):
            raise ConfigError(
                f"{host}:{port} is busy (another fleet or program listens there); "
                "pick another --base-port",
                reason="port_busy",
                port=port,
            )


class SharedPostgres:
    """One PostgreSQL for a group of nodes, a database per node.

    Embedded (pgserver, data in ``<dir>/pgdata``) unless ``dsn`` names a server; then the
    databases are made there (named after the DSN's database plus a suffix). One server
    instead of one per node: a node starts in about half the time, and N nodes do not each
    hold their own shared buffers.
    """

    def __init__(self, directory: Path, params: LaunchParams, dsn: str = "") -> None:
        self.directory = directory
        self._params = params
        self._dsn = dsn
        self._embedded: EmbeddedPostgres | None = None

    @property
    def embedded(self) -> bool:
        """Whether this is the embedded server."""
        return not self._dsn

    def start(self) -> None:
        """Start the embedded server (nothing to do for a DSN)."""
        if self._dsn:
            return
        settings = {
            **default_server_settings(),
            "max_connections": str(self._params.postgres_max_connections),
            "shared_buffers": "128MB",
        }
        self._embedded = EmbeddedPostgres(self.directory, database="postgres", settings=settings)
        self._embedded.start()

    def postmaster_pid(self) -> int | None:
        """The embedded server's pid (from ``postmaster.pid``), if it runs."""
        try:
            return int((self.directory / "pgdata" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def create_database(self, name: str) -> str:
        """Create (or reuse) database ``name``; return its DSN."""
        if not name.replace("_", "").isalnum():
            raise ConfigError(f"bad database name {name!r}", reason="bad_setting")
        if self._embedded is not None:
            exists = self._embedded.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'")
            if exists != "1":
                self._embedded.psql(f'CREATE DATABASE "{name}"')
            return self._embedded.dsn_for(name)
        return _create_on_server(self._dsn, name)

    def drop_database(self, name: str) -> None:
        """Drop a database made on a user's server (the embedded one is deleted whole)."""
        if self._dsn:
            _run_sql(self._dsn, f'DROP DATABASE IF EXISTS "{_external_name(self._dsn, name)}"')

    def stop(self) -> None:
        """Stop the embedded server (a user's server is left running)."""
        if self._embedded is not None:
            self._embedded.stop()
            self._embedded = None


def _external_name(dsn: str, name: str) -> str:
    base = urlsplit(dsn).path.lstrip("/") or "lamarck"
    return f"{base}_{name}"


def _run_sql(dsn: str, sql: str) -> None:
    import asyncio

    import asyncpg

    async def run() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    try:
        asyncio.run(run())
    except (OSError, asyncpg.PostgresError) as e:
        raise StoreUnavailable(f"{sql!r} failed on the given server: {e}", reason="sql") from e


def _create_on_server(dsn: str, name: str) -> str:
    full = _external_name(dsn, name)
    import asyncio

    import asyncpg

    async def run() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", full):
                await conn.execute(f'CREATE DATABASE "{full}"')
        finally:
            await conn.close()

    try:
        asyncio.run(run())
    except (OSError, asyncpg.PostgresError) as e:
        raise StoreUnavailable(
            f"cannot create database {full!r} on the given server: {e}", reason="create_database"
        ) from e
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + full, parts.query, parts.fragment))
