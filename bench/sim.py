"""Benchmark: the network simulator at N = 100, 1,000 and 10,000.

Prints the calibration against bench/sharing.py's real runs (messages per lesson and hops at
N = 5, 10, 20, with the real figure N-1 beside each and the ratio), the scale table, and, last,
one JSON line of every figure. ``--quick``: N = 100 and 1,000, 4 lessons, anti-entropy rounds on
100 nodes only (cheaper; its repair figures are pessimistic: the other nodes never pull).

First, the learning calibration (``lamarck.sim.learning``): the fleet learning curve
(``fleet-learning-curve``, the fleet's own workload and driver) on N = 10 simulated nodes that
each run the node's lesson service, once per ``--learning-seeds`` seed, with the mean and
spread of the repeated known mistakes with sharing and isolated (a few seconds per seed).
``lamarck fleet up --nodes 10 --workload fleet-learning-curve --seed S`` is the real run of the
same workload and seed.

    python -m bench.sim            # N = 100, 1,000, 10,000; Byzantine 0 %, 10 %, 30 %
    python -m bench.sim --quick
    python -m bench.sim --learning-only            # the learning calibration alone
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from lamarck.sim.learning import LearningSimParams, learning_curve, learning_lines
from lamarck.sim.params import SimParams
from lamarck.sim.state import SimCores
from lamarck.sim.suite import calibration_lines, run_suite


def main(argv: list[str] | None = None) -> int:
    """Run the suite; print progress, the calibration, the table and one JSON line."""
    parser = argparse.ArgumentParser(description="Simulate lamarck networks at scale.")
    parser.add_argument("--quick", action="store_true", help="N = 100 and 1,000 only")
    parser.add_argument("--n", type=int, nargs="+", default=None, help="network sizes")
    parser.add_argument("--byzantine", type=float, nargs="+", default=[0.0, 0.1, 0.3])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lessons", type=int, default=8)
    parser.add_argument("--learning-seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--learning-nodes", type=int, default=10)
    parser.add_argument("--learning-only", action="store_true", help="the learning calibration")
    parser.add_argument(
        "--no-taint-sweep",
        action="store_true",
        help="skip the node's taint sweep (only to measure what the sweep changes)",
    )
    args = parser.parse_args(argv)
    learning: dict[str, float] = {}
    if args.learning_seeds:
        base = LearningSimParams(nodes=args.learning_nodes)
        runs, summary = learning_curve(
            args.learning_seeds, base, progress=lambda m: print(m, file=sys.stderr, flush=True)
        )
        print(
            f"Learning calibration: {base.workload}, N = {base.nodes} simulated nodes with the "
            f"node's lesson service, {base.agents} agents, {base.rounds} rounds "
            "(real: lamarck fleet up --nodes N --workload fleet-learning-curve --seed S):"
        )
        for line in learning_lines(args.learning_seeds, runs):
            print("  " + line)
        learning = {f"learning_{k}": v for k, v in summary.items()}
    if args.learning_only:
        print(json.dumps(learning, sort_keys=True), flush=True)
        return 0
    sizes = args.n or ([100, 1000] if args.quick else [100, 1000, 10000])
    cores = SimCores()
    started = time.perf_counter()
    result = run_suite(
        sizes,
        args.byzantine,
        seed=args.seed,
        # Quick: fewer lessons and a smaller anti-entropy sample, the same scenarios.
        base=(
            SimParams(lessons=4, ae_sample=100, taint_sweep=not args.no_taint_sweep)
            if args.quick
            else SimParams(lessons=args.lessons, taint_sweep=not args.no_taint_sweep)
        ),
        cores=cores,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    print("Calibration against bench/sharing.py (real: N-1 records per lesson):")
    for line in calibration_lines(result.calibration, cores.gossip.fanout):
        print("  " + line)
    print(
        "Latency model: one-way 20..150 ms by ring distance + 2 ms processing, 1 % loss; "
        f"anti-entropy every {cores.gossip.anti_entropy_interval_s:.0f} s"
    )
    print(result.table())
    print(f"total {time.perf_counter() - started:.1f} s", file=sys.stderr)
    line = json.loads(result.json_line())
    line.update(learning)
    print(json.dumps(line, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
