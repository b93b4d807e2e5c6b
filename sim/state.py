"""The simulated network's state types: its clock, the parameters given to the node's cores,
one simulated node's holdings and the run's counters (``lamarck.sim.engine`` drives them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import simpy

from lamarck.consensus.params import TaintParams
from lamarck.gossip import router as router_core
from lamarck.gossip.publisher import GossipParams
from lamarck.learning.influence import InfluenceParams
from lamarck.node.importing.view import HeldRecords, SourceHistory
from lamarck.policy.decision import ImportParams
from lamarck.policy.effects import Candidate
from lamarck.reputation.book import ReputationBook
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams

__all__ = ["Counters", "SimClock", "SimCores", "SimPeer"]

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class SimClock:
    """A ``Clock`` reading the simulation's time (seconds after a fixed epoch)."""

    def __init__(self, env: simpy.Environment) -> None:
        self._env = env
        self._at = float(env.now)
        self._now = _EPOCH + timedelta(seconds=self._at)

    def now(self) -> datetime:
        """The simulated instant, UTC (built once per instant: many reads share one)."""
        t = self._env.now
        if t != self._at:
            self._at = t
            self._now = _EPOCH + timedelta(seconds=float(t))
        return self._now


@dataclass(frozen=True, slots=True)
class SimCores:
    """The parameter objects the node's cores are given (the node's defaults unless told)."""

    gossip: GossipParams = field(default_factory=GossipParams)
    reputation: ReputationParams = field(default_factory=ReputationParams)
    importing: ImportParams = field(default_factory=ImportParams)
    pairwise: PairwiseParams = field(default_factory=PairwiseParams)
    global_trust: GlobalTrustParams = field(default_factory=GlobalTrustParams)
    taint: TaintParams = field(default_factory=TaintParams)
    influence: InfluenceParams = field(default_factory=InfluenceParams)


@dataclass(slots=True)
class SimPeer:
    """One node: its id, behaviour, link position, and the node-side state the cores read."""

    index: int
    node_id: str
    byzantine: bool
    ring: float
    router: router_core.GossipRouter
    book: ReputationBook | None
    up: bool = True
    side: int = 0
    held: dict[str, bytes] = field(default_factory=dict)
    index_held: HeldRecords = field(default_factory=HeldRecords)
    history: SourceHistory = field(default_factory=SourceHistory)
    # The lessons held here by operation, as the established set and the advice read them.
    established: dict[str, list[Candidate]] = field(default_factory=dict)
    confidence: dict[str, float] = field(default_factory=dict)
    # Lessons this node's own outcomes confirmed (proven here).
    proven: set[str] = field(default_factory=set)
    view_only: frozenset[int] | None = None  # an eclipsed node's view (None: the directory)
    sweep_phase: float = 0.0  # when, within each TaintParams.sweep_interval_s, it sweeps
    sweep_due: bool = False  # a taint sweep is scheduled at its next tick


@dataclass(slots=True)
class Counters:
    """What the network carried, and what the cores decided, since the last reset."""

    messages: int = 0  # records carried by Publish (one per record per target)
    publish_bytes: int = 0
    sync_bytes: int = 0
    sync_records: int = 0
    sends_failed: int = 0
    accepted_from_graylisted: int = 0  # records accepted although their signer was graylisted
    tainted: int = 0  # lessons the taint sweep took out of an honest node's prompts and Syncs
    decisions: int = 0
    events: int = 0
    # Honest agents' turns where a poisoned lesson took part in choosing the order (followed,
    # or tied with an honest lesson) and the first attempt was the failing form.
    poisoned_decisions: int = 0
    # ... of them, those where a poisoned lesson tied an honest one (the agent kept its habit).
    poisoned_ties: int = 0
    # ... of them, those whose first attempt the poisoned lessons changed: without them the
    # agent would have tried the working form first.
    poison_harm: int = 0
    # Poisoned lessons that entered an honest prompt as a labelled unverified hint.
    poison_hints: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
