"""Real node processes for integration tests.

A node is started as ``python -m lamarck.node.daemon`` (embedded Postgres, hashing embedder,
every port on 127.0.0.1:0), and the fixture waits, bounded and by polling, until its health
service reports SERVING. Use it like this::

    def test_something(node_process):
        node = node_process()                         # fresh home under tmp_path
        node = node_process(home, agent_listen="0.0.0.0:0", drain_deadline_s=5)
        with grpc.insecure_channel(node.agent_addr) as channel: ...
        assert node.stop() == 0                       # SIGTERM, wait, exit code

Fixtures:

* ``node_process`` — function scope factory; every node still running at teardown is
  stopped with SIGTERM (and killed if it does not exit in time).
* ``module_node_process`` — the same factory at module scope, to share one node (and one
  Postgres start, several seconds) across the tests of a module.
* ``node_cli`` — ``node_cli(home, **flags) -> (argv, env)`` to run a node yourself (e.g. to
  watch it fail: ``subprocess.run(argv, env=env, ...)``).

Test directories are not packages, so tests take everything through these fixtures; the
returned objects are :class:`RunningNode` (annotate them ``Any`` in test modules).

``start_node(home, **flags)`` is the plain function behind them. Flags are ``NodeSettings``
field names (``listen``, ``agent_listen``, ``metrics_listen``, ``embedder``, ...); a tuple or
list value repeats the flag, ``True`` passes a boolean flag. ``LAMARCK_*`` variables of the
test environment are not passed on, so a developer's settings cannot leak into a test.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lamarck.client import dial_address
from lamarck.fleet import launcher
from lamarck.node.peer_tls import dial_home

#: Flags every test node gets unless the test overrides them.
DEFAULT_FLAGS: dict[str, Any] = {
    "listen": "127.0.0.1:0",
    "agent_listen": "127.0.0.1:0",
    "metrics_listen": "127.0.0.1:0",
    "embedder": "hashing",
    "log_format": "json",
    "drain_deadline_s": 5,
}
#: Bound on a node's start (first start runs initdb: ~5-10 s; slow CI gets headroom).
START_TIMEOUT_S = 90.0
#: Bound on a node's clean stop after SIGTERM.
STOP_TIMEOUT_S = 30.0
_POLL_S = 0.05


@dataclass
class RunningNode:
    """A node process started by :func:`start_node`, and where to reach it."""

    process: subprocess.Popen[bytes]
    home: Path
    #: ``node.json`` as the node wrote it (actual addresses, node id, embedder, database).
    info: dict[str, Any]
    #: Dialable peer and agent API addresses (``127.0.0.1:port`` or ``unix:...``).
    peer_addr: str
    agent_addr: str
    #: ``http://127.0.0.1:port/metrics``, or ``""`` when metrics are off.
    metrics_url: str
    node_id: str
    stdout_path: Path
    stderr_path: Path
    returncode: int | None = field(default=None)

    @property
    def pid(self) -> int:
        """The node's process id."""
        return self.process.pid

    @property
    def agent_token(self) -> str | None:
        """The agent API's bearer token, when it listens beyond loopback."""
        path = self.info.get("agent_token_file") or ""
        return Path(path).read_text().strip() if path else None

    def agent_metadata(self) -> tuple[tuple[str, str], ...]:
        """Call metadata for the agent API (the bearer token when one is needed)."""
        token = self.agent_token
        return (("authorization", f"Bearer {token}"),) if token else ()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM, wait for exit (killed after ``timeout_s``), return the exit code."""
        if self.returncode is None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
            try:
                self.returncode = self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
                raise AssertionError(
                    f"node pid {self.pid} did not stop within {timeout_s}s of SIGTERM\n"
                    + self.stderr()[-4000:]
                ) from None
        return self.returncode

    def peer_channel(self) -> grpc.Channel:
        """A blocking channel to the peer port, made with the node's own TLS certificate
        (which it always trusts), or plaintext when it runs ``off-insecure``."""
        return dial_home(self.home, self.node_id, self.peer_addr, tls=self.info["peer_tls"] == "on")

    def stdout(self) -> str:
        """Everything the node printed to stdout so far."""
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        """Everything the node logged to stderr so far."""
        return self.stderr_path.read_text(errors="replace")


def node_command(home: Path, **flags: Any) -> list[str]:
    """The command line starting a node on ``home`` with ``DEFAULT_FLAGS`` and ``flags`` (the
    fleet launcher's one way of building it: ``--flag=value``, so a value may start with -)."""
    return launcher.node_command(home, {**DEFAULT_FLAGS, **flags})


def node_env() -> dict[str, str]:
    """The environment of a test node: ours without any ``LAMARCK_*`` setting."""
    return launcher.node_env()


def spawn_node(home: Path, **flags: Any) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Start a node process without waiting; output goes to files in ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    stamp = time.monotonic_ns()
    out, err = home / f"node.{stamp}.stdout", home / f"node.{stamp}.stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            node_command(home, **flags),
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=node_env(),
        )
    return process, out, err


