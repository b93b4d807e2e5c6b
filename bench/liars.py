"""Benchmark of the influence gate against plausible liars, on real fleets.

Each run starts a fresh fleet (``lamarck fleet up --workload plausible-liars``), so every run's
liars are fresh identities: ``--nodes`` nodes, the last ``--byzantine`` of them liars, each
under an operator of its own; their agents invert every other pitfall's lesson and learn the
rest honestly (their nodes share both, with the evidence their runs claim). Every other honest
node runs with the influence gate off (a node setting that only measurement uses), so one run
gives both arms over every honest decision of the run, not a snapshot:

* **poisoned decisions**: honest decisions whose first attempt a known poison (a lesson
  telling the failing form over the working one) changed (the first attempt differs with
  every poisoned lesson taken away), gate on vs gate off; goal: gate on <= 1 % of gate off
  (``poisoned_decisions_ratio``); beside them the decisions a poison was before at all
  (``*_exposed_decisions``), followed or not;
* **known mistakes repeated** per 100 honest turns on gated nodes, with the liars vs the same
  fleet with no liars: the same honest nodes, operators and agents per node with the liars'
  nodes left out (``--control removed``, the default), so the difference is the harm the liars
  do; goal: equal within 1 per 100 turns (``liars_repeated_per_100_turns_delta``).
  ``--control replaced`` runs the liars' nodes honest instead: that fleet also gains what three
  more honest peers (and their operators' attestations) teach, which no defence can give the
  fleet under attack;
* the cost: honest peer lessons that came to drive decisions, and the mean rounds until then
  and until they were corroborated.

The last line is one JSON object of the figures (mean and ``_spread`` over the runs).
``--quick``: one run of each fleet at 6 nodes (2 liars) and 4 rounds.

Usage: ``python -m bench.liars [--quick] [--runs N] [--nodes N] [--byzantine N] [--seed N]
[--base-port P] [--control removed|replaced]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def fleet_run(
    nodes: int, byzantine: int, agents: int, rounds: int, seed: int, base_port: int = 9100
) -> dict[str, float]:
    """One fresh fleet's figures (its ``--json`` line); ``fleet up`` mints every node's key,
    so the liars are fresh identities each run."""
    with tempfile.TemporaryDirectory(prefix="lamarck-liars-") as tmp:
        argv = [
            sys.executable,
            "-m",
            "lamarck.cli",
            "fleet",
            "up",
            "--workload",
            "plausible-liars",
            "--nodes",
            str(nodes),
            "--byzantine",
            str(byzantine),
            "--agents",
            str(agents),
            "--rounds",
            str(rounds),
            "--seed",
            str(seed),
            "--dir",
            str(Path(tmp) / "fleet"),
            "--base-port",
            str(base_port),
            "--exit",
            "--json",
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
        if done.returncode != 0 or not lines:
            raise SystemExit(f"fleet run failed ({done.returncode}): {done.stderr[-2000:]}")
        figures: dict[str, float] = json.loads(lines[-1])
        return figures


def _per_100(f: dict[str, float], key: str) -> float:
    turns = f.get("gate_on_turns", 0.0)
    return 100.0 * f.get(key, 0.0) / turns if turns else 0.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--byzantine", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base-port", type=int, default=9100)
    ap.add_argument("--control", choices=("removed", "replaced"), default="removed")
    args = ap.parse_args(argv)
    runs, nodes, byz, rounds = args.runs, args.nodes, args.byzantine, 6
    if args.quick:
        runs, nodes, byz, rounds = 1, 6, 2, 4
    agents = 2 * nodes
    rows: list[dict[str, float]] = []
    for k in range(runs):
        liars = fleet_run(nodes, byz, agents, rounds, args.seed + k, args.base_port)
        if args.control == "removed":
            honest = nodes - byz
            clean = fleet_run(honest, 0, 2 * honest, rounds, args.seed + k, args.base_port)
        else:
            clean = fleet_run(nodes, 0, agents, rounds, args.seed + k, args.base_port)
        on, off = liars.get("gate_on_poisoned_decisions", 0.0), liars["gate_off_poisoned_decisions"]
        row = {
            "gate_on_poisoned_decisions": on,
            "gate_off_poisoned_decisions": off,
            "gate_on_exposed_decisions": liars.get("gate_on_exposed_decisions", 0.0),
            "gate_off_exposed_decisions": liars.get("gate_off_exposed_decisions", 0.0),
            "gate_on_turns": liars.get("gate_on_turns", 0.0),
            "gate_off_turns": liars.get("gate_off_turns", 0.0),
            "liars_repeated_per_100_turns": round(
                _per_100(liars, "gate_on_repeated_known_mistakes"), 2
            ),
            "clean_repeated_per_100_turns": round(
                _per_100(clean, "gate_on_repeated_known_mistakes"), 2
            ),
            "honest_imports_decides": liars.get("honest_imports_decides", 0.0),
            "rounds_until_decides": liars.get("rounds_until_decides", 0.0),
            "rounds_until_corroborated": liars.get("rounds_until_corroborated", 0.0),
            "shared_first_attempt_success": liars.get("shared_first_attempt_success", 0.0),
            "clean_first_attempt_success": clean.get("shared_first_attempt_success", 0.0),
        }
        row["liars_repeated_per_100_turns_delta"] = round(
            row["liars_repeated_per_100_turns"] - row["clean_repeated_per_100_turns"], 2
        )
        rows.append(row)
        print(f"run {k + 1}: " + ", ".join(f"{a} {b:g}" for a, b in row.items()), flush=True)
    out: dict[str, float] = {}
    for key in rows[0]:
        values = [r[key] for r in rows]
        out[key] = round(statistics.fmean(values), 3)
        out[f"{key}_spread"] = round(max(values) - min(values), 3)
    off_mean = out["gate_off_poisoned_decisions"]
    out["poisoned_decisions_ratio"] = (
        round(out["gate_on_poisoned_decisions"] / off_mean, 4) if off_mean else 0.0
    )
    empty = " (the ungated nodes made none: the ratio says nothing)" if not off_mean else ""
    print(
        f"poisoned decisions: gate on {out['gate_on_poisoned_decisions']:g} vs gate off "
        f"{off_mean:g}{empty} (goal: on <= 1 % of off); known mistakes repeated per 100 gated "
        "turns: "
        f"{out['liars_repeated_per_100_turns']:g} with liars vs "
        f"{out['clean_repeated_per_100_turns']:g} without (the liars' nodes {args.control}; "
        "goal: within 1)"
    )
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
