"""Benchmark of the Postgres lesson store.

Prints, for N lessons of generated text embedded by the real MiniLM model:

(a) bulk insert rows/s through ``PostgresLessonStore.insert_lessons`` vs a raw binary COPY of the
    same rows (asyncpg ``copy_records_to_table``) in the same run, and their ratio (goal ≥ 0.5);
(b) recall latency p50/p99 through ``search`` (k=5), query embedding excluded (goal p99 ≤ 10 ms);
(c) recall@5 of the HNSW path against exact search (brute force over the same vectors), on real
    text (goal ≥ 0.95) — uniformly random vectors are HNSW's worst case and say nothing here;
(d) the one-by-one ``insert_lesson`` rate once the HNSW index exists (lessons arrive one by one);
(e) the HNSW build time at that size.

The last line of output is one JSON object of the figures. Embedding 100k sentences takes ~6
minutes, so the vectors are cached in ``~/.cache/lamarck-bench/`` keyed by corpus size, seed,
embedder and a digest of the text.

Usage: ``python -m bench.store [--quick] [--n N] [--queries Q] [--embedder auto|minilm|hashing]``
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import logging
import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    # Run as a script (`python bench/store.py`): make `bench` importable as a package.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.host import machine_line
from bench.lesson_corpus import lesson_sentences, task_queries
from lamarck.domain.embedder import (
    Embedder,
    Vectors,
)
from lamarck.domain.rows import LessonFilter, LessonRow, LessonStatus
from lamarck.node.embedding import HashingEmbedder, make_embedder
from lamarck.node.embedding_common import DEFAULT_DIM, MINILM_MODEL_NAME
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.node.minilm_torch import MiniLMEmbedder
from lamarck.node.store.embedded import EmbeddedPostgres
from lamarck.node.store.postgres import PostgresLessonStore

__all__ = ["CACHE_DIR", "corpus_embeddings", "main", "run"]

CACHE_DIR = Path.home() / ".cache" / "lamarck-bench"


def _log(message: str) -> None:
    print(message, flush=True)


TextGenerator = Callable[[int, int], list[str]]


def _digest(texts: list[str]) -> str:
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]


def _cache_path(
    texts: list[str], seed: int, embedder_name: str, label: str, cache_dir: Path = CACHE_DIR
) -> Path:
    return cache_dir / f"{label}-n{len(texts)}-seed{seed}-{embedder_name}-{_digest(texts)}.npy"


def _load_cached(
    texts: list[str],
    seed: int,
    embedder_name: str,
    dim: int,
    *,
    label: str,
    generator: TextGenerator | None,
    cache_dir: Path = CACHE_DIR,
) -> Vectors | None:
    """Cached vectors of ``texts``: an exact entry, or a prefix of a larger one.

    The generators are prefix-stable (the first n sentences of a larger corpus with the same
    seed are the n-sentence corpus), so a quick run can slice the full run's cache; the larger
    corpus is regenerated (under a second for 100k) to check its digest and the prefix.
    """
    path = _cache_path(texts, seed, embedder_name, label, cache_dir)
    candidates = [(len(texts), path)] if path.exists() else []
    if generator is not None:
        pattern = re.compile(
            rf"{re.escape(label)}-n(\d+)-seed{seed}-{re.escape(embedder_name)}-([0-9a-f]{{16}})\.npy"
        )
        for other in sorted(cache_dir.glob(f"{label}-n*-seed{seed}-*.npy")):
            m = pattern.fullmatch(other.name)
            if m and int(m[1]) > len(texts):
                candidates.append((int(m[1]), other))
    for size, candidate in candidates:
        if size != len(texts):
            assert generator is not None
            bigger = generator(size, seed)
            if _digest(bigger) != candidate.name.rsplit("-", 1)[1][:16] or bigger[
                : len(texts)
            ] != list(texts):
                continue
        vectors = np.load(candidate, mmap_mode="r")
        if vectors.shape == (size, dim) and vectors.dtype == np.float32:
            return np.array(vectors[: len(texts)])
    return None


def corpus_embeddings(
    texts: list[str],
    seed: int,
    embedder: Embedder,
    *,
    label: str = "corpus",
    generator: TextGenerator | None = None,
    cache_dir: Path = CACHE_DIR,
) -> tuple[Vectors, bool]:
    """Embeddings of ``texts`` (made by ``generator(len(texts), seed)``), cached on disk.

    Returns the vectors and whether the cache was used. The key holds the size and seed the
    issue asks for, plus the embedder and a digest of the text, so that a change of generator
    or model never reuses stale vectors. With ``generator``, a larger cached corpus of the same
    seed serves a smaller one (its prefix).
    """
    cached = _load_cached(
        texts,
        seed,
        embedder.name,
        embedder.dim,
        label=label,
        generator=generator,
        cache_dir=cache_dir,
    )
    if cached is not None:
        return cached, True
    start = time.perf_counter()
    chunks: list[Vectors] = []
    step = 3200  # progress every ~12-50 s with MiniLM; embed() batches by 32 inside
    for i in range(0, len(texts), step):
        chunks.append(embedder.embed(texts[i : i + step]))
        done = min(i + step, len(texts))
        rate = done / (time.perf_counter() - start)
        if len(texts) > step:
            _log(f"  embedded {done}/{len(texts)} ({rate:.0f}/s)")
    vectors = np.concatenate(chunks) if chunks else np.zeros((0, embedder.dim), np.float32)
    path = _cache_path(texts, seed, embedder.name, label, cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Write then rename: an interrupted run must not leave a truncated cache behind.
    tmp = path.with_name(path.name + ".partial")
    with tmp.open("wb") as f:
        np.save(f, vectors)
    tmp.replace(path)
    return vectors, False


# -- rows ----------------------------------------------------------------------------------

_OPERATION = re.compile(r"`([a-z][\w.+-]*)")
_BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)


def _lesson_rows(texts: list[str], vectors: Vectors, seed: int) -> list[LessonRow]:
    """Active lessons shaped like real ones: uuid ids, scopes, evidence, context, tags."""
    rng = random.Random(seed)
    projects = [f"project:{hashlib.sha256(str(p).encode()).hexdigest()[:16]}" for p in range(40)]
    rows = []
    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        match = _OPERATION.search(text)
        tool = match.group(1) if match else text.split()[0].lower()
        when = _BASE_TIME + timedelta(seconds=37 * i)
        rows.append(
            LessonRow(
                id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                content=text,
                operation=f"shell:{tool}",
                scope="global" if rng.random() < 0.3 else rng.choice(projects),
                status=LessonStatus.ACTIVE,
                confidence=round(rng.uniform(0.3, 0.95), 3),
                created_at=when,
                updated_at=when,
                evidence=tuple(
                    str(uuid.UUID(int=rng.getrandbits(128), version=4))
                    for _ in range(rng.randint(1, 3))
                ),
                confirmations=rng.randint(0, 6),
                context={
                    "domain": "software",
                    "environment": rng.choice(("linux", "macos", "ci", "container")),
                    "tools": [tool],
                    "constraints": {},
                },
                tags=(tool,),
                embedding=vector,
            )
        )
    return rows


def _copy_value(value: Any) -> Any:
    """A ``LessonRow`` field as the value handed to COPY (what any adapter must do)."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, StrEnum):
        return value.value
    return value


