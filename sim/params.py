"""Every simulator constant in one frozen, validated object.

The latency model is stated here once: every node sits at a point on a ring of
circumference 1 (drawn from the seed); the one-way latency of a link is
``latency_min_s + (latency_max_s - latency_min_s) * 2 * ring_distance`` plus
``processing_s`` at the receiver, so link latencies spread evenly over
[latency_min_s, latency_max_s] (default 20..150 ms: one continent to intercontinental).
A message is lost with probability ``loss``; a lost or refused send fails at once at the
sender (its timeout is not simulated), which is what the shipped router reacts to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lamarck.errors import ConfigError

__all__ = ["SimParams"]


def _finite(name: str, value: float, low: float, high: float = math.inf) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"invalid {name}: must be a finite number, got {value!r}", field=name)
    if not low <= value <= high:
        raise ConfigError(f"invalid {name}: must be in [{low}, {high}], got {value!r}", field=name)


@dataclass(frozen=True, slots=True)
class SimParams:
    """Sizes, link model, churn, partitions and workload of one simulated network."""

    nodes: int = 100  # nodes in the network, >= 2
    byzantine_share: float = 0.0  # share of nodes that are Byzantine, in [0, 0.9]
    seed: int = 1  # every random draw derives from it
    latency_min_s: float = 0.020  # one-way latency of the closest link, seconds >= 0
    latency_max_s: float = 0.150  # ... of the farthest, seconds >= latency_min_s
    processing_s: float = 0.002  # receiver's import time per message, seconds >= 0
    loss: float = 0.01  # probability a message is lost, in [0, 0.5]
    lessons: int = 8  # honest lessons published in the propagation phase, >= 1
    lesson_gap_s: float = 1.0  # seconds between two publications, > 0
    churn_share: float = 0.2  # share of nodes down during the churn phase, in [0, 0.9]
    churn_down_s: float = 60.0  # how long a churned node stays down, seconds > 0
    partition_s: float = 120.0  # how long the network stays split in two, seconds > 0
    attackers: int = 4  # Byzantine nodes whose poisoning is followed to the end, >= 0
    attack_records: int = 10  # records each followed attacker floods, >= 1
    # Honest nodes that run anti-entropy rounds (the rest only serve), >= 1. The default is
    # every honest node, as in a network: a round pulls from sync_peers_per_round peers, so
    # its cost no longer grows with N. A smaller sample is cheaper but pessimistic: the
    # nodes that do not pull hold only what push brought them, so repair is slower.
    ae_sample: int = 1_000_000
    # Longest stretch of simulated time a round scans peers ahead without yielding, so each
    # peer is judged (up, reachable, holding what) at about the time it is asked; seconds > 0.
    ae_quantum_s: float = 1.0
    horizon_s: float = 300.0  # simulated seconds each phase may run at most, > 0
    record_overhead_bytes: int = 64  # envelope bytes per record in a Publish or Sync, >= 0
    request_bytes: int = 128  # bytes of a Publish or Sync request without records, >= 0
    # Run the node's taint sweep (as a node does); False only to measure what it changes.
    taint_sweep: bool = True
    # Run the influence gate (as a node does): only proven and corroborated lessons drive an
    # agent's order; unverified ones are labelled hints in the plan-time share. False shows
    # every lesson held as advice, to measure what the gate changes in the same run.
    influence_gate: bool = True

    def __post_init__(self) -> None:
        """Validate every field; ``ConfigError`` names the first one that breaks its rule."""
        for name, low in (
            ("nodes", 2),
            ("lessons", 1),
            ("attackers", 0),
            ("attack_records", 1),
            ("ae_sample", 1),
            ("record_overhead_bytes", 0),
            ("request_bytes", 0),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"invalid {name}={value!r}: must be an integer >= {low}")
        if not isinstance(self.influence_gate, bool):
            raise ConfigError("invalid influence_gate: must be a boolean", field="influence_gate")
        if not isinstance(self.taint_sweep, bool):
            raise ConfigError("invalid taint_sweep: must be a boolean", field="taint_sweep")
        if not isinstance(self.seed, int):
            raise ConfigError("invalid seed: must be an integer", field="seed")
        _finite("byzantine_share", self.byzantine_share, 0.0, 0.9)
        _finite("churn_share", self.churn_share, 0.0, 0.9)
        _finite("loss", self.loss, 0.0, 0.5)
        _finite("latency_min_s", self.latency_min_s, 0.0)
        _finite("latency_max_s", self.latency_max_s, self.latency_min_s)
        _finite("processing_s", self.processing_s, 0.0)
        for name in ("lesson_gap_s", "churn_down_s", "partition_s", "horizon_s", "ae_quantum_s"):
            _finite(name, getattr(self, name), 1e-9)
