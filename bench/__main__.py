"""The benchmark suite: ``python -m bench [--full]`` (``make bench``).

Runs every ``bench/*.py`` that has a ``--quick`` mode (quick unless ``--full``), each in its own
process with a bound on its time; a bench that fails, times out or prints no JSON line is
skipped with one clear line, never aborting the suite. Each bench's last line is one JSON
object of its figures; they are collected into ``bench/results.json`` (one object per bench,
plus ``rss`` and ``fleet`` measured here) and one table is printed: each judged figure, its
baseline from the same run, the ratio, the goal named in the issues, and whether it is met.

Measured here (no bench file holds them): node RSS with the hashing embedder and with MiniLM,
each plus its PostgreSQL (≤ 150 MB and ≤ 600 MB; a Mem0 process with MiniLM sits
at about 706 MB), and a 5-node fleet (1 Byzantine, pitfalls) run end to end: its wall time,
the known mistakes repeated with sharing vs the same agents isolated (goal ≥ 90 % fewer), and
the RSS of the whole fleet (nodes, PostgreSQL, registry) after the run (no goal named: shown
in the table, not judged).

Usage: ``python -m bench [--full] [--only NAME ...] [--skip NAME ...] [--timeout S]
[--no-fleet] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results.json"
#: Bench files that generate data and have no timed mode.
NOT_BENCHES = frozenset({"autonomy_corpus", "lesson_corpus"})
#: Benches run again with other arguments, under their own name: (module, arguments). Run
#: by ``--full`` (a quick suite leaves them out) or by ``--only NAME`` (then with ``--quick``
#: unless ``--full``). ``peers_100k``: the side-by-side with Mem0 on 100,000 lessons, seeded
#: in bulk (``bench/peers.py``'s "At scale").
VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "peers_100k": ("peers", ("--lessons", "100000")),
}

#: Per-bench bound on its time (seconds): quick and full.
QUICK_TIMEOUT_S = 150.0
FULL_TIMEOUT_S = 3600.0
_MB = 1024.0 * 1024.0


@dataclass(frozen=True, slots=True)
class Goal:
    """A figure the issues name a goal for: where it is, its bound, and its baseline."""

    bench: str
    key: str
    op: str  # "<=" | ">=" | "=="
    bound: float
    issue: str
    baseline: str = ""  # the key of the same run's baseline figure, if there is one

    def met(self, value: float) -> bool:
        """Whether ``value`` meets the goal."""
        ops: dict[str, Callable[[float, float], bool]] = {
            "<=": operator.le,
            ">=": operator.ge,
            "==": operator.eq,
        }
        return not math.isnan(value) and ops[self.op](value, self.bound)


#: The goals named in the issues, per bench and figure.
GOALS: tuple[Goal, ...] = (
    Goal("protocol", "verify_ratio", ">=", 0.5, "protocol"),
    Goal("store", "store_vs_copy_ratio", ">=", 0.5, "store"),
    Goal("store", "recall_p99_ms", "<=", 10.0, "store"),
    Goal("store", "recall_at_5", ">=", 0.95, "store"),
    Goal("sharing", "n5_messages_per_lesson_ratio", "<=", 2.0, "sharing"),
    Goal("sharing", "n20_messages_per_lesson_ratio", "<=", 2.0, "sharing"),
    Goal("sharing", "pipeline_vs_raw_ratio", ">=", 0.5, "sharing"),
    Goal("trust", "quorum_n7_p99_goal_ratio", "<=", 1.0, "trust"),
    Goal("filters", "filter_vs_verify_ratio", ">=", 0.5, "filters"),
    Goal("filters", "minilm_detection_all", ">=", 0.97, "filters", "hashing_detection_all"),
    Goal(
        "filters", "minilm_false_positive_all", "<=", 0.01, "filters", "hashing_false_positive_all"
    ),
    Goal(
        "learning",
        "conflicts_settled_correctly_share",
        ">=",
        0.95,
        "learning",
        "newest_wins_correct_share",
    ),
    Goal("learning", "collateral_changes", "==", 0.0, "learning"),
    Goal("learning", "variable_class_match_share", ">=", 0.9, "learning", "fixed_list_match_share"),
    Goal("catchup", "import_batch_vs_embed_ratio", ">=", 0.8, "catchup"),
    Goal(
        "exposure",
        "share0_honest_steps_saved_ratio",
        ">=",
        0.9,
        "trust",
        "share1_honest_steps_saved",
    ),
    Goal("peers", "recall_p50_ratio", "<=", 0.5, "peers", "mem0_search_p50_ms"),
    Goal("peers", "recall_p99_ratio", "<=", 1.0, "peers", "mem0_search_p99_ms"),
    Goal("peers", "remember_vs_add_ratio", ">=", 3.0, "peers", "mem0_add_per_s"),
    Goal("peers", "record_outcome_vs_add_ratio", ">=", 3.0, "peers", "mem0_add_per_s"),
    Goal("peers", "lamarck_recall_at_5", ">=", 0.95, "peers", "mem0_recall_at_5"),
    Goal("peers", "node_start_warm_s", "<=", 5.0, "peers"),
    Goal("peers", "ann_recall_at_5", ">=", 0.95, "peers"),
    Goal("peers", "node_rss_minilm_mb", "<=", 300.0, "peers", "mem0_process_rss_mb"),
    Goal("peers", "node_rss_hashing_mb", "<=", 150.0, "peers"),
    # The same on 100,000 lessons (Mem0 on the same 100,000): the fast path past 5,000.
    Goal("peers_100k", "recall_p50_ratio", "<=", 0.5, "scale", "mem0_search_p50_ms"),
    Goal("peers_100k", "recall_p99_ratio", "<=", 1.0, "scale", "mem0_search_p99_ms"),
    Goal("peers_100k", "lamarck_recall_at_5", ">=", 0.95, "scale", "mem0_recall_at_5"),
    Goal("peers_100k", "node_rss_minilm_mb", "<=", 300.0, "scale", "mem0_process_rss_mb"),
    Goal(
        "record_scale", "record_p50_large_vs_small_ratio", "<=", 1.5, "peers", "record_p50_small_ms"
    ),
    Goal("rss", "node_rss_hashing_with_postgres_mb", "<=", 150.0, "fleet"),
    Goal("rss", "node_rss_minilm_with_postgres_mb", "<=", 600.0, "fleet", "mem0_minilm_rss_mb"),
    # The fleet runs one poisoning node: the goal for a fleet with poisoners is
    # honest agents no worse than isolated (shared / isolated repeated mistakes <= 1); its
    # >= 90 % goal is for a fleet without them (tests/integration/fleet's learning curve).
    Goal(
        "fleet", "repeated_mistakes_ratio", "<=", 1.0, "fleet", "isolated_repeated_known_mistakes"
    ),
    Goal("fleet", "fleet_total_s", "<=", 180.0, "fleet"),
    # Influence by evidence: plausible liars' poisoned decisions with the gate on <= 1 % of
    # the gate-off nodes' in the same run; repeated mistakes within 1 per 100 turns of a fleet
    # without liars.
    Goal(
        "liars", "poisoned_decisions_ratio", "<=", 0.01, "influence", "gate_off_poisoned_decisions"
    ),
    Goal("liars", "liars_repeated_per_100_turns_delta", "<=", 1.0, "influence"),
)

#: Figures the issues ask to be measured with no goal named, and the host's condition while
#: they were: shown in the table, never judged.
#: (bench, figure, issue); the parts of a sum stay in ``results.json``.
SHOWN: tuple[tuple[str, str, str], ...] = (
    # The RSS of a 5-node fleet: nodes + PostgreSQL (PSS) + the registry's Redis.
    ("fleet", "fleet_rss_mb", "fleet"),
    # The reduction itself, with its poisoning node (judged above by the poisoners' goal).
    ("fleet", "mistakes_reduction", "fleet"),
    # What the write-behind moved out of the writes' wait: the next recall after the burst
    # of writes settles it (no goal is set on it).
    ("peers", "recall_after_writes_ms", "peers"),
    # The Recall p50 ratio lamarck would reach if all but the query's embedding cost nothing:
    # its embedding alone over Mem0's whole search (the p50 goal is 0.5).
    ("peers", "embed_floor_p50_ratio", "peers"),
    # Novel recalls each after an idle gap, as an agent calls them between plans (the goal's
    # figure is measured back to back, every cache warm).
    ("peers", "recall_spaced_p50_ratio", "peers"),
    ("peers_100k", "recall_spaced_p50_ratio", "scale"),
    # The store's search alone at 100,000 lessons: the recall index's compact form against
    # the HNSW round trip it replaces, and the memory its arrays take.
    ("peers_100k", "store_search_index_vs_hnsw_p50_ratio", "scale"),
    ("peers_100k", "store_index_memory_mb", "scale"),
    # RecordOutcome called back to back (a burst): the background embedding and HNSW inserts
    # of the burst's taught lessons share the cores with the calls (the goal is paced).
    ("record_scale", "burst_p50_large_vs_small_ratio", "peers"),
    # A long catch-up's rate counting the vector index rebuilt after its last record
    # (concurrently: searches are exact, never refused, until it is back).
    ("catchup", "import_batch_with_rebuild_vs_embed_ratio", "catchup"),
    # The same import against embedding alone of every text it embeds (the contents and the
    # autonomy filter's sentences): what the rest of the import costs, those sentences apart.
    ("catchup", "import_batch_vs_embed_same_texts_ratio", "catchup"),
    # The whole filter's false positives (MiniLM) on generated tool-usage lessons the corpus
    # does not hold: 20,000 (--quick: 1,000), beside the corpus's honest lessons judged above.
    ("filters", "minilm_false_positive_generated", "filters"),
    # Late chunking, an experiment that decides a design (bench/late_chunking.py): the share of
    # a catch-up's embedding work the contents alone are with the autonomy filter's sentences
    # pooled from the content's own pass (today's way: embedded alone, ..._standalone_ratio),
    # and held-out detection with a classifier trained on those pooled vectors.
    ("late_chunking", "content_alone_vs_standalone_ratio", "catchup"),
    ("late_chunking", "content_alone_vs_late_ratio", "catchup"),
    ("late_chunking", "late_detection_heldout", "filters"),
    ("late_chunking", "standalone_detection_heldout", "filters"),
    # The share of the host's CPU time its hypervisor gave other guests while the two benches
    # most judged on a shared machine ran (``bench/host.py``): how busy the host was.
    ("peers", "host_steal_share", "peers"),
    ("catchup", "host_steal_share", "catchup"),
)

#: Mem0's process with the same model, the baseline of the MiniLM RSS goal.
MEM0_MINILM_RSS_MB = 706.0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def bench_names() -> list[str]:
    """Every bench module with a ``--quick`` mode, in name order."""
    names = []
    for path in sorted(BENCH_DIR.glob("*.py")):
        name = path.stem
        if name.startswith("_") or name in NOT_BENCHES:
            continue
        if "--quick" in path.read_text(errors="replace"):
            names.append(name)
    return names


def last_json(text: str) -> dict[str, Any] | None:
    """The last line of ``text`` that is one JSON object (a bench's figures)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def run_bench(name: str, *, full: bool, timeout_s: float) -> tuple[dict[str, Any] | None, str]:
    """Run ``bench.<name>``; its figures, or None and why it was skipped."""
    module, extra = VARIANTS.get(name, (name, ()))
    argv = [sys.executable, "-m", f"bench.{module}", *([] if full else ["--quick"]), *extra]
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv,
            cwd=BENCH_DIR.parent,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:.0f} s"
    took = time.monotonic() - started
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        return None, f"exit {done.returncode} after {took:.0f} s: {tail[0][:160]}"
    figures = last_json(done.stdout)
    if figures is None:
        return None, f"no JSON line after {took:.0f} s"
    figures["_seconds"] = round(took, 1)
    return figures, ""


