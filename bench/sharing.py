"""Benchmark of sharing between real nodes on loopback, and of the import pipeline.

Two parts, in one run:

**Propagation** — for each N (5, 10, 20), a fresh network of N real node processes
(``python -m lamarck.node.daemon``, hashing embedder, admission ``open``, the shared Redis at
``--redis-url`` in a namespace of its own, ``--gossip-interval-s 0.05``, anti-entropy every
``--anti-entropy-interval-s`` = 600 s so that only push gossip is measured; ``--direct-push-max``
32, the node default: up to 32 peers the origin pushes to every one, so ``--direct-push-max 0``
measures the tree mode larger networks use). Once every node
knows every other (a node refreshes its peer list every ``heartbeat_interval_s`` = 10 s: the
bench waits one refresh past the last registration), it learns lessons one at a time, each on
the next origin node (RecordOutcome calls through the agent API: a failed op then a working
one, then confirmations from other projects until the lesson is global and above the publish
threshold, as ``tests/integration/sharing`` does). For each lesson:

* propagation time = (latest ``created_at`` of the imported copy over the N−1 other nodes) −
  (the moment the RecordOutcome call that made the lesson publishable returned). The import
  time is the one the node wrote: the imported row's ``created_at`` in its database, stamped by
  the node's system clock (microseconds) when its pipeline took the record — before the
  verification, embedding and commit that follow within milliseconds. The bench reads those
  rows directly from each node's database (polling every 25 ms only to learn when all are
  there; the poll interval does not enter the figure). The "observed" figure is when the
  bench first saw all N−1 copies (resolution: the poll interval plus one query). The origin
  scans for publishable lessons every gossip interval (0.05 s): up to that long is waiting
  for the scan.
* messages = records received across all N nodes for that lesson: the delta of every node's
  ``lamarck_imports_total`` (every record offered to the pipeline, duplicates included),
  read from the nodes' Prometheus endpoints once the counts stopped moving; also the delta of
  ``Publish`` RPCs served (``lamarck_rpc_requests_total{server="peer"}``). Reported per lesson
  and as ``messages ÷ (N−1)`` (goal ≤ 2).
* a lesson some node still lacks once the counters have stood still for 3 s was not delivered
  everywhere by push gossip: only anti-entropy (every 60 s by default) would bring it. It has
  no propagation time; ``n<N>_push_complete_ratio`` says how many lessons reached every node,
  ``n<N>_peers_reached_ratio`` how many (lesson, peer) pairs were reached.

``n<N>_propagation_p50_ms``/``_p99_ms`` are over the lessons of one N that reached every node
(nearest rank: with 20 lessons p99 is the maximum). ``n<N>_propagation_p99_all_ms`` is over
every lesson, one that never reached every node counting as unbounded; it is absent when that
makes it unbounded, and the p99 goal is judged on it.

All nodes use ONE embedded PostgreSQL (pgserver) with a database per node: a node then starts
in ~0.6 s instead of ~1.2 s with a server of its own (measured one at a time on an idle
machine), and 20 nodes do not run 20 servers (each with its own shared buffers) on the machine
being measured.

**Import throughput** — in this process, the same M signed lesson records from several
registered sources (admission ``open``, their keys pinned in a Redis directory read through
``CachedDirectory``, as a node does), each path into a fresh database of that server:

(a) the whole pipeline: ``ImportPipeline.import_record`` (parse, signature, key pin, decision
    and filters, transfer, embedding, store) built as ``node/sharing.py`` builds it;
(b) raw: ``SignedMemory.from_json`` + ``verify`` (parse, canonical form, signature), the same
    embedding call, ``imported_row`` and ``insert_lesson`` of the same rows.

Both paths run in alternating chunks (A B B A ...) so that a change of machine load hits both;
``pipeline_vs_raw_ratio`` = pipeline records/s ÷ raw records/s (goal ≥ 0.5).

Each goal is printed as met or NOT MET. The last line of output is one JSON object of the
figures (name → number). Every node, the Postgres server and the Redis namespaces are stopped
or cleared at the end, also on error, Ctrl-C or SIGTERM.

Usage: ``python -m bench.sharing [--quick] [--n 5 10 20] [--lessons L] [--records M]
[--sources S] [--profile] [--keep]`` (``--quick``: N = 5 only, 5 lessons, 300 records; about
30 s). ``--profile`` prints a cProfile of the pipeline path; ``--keep`` keeps the node homes
and logs (``--node-log-level INFO`` for more).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import logging
import math
import os
import pstats
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script (`python bench/sharing.py`): make `bench` importable as a package.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg
from prometheus_client.parser import text_string_to_metric_families

import lamarck
from bench.node import outcome
from lamarck.client import AsyncClient
from lamarck.gossip.publisher import GossipParams
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.versions import imported_row
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.embedded import EmbeddedPostgres, default_server_settings
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.policy.decision import ImportOutcome, ImportParams
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.redis_directory import RedisPeerDirectory
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation

__all__ = [
    "Goal",
    "counter_samples",
    "main",
    "percentile",
    "run",
]

REDIS_URL = "redis://127.0.0.1:6379/0"
#: Bound on the nodes of one network starting (all in parallel on a loaded machine).
START_TIMEOUT_S = 180.0
#: Bound on a lesson reaching every node before the bench gives up on it.
PROPAGATION_TIMEOUT_S = 30.0
#: Bound on a node's clean stop after SIGTERM (then it is killed).
STOP_TIMEOUT_S = 20.0
#: How often the bench looks for the imported copies (does not enter the figure).
IMPORT_POLL_S = 0.025
#: A lesson still missing on some node is given up on (push gossip is over) once the
#: message counters have not moved for QUIET_S; they are first read QUIET_CHECK_AFTER_S
#: after the lesson became publishable (reading them loads the nodes).
QUIET_S = 3.0
QUIET_CHECK_AFTER_S = 1.0
#: The message counters are read this often until two reads agree...
SETTLE_POLL_S = 0.3
#: ...and for at most this long.
SETTLE_TIMEOUT_S = 20.0
_FILE_POLL_S = 0.05
_PUBLISH_METHOD_SUFFIX = "/Publish"


def _log(message: str) -> None:
    print(message, flush=True)


# -- pure helpers ---------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q ≤ 1) of ``values``: an observed value, never an
    interpolation (with fewer than 100 values, p99 is the maximum)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must be in (0, 1], got {q!r}")
    rank = math.ceil(q * len(ordered))
    return ordered[max(0, rank - 1)]


def counter_samples(metrics_text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The ``<name>_total`` samples (labels, value) of a Prometheus text exposition."""
    out: list[tuple[dict[str, str], float]] = []
    for family in text_string_to_metric_families(metrics_text):
        if family.name == name:
            out += [
                (dict(sample.labels), float(sample.value))
                for sample in family.samples
                if sample.name == f"{name}_total"
            ]
    return out


