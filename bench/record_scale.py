"""RecordOutcome as the scope fills: its p50 at 100k lessons within 1.5x of 1k.

The real ``LessonService`` over the real Postgres store (embedded PostgreSQL 16 + pgvector, the
HNSW index in place), timed the way the agent API calls it. The scope is filled with synthetic
lessons (random unit vectors; operations drawn from ``--ops`` keys, so a common operation has
many lessons about it at 100k; half are mechanical "prefer B over A for T" lessons with their
tags), loaded with binary COPY under ``bulk_load`` (the index rebuilt once).

Each timed RecordOutcome is a passing run that failed ``A`` and then ran ``B`` on a target,
with a stored lesson in play: half re-prove a stored mechanical lesson (attribution confirms
it, the lookup finds it), half teach a new one on a fresh target (embedded by the node's
model and stored, with its events). Measured at ``--small`` lessons, then the same scope is
filled to ``--large`` and measured again with the same kind of outcomes.

Each size is measured twice. *Paced*, as an agent calls it after each run: what the node does
behind a reply (the taught lesson's vector, its index entry) ends before the next call,
untimed. *Back to back*, a burst: that background work shares the two cores with the next
calls, so the figure also holds the model's embedding and the HNSW insert of the burst's
taught lessons, which cost more in a larger index.

Goal: ``record_p50_large_vs_small_ratio`` (paced) <= 1.5; the burst's ratio is shown
unjudged. The last line is one JSON object of the figures.

Usage: ``python -m bench.record_scale [--quick] [--small N] [--large N] [--calls C]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.node import PROJECT, outcome
from lamarck.domain.embedder import Embedder
from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.learning.mechanical import AVOID_TAG, MECHANICAL_TAG, TARGET_TAG
from lamarck.learning.scopes import project_scope
from lamarck.node.config import NodeSettings
from lamarck.node.embedding import make_embedder
from lamarck.node.lessons.service import LessonService
from lamarck.node.minilm_onnx import OnnxParams
from lamarck.node.params import node_params
from lamarck.node.store.embedded import EmbeddedPostgres
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.proto.clock import SystemClock
from lamarck.proto.outcome import Outcome
from lamarck.reputation.transfer import TransferParams

__all__ = ["main", "run"]

GOAL = 1.5
_CHUNK = 10_000
#: Share of the filled lessons in the project's scope (the rest global: both are recalled).
_PROJECT_SHARE = 0.8


def _log(message: str) -> None:
    print(message, flush=True)


class _Filler:
    """Synthetic lessons, remembered so the timed outcomes can name stored ones."""

    def __init__(self, dim: int, ops: int, seed: int) -> None:
        self._rng = random.Random(seed)
        self._np = np.random.default_rng(seed)
        self._dim = dim
        self._ops = [f"shell:tool{i} run" for i in range(ops)]
        self.count = 0
        #: (id, operation, avoided operation, target) of stored mechanical lessons.
        self.mechanical: list[tuple[str, str, str, str]] = []

    def rows(self, n: int) -> list[LessonRow]:
        vectors = self._np.standard_normal((n, self._dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        now = datetime.now(UTC) - timedelta(days=1)
        scope = project_scope(PROJECT)
        out = []
        for v in vectors:
            i = self.count
            self.count += 1
            lesson_id = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
            op = self._rng.choice(self._ops)
            tags: tuple[str, ...] = ()
            content = f"lesson {i}: when the build breaks, {op} settles it"
            if i % 2 == 0:
                avoid, target = self._rng.choice(self._ops), f"component-{i}"
                tags = (MECHANICAL_TAG, f"{AVOID_TAG}{avoid}", f"{TARGET_TAG}{target}")
                content = f"Prefer `{op}` over `{avoid}` for {target}."
                self.mechanical.append((lesson_id, op, avoid, target))
            out.append(
                LessonRow(
                    id=lesson_id,
                    content=content,
                    operation=op,
                    scope=scope if self._rng.random() < _PROJECT_SHARE else "global",
                    status=LessonStatus.ACTIVE,
                    confidence=round(self._rng.uniform(0.4, 0.9), 3),
                    created_at=now,
                    updated_at=now,
                    evidence=(str(uuid.uuid4()),),
                    confirmations=1,
                    tags=tags,
                    embedding=v,
                )
            )
        return out


async def _fill(store: PostgresLessonStore, filler: _Filler, upto: int) -> float:
    """Fill to ``upto`` lessons (index dropped and rebuilt once); seconds taken."""
    start = time.perf_counter()
    async with store.bulk_load():
        while filler.count < upto:
            await store.insert_lessons(filler.rows(min(_CHUNK, upto - filler.count)))
    return time.perf_counter() - start


async def _measure(
    service: LessonService,
    filler: _Filler,
    calls: int,
    rng: random.Random,
    tag: str,
    *,
    paced: bool = True,
) -> list[float]:
    """Time ``calls`` RecordOutcomes: even ones re-prove a stored lesson, odd ones teach.
    ``paced``: the background work of each call ends, untimed, before the next one."""
    lat = []
    for i in range(calls):
        if i % 2 == 0:
            lesson_id, prefer, avoid, target = rng.choice(filler.mechanical)
            in_play: tuple[str, ...] = (lesson_id,)
        else:
            _, prefer, _, _ = rng.choice(filler.mechanical)
            avoid, target, in_play = f"shell:flaky-{tag}-{i}", f"fresh-{tag}-{i}", ()
        record = outcome(
            f"scale-{tag}-{i}",
            [(avoid, "failed", target), (prefer, "ok", target)],
            in_play=in_play,
        )
        parsed = Outcome.from_json(json.dumps(record))
        started = time.perf_counter()
        await service.record_outcome(parsed)
        lat.append((time.perf_counter() - started) * 1000.0)
        if paced:
            await service.settle()
    return lat


def _kinds(figures: dict[str, float], lat: list[float], tag: str) -> None:
    """The p50 of each kind of call: re-proving a stored lesson (even), teaching (odd)."""
    figures[f"reprove_p50_{tag}_ms"] = round(statistics.median(lat[0::2]), 3)
    figures[f"teach_p50_{tag}_ms"] = round(statistics.median(lat[1::2]), 3)


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Fill, measure, fill more, measure again; return the figures."""
    embedder: Embedder = make_embedder(args.embedder, onnx=OnnxParams())
    filler = _Filler(embedder.dim, args.ops, seed=0)
    rng = random.Random(1)
    figures: dict[str, float] = {
        "small_lessons": float(args.small),
        "large_lessons": float(args.large),
        "calls": float(args.calls),
    }
    _log(
        f"record_scale: {args.small} then {args.large} lessons, {args.calls} outcomes each, "
        f"embedder {embedder.name}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="lamarck-record-scale-"))
    pg = EmbeddedPostgres(tmp / "pg", database="lamarck_scale")
    try:
        dsn = await asyncio.to_thread(pg.start)
        store = await PostgresLessonStore.connect(dsn, embedder.dim)
        # The node's own learning parameters (a taught lesson's vector behind the reply).
        learning = node_params(NodeSettings()).learning
        service = LessonService(
            store,
            embedder,
            SystemClock(),
            learning,
            rng=random.Random(2),
            transfer=TransferParams(),
        )
        try:
            took = await _fill(store, filler, args.small)
            _log(f"  filled {filler.count} in {took:.1f} s")
            await _measure(service, filler, max(4, args.calls // 10), rng, "warm")
            small = await _measure(service, filler, args.calls, rng, "small")
            figures["record_p50_small_ms"] = round(statistics.median(small), 3)
            _kinds(figures, small, "small")
            burst = await _measure(service, filler, args.calls, rng, "bsmall", paced=False)
            figures["burst_p50_small_ms"] = round(statistics.median(burst), 3)
            _log(f"  RecordOutcome p50 at {args.small}: {figures['record_p50_small_ms']} ms")
            took = await _fill(store, filler, args.large)
            figures["fill_large_s"] = round(took, 1)
            _log(f"  filled {filler.count} in {took:.1f} s")
            await _measure(service, filler, max(4, args.calls // 10), rng, "warm2")
            large = await _measure(service, filler, args.calls, rng, "large")
            figures["record_p50_large_ms"] = round(statistics.median(large), 3)
            _kinds(figures, large, "large")
            burst = await _measure(service, filler, args.calls, rng, "blarge", paced=False)
            figures["burst_p50_large_ms"] = round(statistics.median(burst), 3)
            _log(f"  RecordOutcome p50 at {args.large}: {figures['record_p50_large_ms']} ms")
        finally:
            await service.close()
            await store.close()
    finally:
        await asyncio.to_thread(pg.delete_data)
        shutil.rmtree(tmp, ignore_errors=True)
    ratio = figures["record_p50_large_ms"] / figures["record_p50_small_ms"]
    figures["record_p50_large_vs_small_ratio"] = round(ratio, 3)
    burst_ratio = figures["burst_p50_large_ms"] / figures["burst_p50_small_ms"]
    figures["burst_p50_large_vs_small_ratio"] = round(burst_ratio, 3)
    _log(
        f"{'figure':40s} {'value':>10s}  goal\n"
        f"{'RecordOutcome p50 ms, small, paced':40s} {figures['record_p50_small_ms']:10.2f}\n"
        f"{'RecordOutcome p50 ms, large, paced':40s} {figures['record_p50_large_ms']:10.2f}\n"
        f"{'large / small (paced)':40s} {ratio:10.3f}  <= {GOAL}\n"
        f"{'back to back, p50 ms':40s} {figures['burst_p50_small_ms']:10.2f}"
        f" -> {figures['burst_p50_large_ms']:.2f} = {burst_ratio:.3f} (unjudged)\n"
        f"{'  re-proving a stored lesson, p50 ms':40s} {figures['reprove_p50_small_ms']:10.2f}"
        f" -> {figures['reprove_p50_large_ms']:.2f}\n"
        f"{'  teaching a new lesson, p50 ms':40s} {figures['teach_p50_small_ms']:10.2f}"
        f" -> {figures['teach_p50_large_ms']:.2f}"
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    """Entry point; prints the figures and, last, one JSON line."""
    parser = argparse.ArgumentParser(description="RecordOutcome p50 at 1k vs 100k lessons.")
    parser.add_argument("--quick", action="store_true", help="1k vs 10k, under a minute")
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=None, help="default 100000, quick 10000")
    parser.add_argument("--calls", type=int, default=None, help="default 200, quick 60")
    parser.add_argument("--ops", type=int, default=2000, help="distinct operation keys")
    parser.add_argument(
        "--embedder", choices=("minilm", "hashing"), default=None, help="default minilm"
    )
    args = parser.parse_args(argv)
    args.large = args.large or (10_000 if args.quick else 100_000)
    args.calls = args.calls or (60 if args.quick else 200)
    args.embedder = args.embedder or ("hashing" if args.quick else "minilm")
    figures = asyncio.run(run(args))
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
