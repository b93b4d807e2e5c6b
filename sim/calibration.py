"""Calibration against the real network (``bench/sharing.py``): messages and hops per lesson.

At N = 5, 10, 20 with no loss, no churn and no Byzantine node, the real nodes send N-1
records per lesson (direct push, one hop; with ``direct_push_max`` 0 the fanout tree, depth
``ceil(log_fanout N)``). :func:`push_calibration` runs the same push on the simulator.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from dataclasses import dataclass

from lamarck.sim.engine import SimNetwork
from lamarck.sim.params import SimParams
from lamarck.sim.records import LessonKind, honest_lesson, sign_record
from lamarck.sim.scenarios import identities_for, workload_pitfalls
from lamarck.sim.state import SimCores

__all__ = ["PushFigures", "push_calibration", "tree_depth"]


@dataclass(frozen=True, slots=True)
class PushFigures:
    """Per lesson: records sent, the deepest hop, and whether every node got it."""

    nodes: int
    direct_push_max: int
    messages_per_lesson: float
    max_hops: int
    all_reached: bool


def tree_depth(n: int, fanout: int) -> int:
    """Depth of a complete ``fanout``-ary tree over ``n`` nodes (the root at depth 0)."""
    depth, covered, level = 0, 1, 1
    while covered < n:
        level *= fanout
        covered += level
        depth += 1
    return depth


def push_calibration(
    nodes: int, direct_push_max: int, *, lessons: int = 5, seed: int = 1
) -> PushFigures:
    """Push ``lessons`` honest lessons through an ideal network of ``nodes`` (no loss)."""
    params = SimParams(nodes=nodes, seed=seed, loss=0.0, lessons=lessons, churn_share=0.0)
    base = SimCores()
    cores = dataclasses.replace(
        base, gossip=dataclasses.replace(base.gossip, direct_push_max=direct_push_max)
    )
    net = SimNetwork(params, cores, identities_for(nodes, seed))
    rng = random.Random(seed)
    pitfalls = workload_pitfalls(seed)
    records = []
    for k in range(lessons):
        p = pitfalls[k % len(pitfalls)]
        origin = rng.randrange(nodes)
        rec = sign_record(
            net.identities[origin],
            origin,
            LessonKind.HONEST,
            p,
            honest_lesson(p),
            net.clock.now(),
            f"calibration{k}",
        )
        records.append(rec)
        net.at(k * params.lesson_gap_s, functools.partial(net.publish, rec))
    net.run_until(lessons * params.lesson_gap_s + 10.0)
    hops = [h for r in records for _, h in net.arrivals.get(r.content_hash, {}).values()]
    reached = all(len(net.arrivals.get(r.content_hash, {})) == nodes for r in records)
    figures = PushFigures(
        nodes=nodes,
        direct_push_max=direct_push_max,
        messages_per_lesson=net.counters.messages / lessons,
        max_hops=max(hops, default=0),
        all_reached=reached,
    )
    net.close()
    return figures