def _health_status(home: Path, info: dict[str, Any]) -> int | None:
    address = dial_address(info["listen"])
    try:
        with dial_home(home, info["node_id"], address, tls=info.get("peer_tls") == "on") as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
    except grpc.RpcError:
        return None
    status: int = reply.status
    return status


def start_node(home: Path, *, timeout_s: float = START_TIMEOUT_S, **flags: Any) -> RunningNode:
    """Start a node on ``home`` and return once its peer health service says SERVING."""
    process, out, err = spawn_node(home, **flags)
    deadline = time.monotonic() + timeout_s
    info: dict[str, Any] | None = None
    try:
        while True:
            if process.poll() is not None:
                raise AssertionError(
                    f"node exited with {process.returncode} while starting:\n"
                    + err.read_text(errors="replace")[-4000:]
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"node not SERVING within {timeout_s}s:\n"
                    + err.read_text(errors="replace")[-4000:]
                )
            info = _read_info(home, process.pid)
            if (
                info is not None
                and info.get("serving")
                and _health_status(home, info) == health_pb2.HealthCheckResponse.SERVING
            ):
                break
            # Bounded poll of the node's own report, not a guess at how long start takes.
            time.sleep(_POLL_S)
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        raise
    return RunningNode(
        process=process,
        home=home,
        info=info,
        peer_addr=dial_address(info["listen"]),
        agent_addr=dial_address(info["agent_listen"]),
        metrics_url=(
            f"http://{dial_address(info['metrics_listen'])}/metrics"
            if info.get("metrics_listen")
            else ""
        ),
        node_id=info["node_id"],
        stdout_path=out,
        stderr_path=err,
    )


def _read_info(home: Path, pid: int) -> dict[str, Any] | None:
    try:
        info = json.loads((home / "node.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    # A node.json left by an earlier process on this home is not this node's.
    return info if isinstance(info, dict) and info.get("pid") == pid else None


NodeFactory = Callable[..., RunningNode]


class _Launcher:
    def __init__(self, default_home: Callable[[], Path]) -> None:
        self._default_home = default_home
        self.started: list[RunningNode] = []

    def __call__(self, home: Path | None = None, **flags: Any) -> RunningNode:
        node = start_node(home if home is not None else self._default_home(), **flags)
        self.started.append(node)
        return node

    def stop_all(self) -> None:
        errors = []
        for node in reversed(self.started):
            try:
                node.stop()
            except AssertionError as e:
                errors.append(str(e))
        if errors:
            raise AssertionError("\n".join(errors))


@pytest.fixture
def node_process(tmp_path: Path) -> Iterator[NodeFactory]:
    """Factory ``node_process(home=None, **flags) -> RunningNode``; stops them at teardown."""
    count = iter(range(1_000_000))
    launcher = _Launcher(lambda: tmp_path / f"node{next(count)}")
    try:
        yield launcher
    finally:
        launcher.stop_all()


@pytest.fixture(scope="module")
def module_node_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeFactory]:
    """Module-scoped ``node_process``: share one node across a module's tests."""
    launcher = _Launcher(lambda: tmp_path_factory.mktemp("node"))
    try:
        yield launcher
    finally:
        launcher.stop_all()


@pytest.fixture
def node_cli() -> Callable[..., tuple[list[str], dict[str, str]]]:
    """``node_cli(home, **flags) -> (argv, env)``: the command line of a test node."""

    def build(home: Path, **flags: Any) -> tuple[list[str], dict[str, str]]:
        return node_command(home, **flags), node_env()

    return build
