"""The fleet learning curve on simulated nodes that run the node's own learning side.

``lamarck fleet up --workload fleet-learning-curve`` measures how many *known mistakes* honest
agents repeat with sharing against the same agents isolated (``fleet/report.py``). The
scale simulator (:mod:`lamarck.sim.engine`) runs the import and gossip cores but no
lesson store, so it cannot produce that figure. This module does, for small fleets (N <= 20),
by giving every simulated node the pieces of a real node that learning goes through:

* an ``InMemoryLessonStore`` and the real ``LessonService`` (outcome learning, promotion after
  two projects, recall ranking, the decision-time check) with the hashing embedder, under the
  parameters ``node_params`` builds for a node started with the fleet's settings;
* the daemon's ``AgentServicer`` in front of it, reached by the SDK's own ``Client`` code with
  the wire replaced by an in-process call (:class:`InProcessTransport`): requests and replies
  still cross a protobuf serialisation, so the agents see exactly what a node answers;
* a ``ReputationBook`` fed by the pipeline's events and by reality (the servicer's sink);
* the ``ImportPipeline`` over a ``StoreImportView`` (key pins from the simulated registry), the
  ``Publisher`` with an ``InMemoryOutbox``, and the peer-side ``handle_publish``: a node's
  ``PeerClient.publish`` lands in the receiver's Publish handler (:class:`SimPeerClient`).

The agents are the fleet's: ``FleetDriver`` itself runs the workload ``make_workload`` builds
(the same definitions ``fleet up`` and ``tests/integration/fleet`` use), and its figures are
``learning_figures``. Only three edges are replaced (:class:`SimFleetDriver`): its clients,
its settle (simulated time instead of sleeping), and the clock it dates its agents' runs with
(the simulation's, so outcomes are never dated ahead of the nodes).

Time is a SimPy environment: each node scans and delivers every ``gossip_interval_s`` as the
daemon's publish loop does, and each agent call takes ``rpc_s`` simulated seconds, so a lesson
can reach other nodes within the round it was learned in, as in a real fleet.

Not run, and why it does not move this figure: anti-entropy (with no loss every publish is
delivered by push, which is the path the real fleet's figures come from), quorum rounds
(records held ``awaiting_quorum`` are counted in ``held_for_quorum``; the fleet curve's
lessons claim at most the confidence of two confirmations), taint sweeps and global trust
recomputation (no Byzantine node in the learning curve), and the daily maintenance.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import statistics
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import simpy

from lamarck.client import DEFAULT_TIMEOUT_S, AsyncClient, Client
from lamarck.errors import ConfigError, LamarckError
from lamarck.fleet import driver as driver_core
from lamarck.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.fleet.report import learning_figures, mean_and_spread
from lamarck.fleet.supervisor import FleetSpec
from lamarck.fleet.workloads import WorkloadParams, make_workload
from lamarck.gossip.audience import band_reader
from lamarck.gossip.router import GossipRouter
from lamarck.node.api.agent_service import AgentServicer
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.node.api.peer_handlers import PublishDeps, handle_publish
from lamarck.node.config import NodeSettings
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.gossip.outbox import InMemoryOutbox
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.lessons.attested_support import AttestedSupportReader
from lamarck.node.lessons.service import LessonService
from lamarck.node.params import NodeParams, node_params, trust_config
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.sharing.projects import ProjectPeers
from lamarck.node.sharing.publishing import Publisher
from lamarck.node.store.attestations import InMemoryAttestationStore
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import peer_pb2, records_pb2
from lamarck.registry.directory import PeerInfo
from lamarck.reputation.book import ReputationBook
from lamarck.sim.scenarios import identities_for
from lamarck.sim.state import SimClock
from lamarck.transport import BlockingTransport

__all__ = [
    "LEARNING_FIGURES",
    "MAX_LEARNING_NODES",
    "InProcessClient",
    "InProcessTransport",
    "LearningFleet",
    "LearningNode",
    "LearningRun",
    "LearningSimParams",
    "SimFleetDriver",
    "SimPeerClient",
    "SimPins",
    "learning_curve",
    "learning_lines",
    "run_learning",
]

#: The largest fleet this runs (every node holds a full lesson service and store).
MAX_LEARNING_NODES = 20

# The fleet's own node settings (``FleetSpec`` defaults): gossip and anti-entropy intervals.
_FLEET = FleetSpec(directory=Path("/nonexistent/sim-fleet"))


@dataclass(frozen=True, slots=True)
class LearningSimParams:
    """One simulated learning run: the fleet workload's sizes and the time model."""

    workload: str = "fleet-learning-curve"  # a driver workload of ``fleet/workloads.py``
    nodes: int = 10  # simulated nodes, in [1, MAX_LEARNING_NODES]
    agents: int = 10  # scripted agents (``fleet up``'s default), >= 1
    rounds: int = 6  # rounds of tasks (``fleet up``'s default), >= 1
    seed: int = 0  # the workload's seed (``fleet up --seed``); the driver's rng too
    tag: str = ""  # appended to every target (the integration test tags each run)
    gossip_interval_s: float = _FLEET.gossip_interval_s  # a node's publish scan period, > 0
    rpc_s: float = 0.02  # simulated seconds one agent call to its node takes, >= 0
    settle_timeout_s: float = 15.0  # bound on one round settling (the driver's), > 0

    def __post_init__(self) -> None:
        """Refuse sizes the fleet would refuse and non-finite times."""
        if not 1 <= self.nodes <= MAX_LEARNING_NODES:
            raise ConfigError(
                f"invalid nodes={self.nodes}: must be in [1, {MAX_LEARNING_NODES}]", field="nodes"
            )
        for name in ("agents", "rounds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"invalid {name}={value!r}: must be an integer >= 1", field=name)
        for name, low in (("gossip_interval_s", 1e-9), ("rpc_s", 0.0), ("settle_timeout_s", 1e-9)):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not low <= value < float("inf"):
                raise ConfigError(f"invalid {name}={value!r}: must be finite and >= {low}")


class SimPins:
    """``KeyPins`` of the simulated registry: every node of the fleet, none revoked."""

    def __init__(self, identities: Sequence[NodeIdentity]) -> None:
        self._keys = {i.node_id: i.public_key_b64 for i in identities}

    async def pinned_key(self, node_id: str) -> str | None:
        """The key registered for ``node_id`` (None: never registered)."""
        return self._keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        """Nobody is revoked in a simulated learning run."""
        return False

    async def revoked_through(self, node_ids: Sequence[str]) -> dict[str, str]:
        """Nobody is admitted through a revoked identity either."""
        return {}

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The registry's principal map: the fleet's one operator admitted every node, as
        ``fleet up`` does by default (``--operators 1``)."""
        return {i: "fleet-operator" for i in node_ids if i in self._keys}


class InProcessTransport(BlockingTransport):
    """The SDK's blocking transport with the wire replaced by a call to the node's servicer.

    The SDK's own call code builds the request and reads the reply (``AsyncClient``); this
    only moves the messages, through a protobuf serialisation each way as on the wire. Each
    call then lets ``rpc_s`` of simulated time pass (``after_call``), so the nodes' publish
    loops run while the agents work.
    """

    def __init__(
        self,
        servicer: AgentServicer,
        run: Callable[[Coroutine[Any, Any, Any]], Any],
        after_call: Callable[[], None],
    ) -> None:
        # No channel: the base class's only state is the channel and its stub.
        self._servicer = servicer
        self._run = run
        self._after_call = after_call

    async def unary(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> Any:
        """One request, one response, answered by the servicer's method of that name."""
        wire = type(request).FromString(request.SerializeToString())
        reply = self._run(getattr(self._servicer, rpc)(wire, None))
        self._after_call()
        return type(reply).FromString(reply.SerializeToString())

    async def unary_stream(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> list[Any]:
        """Streaming calls are not simulated (the fleet's agents make none)."""
        raise LamarckError(f"{rpc} is not simulated", reason="not_simulated")

    async def stream_unary(
        self,
        rpc: str,
        requests: Sequence[Any],
        deadline_s: float,
        metadata: tuple[tuple[str, str], ...],
    ) -> Any:
        """Streaming calls are not simulated (the fleet's agents make none)."""
        raise LamarckError(f"{rpc} is not simulated", reason="not_simulated")

    async def close(self) -> None:
        """Nothing to close."""


class InProcessClient(Client):
    """The SDK's ``Client`` (its own call code) over an :class:`InProcessTransport`."""

    def __init__(self, transport: InProcessTransport) -> None:
        engine = AsyncClient.__new__(AsyncClient)
        # What ``AsyncServiceClient._attach`` sets, with the in-process transport.
        engine.address = "in-process"
        engine.timeout = DEFAULT_TIMEOUT_S
        engine._metadata = ()
        engine._transport = transport
        self._async = engine


class _PeerStub:
    """A PeerService stub whose Publish is the receiving node's own Publish handler."""

    def __init__(self, fleet: LearningFleet, target: LearningNode) -> None:
        self._fleet = fleet
        self._target = target

    async def Publish(
        self, request: peer_pb2.PublishRequest, **_call: object
    ) -> peer_pb2.PublishResponse:
        """The receiver's Publish handler on the request (timeout and token: not simulated)."""
        wire = peer_pb2.PublishRequest.FromString(request.SerializeToString())
        reply = await handle_publish(wire, PublishDeps(pipeline=self._target.pipeline))
        self._fleet.count_acks(reply)
        return peer_pb2.PublishResponse.FromString(reply.SerializeToString())


class SimPeerClient(PeerClient):
    """The node's ``PeerClient`` (its Publish call code) with every peer in this process."""

    def __init__(self, fleet: LearningFleet, identity: NodeIdentity, tokens: PeerTokens) -> None:
        params = fleet.node_params.gossip
        super().__init__(
            identity.node_id,
            tokens,
            lambda peer: peer,
            hop_limit=params.hop_limit,
            max_message_bytes=4 * 1024 * 1024,
        )
        self._fleet = fleet

    def _stub(self, target: str) -> Any:
        return _PeerStub(self._fleet, self._fleet.node(target))


@dataclass(slots=True)
class LearningNode:
    """One simulated node's learning side (see the module docstring)."""

    index: int
    identity: NodeIdentity
    store: InMemoryLessonStore
    service: LessonService
    book: ReputationBook
    pipeline: ImportPipeline
    publisher: Publisher
    outbox: InMemoryOutbox
    servicer: AgentServicer


class LearningFleet:
    """N :class:`LearningNode` s on one simulated clock; see the module docstring."""

    def __init__(self, params: LearningSimParams) -> None:
        self.params = params
        self.env = simpy.Environment()
        # The simulation starts at a fixed instant; every node and agent reads this clock.
        self.clock = SimClock(self.env)
        self._loop = asyncio.new_event_loop()
        settings = NodeSettings(
            home=Path("/nonexistent/sim-node"),
            gossip_interval_s=params.gossip_interval_s,
            anti_entropy_interval_s=_FLEET.anti_entropy_interval_s,
        )
        self.embedder = HashingEmbedder()
        self.node_params: NodeParams = node_params(settings, self.embedder)
        identities = identities_for(params.nodes, params.seed)
        self._pins = SimPins(identities)
        self._peers = {
            i.node_id: PeerInfo(i.node_id, i.public_key_b64, i.node_id, (), "sim", self.clock.now())
            for i in identities
        }
        self.nodes = [self._build(k, ident) for k, ident in enumerate(identities)]
        self._by_id = {n.identity.node_id: n for n in self.nodes}
        #: Publish acks by status name (and ``<status>:<reason>`` when a reason is given).
        self.acks: dict[str, int] = {}
        self.calls = 0
        for n in self.nodes:
            self.run(n.pipeline.view.load())
        interval = params.gossip_interval_s
        rng = random.Random(params.seed)
        for n in self.nodes:
            # Each node's publish loop starts at its own phase, as independent daemons do.
            self.env.process(self._publish_loop(n, rng.uniform(0.0, interval)))

    def _build(self, k: int, identity: NodeIdentity) -> LearningNode:
        p = self.node_params
        store = InMemoryLessonStore(dim=self.embedder.dim)
        service = LessonService(
            store,
            self.embedder,
            self.clock,
            p.learning,
            rng=random.Random(f"lessons:{self.params.seed}:{k}"),
            transfer=p.transfer,
            max_future_skew_s=p.importing.max_future_skew_s,
            # No attestations travel here (every node is of the one operator, so none could
            # corroborate); the reader marks what a node of the operator's own fleet shared.
            support=AttestedSupportReader(
                InMemoryAttestationStore(p.attestation),
                principals=self._pins.principals,
                certified=lambda _: False,
                clock=self.clock,
                own_id=identity.node_id,
            ),
        )
        book = ReputationBook(p.reputation, self.clock, trust_config(p, identity.node_id))
        view = StoreImportView(store, book, identity.node_id)
        pipeline = ImportPipeline(
            store=store,
            view=view,
            pins=self._pins,
            reputation=book,
            embedder=self.embedder,
            clock=self.clock,
            rng=random.Random(f"import:{self.params.seed}:{k}"),
            params=p.importing,
            on_stored=service.contest_new,
        )
        outbox = InMemoryOutbox()
        tokens = PeerTokens(identity, self.clock, p.peer_auth)
        me = identity.node_id
        publisher = Publisher(
            store,
            identity,
            p.gossip,
            outbox=outbox,
            router=GossipRouter(p.gossip, me),
            client=SimPeerClient(self, identity, tokens),
            band_of=band_reader(book, book.params),
            declared=ProjectPeers(p.gossip.max_declared_projects).of,
            peers=lambda: {k: v for k, v in self._peers.items() if k != me},
            incognito=False,
            importing=p.importing,
        )
        servicer = AgentServicer(
            service, identity, self.clock, store=store, pipeline=pipeline, sink=lambda: book
        )
        return LearningNode(
            k, identity, store, service, book, pipeline, publisher, outbox, servicer
        )

    # -- plumbing ---------------------------------------------------------------------------
    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run one of the node's coroutines to its end on the fleet's private loop."""
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        """Release the private event loop."""
        self._loop.close()

    def node(self, node_id: str) -> LearningNode:
        """The node with id ``node_id``."""
        return self._by_id[node_id]

    def client(self, index: int) -> InProcessClient:
        """An agent's SDK client of node ``index``."""
        transport = InProcessTransport(self.nodes[index].servicer, self.run, self._after_call)
        return InProcessClient(transport)

    def count_acks(self, reply: peer_pb2.PublishResponse) -> None:
        """Tally one Publish reply's acks (what the receivers decided)."""
        for ack in reply.acks:
            status = records_pb2.AckStatus.Name(ack.status).removeprefix("ACK_STATUS_").lower()
            key = f"{status}:{ack.reason}" if ack.reason else status
            self.acks[key] = self.acks.get(key, 0) + 1

    def _after_call(self) -> None:
        self.calls += 1
        if self.params.rpc_s > 0:
            self.advance(self.params.rpc_s)

    def _publish_loop(self, n: LearningNode, phase: float) -> Any:
        yield self.env.timeout(phase)
        while True:
            self.run(n.publisher.publish_once(self.clock.now()))
            yield self.env.timeout(self.params.gossip_interval_s)

    # -- time -------------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass (the nodes' loops run)."""
        self.env.run(until=self.env.now + seconds)

    def pending(self) -> int:
        """Undelivered outbox rows over every node."""
        return sum(len(self.run(n.outbox.pending())) for n in self.nodes)

    def settle(self) -> None:
        """Between rounds: two publish intervals, then until every outbox is empty (bounded),
        as ``FleetDriver.settle`` waits for a real fleet."""
        self.advance(2 * self.params.gossip_interval_s)
        waited = 0.0
        while self.pending() and waited < self.params.settle_timeout_s:
            self.advance(self.params.gossip_interval_s)
            waited += self.params.gossip_interval_s


@dataclass
class SimFleetDriver(FleetDriver):
    """``FleetDriver`` over a :class:`LearningFleet`: its clients are in-process, its settle
    is simulated time; every turn is the driver's own code."""

    fleet: LearningFleet | None = None

    def __enter__(self) -> SimFleetDriver:
        fleet = self._fleet()
        self._clients = [fleet.client(i) for i in range(len(fleet.nodes))]
        return self

    def __exit__(self, *exc: object) -> None:
        self._clients = []

    def _fleet(self) -> LearningFleet:
        if self.fleet is None:
            raise ConfigError("SimFleetDriver needs a fleet", field="fleet")
        return self.fleet

    def settle(self) -> None:
        """Let the simulated fleet deliver what the round taught."""
        self._fleet().settle()


class _SimulatedSystemClock:
    """What the fleet driver's ``SystemClock()`` gives during a simulated run."""

    clock: SimClock | None = None

    def now(self) -> datetime:
        """The simulation's time."""
        assert self.clock is not None
        return self.clock.now()


#: The name the fleet driver's module calls for its agents' clock.
_DRIVER_CLOCK = "SystemClock"


@contextlib.contextmanager
def _agents_on_simulated_time(clock: SimClock) -> Iterator[None]:
    """The driver dates its agents' runs with ``SystemClock()``: give it the simulation's clock
    while the run lasts (a node refuses an outcome dated ahead of its own clock)."""
    original = getattr(driver_core, _DRIVER_CLOCK)
    _SimulatedSystemClock.clock = clock
    setattr(driver_core, _DRIVER_CLOCK, _SimulatedSystemClock)
    try:
        yield
    finally:
        setattr(driver_core, _DRIVER_CLOCK, original)
        _SimulatedSystemClock.clock = None


@dataclass(frozen=True, slots=True)
class LearningRun:
    """One run's learning figures (``learning_figures``) and what the receivers decided."""

    figures: dict[str, float]
    acks: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0


def run_learning(params: LearningSimParams) -> LearningRun:
    """Run ``params.workload`` on a fresh simulated fleet; its learning figures."""
    started = time.perf_counter()
    fleet = LearningFleet(params)
    work = make_workload(
        params.workload,
        params.seed,
        WorkloadParams(
            nodes=params.nodes, agents=params.agents, rounds=params.rounds, tag=params.tag
        ),
    )
    handles = [NodeHandle(f"node{k + 1}", "in-process", "") for k in range(params.nodes)]
    driver_params = DriverParams(
        gossip_interval_s=params.gossip_interval_s, settle_timeout_s=params.settle_timeout_s
    )
    try:
        with (
            _agents_on_simulated_time(fleet.clock),
            SimFleetDriver(
                handles, work, driver_params, random.Random(params.seed), fleet=fleet
            ) as driver,
        ):
            records = driver.run()
        figures = learning_figures(records)
        figures["held_for_quorum"] = float(
            sum(v for k, v in fleet.acks.items() if k.endswith("awaiting_quorum"))
        )
        figures["simulated_s"] = round(float(fleet.env.now), 3)
        return LearningRun(figures, dict(fleet.acks), time.perf_counter() - started)
    finally:
        fleet.close()


def learning_curve(
    seeds: Sequence[int],
    base: LearningSimParams,
    *,
    progress: Callable[[str], None] = lambda _m: None,
) -> tuple[list[LearningRun], dict[str, float]]:
    """One run per seed (each on a fresh fleet); the runs and their mean and spread."""
    runs = []
    for seed in seeds:
        run = run_learning(dataclasses.replace(base, seed=seed))
        f = run.figures
        progress(
            f"seed {seed}: repeated known mistakes {f['shared_repeated_known_mistakes']:.0f} "
            f"with sharing, {f['isolated_repeated_known_mistakes']:.0f} isolated "
            f"({run.wall_s:.1f} s)"
        )
        runs.append(run)
    summary = mean_and_spread([r.figures for r in runs])
    if runs:
        summary["runs"] = float(len(runs))
        summary["wall_s_mean"] = round(statistics.fmean(r.wall_s for r in runs), 2)
    return runs, summary


#: The learning figures the simulator reports, in print order: (figure, label).
LEARNING_FIGURES: tuple[tuple[str, str], ...] = (
    ("shared_repeated_known_mistakes", "known mistakes repeated, with sharing"),
    ("isolated_repeated_known_mistakes", "known mistakes repeated, isolated"),
    ("repeated_mistakes_ratio", "ratio (sharing / isolated)"),
    ("mistakes_reduction", "fewer with sharing"),
    ("shared_mistakes", "failing forms issued, with sharing"),
    ("isolated_mistakes", "failing forms issued, isolated"),
    ("shared_steps", "steps, with sharing"),
    ("isolated_steps", "steps, isolated"),
    ("shared_first_attempt_success", "first-attempt success, with sharing"),
    ("isolated_first_attempt_success", "first-attempt success, isolated"),
    ("held_for_quorum", "copies held awaiting a quorum"),
)


def learning_lines(seeds: Sequence[int], runs: Sequence[LearningRun]) -> list[str]:
    """A fixed-width table: one column per seed, then the mean and the spread."""
    summary = mean_and_spread([r.figures for r in runs])
    header = ["figure", *(f"seed {s}" for s in seeds), "mean", "spread"]
    rows = [header]
    for key, label in LEARNING_FIGURES:
        if key not in summary:
            continue
        share = key in _SHARES
        cells = [_cell(r.figures.get(key), share) for r in runs]
        rows.append(
            [label, *cells, _cell(summary[key], share), _cell(summary[f"{key}_spread"], share)]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return ["  ".join(_aligned(r, widths)) for r in rows]


def _aligned(row: Sequence[str], widths: Sequence[int]) -> list[str]:
    # The label left, the figures right.
    return [
        c.ljust(w) if i == 0 else c.rjust(w)
        for i, (c, w) in enumerate(zip(row, widths, strict=True))
    ]


#: Figures that are shares, printed as percentages.
_SHARES = frozenset(
    {
        "repeated_mistakes_ratio",
        "mistakes_reduction",
        "shared_first_attempt_success",
        "isolated_first_attempt_success",
    }
)


def _cell(value: float | None, share: bool = False) -> str:
    if value is None:
        return "-"
    if share:
        return f"{value:.1%}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3f}"
