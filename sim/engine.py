"""The simulated network: SimPy time and links around the node's shipped pure cores.

What runs is the node's own code, imported, never copied:

* the import decision and filters: ``lamarck.policy.decision.decide_import`` over an
  ``ImportSnapshot`` built from the node's own indexes (``HeldRecords``, ``SourceHistory``);
* confidence transfer (inside the decision: ``lamarck.reputation.transfer``);
* the reputation scorer, pairwise and global trust: one ``ReputationBook`` per honest node,
  fed the decision's events and the reality events of ``lamarck.learning.reality``;
* gossip targets: ``peers_for`` (audience), ``GossipParams.direct_push_max`` (the origin pushes
  to every allowed peer with hop limit 1), else ``GossipRouter`` (tree children, forwarding
  with the hop limit, dedupe, covering for a child that cannot be reached);
* anti-entropy: ``sync_step`` pulling pages that ``select_for_sync`` serves from the peer's
  holdings, from the peers ``sync_sample`` (``AntiEntropy.once``'s rule) picks each round;
* outcomes: the fleet agent's ``RunRecorder`` derives each simulated turn's outcome, and
  ``outcome_verdict`` and ``attribute`` judge it as ``OutcomeLearning.record_outcome`` does, over
  the in-play rows ``imported_row`` builds; ``reality_events`` charges their sources;
* the taint sweep: ``lamarck.consensus.taint``'s ``tainted_sources`` and ``taint_plan`` (what
  ``TaintSweeper.once`` applies), run at a node's next sweep tick after it graylists a source;
  a lesson taken out leaves the node's advice and its Sync answers, as a retired one does.

Modules are imported as modules and their functions looked up on each call, so a test that
monkeypatches a core function changes what the simulator does. The one thing added around
``tree_order`` is a memo (:func:`shared_tree_orders`): every node lays out a record's tree
over the same membership, so the order is computed once per record and view, not once per
node (a 10,000-node sort per receiver would cost hours); the function and its answer are
the shipped ones.

SimPy is the event engine (pure Python, deterministic, 10^5 events/s is ample here: the
cores, not the queue, dominate the cost). The node's async cores (router, ``sync_step``) run
on one private asyncio loop; their injected ``send``/``fetch`` never wait, so each call
completes at one simulated instant and the link delay is a SimPy timeout.

What a node shows its agent by the influence gate, and the attestations that evidence reads,
is ``lamarck.sim.influence``; the clock, the cores' parameters, a node's state and the
counters are ``lamarck.sim.state``.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import dataclasses
import gc
import hashlib
import math
import operator
import random
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, SupportsIndex

import simpy

from lamarck.agent.recorder import RunRecorder
from lamarck.consensus import taint as taint_core
from lamarck.errors import DeliveryFailed
from lamarck.fleet.agents import (
    AgentMemory,
    Attempt,
    attempt_order,
    run_attempts,
)
from lamarck.fleet.workloads import Pitfall, succeeds
from lamarck.gossip import audience as audience_core
from lamarck.gossip import router as router_core
from lamarck.gossip import sync as sync_core
from lamarck.gossip.publisher import GossipParams
from lamarck.learning import attribution as attribution_core
from lamarck.learning import reality as reality_core
from lamarck.learning.attribution import Effect
from lamarck.node.importing import pipeline as pipeline_core
from lamarck.node.importing.view import ImportSnapshot
from lamarck.node.lessons import outcomes as lessons_outcomes
from lamarck.node.sharing import anti_entropy as anti_entropy_core
from lamarck.policy import decision as decision_core
from lamarck.policy import effects as effects_core
from lamarck.policy import filters as importing_filters
from lamarck.policy.autonomy import AutonomyFilter
from lamarck.policy.chain import build_policy
from lamarck.policy.decision import ImportOutcome, ImportPolicy, Incoming
from lamarck.policy.effects import Candidate
from lamarck.policy.filters import (
    Corroboration,
    EstablishedLesson,
    established_floor,
    needs_established,
)
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.outcome import Outcome
from lamarck.reputation.book import ReputationBook, TrustConfig
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.scores import PeerBand, peer_band
from lamarck.sim.influence import Influence
from lamarck.sim.params import SimParams
from lamarck.sim.records import LessonKind, SimRecord, VerifiedRecords
from lamarck.sim.state import Counters, SimClock, SimCores, SimPeer

__all__ = ["SimNetwork", "shared_tree_orders"]

#: Which membership the router is laying a tree over right now (set by the simulator).
_VIEW: contextvars.ContextVar[object | None] = contextvars.ContextVar("sim_view", default=None)

#: The project digest the simulated agents' outcomes name (any valid digest: attribution
#: does not read it).
_SIM_PROJECT = hashlib.sha256(b"lamarck-sim").hexdigest()


class _IndexedOrder(list[str]):
    """A tree order (the shipped list, unchanged) that finds a member's position by a
    dict, not a scan: every node of a 10,000-node tree looks up its own place."""

    def __init__(self, order: list[str]) -> None:
        super().__init__(order)
        self._at = {m: i for i, m in reversed(list(enumerate(order)))}

    def index(self, value: str, start: SupportsIndex = 0, stop: SupportsIndex = sys.maxsize) -> int:
        """The first position of ``value`` (as ``list.index``)."""
        i = self._at.get(value)
        if i is not None and operator.index(start) <= i < operator.index(stop):
            return i
        return super().index(value, start, stop)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector paused while the simulation runs, resumed after (its next pass
    takes what the run left). Each automatic full collection walks every object of every
    node: a sixth of a 1,000-node run's CPU, growing with N. The price is peak memory (the
    cycles a phase leaves wait for its end: 286 MB against 194 MB for both 1,000-node rows);
    nothing the simulator counts depends on when cycles are collected."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@contextmanager
def shared_tree_orders() -> Iterator[None]:
    """Memoise the shipped ``tree_order`` per (record, origin, view) while the simulator runs."""
    original = router_core.tree_order
    cache: dict[tuple[str, str, object], list[str]] = {}

    def cached(content_hash: str, origin: str, members: Any) -> list[str]:
        token = _VIEW.get()
        if token is None:
            return original(content_hash, origin, members)
        key = (content_hash, origin, token)
        order = cache.get(key)
        if order is None:
            order = _IndexedOrder(original(content_hash, origin, members))
            cache[key] = order
        return order

    router_core.tree_order = cached
    try:
        yield
    finally:
        router_core.tree_order = original


class RecordVerdicts:
    """One filter whose verdict reads the record only (never the view), asked once per record.

    Every receiver gets the same verified record object for the same bytes
    (:class:`VerifiedRecords`), so the shipped filter's answer is kept per record: the same
    answer, computed once instead of at every node (the literal and injection searches were a
    fifth of a 1,000-node run).
    """

    #: The filters whose ``check`` reads nothing of the view (the autonomy filter reads it
    #: only for vectors of its meaning check, the same for the same record).
    PURE = (
        AutonomyFilter,
        importing_filters.SecretFilter,
    )

    def __init__(self, inner: importing_filters.Filter) -> None:
        self.inner = inner
        self._seen: dict[int, tuple[object, importing_filters.Verdict]] = {}

    def check(self, record: Any, view: Any) -> importing_filters.Verdict:
        """The inner filter's verdict on ``record`` (computed at its first sight)."""
        hit = self._seen.get(id(record))
        if hit is not None and hit[0] is record:
            return hit[1]
        verdict = self.inner.check(record, view)
        self._seen[id(record)] = (record, verdict)
        return verdict


