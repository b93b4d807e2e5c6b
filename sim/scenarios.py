"""The simulated runs and their figures: propagation and attack, churn,
partition, eclipse and Sybil flood, each over a fresh :class:`SimNetwork`.

Anti-entropy rounds run on ``SimParams.ae_sample`` honest nodes (by default every honest
node); each round pulls from ``GossipParams.sync_peers_per_round`` peers as the node's does.
Nodes outside a smaller sample still serve Syncs but never pull, which makes repair slower
than in a network (``bench/sim.py --quick`` runs 100). Figures that need anti-entropy (final
reach, repair time, lessons lost) are measured over the nodes that pull.
"""

from __future__ import annotations

import asyncio
import functools
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.voters import Candidate, NetworkView, accept_threshold, select_voters
from lamarck.fleet.workloads import Pitfall, WorkloadParams, make_workload
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.memory_directory import InMemoryRecords
from lamarck.reputation.params import PrincipalParams, ReputationParams
from lamarck.reputation.scores import PeerBand
from lamarck.sim.engine import SimNetwork
from lamarck.sim.params import SimParams
from lamarck.sim.records import (
    LessonKind,
    SimRecord,
    honest_lesson,
    sign_record,
    subtle_poison,
)
from lamarck.sim.state import SimCores, SimPeer

__all__ = [
    "Figures",
    "identities_for",
    "quantile",
    "run_all",
    "run_churn",
    "run_main",
    "run_partition",
    "run_sybil",
    "workload_pitfalls",
]

