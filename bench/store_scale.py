"""Operator and peer reads as the store grows (work that does not grow with it).

A node that caught up on a large network holds its lessons, and five reads run over what it
holds: ``GetStatus`` (``lamarck node status``, the console, each health refresh), ``GetHealth``
(the health report: every lesson's facts and events), the records a ``Sync`` may offer a peer
(every peer's anti-entropy round asks for them), the reputation table's import tallies, and
the taint sweep every node runs every 5 s (here with no source tainted: the steady state).
Each is timed on the real Postgres store (embedded PostgreSQL 16 + pgvector) at ``--small``
imported lessons, then the same store is filled to ``--large`` and each is timed again.

The lessons are synthetic imported copies (random unit vectors, a 1.5 KB signed record, two
events each: created, then a reality confirmation), loaded with binary COPY under
``bulk_load``. A read whose cost is proportional to what it must return grows by about the
size ratio (the report and a Sync's offer are over every lesson by definition); a read that
pages whole rows by OFFSET grows faster. Figures: median seconds per read at each size and
``<read>_large_vs_small_ratio``, beside ``size_ratio``. No goal is named for them; the table
shows them unjudged.

Usage: ``python -m bench.store_scale [--quick] [--small N] [--large N] [--repeat R]``
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
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lamarck.consensus.params import TaintParams
from lamarck.domain.rows import LessonEvent, LessonRow, LessonStatus
from lamarck.gossip.publisher import GossipParams
from lamarck.health.params import HealthParams
from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.api.peer_handlers import shareable_records
from lamarck.node.api.reputation import store_tallies
from lamarck.node.sharing.taint import TaintSweeper
from lamarck.node.store.embedded import EmbeddedPostgres
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import operator_pb2
from lamarck.reputation.scores import PeerBand

__all__ = ["main", "run"]

DIM = 384
SELF = NodeIdentity.from_seed(b"\x61" * 32)
PEER = NodeIdentity.from_seed(b"\x62" * 32).node_id
SOURCES = [NodeIdentity.from_seed(bytes([0x70 + i]) * 32).node_id for i in range(20)]


def _log(message: str) -> None:
    print(message, flush=True)


async def _fill(store: PostgresLessonStore, start: int, stop: int, seed: int) -> None:
    """Imported lessons ``start`` .. ``stop - 1`` with their two events each."""
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    for first in range(start, stop, 5_000):
        rows: list[LessonRow] = []
        events: list[LessonEvent] = []
        for i in range(first, min(stop, first + 5_000)):
            vector = rng.standard_normal(DIM).astype(np.float32)
            vector /= np.linalg.norm(vector)
            lesson_id = str(uuid.UUID(int=int(rng.integers(1 << 62)) << 64 | i, version=4))
            source = SOURCES[i % len(SOURCES)]
            created = now - timedelta(days=float(rng.uniform(0, 60)))
            rows.append(
                LessonRow(
                    id=lesson_id,
                    content=f"Prefer `shell:op{i} --fast` over `shell:op{i}` for target-{i}.",
                    operation=f"shell:op{i} --fast",
                    scope="global",
                    status=LessonStatus.ACTIVE,
                    confidence=float(rng.uniform(0.4, 0.9)),
                    created_at=created,
                    updated_at=created,
                    context={"domain": "software", "environment": "linux"},
                    source_node_id=source,
                    imported_from=source,
                    original_confidence=0.8,
                    signed_record=b"{" + b"x" * 1_500 + b"}",
                    content_hash=f"{i:064x}",
                    embedding=vector,
                )
            )
            events.append(LessonEvent(lesson_id, created, "imported", source, None, 0.6))
            events.append(
                LessonEvent(
                    lesson_id,
                    created + timedelta(hours=1),
                    "confirmed",
                    "loop",
                    0.6,
                    0.65,
                    "similarity=0.95",
                    str(uuid.UUID(int=i, version=4)),
                )
            )
        async with store.bulk_load():
            await store.insert_lessons(rows)
        await store.append_events(events)


async def _timed(read: Callable[[], Awaitable[Any]], repeat: int) -> float:
    """Median seconds of ``repeat`` calls (after one untimed call: caches warm)."""
    await read()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await read()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _measure(store: PostgresLessonStore, repeat: int) -> dict[str, float]:
    # A status computes its own report here (no refresh runs: the warnings' reuse is off).
    servicer = OperatorServicer(
        store,
        SystemClock(),
        pipeline=lambda: None,
        health=HealthParams(),
        node_id=SELF.node_id,
    )

    async def status() -> None:
        await servicer.GetStatus(operator_pb2.GetStatusRequest(), None)

    async def health() -> None:
        await servicer.GetHealth(operator_pb2.GetHealthRequest(), None)

    async def sync_offer() -> None:
        await shareable_records(store, SELF, GossipParams(), lambda _: PeerBand.TRUSTED, PEER)

    async def tallies() -> None:
        await store_tallies(store)

    async def nobody_revoked() -> frozenset[str]:
        return frozenset()

    sweeper = TaintSweeper(
        store,
        SELF,
        clock=SystemClock(),
        rng=random.Random(0),
        params=TaintParams(),
        revoked=nobody_revoked,
        band_of=lambda _: PeerBand.NEUTRAL,
    )

    async def taint_sweep() -> None:
        await sweeper.once()

    reads = {
        "status": status,
        "health": health,
        "sync_offer": sync_offer,
        "tallies": tallies,
        "taint_sweep": taint_sweep,
    }
    return {name: await _timed(read, repeat) for name, read in reads.items()}


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Fill to ``small``, time the reads, fill to ``large``, time them again."""
    home = Path(tempfile.mkdtemp(prefix="lamarck-store-scale-"))
    pg = EmbeddedPostgres(home, database="lamarck_store_scale")
    figures: dict[str, float] = {
        "small": float(args.small),
        "large": float(args.large),
        "size_ratio": round(args.large / args.small, 3),
    }
    try:
        dsn = await asyncio.to_thread(pg.start)
        store = await PostgresLessonStore.connect(dsn, DIM)
        try:
            measured: dict[int, dict[str, float]] = {}
            for first, size in ((0, args.small), (args.small, args.large)):
                started = time.perf_counter()
                await _fill(store, first, size, seed=size)
                _log(f"  filled to {size:,} lessons in {time.perf_counter() - started:.1f} s")
                measured[size] = await _measure(store, args.repeat)
                for name, seconds in measured[size].items():
                    _log(f"    {name:<10} {seconds * 1000:9.1f} ms")
        finally:
            await store.close()
    finally:
        await asyncio.to_thread(pg.delete_data)
        shutil.rmtree(home, ignore_errors=True)
    small, large = measured[args.small], measured[args.large]
    for name in small:
        figures[f"{name}_small_ms"] = round(small[name] * 1000, 1)
        figures[f"{name}_large_ms"] = round(large[name] * 1000, 1)
        figures[f"{name}_large_vs_small_ratio"] = round(large[name] / small[name], 2)
    _log(
        "large / small ("
        + f"{args.large:,} / {args.small:,} lessons = {figures['size_ratio']:g}x): "
        + ", ".join(f"{n} {figures[f'{n}_large_vs_small_ratio']:g}x" for n in small)
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    """Entry point; prints the figures and, last, one JSON line."""
    parser = argparse.ArgumentParser(description="Operator and peer reads as the store grows.")
    parser.add_argument("--quick", action="store_true", help="1,000 and 5,000 lessons")
    parser.add_argument("--small", type=int, default=None, help="default 1000")
    parser.add_argument("--large", type=int, default=None, help="default 20000 (quick 5000)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    args.small = args.small or 1_000
    args.large = args.large or (5_000 if args.quick else 20_000)
    if args.large <= args.small:
        parser.error("--large must be above --small")
    _log(f"store scale: {args.small:,} then {args.large:,} imported lessons")
    figures = asyncio.run(run(args))
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