# -- RSS and the fleet, measured here ------------------------------------------------------


def _proc_kb(pid: int, field: str, path: str = "status") -> float:
    try:
        for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        return 0.0
    return 0.0


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def rss_mb(pid: int) -> float:
    """A process's resident set (MB)."""
    return _proc_kb(pid, "VmRSS") / 1024.0


def postgres_pss_mb(postmaster: int | None) -> float:
    """PostgreSQL's proportional set (MB): the postmaster and its backends, shared buffers
    counted once (RSS would count them in every backend)."""
    if postmaster is None:
        return 0.0
    pids = [postmaster, *_children(postmaster)]
    return sum(_proc_kb(p, "Pss", "smaps_rollup") for p in pids) / 1024.0


def _warm(addr: str, n: int) -> None:
    """Make a node embed and recall (so its model is loaded and its caches hold something)."""
    from lamarck.client import Client

    with Client(addr, timeout=120) as client:
        for i in range(n):
            client.remember(f"Prefer `make -C build t{i}` over `make t{i}` for t{i}.")
        for i in range(n):
            client.recall(f"build target t{i}")


def measure_node_rss(embedder: str, base_port: int) -> dict[str, float]:
    """One node with ``embedder`` and its PostgreSQL, after some work: RSS in MB."""
    from lamarck.fleet.supervisor import Fleet, FleetSpec

    with tempfile.TemporaryDirectory(prefix="bench-rss-") as tmp:
        fleet = Fleet(
            FleetSpec(directory=Path(tmp) / "f", nodes=1, embedder=embedder, base_port=base_port)
        )
        try:
            fleet.up(_say)
            _warm(fleet.nodes[0].agent_addr, 20)
            node = rss_mb(fleet.nodes[0].pid)
            pg = postgres_pss_mb(fleet._pg.postmaster_pid())
        finally:
            fleet.stop(_say)
    return {
        f"node_rss_{embedder}_mb": round(node, 1),
        f"postgres_pss_{embedder}_mb": round(pg, 1),
        f"node_rss_{embedder}_with_postgres_mb": round(node + pg, 1),
    }