def _copy_records(rows: list[LessonRow], columns: list[str]) -> list[tuple[Any, ...]]:
    return [tuple(_copy_value(getattr(row, c)) for c in columns) for row in rows]


# -- measurements ----------------------------------------------------------------------------


def _percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000.0, q))


async def _truncate(store: PostgresLessonStore) -> None:
    await store.pool.execute("TRUNCATE lessons CASCADE")


async def _bulk(
    store: PostgresLessonStore, rows: list[LessonRow], rounds: int, chunk: int
) -> tuple[float, float]:
    """Best-of-``rounds`` rows/s of raw COPY and of ``insert_lessons``; leaves the rows stored.

    Both run into the table without the HNSW index (the store's ``bulk_load`` path drops it),
    in chunks of ``chunk`` rows, one transaction each. Rounds alternate so that background
    load on the machine hits both alike; best-of is the usual throughput estimate under noise.
    """
    # Every lessons column a LessonRow fills: the same values the store writes.
    fields = {f.name for f in dataclasses.fields(LessonRow)}
    columns = [
        r["column_name"]
        for r in await store.pool.fetch(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'lessons' ORDER BY ordinal_position"
        )
        if r["column_name"] in fields
    ]
    # Built outside the timed region: raw COPY is the floor, conversion is the store's cost.
    records = _copy_records(rows, columns)
    copy_best = store_best = 0.0
    for r in range(rounds):
        await _truncate(store)
        async with store.pool.acquire() as conn:
            start = time.perf_counter()
            for i in range(0, len(records), chunk):
                async with conn.transaction():
                    await conn.copy_records_to_table(
                        "lessons", records=records[i : i + chunk], columns=columns
                    )
            copy_rate = len(records) / (time.perf_counter() - start)
        await _truncate(store)
        start = time.perf_counter()
        for i in range(0, len(rows), chunk):
            await store.insert_lessons(rows[i : i + chunk])
        store_rate = len(rows) / (time.perf_counter() - start)
        _log(f"  round {r + 1}: raw COPY {copy_rate:,.0f} rows/s, store {store_rate:,.0f} rows/s")
        copy_best, store_best = max(copy_best, copy_rate), max(store_best, store_rate)
    return copy_best, store_best