@dataclass(frozen=True, slots=True)
class Goal:
    """One of the issue's goals: a figure, its bound, and which side of it is good."""

    label: str
    value: float
    bound: float
    at_most: bool

    @property
    def met(self) -> bool:
        """Whether the value is on the good side of the bound (the bound itself included)."""
        return self.value <= self.bound if self.at_most else self.value >= self.bound

    def line(self) -> str:
        """``GOAL <label>: <value> (goal ≤/≥ <bound>): met | NOT MET``."""
        sign = "<=" if self.at_most else ">="
        verdict = "met" if self.met else "NOT MET"
        return f"GOAL {self.label}: {self.value:g} (goal {sign} {self.bound:g}): {verdict}"


# -- the shared Postgres server -------------------------------------------------------------


def _start_postgres(base: Path) -> EmbeddedPostgres:
    """One server for every node and the import part (max_connections for 20 node pools)."""
    settings = {**default_server_settings(), "max_connections": "400", "shared_buffers": "128MB"}
    pg = EmbeddedPostgres(base / "pg", database="postgres", settings=settings)
    pg.start()
    return pg


def _create_database(pg: EmbeddedPostgres, name: str) -> str:
    pg.psql(f'CREATE DATABASE "{name}"')
    return pg.dsn_for(name)


# -- node processes -------------------------------------------------------------------------


@dataclass
class BenchNode:
    """One node process of the bench and where to reach it."""

    process: subprocess.Popen[bytes]
    home: Path
    dsn: str
    node_id: str = ""
    agent_addr: str = ""
    metrics_url: str = ""
    db: Any = None  # an asyncpg connection to the node's database

    def log_tail(self) -> str:
        """The end of the node's output (for error messages)."""
        path = self.home / "node.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@dataclass
class NetworkSettings:
    """Flags every node of a network gets."""

    redis_url: str
    namespace: str
    gossip_interval_s: float
    anti_entropy_interval_s: float
    log_level: str = "WARNING"
    direct_push_max: int = 32


def _node_argv(home: Path, dsn: str, net: NetworkSettings) -> list[str]:
    return [
        sys.executable,
        "-m",
        "lamarck.node.daemon",
        "--home",
        str(home),
        "--listen",
        "127.0.0.1:0",
        "--agent-listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "127.0.0.1:0",
        "--embedder",
        "hashing",
        "--database-url",
        dsn,
        "--redis-url",
        net.redis_url,
        "--redis-namespace",
        net.namespace,
        "--admission",
        "open",
        "--gossip-interval-s",
        str(net.gossip_interval_s),
        "--anti-entropy-interval-s",
        str(net.anti_entropy_interval_s),
        "--direct-push-max",
        str(net.direct_push_max),
        "--drain-deadline-s",
        "2",
        "--log-format",
        "json",
        "--log-level",
        net.log_level,
    ]