def measure_fleet(base_port: int, *, nodes: int, agents: int, rounds: int) -> dict[str, float]:
    """A fleet (1 Byzantine, pitfalls, hashing) run end to end; its figures and RSS."""
    from lamarck.fleet.driver import DriverParams, FleetDriver, NodeHandle
    from lamarck.fleet.report import learning_figures
    from lamarck.fleet.supervisor import Fleet, FleetSpec
    from lamarck.fleet.workloads import WorkloadParams, make_workload

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        spec = FleetSpec(directory=Path(tmp) / "f", nodes=nodes, byzantine=1, base_port=base_port)
        fleet = Fleet(spec)
        try:
            fleet.up(_say)
            up_s = time.monotonic() - started
            byz = tuple(i for i in range(nodes) if spec.is_byzantine(i))
            work = make_workload(
                "pitfalls",
                0,
                WorkloadParams(nodes=nodes, agents=agents, rounds=rounds, byzantine_nodes=byz),
            )
            handles = [
                NodeHandle(
                    n.name,
                    n.agent_addr,
                    n.metrics_url,
                    byzantine=spec.is_byzantine(i),
                    home=n.home,
                )
                for i, n in enumerate(fleet.nodes)
            ]
            params = DriverParams(gossip_interval_s=spec.gossip_interval_s)
            with FleetDriver(handles, work, params, random.Random(0)) as driver:
                figures = learning_figures(driver.run())
            node_rss = sum(rss_mb(n.pid) for n in fleet.nodes)
            pg = postgres_pss_mb(fleet._pg.postmaster_pid())
            redis_pid = fleet._redis.pid() if fleet._redis is not None else None
            redis = rss_mb(redis_pid) if redis_pid else 0.0
        finally:
            fleet.stop(_say)
    figures.update(
        {
            "fleet_nodes": float(nodes),
            "fleet_up_s": round(up_s, 1),
            "fleet_total_s": round(time.monotonic() - started, 1),
            "fleet_nodes_rss_mb": round(node_rss, 1),
            "fleet_postgres_pss_mb": round(pg, 1),
            "fleet_registry_rss_mb": round(redis, 1),
            "fleet_rss_mb": round(node_rss + pg + redis, 1),
        }
    )
    return figures


