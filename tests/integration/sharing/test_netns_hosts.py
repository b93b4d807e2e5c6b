"""Three nodes as three hosts: network namespaces, a bridge, mutual TLS, a lossy link, a
partition that heals.

The test makes everything it uses and removes it after (``finally``): a bridge in this
namespace with the first address of a private /24 it picks under 10.231.0.0/16 (one no route
of this machine covers), one network namespace per node joined to the bridge by a veth pair,
and a Redis bound to the bridge address as the network's registry. Each node binds 0.0.0.0
in its namespace and registers the address it advertises (``advertise_address``): a relay
of the test's on the bridge address, which forwards to the node's own address, so every peer
call crosses a second hop. Its agent API is a unix socket in its home, the only way in from
here besides the peer port. Traffic goes only to addresses the test created.

Latency and loss are ``tc netem`` on every link where the kernel has it; where it does not
(no ``sch_netem``, as in some VM kernels: the test prints so) the relays impair instead,
holding each chunk 50 ms each way and cutting the connection on 5 % of chunks.

What it shows: the nodes form a network over mutual TLS; a capture on a node's link holds
none of the lesson text that crossed it; a certificate nobody registered, and a node the
operator revoked, are refused; under 50 ms delay and 5 % loss on every link, and a partition
of one node that then heals, every lesson reaches every node exactly once.

Skipped, with the reason printed, where namespaces cannot be made (not root, no ``ip``, a
container without the capability).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
from conftest import Net, fixtures, wait_for
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lamarck.client import Client
from lamarck.fleet import launcher
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.node.peer_tls import dial_home
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import KEYS_DIR, identity_path, load_private_key
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.proto.tls import TlsMaterial, load_tls, make_tls, tls_name
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import sign_revocation
from lamarck.registry.redis_directory import RedisPeerDirectory

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(120)]

NODES = 3
PEER_PORT = 7700
#: Bound on each wait (a node start runs initdb; lessons cross a lossy link).
WAIT_S = 60.0


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def _free_octet() -> int:
    """A third octet of 10.231.x.0/24 that no route of this machine covers."""
    routes = _ip("-4", "route", "show", "table", "all").stdout + _ip("-4", "addr").stdout
    taken = {int(w.split(".")[2]) for w in routes.split() if w.startswith("10.231.")}
    free = [x for x in range(1, 255) if x not in taken]
    return random.Random().choice(free)


def _cannot_make_namespaces() -> str | None:
    """Why this machine cannot run the test, or None."""
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "iproute2 (ip, tc) is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"lmkprobe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass
class Hosts:
    """The bridge, the namespaces and their veth pairs this test made."""

    tag: str
    octet: int
    made: list[tuple[str, ...]]

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def gateway(self) -> str:
        return f"10.231.{self.octet}.1"

    def ns(self, i: int) -> str:
        return f"{self.tag}n{i}"

    def link(self, i: int) -> str:
        """The host side of node ``i``'s veth pair (on the bridge)."""
        return f"{self.tag}h{i}"

    def inner(self, i: int) -> str:
        """Node ``i``'s side of its veth pair (in its namespace)."""
        return f"{self.tag}p{i}"

    def address(self, i: int) -> str:
        return f"10.231.{self.octet}.{10 + i}"

    def create(self, n: int) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        self.made.append(("link", "del", self.bridge))
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i in range(n):
            _ip("netns", "add", self.ns(i))
            self.made.append(("netns", "del", self.ns(i)))
            _ip(
                "link", "add", self.link(i), "type", "veth",
                "peer", "name", self.inner(i), "netns", self.ns(i),
            )  # fmt: skip
            _ip("link", "set", self.link(i), "master", self.bridge)
            _ip("link", "set", self.link(i), "up")
            _ip("-n", self.ns(i), "addr", "add", f"{self.address(i)}/24", "dev", self.inner(i))
            _ip("-n", self.ns(i), "link", "set", self.inner(i), "up")
            _ip("-n", self.ns(i), "link", "set", "lo", "up")

    def impair(self, n: int) -> bool:
        """50 ms delay and 5 % loss on every link, both ways, with ``tc netem``; False when
        this kernel has no netem (nothing is changed)."""
        netem = ["root", "netem", "delay", "50ms", "loss", "5%"]
        probe = subprocess.run(
            ["tc", "qdisc", "add", "dev", self.link(0), *netem], capture_output=True, timeout=30
        )
        if probe.returncode != 0:
            return False
        for i in range(n):
            if i:
                subprocess.run(
                    ["tc", "qdisc", "add", "dev", self.link(i), *netem], check=True, timeout=30
                )
            subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.ns(i),
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    self.inner(i),
                    *netem,
                ],
                check=True,
                timeout=30,
            )
        return True

    def cut(self, i: int, up: bool) -> None:
        """Partition node ``i`` from everything (its link down), or heal it."""
        _ip("link", "set", self.link(i), "up" if up else "down")

    def destroy(self) -> None:
        for args in reversed(self.made):
            _ip(*args, check=False)
        self.made.clear()