_SIGNED_AT = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class Figures:
    """One scenario's figures by name, and its cost."""

    values: dict[str, float] = field(default_factory=dict)
    sim_events: int = 0
    wall_s: float = 0.0


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``; ``inf`` when empty."""
    if not values:
        return math.inf
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def identities_for(n: int, seed: int) -> list[NodeIdentity]:
    """``n`` real Ed25519 identities drawn from ``seed`` (simulation keys, never a node's)."""
    rng = random.Random(seed)
    return [NodeIdentity.generate(rng) for _ in range(n)]


def workload_pitfalls(seed: int) -> tuple[Pitfall, ...]:
    """The fleet's ``pitfalls`` workload environment (the same definitions as ``fleet up``)."""
    return make_workload("pitfalls", seed, WorkloadParams()).pitfalls


def _honest_records(
    net: SimNetwork, rng: random.Random, count: int, salt: str, origins: Sequence[SimPeer]
) -> list[SimRecord]:
    pitfalls = workload_pitfalls(net.params.seed)
    out = []
    for k in range(count):
        p = pitfalls[k % len(pitfalls)]
        net.pitfalls[p.target] = p
        origin = rng.choice(list(origins))
        ident = net.identities[origin.index]
        out.append(
            sign_record(
                ident, origin.index, LessonKind.HONEST, p, honest_lesson(p), _SIGNED_AT, salt
            )
        )
    return out


def _sample(net: SimNetwork, rng: random.Random, extra: Sequence[SimPeer] = ()) -> list[SimPeer]:
    honest = net.honest()
    k = min(len(honest), net.params.ae_sample)
    chosen = {p.index: p for p in rng.sample(honest, k)}
    for p in extra:
        chosen[p.index] = p
    return list(chosen.values())


def _publish_all(net: SimNetwork, records: Sequence[SimRecord], start: float) -> dict[str, float]:
    at: dict[str, float] = {}
    for k, rec in enumerate(records):
        t = start + k * net.params.lesson_gap_s
        at[rec.content_hash] = t
        net.at(t, functools.partial(net.publish, rec))
    return at


def _delivery(
    net: SimNetwork, records: Sequence[SimRecord], sent_at: dict[str, float], nodes: Sequence[int]
) -> list[float]:
    """Delivery delays over (record, node) pairs; ``inf`` where it never arrived."""
    out = []
    for rec in records:
        got = net.arrivals.get(rec.content_hash, {})
        for i in nodes:
            if i == rec.origin:
                continue
            hit = got.get(i)
            out.append(math.inf if hit is None else hit[0] - sent_at[rec.content_hash])
    return out


def run_main(params: SimParams, cores: SimCores, ids: Sequence[NodeIdentity]) -> Figures:
    """Honest lessons, then the followed attackers' floods, an eclipse victim, anti-entropy."""
    started = time.perf_counter()
    net = SimNetwork(params, cores, ids)
    rng = random.Random(params.seed + 1)
    honest = net.honest()
    byz = [p for p in net.peers if p.byzantine]
    victim: SimPeer | None = None
    if byz:
        # The eclipse attempt: one honest node lists only Byzantine peers, which pass nothing.
        victim = honest[0]
        victim.view_only = frozenset(p.index for p in byz)
    origins = [p for p in honest if p is not victim]
    lessons = _honest_records(net, rng, params.lessons, "main", origins)
    sent_at = _publish_all(net, lessons, 0.0)
    push_end = params.lessons * params.lesson_gap_s + 10.0
    net.run_until(push_end)
    fig = Figures()
    v = fig.values
    honest_ids = [p.index for p in honest]
    push = _delivery(net, lessons, sent_at, honest_ids)
    reached = [d for d in push if math.isfinite(d)]
    v["push_reach"] = len(reached) / max(1, len(push))
    v["messages_per_lesson"] = net.counters.messages / params.lessons
    v["bytes_per_node_per_lesson"] = net.counters.publish_bytes / params.nodes / params.lessons
    hops = [h for rec in lessons for _, h in net.arrivals.get(rec.content_hash, {}).values()]
    v["max_hops"] = float(max(hops, default=0))
    v["push_p50_s"] = quantile(reached, 0.5)
    v["push_p99_s"] = quantile(reached, 0.99)
    # The followed attackers flood, alternating subtle and overt poison, one pitfall each.
    attackers = byz[: params.attackers]
    pitfalls = workload_pitfalls(params.seed)
    poisoned: list[SimRecord] = []
    t = push_end
    for k in range(params.attack_records):
        for j, attacker in enumerate(attackers):
            p = pitfalls[(j + k) % len(pitfalls)]
            net.pitfalls[p.target] = p
            kind = LessonKind.SUBTLE if k % 2 == 0 else LessonKind.OVERT
            lesson = subtle_poison(p) if kind == LessonKind.SUBTLE else None
            rec = sign_record(
                net.identities[attacker.index],
                attacker.index,
                kind,
                p,
                lesson,
                _SIGNED_AT,
                f"attack{k}",
            )
            poisoned.append(rec)
            net.at(t, functools.partial(net.publish, rec, flood=True))
        t += params.lesson_gap_s
    sample = _sample(net, rng, [victim] if victim else [])
    net.start_anti_entropy(sample, params.horizon_s)
    before = net.counters.sync_bytes
    net.run_until(params.horizon_s)
    sample_ids = [p.index for p in sample if p is not victim]
    final = _delivery(net, lessons, sent_at, sample_ids)
    v["prop_p50_s"] = quantile(final, 0.5)
    v["prop_p99_s"] = quantile(final, 0.99)
    v["reach_final"] = sum(math.isfinite(d) for d in final) / max(1, len(final))
    v["honest_lost"] = float(
        sum(
            any(rec.content_hash not in net.peers[i].held for i in sample_ids if i != rec.origin)
            for rec in lessons
        )
    )
    rounds = max(1.0, (params.horizon_s - push_end) / cores.gossip.anti_entropy_interval_s)
    v["ae_bytes_per_node_per_round"] = (net.counters.sync_bytes - before) / len(sample) / rounds
    _attack_figures(net, attackers, poisoned, v)
    v["accepted_from_graylisted"] = float(net.counters.accepted_from_graylisted)
    v["tainted"] = float(net.counters.tainted)
    if victim is not None:
        got = sum(rec.content_hash in victim.held for rec in lessons)
        v["eclipse_victim_share"] = got / len(lessons)
    fig.sim_events = net.sim_events + net.counters.decisions
    fig.wall_s = time.perf_counter() - started
    net.close()
    return fig


def _attack_figures(
    net: SimNetwork,
    attackers: Sequence[SimPeer],
    poisoned: Sequence[SimRecord],
    v: dict[str, float],
) -> None:
    honest = net.honest()
    worst = 0
    all_gray = True
    gray_share = []
    for a in attackers:
        counts = [net.graylisted_after.get((h.index, a.node_id)) for h in honest]
        done = [c for c in counts if c is not None]
        gray_share.append(len(done) / len(honest))
        if len(done) < len(honest):
            all_gray = False
        worst = max(worst, max(done, default=0))
    v["attackers"] = float(len(attackers))
    v["graylisted_by_all_share"] = min(gray_share, default=math.nan)
    v["interactions_to_graylist"] = float(worst) if attackers and all_gray else math.inf
    if not attackers:
        v["interactions_to_graylist"] = math.nan
    subtle = {r.content_hash for r in poisoned if r.kind == LessonKind.SUBTLE}
    overt = {r.content_hash for r in poisoned if r.kind == LessonKind.OVERT}
    honest_idx = {h.index for h in honest}
    # Overt poison is held or refused by the filters (never charged: reality punishes).
    v["overt_accepted"] = float(
        sum(1 for r in overt for i in net.arrivals.get(r, {}) if i in honest_idx)
    )
    v["poison_accepted"] = float(
        sum(1 for r in subtle for i in net.arrivals.get(r, {}) if i in honest_idx)
    )
    v["poison_in_prompt"] = float(len(net.in_prompt))
    # Honest agents' decisions a poisoned lesson took part in that went to the failing form
    # first, ties between a lie and an honest lesson counted (the agent kept its habit).
    v["poisoned_decisions"] = float(net.counters.poisoned_decisions)
    v["poisoned_ties"] = float(net.counters.poisoned_ties)
    v["poison_harm"] = float(net.counters.poison_harm)
    v["poison_hints"] = float(net.counters.poison_hints)
    # What later prompts could still draw on: subtle poison live on honest nodes at the end.
    v["poison_live_end"] = float(sum(1 for h in honest for r in subtle if r in h.held))


def run_churn(params: SimParams, cores: SimCores, ids: Sequence[NodeIdentity]) -> Figures:
    """``churn_share`` of the nodes are down while the lessons are pushed, back later."""
    started = time.perf_counter()
    net = SimNetwork(params, cores, ids)
    rng = random.Random(params.seed + 2)
    down = rng.sample(net.peers, round(params.churn_share * params.nodes))
    for p in down:
        p.up = False
    up_honest = [p for p in net.honest() if p.up]
    lessons = _honest_records(net, rng, params.lessons, "churn", up_honest)
    sent_at = _publish_all(net, lessons, 0.0)

    def back() -> None:
        for p in down:
            p.up = True

    net.at(params.churn_down_s, back)
    push_end = params.lessons * params.lesson_gap_s + 10.0
    sample = _sample(net, rng, [p for p in down if not p.byzantine][: params.ae_sample // 4])
    net.start_anti_entropy(sample, params.horizon_s)
    net.run_until(push_end)
    honest_ids = [p.index for p in net.honest()]
    push = _delivery(net, lessons, sent_at, honest_ids)
    fig = Figures()
    fig.values["churn_push_reach"] = sum(math.isfinite(d) for d in push) / max(1, len(push))
    net.run_until(params.horizon_s)
    final = _delivery(net, lessons, sent_at, [p.index for p in sample])
    fig.values["churn_final_reach"] = sum(math.isfinite(d) for d in final) / max(1, len(final))
    fig.sim_events = net.sim_events + net.counters.decisions
    fig.wall_s = time.perf_counter() - started
    net.close()
    return fig


def run_partition(params: SimParams, cores: SimCores, ids: Sequence[NodeIdentity]) -> Figures:
    """The network splits in halves, lessons are published on both sides, then it heals."""
    started = time.perf_counter()
    net = SimNetwork(params, cores, ids)
    rng = random.Random(params.seed + 3)
    for p in net.peers:
        p.side = rng.randrange(2)
    net.partitioned = True
    lessons = _honest_records(net, rng, params.lessons, "partition", net.honest())
    _publish_all(net, lessons, 0.0)

    def heal() -> None:
        net.partitioned = False

    heal_at = params.partition_s
    net.at(heal_at, heal)
    sample = _sample(net, rng)
    horizon = heal_at + params.horizon_s
    net.start_anti_entropy(sample, horizon)
    net.run_until(horizon)
    repair = []
    for p in sample:
        times = [
            net.arrivals.get(rec.content_hash, {}).get(p.index, (math.inf, 0))[0] for rec in lessons
        ]
        repair.append(max(0.0, max(times) - heal_at))
    fig = Figures()
    fig.values["repair_p50_s"] = quantile(repair, 0.5)
    fig.values["repair_p99_s"] = quantile(repair, 0.99)
    fig.values["repair_max_s"] = max(repair, default=math.inf)
    fig.sim_events = net.sim_events + net.counters.decisions
    fig.wall_s = time.perf_counter() - started
    net.close()
    return fig


def run_sybil(
    honest_count: int, seed: int, quorum: QuorumParams, reputation: ReputationParams
) -> Figures:
    """10x the honest count in fresh keys under one principal: admitted, and voter seats.

    Admission counts the endorser's identities with the registry's own records
    (``InMemoryRecords.add_endorsee`` with the shipped cap); voter choice is the shipped
    ``select_voters`` over every honest node and every admitted Sybil.
    """
    started = time.perf_counter()
    records = InMemoryRecords(FixedClock(_SIGNED_AT))
    cap = PrincipalParams().max_identities_per_endorser
    loop = asyncio.new_event_loop()
    sybils = [f"sybil{i}" for i in range(10 * honest_count)]
    admitted = [
        s for s in sybils if loop.run_until_complete(records.add_endorsee("attacker", s, cap))
    ]
    loop.close()
    candidates = [
        Candidate(f"honest{i}", f"principal{i}", True, PeerBand.NEUTRAL)
        for i in range(honest_count)
    ] + [Candidate(s, "attacker", True, PeerBand.NEUTRAL) for s in admitted]
    chosen = select_voters(
        candidates,
        source_id="honest0",
        view=NetworkView({c.node_id: c.principal for c in candidates}),
        rng=random.Random(seed),
        quorum=quorum,
        reputation=reputation,
    )
    seats = sum(1 for c in chosen.voters if c.principal == "attacker")
    fig = Figures()
    fig.values["sybil_admitted"] = float(len(admitted))
    fig.values["sybil_voter_seats"] = float(seats)
    fig.values["sybil_accept_threshold"] = float(accept_threshold(chosen.n))
    fig.wall_s = time.perf_counter() - started
    return fig


def run_all(params: SimParams, cores: SimCores) -> Figures:
    """Every scenario for one (N, Byzantine share); one merged set of figures."""
    started = time.perf_counter()
    ids = identities_for(params.nodes, params.seed)
    total = Figures()
    for part in (
        run_main(params, cores, ids),
        run_churn(params, cores, ids),
        run_partition(params, cores, ids),
        run_sybil(
            params.nodes - round(params.byzantine_share * params.nodes),
            params.seed,
            QuorumParams(),
            cores.reputation,
        ),
    ):
        total.values.update(part.values)
        total.sim_events += part.sim_events
    total.wall_s = time.perf_counter() - started
    total.values["events_per_s"] = total.sim_events / max(total.wall_s, 1e-9)
    total.values["wall_s"] = total.wall_s
    return total