# -- the table -------------------------------------------------------------------------------


def table_rows(results: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """One row per goal whose bench ran (bench, figure, value, baseline, ratio, goal, met),
    then one per ``SHOWN`` figure measured (no goal, met "-")."""
    rows = []
    for g in GOALS:
        figures = results.get(g.bench)
        if figures is None or g.key not in figures:
            continue
        value = float(figures[g.key])
        base = figures.get(g.baseline) if g.baseline else None
        base_text = f"{float(base):g}" if isinstance(base, int | float) else "-"
        ratio = "-"
        if g.key.endswith("_ratio"):
            ratio = f"{value:g}"
        elif isinstance(base, int | float) and base:
            ratio = f"{value / float(base):.3g}"
        verdict = "met" if g.met(value) else "NOT MET"
        rows.append(
            (g.bench, g.key, f"{value:g}", base_text, ratio, f"{g.op} {g.bound:g}", verdict)
        )
    for bench, key, _issue in SHOWN:
        figures = results.get(bench)
        if figures is not None and key in figures:
            rows.append((bench, key, f"{float(figures[key]):g}", "-", "-", "none named", "-"))
    return rows


def print_table(results: Mapping[str, Mapping[str, Any]], skipped: Mapping[str, str]) -> None:
    """The one table on stdout, then the skipped benches."""
    header = ("bench", "figure", "value", "baseline", "ratio", "goal", "met?")
    rows = [header, *table_rows(results)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for k, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    met = sum(r[-1] == "met" for r in rows[1:])
    judged = sum(r[-1] != "-" for r in rows[1:])
    print(f"{met}/{judged} goals met; benches run: {', '.join(sorted(results))}")
    for name, why in skipped.items():
        print(f"SKIPPED {name}: {why}")


def main(argv: list[str] | None = None) -> int:
    """Run the suite; write the results; print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="full sizes (default: --quick)")
    parser.add_argument("--only", nargs="+", default=None, help="run only these benches")
    parser.add_argument("--skip", nargs="+", default=[], help="benches to leave out")
    parser.add_argument("--timeout", type=float, default=None, help="per-bench bound, seconds")
    parser.add_argument("--no-fleet", action="store_true", help="no RSS and fleet measurement")
    parser.add_argument("--base-port", type=int, default=27400, help="ports of the fleets here")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    timeout = args.timeout or (FULL_TIMEOUT_S if args.full else QUICK_TIMEOUT_S)
    every = bench_names() + (sorted(VARIANTS) if args.full else [])
    names = [n for n in (args.only or every) if n not in args.skip]
    results: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    started = time.monotonic()
    for name in names:
        if name in ("rss", "fleet"):
            continue
        _say(f"bench {name} ({'full' if args.full else 'quick'}) ...")
        figures, why = run_bench(name, full=args.full, timeout_s=timeout)
        if figures is None:
            _say(f"SKIPPED {name}: {why}")
            skipped[name] = why
        else:
            results[name] = figures
    if not args.no_fleet and (args.only is None or {"rss", "fleet"} & set(args.only)):
        _measure_here(args, results, skipped)
    total = time.monotonic() - started
    payload = {
        "mode": "full" if args.full else "quick",
        "total_s": round(total, 1),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "results": results,
        "skipped": skipped,
    }
    args.out.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    print_table(results, skipped)
    print(f"suite took {total:.0f} s; figures in {args.out}")
    return 0


def _measure_here(
    args: argparse.Namespace, results: dict[str, dict[str, Any]], skipped: dict[str, str]
) -> None:
    """Node RSS with each embedder, and the 5-node fleet: each skipped on its own failure."""
    from lamarck.errors import LamarckError

    want = set(args.only or ("rss", "fleet"))
    if "rss" in want and "rss" not in args.skip:
        rss: dict[str, Any] = {"mem0_minilm_rss_mb": MEM0_MINILM_RSS_MB}
        for k, embedder in enumerate(("hashing", "minilm")):
            _say(f"node RSS with the {embedder} embedder ...")
            try:
                rss.update(measure_node_rss(embedder, args.base_port + 10 * k))
            except (LamarckError, OSError) as e:
                skipped[f"rss-{embedder}"] = f"{type(e).__name__}: {e}"[:200]
        results["rss"] = rss
    if "fleet" in want and "fleet" not in args.skip:
        sizes = {"nodes": 5, "agents": 10, "rounds": 6 if args.full else 4}
        _say(f"5-node fleet (1 Byzantine, pitfalls, hashing), {sizes['rounds']} rounds ...")
        try:
            results["fleet"] = measure_fleet(args.base_port + 40, **sizes)
        except (LamarckError, OSError) as e:
            skipped["fleet"] = f"{type(e).__name__}: {e}"[:200]


if __name__ == "__main__":
    sys.exit(main())