async def _search_all(
    store: PostgresLessonStore, queries: Vectors, k: int
) -> tuple[list[list[str]], list[float]]:
    """Search every query once after a warm-up; returns the hit ids and per-query seconds.

    The timing covers ``store.search`` only: the query vectors are embedded beforehand.
    """
    flt = LessonFilter()
    for q in queries[:20]:
        await store.search(q, k, flt)
    ids: list[list[str]] = []
    seconds: list[float] = []
    for q in queries:
        start = time.perf_counter()
        hits = await store.search(q, k, flt)
        seconds.append(time.perf_counter() - start)
        ids.append([h.lesson.id for h in hits])
    return ids, seconds


def _exact_top(corpus: Vectors, queries: Vectors, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-``k`` rows by cosine similarity (rows are unit length: a dot product)."""
    top_idx = np.empty((len(queries), k), dtype=np.int64)
    top_sim = np.empty((len(queries), k), dtype=np.float32)
    for i in range(0, len(queries), 256):
        sims = queries[i : i + 256] @ corpus.T
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        part_sims = np.take_along_axis(sims, part, axis=1)
        order = np.argsort(-part_sims, axis=1)
        top_idx[i : i + 256] = np.take_along_axis(part, order, axis=1)
        top_sim[i : i + 256] = np.take_along_axis(part_sims, order, axis=1)
    return top_idx, top_sim


def _recall(
    found: list[list[str]],
    exact_idx: np.ndarray,
    exact_sim: np.ndarray,
    corpus: Vectors,
    queries: Vectors,
    index_of: dict[str, int],
    ids: list[str],
) -> tuple[float, float]:
    """Recall@k by id, and by distance (a hit at least as close as the exact k-th, ±1e-5).

    The second forgives swaps between near-equal neighbours at the boundary, which float32
    rounding in pgvector vs numpy can cause; ann-benchmarks reports recall the same way.
    """
    k = exact_idx.shape[1]
    by_id = by_dist = 0
    for qi, hits in enumerate(found):
        truth = {ids[j] for j in exact_idx[qi]}
        by_id += len(truth.intersection(hits))
        kth = float(exact_sim[qi, -1])
        sims = [float(corpus[index_of[h]] @ queries[qi]) for h in hits[:k]]
        by_dist += sum(1 for s in sims if s >= kth - 1e-5)
    total = k * len(found)
    return by_id / total, by_dist / total


async def _exact_sql_agrees(
    store: PostgresLessonStore, queries: Vectors, exact_idx: np.ndarray, ids: list[str], k: int
) -> float:
    """Share of SQL exact top-k (index scans off) equal to numpy's: checks the ground truth."""
    agree = 0
    async with store.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_indexscan = off")
        for qi, q in enumerate(queries):
            recs = await conn.fetch(
                "SELECT id FROM lessons ORDER BY embedding <=> $1 LIMIT $2", q, k
            )
            agree += len({r["id"] for r in recs} & {ids[j] for j in exact_idx[qi]})
    return agree / (k * len(queries))


# -- the run -----------------------------------------------------------------------------------


def _choose_embedder(kind: str, quick: bool, uncached: int) -> tuple[Embedder, str]:
    """The embedder for this run and why; hashing only when asked or when quick mode can't wait.

    ``--quick`` must finish in under a minute: when a probe says embedding the ``uncached``
    texts with MiniLM would take more than ``_QUICK_EMBED_BUDGET_S``, it falls back to the
    hashing embedder and says so.
    """
    if kind == "hashing":
        return HashingEmbedder(), "requested"
    embedder = (
        make_embedder("minilm", onnx=OnnxParams())
        if kind == "minilm"
        else make_embedder("auto", onnx=OnnxParams())
    )
    if not isinstance(embedder, MiniLMEmbedder):
        return embedder, "MiniLM not installed"
    if uncached == 0:
        return embedder, "all vectors cached"
    if quick and kind == "auto":
        probe = lesson_sentences(64, seed=99)
        embedder.load()
        embedder.embed(probe[:8])  # the first call pays one-off set-up
        start = time.perf_counter()
        embedder.embed(probe)
        rate = len(probe) / (time.perf_counter() - start)
        estimate = uncached / rate
        if estimate > _QUICK_EMBED_BUDGET_S:
            return HashingEmbedder(), (
                f"quick mode: MiniLM would need ~{estimate:.0f} s for {uncached} uncached "
                f"texts at {rate:.0f}/s (budget {_QUICK_EMBED_BUDGET_S:.0f} s)"
            )
        return embedder, f"{uncached} texts to embed at ~{rate:.0f}/s"
    return embedder, f"{uncached} texts to embed"


_QUICK_EMBED_BUDGET_S = 30.0


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Run every measurement and return the figures."""
    n, n_queries, n_single, k = args.n, args.queries, args.single, 5
    seed = args.seed
    t0 = time.perf_counter()
    _log(f"lamarck store benchmark: {n} lessons, {n_queries} queries, k={k}")
    _log(f"  {machine_line()}")

    # (texts, seed, cache label, generator) of the corpus, the queries and the one-by-one rows.
    sets: list[tuple[list[str], int, str, TextGenerator]] = [
        (lesson_sentences(n, seed), seed, "corpus", lesson_sentences),
        (task_queries(n_queries, seed + 1), seed + 1, "queries", task_queries),
        (lesson_sentences(n_single, seed + 2), seed + 2, "single", lesson_sentences),
    ]
    # Texts MiniLM would still have to embed (the rest is cached, possibly as a prefix).
    uncached = sum(
        len(t)
        for t, sd, lb, g in sets
        if _load_cached(t, sd, MINILM_MODEL_NAME, DEFAULT_DIM, label=lb, generator=g) is None
    )
    embedder, why = _choose_embedder(args.embedder, args.quick, uncached)
    _log(f"  embedder: {embedder.name} ({why})")

    start = time.perf_counter()
    embedded = [corpus_embeddings(t, s, embedder, label=lb, generator=g) for t, s, lb, g in sets]
    (vectors, corpus_cached), (qvecs, _), (svecs, _) = embedded
    texts, query_texts, single_texts = (t for t, _, _, _ in sets)
    state = ", ".join(
        f"{lb} {'cached' if hit else 'embedded'}"
        for (_, _, lb, _), (_, hit) in zip(sets, embedded, strict=True)
    )
    _log(f"  embeddings: {state} in {time.perf_counter() - start:.1f} s (cache: {CACHE_DIR})")
    embed_seconds = []
    for text in query_texts[:50]:
        start = time.perf_counter()
        embedder.embed_one(text)
        embed_seconds.append(time.perf_counter() - start)

    rows = _lesson_rows(texts, vectors, seed)
    singles = _lesson_rows(single_texts, svecs, seed + 2)
    ids = [r.id for r in rows]
    index_of = {lesson_id: i for i, lesson_id in enumerate(ids)}

    home = Path(tempfile.mkdtemp(prefix="lamarck-bench-"))
    pg = EmbeddedPostgres(home, database="lamarck_bench")
    try:
        start = time.perf_counter()
        dsn = await asyncio.to_thread(pg.start)
        store = await PostgresLessonStore.connect(dsn, embedder.dim)
        _log(f"  embedded PostgreSQL started and migrated in {time.perf_counter() - start:.1f} s")
        try:
            # (a) bulk load, index dropped (as bulk_load() does)
            await store.drop_vector_index()
            _log("(a) bulk insert, no vector index:")
            copy_rate, store_rate = await _bulk(store, rows, args.rounds, args.chunk)
            await store.pool.execute("ANALYZE lessons")

            # (d0) one by one without the index: separates commit cost from HNSW cost in (d).
            probe = singles[: max(1, len(singles) // 4)]
            start = time.perf_counter()
            for row in probe:
                await store.insert_lesson(row)
            single_rate_no_index = len(probe) / (time.perf_counter() - start)
            await store.pool.execute(
                "DELETE FROM lessons WHERE id = ANY($1::text[])", [r.id for r in probe]
            )

            # (e) HNSW build
            start = time.perf_counter()
            await store.build_vector_index()
            build_s = time.perf_counter() - start
            _log(f"(e) HNSW build at {n} rows: {build_s:.1f} s")

            # (b) latency and (c) recall
            found, seconds = await _search_all(store, qvecs, k)
            exact_idx, exact_sim = _exact_top(vectors, qvecs, k)
            recall_id, recall_dist = _recall(
                found, exact_idx, exact_sim, vectors, qvecs, index_of, ids
            )
            sql_check = await _exact_sql_agrees(store, qvecs[:20], exact_idx[:20], ids, k)

            # (d) one by one, index present
            start = time.perf_counter()
            for row in singles:
                await store.insert_lesson(row)
            single_rate = len(singles) / (time.perf_counter() - start)
        finally:
            await store.close()
    finally:
        await asyncio.to_thread(pg.delete_data)
        shutil.rmtree(home, ignore_errors=True)

    figures = {
        "lessons": float(n),
        "queries": float(n_queries),
        "embedder_minilm": 1.0 if isinstance(embedder, MiniLMEmbedder) else 0.0,
        "embedding_cache_used": 1.0 if corpus_cached else 0.0,
        "raw_copy_rows_per_s": round(copy_rate, 1),
        "store_bulk_rows_per_s": round(store_rate, 1),
        "store_vs_copy_ratio": round(store_rate / copy_rate, 3),
        "recall_p50_ms": round(_percentile_ms(seconds, 50), 3),
        "recall_p99_ms": round(_percentile_ms(seconds, 99), 3),
        "recall_at_5": round(recall_id, 4),
        "recall_at_5_by_distance": round(recall_dist, 4),
        "exact_sql_vs_numpy_ratio": round(sql_check, 4),
        "single_insert_rows_per_s_with_hnsw": round(single_rate, 1),
        "single_insert_rows_per_s_no_index": round(single_rate_no_index, 1),
        "hnsw_build_s": round(build_s, 2),
        "query_embed_p50_ms": round(_percentile_ms(embed_seconds, 50), 3),
        "total_s": round(time.perf_counter() - t0, 1),
    }
    _log(
        f"(a) bulk: store {store_rate:,.0f} rows/s vs raw COPY {copy_rate:,.0f} rows/s "
        f"= {store_rate / copy_rate:.2f} (goal >= 0.5, best of {args.rounds})"
    )
    _log(
        f"(b) recall latency (k={k}, query embedding excluded): "
        f"p50 {figures['recall_p50_ms']:.2f} ms, p99 {figures['recall_p99_ms']:.2f} ms "
        f"(goal p99 <= 10 ms); embedding a query adds ~{figures['query_embed_p50_ms']:.1f} ms"
    )
    _log(
        f"(c) recall@{k} HNSW vs exact: {recall_id:.4f} by id, {recall_dist:.4f} by distance "
        f"(goal >= 0.95); SQL exact agrees with numpy on {sql_check:.0%} of top-{k}"
    )
    _log(
        f"(d) one-by-one insert with HNSW present: {single_rate:,.0f} rows/s ({n_single} rows; "
        f"{single_rate_no_index:,.0f} rows/s without the index, one commit per row either way)"
    )
    _log(f"(e) HNSW build: {build_s:.1f} s")
    return figures


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark, and print the figures (JSON on the last line)."""
    parser = argparse.ArgumentParser(description="Benchmark the Postgres lesson store.")
    parser.add_argument("--quick", action="store_true", help="5k lessons, under a minute")
    parser.add_argument("--n", type=int, default=None, help="lessons (default 100k, quick 5k)")
    parser.add_argument("--queries", type=int, default=None, help="default 1000, quick 200")
    parser.add_argument("--single", type=int, default=None, help="one-by-one inserts")
    parser.add_argument("--rounds", type=int, default=3, help="bulk rounds (best of)")
    parser.add_argument("--chunk", type=int, default=10_000, help="rows per bulk transaction")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedder", choices=("auto", "minilm", "hashing"), default="auto")
    parser.add_argument(
        "--embed-only", action="store_true", help="only compute and cache the embeddings"
    )
    args = parser.parse_args(argv)
    if args.n is None:
        args.n = 5_000 if args.quick else 100_000
    if args.queries is None:
        args.queries = 200 if args.quick else 1_000
    if args.single is None:
        args.single = 200 if args.quick else 1_000
    logging.basicConfig(level=logging.WARNING)
    if args.embed_only:
        embedder = make_embedder(args.embedder, onnx=OnnxParams())
        texts = lesson_sentences(args.n, args.seed)
        _, cached = corpus_embeddings(texts, args.seed, embedder, generator=lesson_sentences)
        _log(f"cache {'already present' if cached else 'written'} in {CACHE_DIR}")
        return 0
    figures = asyncio.run(run(args))
    print(json.dumps(figures, sort_keys=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