def _spawn(home: Path, dsn: str, net: NetworkSettings) -> BenchNode:
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAMARCK_")}
    with (home / "node.log").open("wb") as log:
        process = subprocess.Popen(
            _node_argv(home, dsn, net),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    return BenchNode(process=process, home=home, dsn=dsn)


def _await_serving(nodes: Sequence[BenchNode], timeout_s: float) -> None:
    """Wait (bounded poll of each node's own ``node.json``) until every node serves."""
    deadline = time.monotonic() + timeout_s
    waiting = list(nodes)
    while waiting:
        for node in list(waiting):
            if node.process.poll() is not None:
                raise RuntimeError(
                    f"node in {node.home} exited with {node.process.returncode}:\n"
                    + node.log_tail()
                )
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                info = json.loads((node.home / "node.json").read_text())
                if info.get("pid") == node.process.pid and info.get("serving"):
                    node.node_id = str(info["node_id"])
                    node.agent_addr = str(info["agent_listen"])
                    node.metrics_url = str(info["metrics_url"])
                    waiting.remove(node)
        if waiting and time.monotonic() > deadline:
            raise RuntimeError(f"{len(waiting)} node(s) not serving within {timeout_s:.0f}s")
        if waiting:
            time.sleep(_FILE_POLL_S)


def _stop_nodes(nodes: Sequence[BenchNode]) -> list[int]:
    """SIGTERM every node, wait for all, kill whoever outlives ``STOP_TIMEOUT_S``."""
    for node in nodes:
        if node.process.poll() is None:
            node.process.send_signal(signal.SIGTERM)
    codes = []
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for node in nodes:
        try:
            codes.append(node.process.wait(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            node.process.kill()
            codes.append(node.process.wait(timeout=10))
    return codes


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        body: bytes = reply.read()
    return body.decode()


@dataclass(frozen=True, slots=True)
class Counts:
    """Message counters summed over a network's nodes."""

    imports: float
    publish_rpcs: float
    by_result: Mapping[str, float] = field(default_factory=dict)

    def minus(self, other: Counts) -> Counts:
        """The delta since ``other``."""
        keys = set(self.by_result) | set(other.by_result)
        return Counts(
            self.imports - other.imports,
            self.publish_rpcs - other.publish_rpcs,
            {k: self.by_result.get(k, 0.0) - other.by_result.get(k, 0.0) for k in keys},
        )


async def _counts(nodes: Sequence[BenchNode]) -> Counts:
    texts = await asyncio.gather(*(asyncio.to_thread(_scrape, n.metrics_url) for n in nodes))
    by_result: dict[str, float] = {}
    imports = publish = 0.0
    for text in texts:
        for labels, value in counter_samples(text, "lamarck_imports"):
            imports += value
            result = labels.get("result", "")
            by_result[result] = by_result.get(result, 0.0) + value
        for labels, value in counter_samples(text, "lamarck_rpc_requests"):
            if labels.get("server") == "peer" and labels.get("method", "").endswith(
                _PUBLISH_METHOD_SUFFIX
            ):
                publish += value
    return Counts(imports, publish, by_result)


async def _settled_counts(nodes: Sequence[BenchNode]) -> Counts:
    """The counters once two reads ``SETTLE_POLL_S`` apart agree (bounded)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    last = await _counts(nodes)
    while True:
        await asyncio.sleep(SETTLE_POLL_S)
        now = await _counts(nodes)
        if (now.imports, now.publish_rpcs) == (last.imports, last.publish_rpcs):
            return now
        if time.monotonic() > deadline:
            _log(f"  (counters still moving after {SETTLE_TIMEOUT_S:.0f}s; taken as they are)")
            return now
        last = now


# -- learning a lesson through the agent API -------------------------------------------------


async def _learn(node: BenchNode, target: str) -> tuple[str, datetime]:
    """Make a publishable lesson on ``node``; returns its id and when it became publishable
    (the moment the RecordOutcome call that made it so returned)."""
    bad, good = f"shell:make {target}", f"shell:build {target}"
    threshold = GossipParams().publish_threshold
    async with AsyncClient(node.agent_addr, timeout=30) as client:
        made = await client.record_outcome(
            outcome("learn", [(bad, "failed", target), (good, "ok", target)], project="a1" * 32)
        )
        [lesson_id] = made.ids("created")
        for i in range(2, 8):
            await client.record_outcome(
                outcome(
                    f"confirm-{i}",
                    [(good, "ok", target)],
                    project=f"{i:02x}" * 32,
                    in_play=(lesson_id,),
                )
            )
            returned = datetime.now(UTC)
            page = await client.list_lessons(operation=good)
            [lesson] = [x for x in page.lessons if x.id == lesson_id]
            if lesson.scope == "global" and lesson.confidence >= threshold:
                return lesson_id, returned
    raise RuntimeError(f"lesson {lesson_id} never became publishable (last: {lesson})")


_IMPORTED_AT = (
    "SELECT min(created_at) FROM lessons WHERE imported_from IS NOT NULL"
    " AND signed_record IS NOT NULL"
    " AND (convert_from(signed_record, 'UTF8')::jsonb ->> 'id') = $1"
)


@dataclass(frozen=True, slots=True)
class LessonRun:
    """One lesson's figures; the times are None when push gossip missed a node."""

    peers: int
    reached: int
    propagation_ms: float | None
    observed_ms: float | None
    counts: Counts

    @property
    def complete(self) -> bool:
        """Whether every other node imported the lesson."""
        return self.reached == self.peers


async def _one_lesson(nodes: Sequence[BenchNode], origin: BenchNode, target: str) -> LessonRun:
    """Learn one lesson on ``origin``; wait until every other node imported it, or until the
    gossip went quiet without reaching them all (then only anti-entropy could deliver it)."""
    before = await _settled_counts(nodes)
    lesson_id, t0 = await _learn(origin, target)
    start = time.perf_counter() - (datetime.now(UTC) - t0).total_seconds()
    others = [n for n in nodes if n is not origin]
    seen: dict[str, datetime] = {}
    observed_ms: float | None = None
    last_counts = before
    last_change = time.perf_counter()
    next_check = start + QUIET_CHECK_AFTER_S
    while True:
        pending = [n for n in others if n.node_id not in seen]
        found = await asyncio.gather(*(n.db.fetchval(_IMPORTED_AT, lesson_id) for n in pending))
        for node, at in zip(pending, found, strict=True):
            if at is not None:
                seen[node.node_id] = at
        now = time.perf_counter()
        if len(seen) == len(others):
            observed_ms = (now - start) * 1000.0
            break
        if now >= next_check:
            # Is anything still moving? Outbox retries come after 1 s and 2 s, hence QUIET_S.
            current = await _counts(nodes)
            if (current.imports, current.publish_rpcs) != (
                last_counts.imports,
                last_counts.publish_rpcs,
            ):
                last_counts, last_change = current, now
            elif now - last_change >= QUIET_S:
                break
            next_check = now + SETTLE_POLL_S
        if now - start > PROPAGATION_TIMEOUT_S:
            break
        await asyncio.sleep(IMPORT_POLL_S)
    after = await _settled_counts(nodes)
    propagation_ms = None
    if len(seen) == len(others):
        propagation_ms = (max(seen.values()) - t0) / timedelta(milliseconds=1)
    return LessonRun(len(others), len(seen), propagation_ms, observed_ms, after.minus(before))


async def _network_round(
    n: int,
    lessons: int,
    pg: EmbeddedPostgres,
    base: Path,
    args: argparse.Namespace,
    figures: dict[str, float],
    cleanups: list[Callable[[], Awaitable[None]]],
) -> None:
    """Start N nodes, propagate ``lessons`` lessons one at a time, stop the nodes."""
    net = NetworkSettings(
        redis_url=args.redis_url,
        namespace=f"bench{uuid.uuid4().hex[:12]}",
        gossip_interval_s=args.gossip_interval_s,
        anti_entropy_interval_s=args.anti_entropy_interval_s,
        log_level=args.node_log_level,
        direct_push_max=args.direct_push_max,
    )
    # The nodes' admission mode: a directory lists only ids admitted under its own mode.
    directory = RedisPeerDirectory.from_url(
        net.redis_url,
        namespace=net.namespace,
        params=RegistryParams(admission=AdmissionMode.OPEN),
        clock=SystemClock(),
    )

    async def clear_namespace() -> None:
        try:
            await directory.clear_namespace()
        finally:
            await directory.aclose()

    cleanups.append(clear_namespace)
    started = time.perf_counter()
    dsns = [await asyncio.to_thread(_create_database, pg, f"net{n}_node{i}") for i in range(n)]
    nodes: list[BenchNode] = []
    try:
        for i, dsn in enumerate(dsns):
            nodes.append(_spawn(base / f"net{n}" / f"node{i}", dsn, net))
        await asyncio.to_thread(_await_serving, nodes, START_TIMEOUT_S)
        start_s = time.perf_counter() - started
        figures[f"n{n}_start_s"] = round(start_s, 2)
        _log(f"N={n}: {n} nodes serving in {start_s:.1f} s")
        await _await_full_mesh(directory, n)
        for node in nodes:
            node.db = await asyncpg.connect(node.dsn)
        runs: list[LessonRun] = []
        for k in range(lessons):
            origin = nodes[k % n]
            run = await _one_lesson(nodes, origin, f"n{n}-svc{k}-{uuid.uuid4().hex[:6]}")
            runs.append(run)
            c = run.counts
            if run.propagation_ms is not None and run.observed_ms is not None:
                reach = (
                    f"all {n - 1} peers after {run.propagation_ms:7.1f} ms "
                    f"(seen at {run.observed_ms:7.1f} ms)"
                )
            else:
                reach = f"ONLY {run.reached}/{n - 1} peers; push gossip went quiet"
            _log(
                f"  lesson {k + 1}/{lessons} from node{k % n}: {reach}; "
                f"{c.imports:.0f} records received ({c.by_result.get('accepted', 0):.0f} "
                f"accepted, {c.by_result.get('duplicate', 0):.0f} duplicate), "
                f"{c.publish_rpcs:.0f} Publish RPCs"
            )
        _summarise(n, runs, figures, args.anti_entropy_interval_s)
    finally:
        for node in nodes:
            if node.db is not None:
                with contextlib.suppress(Exception):
                    await node.db.close()
        codes = await asyncio.to_thread(_stop_nodes, nodes)
        bad = [c for c in codes if c != 0]
        if bad:
            _log(f"  {len(bad)} node(s) did not exit cleanly: codes {bad}")
        figures[f"n{n}_unclean_exits"] = float(len(bad))


async def _await_full_mesh(directory: RedisPeerDirectory, n: int) -> None:
    """Wait until every node has refreshed its peer list since the last one registered.

    A node refreshes its peers every ``heartbeat_interval_s`` (10 s, not a node flag): once all
    N are registered, one interval (plus a margin for the tick itself) after the last
    registration every node knows all the others.
    """
    interval = RegistryParams().heartbeat_interval_s
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        peers = await directory.live_peers()
        if len(peers) >= n:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(peers)}/{n} nodes registered")
        await asyncio.sleep(_FILE_POLL_S)
    last = max(p.registered_at for p in peers)
    wait_s = (last + timedelta(seconds=interval + 1.0) - datetime.now(UTC)).total_seconds()
    _log(f"  all {n} registered; waiting {max(0.0, wait_s):.1f} s for every peer-list refresh")
    if wait_s > 0:
        await asyncio.sleep(wait_s)


def _summarise(
    n: int, runs: Sequence[LessonRun], figures: dict[str, float], anti_entropy_s: float
) -> None:
    complete = [r for r in runs if r.complete]
    msgs = [r.counts.imports for r in runs]
    rpcs = [r.counts.publish_rpcs for r in runs]
    mean_msgs = sum(msgs) / len(msgs)
    figures[f"n{n}_lessons"] = float(len(runs))
    figures[f"n{n}_lessons_complete"] = float(len(complete))
    figures[f"n{n}_push_complete_ratio"] = round(len(complete) / len(runs), 3)
    figures[f"n{n}_peers_reached_ratio"] = round(
        sum(r.reached for r in runs) / sum(r.peers for r in runs), 4
    )
    # Every lesson, one that never reached every node as an unbounded time.
    p99_all = percentile(
        (math.inf if r.propagation_ms is None else r.propagation_ms for r in runs), 0.99
    )
    if math.isfinite(p99_all):
        figures[f"n{n}_propagation_p99_all_ms"] = round(p99_all, 1)
    if complete:
        prop = [r.propagation_ms for r in complete if r.propagation_ms is not None]
        seen = [r.observed_ms for r in complete if r.observed_ms is not None]
        figures[f"n{n}_propagation_p50_ms"] = round(percentile(prop, 0.5), 1)
        figures[f"n{n}_propagation_p99_ms"] = round(percentile(prop, 0.99), 1)
        figures[f"n{n}_observed_p50_ms"] = round(percentile(seen, 0.5), 1)
        figures[f"n{n}_observed_p99_ms"] = round(percentile(seen, 0.99), 1)
    figures[f"n{n}_messages_per_lesson"] = round(mean_msgs, 2)
    figures[f"n{n}_messages_per_lesson_max"] = max(msgs)
    figures[f"n{n}_publish_rpcs_per_lesson"] = round(sum(rpcs) / len(rpcs), 2)
    figures[f"n{n}_messages_per_lesson_ratio"] = round(mean_msgs / (n - 1), 3)
    for result in ("quarantined", "rejected", "deferred"):
        figures[f"n{n}_{result}"] = sum(r.counts.by_result.get(result, 0.0) for r in runs)
    if complete:
        _log(
            f"N={n}: propagation to all {n - 1} peers p50 "
            f"{figures[f'n{n}_propagation_p50_ms']:.1f} ms, p99 "
            f"{figures[f'n{n}_propagation_p99_ms']:.1f} ms over the {len(complete)} lessons "
            f"that reached every peer (seen by the bench: p50 "
            f"{figures[f'n{n}_observed_p50_ms']:.1f} ms, p99 "
            f"{figures[f'n{n}_observed_p99_ms']:.1f} ms)"
        )
    if len(complete) < len(runs):
        _log(
            f"N={n}: {len(runs) - len(complete)} of {len(runs)} lessons did NOT reach every "
            f"peer by push gossip (peers reached overall: "
            f"{figures[f'n{n}_peers_reached_ratio']:.1%}); only anti-entropy would deliver "
            f"them (every {GossipParams().anti_entropy_interval_s:g} s by default, "
            f"{anti_entropy_s:g} s in this run)"
        )
    _log(
        f"N={n}: {mean_msgs:.1f} records received per lesson (max {max(msgs):.0f}), "
        f"{figures[f'n{n}_publish_rpcs_per_lesson']:.1f} Publish RPCs; "
        f"÷ (N−1) = {figures[f'n{n}_messages_per_lesson_ratio']:.2f}"
    )


# -- import throughput ------------------------------------------------------------------------


def _record(i: int, source: NodeIdentity, rng: random.Random, now: datetime) -> bytes:
    """The ``i``-th signed lesson record: benign text, its own operation, recent dates."""
    stamp = format_ts(now - timedelta(hours=1))
    confidence = round(0.7 + 0.05 * rng.random(), 4)
    service = f"svc{i % 97}"
    obj: dict[str, Any] = {
        "schema_version": "2.0",
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "type": "AC",
        "content": (
            f"Run the database migrations of {service} before restarting its api "
            f"workers; step {i} of the deploy checklist keeps the schema in step."
        ),
        "confidence": confidence,
        "access_level": "public",
        "context": {"domain": f"deploy-{i % 13}", "environment": "staging", "tools": ["alembic"]},
        "provenance": {
            "source_agent_id": source.node_id,
            "source_type": "empirical",
            "created_at": stamp,
            "updated_at": stamp,
        },
        "evidence": [
            {
                "type": "empirical",
                "description": "migration ran, service healthy",
                "timestamp": stamp,
                "validator": "reality",
                "outcome_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            }
        ],
        "lesson": {
            "operation": f"shell:deploy {service}-{i}",
            "scope": "global",
            "status": "active",
            "version": 1,
        },
        "confidence_interval": {"mean": confidence, "std_dev": 0.05},
    }
    return SignedMemory.sign(MemoryV2.from_obj(obj), source).raw


async def _register_sources(directory: RedisPeerDirectory, sources: Sequence[NodeIdentity]) -> None:
    # The registry warns at every open admission; these are the bench's own test sources.
    logging.getLogger("lamarck.registry.rules").setLevel(logging.ERROR)
    _log(f"import: registering {len(sources)} sources with admission 'open' (bench only)")
    for i, source in enumerate(sources):
        await RegistryClient(
            directory,
            source,
            address=f"127.0.0.1:{20000 + i}",
            domains=(),
            version=lamarck.__version__,
            mode=AdmissionMode.OPEN,
            clock=SystemClock(),
        ).register()


class _RawImporter:
    """Path (b): parse + verify the signature, embed, insert the same row; nothing else."""

    def __init__(self, store: PostgresLessonStore, embedder: HashingEmbedder) -> None:
        self._store = store
        self._embedder = embedder
        self._rng = random.Random(7)

    async def import_record(self, raw: bytes, *, via_node_id: str = "") -> None:
        now = datetime.now(UTC)
        signed = SignedMemory.from_json(raw)
        signed.verify(now)
        vectors = await asyncio.to_thread(self._embedder.embed, [signed.memory.content])
        row = imported_row(
            signed,
            lesson_id=str(uuid.UUID(int=self._rng.getrandbits(128), version=4)),
            confidence=signed.memory.confidence,
            via_node_id=via_node_id,
            now=now,
            embedding=vectors[0],
        )
        await self._store.insert_lesson(row)


async def _import_part(
    pg: EmbeddedPostgres,
    args: argparse.Namespace,
    figures: dict[str, float],
    cleanups: list[Callable[[], Awaitable[None]]],
) -> None:
    m, s = args.records, args.sources
    rng = random.Random(args.seed)
    sources = [NodeIdentity.from_seed(rng.randbytes(32)) for _ in range(s)]
    via = NodeIdentity.from_seed(rng.randbytes(32)).node_id
    self_id = NodeIdentity.from_seed(rng.randbytes(32)).node_id
    now = datetime.now(UTC)
    started = time.perf_counter()
    raws = [_record(i, sources[i % s], rng, now) for i in range(m)]
    _log(
        f"import: {m} signed records from {s} sources made in "
        f"{time.perf_counter() - started:.1f} s (mean {sum(map(len, raws)) / m:.0f} bytes)"
    )
    registry = RegistryParams(admission=AdmissionMode.OPEN)
    clock = SystemClock()
    inner = RedisPeerDirectory.from_url(
        args.redis_url, namespace=f"bench{uuid.uuid4().hex[:12]}", params=registry, clock=clock
    )
    pins = CachedDirectory(inner, clock=clock)

    async def clear_namespace() -> None:
        try:
            await inner.clear_namespace()
        finally:
            await pins.aclose()

    cleanups.append(clear_namespace)
    await _register_sources(inner, sources)
    embedder = HashingEmbedder()
    a_dsn = await asyncio.to_thread(_create_database, pg, "import_pipeline")
    b_dsn = await asyncio.to_thread(_create_database, pg, "import_raw")
    a_store = await PostgresLessonStore.connect(a_dsn, embedder.dim)
    b_store = await PostgresLessonStore.connect(b_dsn, embedder.dim)
    try:
        reputation = InMemoryReputation(ReputationParams(), clock)
        view = StoreImportView(a_store, reputation, self_id)
        await view.load()
        pipeline = ImportPipeline(
            params=ImportParams(),
            store=a_store,
            view=view,
            pins=pins,
            reputation=reputation,
            embedder=embedder,
            clock=clock,
            rng=random.Random(args.seed + 1),
        )
        raw_path = _RawImporter(b_store, embedder)
        outcomes: dict[str, int] = {}

        async def through_pipeline(chunk: Sequence[bytes]) -> None:
            for raw in chunk:
                result = await pipeline.import_record(
                    raw, source=ImportSource.PEER, via_node_id=via
                )
                key = result.outcome.value + (f":{result.reason}" if result.reason else "")
                outcomes[key] = outcomes.get(key, 0) + 1

        async def through_raw(chunk: Sequence[bytes]) -> None:
            for raw in chunk:
                await raw_path.import_record(raw, via_node_id=via)

        # Warm-up outside the measurement: connections, code paths, the first index pages.
        warm = [_record(m + i, sources[i % s], rng, now) for i in range(20)]
        await through_pipeline(warm)
        await through_raw(warm)
        outcomes.clear()
        chunks = max(2, min(20, m // 50))
        size = math.ceil(m / chunks)
        spent = {"pipeline": 0.0, "raw": 0.0}
        paths = {"pipeline": through_pipeline, "raw": through_raw}
        profiler = cProfile.Profile() if args.profile else None
        for k in range(chunks):
            chunk = raws[k * size : (k + 1) * size]
            order = ("pipeline", "raw") if k % 2 == 0 else ("raw", "pipeline")
            for name in order:
                t = time.perf_counter()
                if profiler is not None and name == "pipeline":
                    profiler.enable()
                await paths[name](chunk)
                if profiler is not None and name == "pipeline":
                    profiler.disable()
                spent[name] += time.perf_counter() - t
        accepted = outcomes.get(ImportOutcome.ACCEPT.value, 0)
        pipeline_rate = m / spent["pipeline"]
        raw_rate = m / spent["raw"]
        figures["import_records"] = float(m)
        figures["import_sources"] = float(s)
        figures["import_accepted"] = float(accepted)
        figures["pipeline_records_per_s"] = round(pipeline_rate, 1)
        figures["raw_records_per_s"] = round(raw_rate, 1)
        figures["pipeline_vs_raw_ratio"] = round(pipeline_rate / raw_rate, 3)
        figures["pipeline_ms_per_record"] = round(spent["pipeline"] * 1000 / m, 3)
        figures["raw_ms_per_record"] = round(spent["raw"] * 1000 / m, 3)
        _log(f"import: pipeline outcomes {dict(sorted(outcomes.items()))}")
        if accepted != m:
            _log(f"import: WARNING only {accepted}/{m} accepted: the paths did different work")
        _log(
            f"import: pipeline {pipeline_rate:,.0f} records/s "
            f"({figures['pipeline_ms_per_record']:.2f} ms each) vs raw verify + store "
            f"{raw_rate:,.0f} records/s ({figures['raw_ms_per_record']:.2f} ms each)"
        )
        if profiler is not None:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
            _log("import: profile of the pipeline path (cumulative):\n" + out.getvalue())
    finally:
        await a_store.close()
        await b_store.close()


# -- the run ----------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Both parts; returns the figures. Everything started is stopped or cleared."""
    figures: dict[str, float] = {
        "gossip_interval_s": args.gossip_interval_s,
        "anti_entropy_interval_s": args.anti_entropy_interval_s,
        "direct_push_max": float(args.direct_push_max),
    }
    t_all = time.perf_counter()
    # SIGTERM cancels the run like Ctrl-C does, so the cleanup below still stops everything.
    main_task = asyncio.current_task()
    if main_task is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    base = Path(tempfile.mkdtemp(prefix="lamarck-bench-sharing-"))
    cleanups: list[Callable[[], Awaitable[None]]] = []
    pg: EmbeddedPostgres | None = None
    try:
        started = time.perf_counter()
        pg = await asyncio.to_thread(_start_postgres, base)
        figures["postgres_start_s"] = round(time.perf_counter() - started, 2)
        _log(
            "PostgreSQL (one server, a database per node) started in "
            f"{figures['postgres_start_s']:.1f} s"
        )
        if not args.skip_network:
            for n in args.n:
                await _network_round(n, args.lessons, pg, base, args, figures, cleanups)
        if not args.skip_import:
            await _import_part(pg, args, figures, cleanups)
    finally:
        for cleanup in reversed(cleanups):
            try:
                await cleanup()
            except Exception as e:  # keep cleaning up; say what was left behind
                _log(f"cleanup failed: {e!r}")
        if pg is not None:
            await asyncio.to_thread(pg.delete_data)
        if args.keep:
            _log(f"kept the node homes and logs in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    figures["total_s"] = round(time.perf_counter() - t_all, 1)
    _report_goals(args, figures)
    return figures


def _report_goals(args: argparse.Namespace, figures: dict[str, float]) -> None:
    goals: list[Goal] = []
    notes: list[str] = []
    largest = max(args.n) if not args.skip_network else 0
    if largest:
        if largest != 20:
            _log(f"(the p99 goal is for N=20; this run's largest N is {largest})")
        # Absent when a lesson push gossip never delivered everywhere makes p99 unbounded.
        p99 = figures.get(f"n{largest}_propagation_p99_all_ms", math.inf)
        goals.append(Goal(f"N={largest} propagation p99 ms (every lesson)", p99, 1000.0, True))
        if math.isinf(p99):
            done = figures[f"n{largest}_lessons_complete"]
            over = (
                f"; over the {done:.0f} that did, p99 "
                f"{figures[f'n{largest}_propagation_p99_ms']:.1f} ms"
                if done
                else ""
            )
            notes.append(
                f"  ({figures[f'n{largest}_lessons'] - done:.0f} of "
                f"{figures[f'n{largest}_lessons']:.0f} lessons never reached every node by push "
                f"gossip{over})"
            )
        for n in args.n:
            goals.append(
                Goal(
                    f"N={n} messages per lesson / (N-1)",
                    figures[f"n{n}_messages_per_lesson_ratio"],
                    2.0,
                    at_most=True,
                )
            )
    if not args.skip_import:
        goals.append(
            Goal("pipeline vs raw import rate", figures["pipeline_vs_raw_ratio"], 0.5, False)
        )
    for goal in goals:
        _log(goal.line())
    for note in notes:
        _log(note)
    figures["goals"] = float(len(goals))
    figures["goals_met"] = float(sum(goal.met for goal in goals))


def main(argv: list[str] | None = None) -> int:
    """Entry point; prints progress, the goals and, last, one JSON line of figures."""
    parser = argparse.ArgumentParser(description="Benchmark gossip propagation and imports.")
    parser.add_argument("--quick", action="store_true", help="N=5 only, fewer lessons/records")
    parser.add_argument("--n", type=int, nargs="+", default=None, help="network sizes")
    parser.add_argument("--lessons", type=int, default=None, help="lessons per network size")
    parser.add_argument("--records", type=int, default=None, help="records for the import part")
    parser.add_argument("--sources", type=int, default=8, help="source identities of records")
    parser.add_argument("--gossip-interval-s", type=float, default=0.05)
    parser.add_argument("--anti-entropy-interval-s", type=float, default=600.0)
    parser.add_argument(
        "--direct-push-max",
        type=int,
        default=32,
        help="the nodes' direct_push_max (0: the fanout-6 tree at every size)",
    )
    parser.add_argument("--redis-url", default=REDIS_URL)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="profile the pipeline path")
    parser.add_argument("--keep", action="store_true", help="keep the node homes and logs")
    parser.add_argument(
        "--node-log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), default="WARNING"
    )
    parser.add_argument("--skip-network", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--skip-import", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.n = args.n or ([5] if args.quick else [5, 10, 20])
    if any(n < 2 for n in args.n):
        parser.error("--n: a network needs at least 2 nodes")
    args.lessons = args.lessons or (5 if args.quick else 20)
    args.records = args.records or (300 if args.quick else 2000)
    if args.quick:
        _log(
            f"quick: N = {args.n}, {args.lessons} lessons per N, {args.records} records "
            "(full run: N = 5 10 20, 20 lessons, 2000 records)"
        )

    logging.basicConfig(level=logging.WARNING)
    # pgserver logs every command it runs at INFO; warnings are enough here.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    try:
        figures = asyncio.run(run(args))
    except (KeyboardInterrupt, asyncio.CancelledError):
        _log("interrupted: every node, the PostgreSQL server and the Redis keys were cleaned up")
        return 130
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