class Relays:
    """A TCP relay per node on the bridge address: the address each node advertises, so every
    peer call crosses it. Impaired (``impaired = True``), it holds each chunk 50 ms each way
    and cuts 5 % of them with the connection (the kernel here may have no ``netem``)."""

    DELAY_S = 0.05
    LOSS = 0.05

    def __init__(self, gateway: str, targets: list[str]) -> None:
        self.impaired = False
        self._rng = random.Random()
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.base_events.Server] = []
        self.addresses: list[str] = []
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._gateway, self._targets = gateway, targets
        self._thread.start()
        ready.wait(20)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        for target in self._targets:
            server = self._loop.run_until_complete(
                asyncio.start_server(lambda r, w, t=target: self._relay(r, w, t), self._gateway, 0)
            )
            self._servers.append(server)
            port = server.sockets[0].getsockname()[1]
            self.addresses.append(f"{self._gateway}:{port}")
        ready.set()
        self._loop.run_forever()

    async def _relay(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: str
    ) -> None:
        host, _, port = target.rpartition(":")
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, int(port)), 5
            )
        except (OSError, TimeoutError):
            writer.close()
            return
        await asyncio.gather(
            self._pump(reader, up_writer, writer), self._pump(up_reader, writer, up_writer)
        )

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, back: asyncio.StreamWriter
    ) -> None:
        try:
            while chunk := await src.read(65536):
                if self.impaired:
                    await asyncio.sleep(self.DELAY_S)
                    if self._rng.random() < self.LOSS:
                        break
                dst.write(chunk)
                await dst.drain()
        except OSError:
            pass
        finally:
            for w in (dst, back):
                w.close()

    def close(self) -> None:
        """Stop every relay."""

        async def stop() -> None:
            for server in self._servers:
                server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@dataclass
class HostNode:
    """A node running in its own namespace."""

    process: subprocess.Popen[bytes]
    home: Path
    node_id: str
    agent_addr: str
    advertised: str


def _start(
    hosts: Hosts, i: int, home: Path, flags: dict[str, Any], advertised: str
) -> subprocess.Popen[bytes]:
    home.mkdir(parents=True, exist_ok=True)
    argv = launcher.node_command(
        home,
        {
            **fixtures.DEFAULT_FLAGS,
            **flags,
            "listen": f"0.0.0.0:{PEER_PORT}",
            "advertise_address": advertised,
            "agent_listen": f"unix:{home}/agent.sock",
            "metrics_listen": "127.0.0.1:0",
            "console_listen": "",
        },
    )
    with (home / "node.stderr").open("wb") as err:
        return subprocess.Popen(
            ["ip", "netns", "exec", hosts.ns(i), *argv],
            stdout=subprocess.DEVNULL,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=launcher.node_env(),
        )