def shared_verdicts(policy: ImportPolicy) -> ImportPolicy:
    """``policy`` with the record-only filters of its chain asked once per record."""
    chain = policy.filters
    if not isinstance(chain, importing_filters.AllOf):
        return policy
    parts = [RecordVerdicts(f) if isinstance(f, RecordVerdicts.PURE) else f for f in chain.filters]
    return dataclasses.replace(policy, filters=importing_filters.AllOf(parts))


class SimNetwork:
    """N simulated nodes over SimPy links; see the module docstring."""

    def __init__(self, params: SimParams, cores: SimCores, identities: Sequence[NodeIdentity]):
        if len(identities) != params.nodes:
            raise ValueError("one identity per node")
        self.params = params
        self.cores = cores
        # The node's checks, built from its import params as the node builds them (the
        # node's chain, structure only: no embedder in the simulator).
        self.policy = shared_verdicts(build_policy(cores.importing))
        self.env = simpy.Environment()
        self.clock = SimClock(self.env)
        self.rng = random.Random(params.seed)
        self.loop = asyncio.new_event_loop()
        self.verified = VerifiedRecords(cores.importing.max_future_skew_s)
        self.counters = Counters()
        self.partitioned = False
        n = params.nodes
        byz = set(self.rng.sample(range(n), round(params.byzantine_share * n)))
        self.identities = list(identities)
        self.peers: list[SimPeer] = []
        for i, ident in enumerate(identities):
            book = None
            if i not in byz:
                trust = TrustConfig(ident.node_id, cores.pairwise, cores.global_trust)
                book = ReputationBook(cores.reputation, self.clock, trust)
            self.peers.append(
                SimPeer(
                    index=i,
                    node_id=ident.node_id,
                    byzantine=i in byz,
                    ring=self.rng.random(),
                    router=router_core.GossipRouter(cores.gossip, ident.node_id),
                    book=book,
                )
            )
        # Sweep phases from their own stream, so turning the sweep off changes no other draw.
        sweep_rng = random.Random(f"taint-sweep:{params.seed}")
        for peer in self.peers:
            peer.sweep_phase = sweep_rng.uniform(0.0, cores.taint.sweep_interval_s)
        self.by_id = {p.node_id: p for p in self.peers}
        self.all_ids = frozenset(self.by_id)
        self._sorted_ids = sorted(self.all_ids)
        #: content hash -> node index -> (time it was accepted, hops it travelled).
        self.arrivals: dict[str, dict[int, tuple[float, int]]] = {}
        self.records: dict[str, SimRecord] = {}
        self.pitfalls: dict[str, Pitfall] = {}
        #: (honest node, source) -> records judged before the source was graylisted there.
        self.judged: dict[tuple[int, str], int] = {}
        self.graylisted_after: dict[tuple[int, str], int] = {}
        #: (poisoned content hash, honest node) pairs where the lesson decided an agent's order.
        self.in_prompt: set[tuple[str, int]] = set()
        self.sim_events = 0
        #: The fleet agent's outcome per (target, attempts), and the ids its recorder draws.
        self._outcomes: dict[tuple[str, tuple[Attempt, ...]], Outcome] = {}
        self._outcome_rng = random.Random(f"outcomes:{params.seed}")
        self._established_floor = established_floor(self.policy.filters)
        #: What each node shows its agent, and the attestations that evidence reads.
        self.influence = Influence(params, cores, self.records, self.peers)

    # -- plumbing ---------------------------------------------------------------------------
    def close(self) -> None:
        """Release the private event loop."""
        self.loop.close()

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coro)

    def at(self, delay: float, action: Callable[[], None]) -> None:
        """Run ``action`` ``delay`` simulated seconds from now."""
        ev = self.env.timeout(max(0.0, delay))
        ev.callbacks.append(lambda _e: action())
        self.sim_events += 1

    def honest(self) -> list[SimPeer]:
        """The honest nodes."""
        return [p for p in self.peers if not p.byzantine]

    def latency(self, a: SimPeer, b: SimPeer) -> float:
        """One-way latency a -> b (the ring model of ``SimParams``) plus processing."""
        d = abs(a.ring - b.ring)
        d = min(d, 1.0 - d) * 2.0
        p = self.params
        return p.latency_min_s + (p.latency_max_s - p.latency_min_s) * d + p.processing_s

    def reachable(self, a: SimPeer, b: SimPeer) -> bool:
        """Whether a connection a -> b can be made now (both up, same side of a partition)."""
        return a.up and b.up and (not self.partitioned or a.side == b.side)

    def view(self, peer: SimPeer) -> frozenset[str]:
        """The peers this node lists (the directory; an eclipsed node lists only its own)."""
        if peer.view_only is None:
            return self.all_ids
        return frozenset(self.peers[i].node_id for i in peer.view_only) | {peer.node_id}

    def others(self, peer: SimPeer) -> list[str]:
        """The peers ``peer`` lists, itself excluded, in id order (the directory's order is
        kept sorted once: a 10,000-id sort per anti-entropy round cost minutes)."""
        if peer.view_only is not None:
            return sorted(self.view(peer) - {peer.node_id})
        ids = self._sorted_ids
        i = bisect.bisect_left(ids, peer.node_id)
        return ids[:i] + ids[i + 1 :]

    def _token(self, peer: SimPeer, excluded: frozenset[str] = frozenset()) -> object:
        return ("view", peer.view_only, excluded)

    # -- gossip -----------------------------------------------------------------------------
    def _send(self, sender: SimPeer) -> router_core.ForwardSend:
        async def send(target: str, raws: Sequence[bytes], hop_count: int) -> None:
            self._transmit(sender, self.by_id[target], raws, hop_count, self.cores.gossip.hop_limit)

        return send

    def _transmit(
        self, sender: SimPeer, to: SimPeer, raws: Sequence[bytes], hop_count: int, hop_limit: int
    ) -> None:
        p = self.params
        if not self.reachable(sender, to) or self.rng.random() < p.loss:
            self.counters.sends_failed += 1
            raise DeliveryFailed(f"{to.node_id} unreachable", target=to.node_id)
        self.counters.messages += len(raws)
        self.counters.publish_bytes += p.request_bytes + sum(
            len(r) + p.record_overhead_bytes for r in raws
        )
        batch = tuple(raws)
        self.at(
            self.latency(sender, to),
            lambda: self._arrive(to, batch, hop_count, hop_limit, sender),
        )

    def publish(self, record: SimRecord, *, flood: bool = False) -> None:
        """The origin sends ``record`` now: direct push or tree children (the node's rule).

        ``flood``: a Byzantine origin ignores the rule and pushes to everyone, hop limit 1.
        """
        origin = self.peers[record.origin]
        self.records[record.content_hash] = record
        origin.held[record.content_hash] = record.raw
        self.arrivals.setdefault(record.content_hash, {})[origin.index] = (float(self.env.now), 0)
        peers = self.others(origin)
        band_of = self._band_of(origin)
        allowed = audience_core.peers_for("public", peers, band_of)
        gossip = self.cores.gossip
        direct = flood or len(peers) <= gossip.direct_push_max
        if direct:
            targets = allowed
        else:
            excluded = frozenset(peers) - frozenset(allowed)
            token = _VIEW.set(self._token(origin, excluded))
            try:
                targets = origin.router.children(record.content_hash, origin.node_id, allowed)
            finally:
                _VIEW.reset(token)
        origin.router.first_sight(record.content_hash)
        for target in targets:
            to = self.by_id[target]
            try:
                self._transmit(origin, to, [record.raw], 0, 1 if direct else gossip.hop_limit)
            except DeliveryFailed:
                if not direct:
                    self._cover(origin, record, target)

    def _cover(self, origin: SimPeer, record: SimRecord, failed: str) -> None:
        fwd = router_core.Forwardable(record.content_hash, record.raw, origin.node_id)
        token = _VIEW.set(self._token(origin))
        try:
            self._run(
                origin.router.cover(
                    [fwd], failed, peers=self.view(origin), hop_count=1, send=self._send(origin)
                )
            )
        finally:
            _VIEW.reset(token)

    def _band_of(self, peer: SimPeer) -> audience_core.BandOf:
        if peer.book is None:
            return lambda _p: PeerBand.NEUTRAL
        return audience_core.band_reader(peer.book, self.cores.reputation)

    def _arrive(
        self,
        peer: SimPeer,
        raws: tuple[bytes, ...],
        hop_count: int,
        hop_limit: int,
        via: SimPeer,
    ) -> None:
        if not peer.up:
            return
        forwards: list[router_core.Forwardable] = []
        for raw in raws:
            fwd = self.import_record(peer, raw, via, hops=hop_count + 1)
            if fwd is not None:
                forwards.append(fwd)
        if not forwards or peer.byzantine:
            return  # a Byzantine node takes everything and passes nothing on
        if not peer.router.should_forward(hop_count, hop_limit):
            return
        token = _VIEW.set(self._token(peer))
        try:
            self._run(
                peer.router.forward(
                    forwards,
                    peers=self.view(peer),  # the router leaves this node out itself
                    hop_count=hop_count,
                    hop_limit=hop_limit,
                    exclude={via.node_id, *(f.origin for f in forwards)} - {peer.node_id},
                    send=self._send(peer),
                )
            )
        finally:
            _VIEW.reset(token)

    # -- import -----------------------------------------------------------------------------
    def import_record(
        self, peer: SimPeer, raw: bytes, via: SimPeer, *, hops: int
    ) -> router_core.Forwardable | None:
        """Run the node's import decision on ``raw`` at ``peer``; returns what to forward."""
        now = self.clock.now()
        signed = self.verified.get(raw, now)
        h = signed.content_hash
        record = signed.memory
        source = record.provenance.source_agent_id
        if source == peer.node_id:
            return None  # our own lesson coming back: the pipeline answers DUPLICATE
        if peer.byzantine:
            if h not in peer.held:
                peer.held[h] = raw
                self.arrivals.setdefault(h, {})[peer.index] = (float(self.env.now), hops)
            return None
        book = peer.book
        assert book is not None  # every honest node has a book
        operation = record.lesson.operation if record.lesson is not None else ""
        # The source's score now, read once: the decision's input and the band it was in.
        score = book.score(source)
        snapshot = ImportSnapshot(
            self_id=peer.node_id,
            source_reputation=(source, score),
            source_track=book.track_record(source),
            corr=Corroboration(),
            established=(),
            history=peer.history.stats(source, now),
            tool=None,
            versions=peer.index_held.known_versions(record.id),
            rejected_reason=peer.index_held.previously_rejected(h),
        )
        filters = self.policy.filters
        floor = self._established_floor
        if floor is not None and needs_established(filters, record, snapshot):
            # The pipeline's read of the store, by the shared rule over what this node holds.
            held = peer.established.get(operation, ())
            snapshot = dataclasses.replace(
                snapshot, established=effects_core.select_established(record, held, floor)
            )
        # hops -1: an anti-entropy pull (the node's Sync path), not a push.
        incoming = Incoming(record=record, content_hash=h, via_node_id=via.node_id, pulled=hops < 0)
        decision = decision_core.decide_import(
            incoming, snapshot, self.cores.importing, now, self.policy
        )
        # What follows the decision: the pipeline's own step (charges, holds, history).
        effects = effects_core.apply_decision(decision)
        c = self.counters
        c.decisions += 1
        c.outcomes[decision.outcome.value] = c.outcomes.get(decision.outcome.value, 0) + 1
        was_gray = peer_band(score, self.cores.reputation) is PeerBand.GRAYLISTED
        if decision.outcome is not ImportOutcome.DUPLICATE:
            self._count_judged(peer, source, was_gray)
        for event in effects.charges:
            book.emit(event)
            c.events += 1
        version = record.lesson.version if record.lesson is not None else 1
        if effects.judged is not None:
            peer.index_held.reject(h, effects.judged)
        if effects.hold:
            peer.index_held.add(record.id, version=version, content_hash=h, source_id=source)
        if effects.counted:
            peer.history.add(source, now, record.confidence)
        if effects.store:
            peer.index_held.add(
                record.id, version=version, content_hash=h, source_id=source, lesson_id=h
            )
            confidence = decision.confidence if decision.confidence is not None else 0.0
            peer.held[h] = raw
            peer.confidence[h] = confidence
            peer.established.setdefault(operation, []).append(
                Candidate(
                    EstablishedLesson(h, record.content, confidence),
                    operation,
                    record.context.domain,
                    record.context.environment,
                    now,
                )
            )
            self.arrivals.setdefault(h, {})[peer.index] = (float(self.env.now), hops)
            if was_gray:
                c.accepted_from_graylisted += 1
            self._agent_turn(peer, h)
        self._note_graylist(peer, source, was_gray)
        if effects.forward:
            return router_core.Forwardable(h, raw, source)
        return None

    def _graylisted(self, peer: SimPeer, source: str) -> bool:
        assert peer.book is not None
        return self._band_of(peer)(source) is PeerBand.GRAYLISTED

    def _count_judged(self, peer: SimPeer, source: str, was_gray: bool) -> None:
        if not was_gray:
            key = (peer.index, source)
            self.judged[key] = self.judged.get(key, 0) + 1

    def _note_graylist(self, peer: SimPeer, source: str, was_gray: bool) -> None:
        key = (peer.index, source)
        if was_gray or not self._graylisted(peer, source):
            return
        if key not in self.graylisted_after:
            self.graylisted_after[key] = self.judged.get(key, 0)
        self._sweep_soon(peer)

    # -- taint ------------------------------------------------------------------------------
    def _sweep_soon(self, peer: SimPeer) -> None:
        """A source just became graylisted here: the node's next periodic taint sweep (every
        ``TaintParams.sweep_interval_s`` at its own phase) is the one that acts on it. Sweeps
        that would find no newly graylisted source are skipped: they take nothing out."""
        if not self.params.taint_sweep or peer.sweep_due:
            return
        interval = self.cores.taint.sweep_interval_s
        now = float(self.env.now)
        ticks = max(0, math.ceil((now - peer.sweep_phase) / interval))
        peer.sweep_due = True

        def tick() -> None:
            self.sweep(peer)

        self.at(peer.sweep_phase + ticks * interval - now, tick)

    def sweep(self, peer: SimPeer) -> int:
        """The node's taint sweep at ``peer``: the shipped ``tainted_sources`` and
        ``taint_plan`` over its live lessons; each lesson taken out leaves its prompts (the
        advice) and its Sync answers. Returns how many it took out."""
        peer.sweep_due = False
        book = peer.book
        if book is None:
            return 0
        facts: list[taint_core.LessonFacts] = []
        for h in peer.held:
            rec = self.records.get(h)
            if rec is None:
                continue
            signer = self.peers[rec.origin].node_id
            imported_from = None if signer == peer.node_id else signer
            facts.append(taint_core.LessonFacts(h, imported_from, (), h))
        sources = {f.imported_from for f in facts if f.imported_from is not None}
        if not sources:
            return 0
        band_of = self._band_of(peer)
        tainted = taint_core.tainted_sources(
            sources, revoked=(), band_of={s: band_of(s) for s in sources}
        )
        if not tainted:
            return 0
        # The simulated nodes learn no local lessons, so no outcome ties one to a taken lesson.
        plan = taint_core.taint_plan(facts, {}, tainted)
        now = self.clock.now()
        for h in plan.lesson_ids:
            raw = peer.held.pop(h)
            peer.confidence.pop(h, None)
            lesson = self.verified.get(raw, now).memory.lesson
            operation = lesson.operation if lesson is not None else ""
            kept = [e for e in peer.established.get(operation, ()) if e.lesson.lesson_id != h]
            peer.established[operation] = kept
        self.counters.tainted += len(plan.lesson_ids)
        return len(plan.lesson_ids)

    def _agent_turn(self, peer: SimPeer, h: str) -> None:
        """An honest agent on ``peer`` meets the lesson's pitfall (the fleet agent's policy),
        and the node learns from its outcome by its own rules.

        The node shows what it holds on the pitfall's two forms (``Influence.shown``: with the
        influence gate, only proven and corroborated lessons as advice and unverified ones as
        labelled hints in the plan-time share; without it, every lesson as advice of one
        class); the agent orders its attempts by ``attempt_order`` and the environment answers
        (``succeeds``). The lessons that decided the order are in play (in a prompt). The
        outcome is the one the fleet agent records (``RunRecorder``: one ``test`` check per
        attempt); the node folds it with ``outcome_verdict`` and ``attribute`` as
        ``OutcomeLearning.record_outcome`` does, ``reality_events`` charges each attributed
        lesson's source, and the node signs an attestation for each lesson its outcome judged
        (confirmed: proven here). A turn where a poisoned lesson took part in the order and the
        first attempt was the failing form is a poisoned decision, a tie included.
        """
        rec = self.records.get(h)
        if rec is None:
            return
        p = self.pitfalls.get(rec.target)
        if p is None:
            return
        advice, hints = self.influence.shown(peer, p)
        pre_gate = not self.params.influence_gate
        order, in_play = attempt_order(p, advice, AgentMemory(), hints, pre_gate=pre_gate)
        if not in_play:
            return  # no lesson shaped the run: the outcome attributes nothing
        attempts = run_attempts(order, lambda op: succeeds(p, op, flipped=False))
        poisoned = [x for x in in_play if self.records[x].kind != LessonKind.HONEST]
        if poisoned and attempts[0].operation == p.failing:
            self.counters.poisoned_decisions += 1
            if len(poisoned) < len(in_play):
                self.counters.poisoned_ties += 1
            if self.influence.first_without(p, advice, hints, set(poisoned)) == p.working:
                self.counters.poison_harm += 1
        hinted = {s.lesson_id for s in hints}
        self.counters.poison_hints += sum(1 for x in poisoned if x in hinted)
        outcome = self._outcome(p, attempts)
        verdict = lessons_outcomes.outcome_verdict(outcome)
        now = self.clock.now()
        rows = []
        for lesson_id in in_play:
            raw = peer.held.get(lesson_id)
            if raw is None:
                continue
            signed = self.verified.get(raw, now)
            rows.append(
                pipeline_core.imported_row(
                    signed,
                    lesson_id=lesson_id,
                    confidence=peer.confidence.get(lesson_id, 0.0),
                    via_node_id=signed.memory.provenance.source_agent_id,
                    now=now,
                )
            )
            if self.records[lesson_id].kind != LessonKind.HONEST:
                self.in_prompt.add((lesson_id, peer.index))
        attributions = attribution_core.attribute(
            [(r.id, r.operation) for r in rows], lessons_outcomes.outcome_steps(outcome), verdict
        )
        for a in attributions:
            if a.effect is Effect.CONFIRMED:
                peer.proven.add(a.lesson_id)
            self.influence.attest(peer.index, a.lesson_id, a.effect)
        events = reality_core.reality_events(
            rows, attributions, outcome_id=f"{h}:{peer.index}", at=now
        )
        assert peer.book is not None
        by_source: dict[str, list[ReputationEvent]] = {}
        for event in events:
            by_source.setdefault(event.node_id, []).append(event)
        for source, charged in by_source.items():
            was_gray = self._graylisted(peer, source)
            self._count_judged(peer, source, was_gray)
            for event in charged:
                peer.book.emit(event)
                self.counters.events += 1
            self._note_graylist(peer, source, was_gray)

    def _outcome(self, p: Pitfall, attempts: tuple[Attempt, ...]) -> Outcome:
        """The outcome the fleet agent's recorder derives for ``attempts`` at ``p`` (one
        ``test`` check per attempt, as ``FleetDriver`` records them). Memoised per (target,
        attempts): the derivation reads nothing else that attribution uses (only the outcome
        id and dates differ), and the SDK's model validation per turn would dominate a
        10,000-node run."""
        key = (p.target, attempts)
        outcome = self._outcomes.get(key)
        if outcome is None:
            recorder = RunRecorder(
                session_id=f"sim-{p.target}",
                goal=f"build the {p.target} target",
                project=_SIM_PROJECT,
                clock=self.clock,
                rng=self._outcome_rng,
            )
            for a in attempts:
                recorder.check(
                    "test", passed=a.ok, operation=a.operation, target=p.target, label="build"
                )
            outcome = recorder.finish().outcome
            self._outcomes[key] = outcome
        return outcome

    # -- anti-entropy -----------------------------------------------------------------------
    def start_anti_entropy(self, nodes: Sequence[SimPeer], until: float) -> None:
        """Every node in ``nodes`` pulls from a sample of its listed peers each interval (as the
        node does)."""
        interval = self.cores.gossip.anti_entropy_interval_s
        for peer in nodes:
            self.env.process(self._ae_loop(peer, self.rng.uniform(0.0, interval), until))

    def _ae_loop(self, peer: SimPeer, phase: float, until: float) -> Any:
        yield self.env.timeout(phase)
        interval = self.cores.gossip.anti_entropy_interval_s
        while self.env.now < until:
            if peer.up:
                yield from self._ae_round(peer, until)
            yield self.env.timeout(interval)

    def _ae_round(self, peer: SimPeer, until: float) -> Any:
        gossip = self.cores.gossip
        # The peers AntiEntropy.once asks this round (its own sample rule, imported).
        others = anti_entropy_core.sync_sample(self.others(peer), gossip, self.rng)
        owed = 0.0  # round-trip time of pulls that could bring nothing, not yet waited
        for other_id in others:
            if self.env.now + owed >= until or not peer.up:
                break
            other = self.by_id[other_id]
            rtt = 2 * self.latency(peer, other)
            self.counters.sync_bytes += self.params.request_bytes
            if owed >= self.params.ae_quantum_s:
                # Let simulated time catch up with the pulls scanned so far, so the next peer
                # is judged (up, reachable, holding what) at about the time it is asked.
                yield self.env.timeout(owed)
                owed = 0.0
                self.sim_events += 1
                if self.env.now >= until or not peer.up:
                    break
            if not self.reachable(peer, other):
                owed += rtt
                continue
            serves = {} if other.byzantine else other.held
            if serves.keys() <= peer.held.keys():
                # Nothing to bring: the exchange costs a round trip and its summary only.
                owed += rtt
                continue
            yield self.env.timeout(owed + rtt)
            owed = 0.0
            self.sim_events += 1
            if not (peer.up and self.reachable(peer, other)):
                continue
            self._run(self._pull(peer, other, serves, gossip))
        if owed:
            yield self.env.timeout(owed)

    async def _pull(
        self, peer: SimPeer, other: SimPeer, serves: dict[str, bytes], gossip: GossipParams
    ) -> int:
        async def fetch(query: sync_core.SyncQuery) -> sync_core.SyncPage:
            page = sync_core.select_for_sync(serves, query, gossip.sync_prefix_len)
            self.counters.sync_bytes += sum(
                len(raw) + self.params.record_overhead_bytes for _, raw in page.records
            )
            self.counters.sync_records += len(page.records)
            return page

        async def importer(raw: bytes) -> object:
            return self.import_record(peer, raw, other, hops=-1)

        return await sync_core.sync_step(
            peer.held,
            fetch,
            importer,
            prefix_len=gossip.sync_prefix_len,
            page_size=gossip.batch_size,
        )

    # -- running ----------------------------------------------------------------------------
    def run_until(self, t: float) -> None:
        """Advance the simulation to time ``t`` (seconds), tree orders shared and the cycle
        collector paused (:func:`collector_paused`)."""
        with shared_tree_orders(), collector_paused():
            self.env.run(until=t)