def _serving(home: Path, info: dict[str, Any], advertised: str) -> bool:
    try:
        with dial_home(home, info["node_id"], advertised) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
    except grpc.RpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _wait_started(process: subprocess.Popen[bytes], home: Path, advertised: str) -> HostNode:
    def ready() -> HostNode | None:
        if process.poll() is not None:
            raise AssertionError((home / "node.stderr").read_text(errors="replace")[-3000:])
        info = fixtures._read_info(home, process.pid)
        if info is None or not info.get("serving") or not _serving(home, info, advertised):
            return None
        assert info["advertise_address"] == advertised and info["peer_tls"] == "on"
        return HostNode(process, home, info["node_id"], info["agent_listen"], advertised)

    return wait_for(ready, f"the node in {home} to serve", WAIT_S)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class Capture:
    """Every byte crossing a link, captured from this namespace (tcpdump when installed, a
    raw packet socket otherwise)."""

    def __init__(self, link: str, path: Path) -> None:
        self._path = path
        self._tcpdump: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._chunks: list[bytes] = []
        if shutil.which("tcpdump"):
            said = path.with_suffix(".log")
            with said.open("wb") as log:
                self._tcpdump = subprocess.Popen(
                    ["tcpdump", "-Z", "root", "-i", link, "-U", "-s", "0", "-w", str(path), "tcp"],
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            # It captures once it says so. -Z root: Debian's tcpdump otherwise drops to its own
            # user, which cannot write into the test's root-only temporary folder.
            wait_for(lambda: b"listening on" in said.read_bytes(), "tcpdump to listen", 20)
        else:
            self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            self._sock.bind((link, 0))
            self._sock.settimeout(0.2)
            self._thread = threading.Thread(target=self._read, daemon=True)
            self._running = True
            self._thread.start()

    def _read(self) -> None:
        assert self._sock is not None
        while self._running:
            with contextlib.suppress(TimeoutError):
                self._chunks.append(self._sock.recv(65535))

    def stop(self) -> bytes:
        """Stop and return what was captured."""
        if self._tcpdump is not None:
            if self._tcpdump.poll() is None:
                self._tcpdump.send_signal(signal.SIGINT)
                self._tcpdump.wait(timeout=10)
            self._tcpdump = None
            return self._path.read_bytes() if self._path.exists() else b""
        if self._sock is not None:
            self._running = False
            self._thread.join(timeout=5)
            self._sock.close()
            self._sock = None
        return b"".join(self._chunks)


def _material(home: Path) -> TlsMaterial:
    return load_tls(home / KEYS_DIR / "tls.key", home / KEYS_DIR / "tls.crt")


def _sync_as(own: TlsMaterial, caller: HostNode, target: HostNode) -> str:
    """A Sync to ``target`` as ``caller`` over a connection made with ``own``: how it ends."""
    metadata = PeerTokens(
        load_private_key(identity_path(caller.home)),
        SystemClock(),
        PeerAuthParams(),
        channel=own.fingerprint,
    ).metadata(target.node_id)
    credentials = grpc.ssl_channel_credentials(
        _material(target.home).cert_pem, own.key_pem, own.cert_pem
    )
    options = [("grpc.ssl_target_name_override", tls_name(target.node_id))]
    with grpc.secure_channel(target.advertised, credentials, options=options) as channel:
        try:
            for _ in peer_pb2_grpc.PeerServiceStub(channel).Sync(
                peer_pb2.SyncRequest(requester_node_id=caller.node_id),
                timeout=10,
                metadata=metadata,
            ):
                pass
        except grpc.RpcError as e:
            trailers = dict(e.trailing_metadata() or ())  # type: ignore[attr-defined]
            return f"{e.code().name}:{trailers.get('lamarck-reason', '')}"  # type: ignore[attr-defined]
    return "OK"


def _copies(node: HostNode, lesson_id: str) -> int:
    """How many imported copies of ``lesson_id`` the node holds."""
    with Client(node.agent_addr, timeout=20) as client:
        return sum(
            1
            for lesson in client.list_lessons(origin="imported").lessons
            if lesson.record_json and lesson.record["id"] == lesson_id
        )


async def _live(url: str, namespace: str) -> set[str]:
    directory = RedisPeerDirectory.from_url(
        url,
        namespace=namespace,
        params=RegistryParams(admission=AdmissionMode.OPEN),
        clock=SystemClock(),
    )
    try:
        return {p.address for p in await directory.live_peers()}
    finally:
        await directory.aclose()


async def _revoke(url: str, namespace: str, operator: NodeIdentity, node_id: str) -> None:
    directory = RedisPeerDirectory.from_url(
        url,
        namespace=namespace,
        params=RegistryParams(admission=AdmissionMode.OPEN),
        clock=SystemClock(),
        operator_public_key=operator.public_key_b64,
    )
    try:
        await directory.revoke(
            sign_revocation(operator, node_id=node_id, reason="test", created_at=datetime.now(UTC))
        )
    finally:
        await directory.aclose()


@contextlib.contextmanager
def _redis(address: str, home: Path) -> Iterator[str]:
    """A Redis bound to ``address`` (the bridge's), for this test only."""
    with socket.socket() as s:
        s.bind((address, 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [
            "redis-server",
            "--bind",
            address,
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
            "--dir",
            str(home),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"redis://{address}:{port}/0"

        def answers() -> bool:
            with contextlib.suppress(OSError), socket.create_connection((address, port), 1):
                return True
            return False

        wait_for(answers, "the test's redis to answer", 20)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_nodes_on_separate_hosts_share_over_mutual_tls_through_loss_and_a_partition(
    pg_tmp_path: Path,
) -> None:
    tmp_path = pg_tmp_path
    why = _cannot_make_namespaces()
    if why is not None:
        print(f"skipped: {why}")
        pytest.skip(why)
    if shutil.which("redis-server") is None:
        print("skipped: redis-server is not installed")
        pytest.skip("redis-server is not installed")
    hosts = Hosts(f"lmk{os.getpid() % 100000:05d}", _free_octet(), [])
    processes: list[subprocess.Popen[bytes]] = []
    capture: Capture | None = None
    relays: Relays | None = None
    operator = NodeIdentity.generate()
    learner = Net(None, tmp_path)
    try:
        hosts.create(NODES)
        with _redis(hosts.gateway, tmp_path) as url:
            namespace = f"netns{hosts.tag}"
            flags = {
                "redis_url": url,
                "redis_namespace": namespace,
                "admission": "open",
                "operator_public_key": operator.public_key_b64,
                "gossip_interval_s": 0.2,
                "anti_entropy_interval_s": 1.0,
                "registry_heartbeat_s": 1.0,
            }
            homes = [tmp_path / f"host{i}" for i in range(NODES)]
            # Each node is reached at its relay on the bridge: what it advertises.
            relays = Relays(
                hosts.gateway, [f"{hosts.address(i)}:{PEER_PORT}" for i in range(NODES)]
            )
            processes = [
                _start(hosts, i, homes[i], flags, relays.addresses[i]) for i in range(NODES)
            ]
            nodes = [
                _wait_started(p, homes[i], relays.addresses[i]) for i, p in enumerate(processes)
            ]
            # (1) They register the addresses they advertise, not the wildcard they bind.
            advertised = {n.advertised for n in nodes}
            wait_for(
                lambda: asyncio.run(_live(url, namespace)) == advertised,
                "every node registered at its advertised address",
                WAIT_S,
            )
            # (2) A lesson crosses node 0's link over mutual TLS: none of its text on the wire.
            capture = Capture(hosts.link(0), tmp_path / "link0.pcap")
            first = learner.learn(nodes[0], f"tlswire{hosts.tag}")
            for n in nodes[1:]:
                wait_for(lambda n=n: _copies(n, first.id) == 1, "the lesson over TLS", WAIT_S)
            wire = capture.stop()
            capture = None
            assert len(wire) > 4096, "the capture saw the lesson's traffic"
            for text in (first.content, f"tlswire{hosts.tag}", first.id):
                assert text.encode() not in wire, f"{text!r} crossed the link in clear"
            # (3) Through 50 ms delay and 5 % loss, and a partition of node 2 that heals:
            # every lesson reaches every node, exactly once.
            if not hosts.impair(NODES):
                print("tc netem is not available in this kernel: the relays impair the links")
                relays.impaired = True
            hosts.cut(2, up=False)
            during = [
                learner.learn(nodes[0], f"lossy{hosts.tag}"),
                learner.learn(nodes[1], f"split{hosts.tag}"),
            ]
            wait_for(lambda: _copies(nodes[1], during[0].id) == 1, "node 1 to get node 0's", WAIT_S)
            hosts.cut(2, up=True)
            isolated = learner.learn(nodes[2], f"healed{hosts.tag}")
            lessons = [(0, first), (0, during[0]), (1, during[1]), (2, isolated)]
            for origin, lesson in lessons:
                for i, n in enumerate(nodes):
                    if i != origin:
                        wait_for(
                            lambda n=n, lesson=lesson: _copies(n, lesson.id) >= 1,
                            f"node {i} to get {lesson.id}",
                            WAIT_S,
                        )
            for origin, lesson in lessons:
                for i, n in enumerate(nodes):
                    if i != origin:
                        assert _copies(n, lesson.id) == 1, (i, lesson.id)
            relays.impaired = False
            # (4) A certificate nobody registered gets no connection; a revoked node is refused.
            forged = make_tls(nodes[2].node_id, SystemClock().now())
            assert _sync_as(forged, nodes[2], nodes[0]).startswith("UNAVAILABLE")
            assert _sync_as(_material(homes[2]), nodes[2], nodes[0]) == "OK"
            asyncio.run(_revoke(url, namespace, operator, nodes[2].node_id))
            refused = wait_for(
                lambda: (r := _sync_as(_material(homes[2]), nodes[2], nodes[0])) != "OK" and r,
                "node 0 to refuse the revoked node",
                WAIT_S,
            )
            assert refused in ("UNAUTHENTICATED:revoked_peer", "UNAVAILABLE:"), refused
    finally:
        if capture is not None:
            capture.stop()
        for process in processes:
            _stop(process)
        if relays is not None:
            relays.close()
        hosts.destroy()
