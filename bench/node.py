"""Benchmark of a node's AgentService through gRPC on loopback.

A real node process (``python -m lamarck.node.daemon``, started by the one node launcher,
``lamarck.fleet.launcher``: embedded Postgres, the hashing embedder unless ``--embedder``
says otherwise) is seeded with lessons, then measured from this process with
``lamarck.client.AsyncClient``:

* RecordOutcome and Recall latency p50/p99 (one call at a time) and calls/s (``--concurrency``
  calls in flight);
* the same figures for a bare gRPC echo server in its own process (a generic unary handler,
  bytes in → the same bytes out, request as large as a RecordOutcome request), in the same run;
* the ratios node ÷ echo (latency: how many echo round trips one call costs; throughput: the
  share of the bare transport's rate the node keeps).

The last line of output is one JSON object of the figures (name → number).

Usage: ``python -m bench.node [--quick] [--calls N] [--concurrency C] [--embedder hashing|minilm]``
(``--quick`` runs in well under a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

if __package__ in (None, ""):
    # Run as a script (`python bench/node.py`): make `bench` importable as a package.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lamarck.client import AsyncClient
from lamarck.fleet.launcher import (
    LaunchParams,
    NodeProcess,
    await_serving,
    spawn_node,
    stop_nodes,
)
from lamarck.proto.timefmt import format_ts

__all__ = ["ECHO_METHOD", "LAUNCH", "main", "run", "serve_echo", "start_node", "stop_node"]

#: The echo server's one method (no protobuf: bytes in, the same bytes out).
ECHO_METHOD = "/bench.Echo/Echo"
PROJECT = "be" * 32
#: Bounds of a bench node: its first start runs initdb (and may load MiniLM); a clean stop
#: drains its queues.
LAUNCH = LaunchParams(start_timeout_s=180.0, stop_timeout_s=60.0)


def _log(message: str) -> None:
    print(message, flush=True)


# -- the echo server ------------------------------------------------------------------------


async def serve_echo() -> None:
    """Serve ``ECHO_METHOD`` on 127.0.0.1:0, print the port, run until SIGTERM."""

    async def echo(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return request

    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(None)


def _start_echo() -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.node", "--serve-echo"],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode().strip()
    if not line.isdigit():
        process.kill()
        raise RuntimeError(f"echo server did not start (said {line!r})")
    return process, f"127.0.0.1:{line}"


# -- the node -------------------------------------------------------------------------------


def start_node(home: Path, embedder: str, *, database_url: str = "") -> NodeProcess:
    """Start a node on ``home`` (its ports on 127.0.0.1:0; its own embedded Postgres unless
    ``database_url`` names one) and return it once it serves; output goes to ``home/node.log``."""
    flags = {
        "listen": "127.0.0.1:0",
        "agent_listen": "127.0.0.1:0",
        "embedder": embedder,
        "database_url": database_url or None,
        "log_format": "json",
        "log_level": "WARNING",
    }
    node = spawn_node("bench", home, flags)
    try:
        await_serving([node], LAUNCH)
    except BaseException:
        stop_nodes([node], LAUNCH)
        raise
    return node


def stop_node(node: NodeProcess) -> int:
    """SIGTERM the node, wait for it (killed after ``LAUNCH.stop_timeout_s``); its exit code."""
    return stop_nodes([node], LAUNCH)[0]


def _stop_echo(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=LAUNCH.stop_timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


# -- workloads -------------------------------------------------------------------------------


def outcome(
    session: str,
    steps: list[tuple[str, str, str]],
    turn: int = 0,
    *,
    project: str = PROJECT,
    in_play: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One passing turn's outcome record, dated now (nodes run on the system clock)."""
    return {
        "in_play": list(in_play),
        "schema_version": "1.0",
        "kind": "outcome",
        "id": str(uuid.uuid4()),
        "session_id": session,
        "turn_index": turn,
        "project": project,
        "goal_digest": "make the test suite of the component pass",
        "approach": [{"operation_key": o, "outcome": r, "target": t} for o, r, t in steps],
        "checks": [
            {
                "label": "pytest",
                "target": "",
                "kind": "test",
                "order": 0,
                "ran": True,
                "failed": False,
                "mutated_after": False,
            }
        ],
        "passed": True,
        "claim_ok": True,
        "steps": len(steps),
        "tokens": 1200,
        "wall_s": 3.5,
        "created_at": format_ts(datetime.now(UTC)),
    }


Call = Callable[[int], Awaitable[Any]]


async def _latencies(call: Call, n: int) -> list[float]:
    """``n`` calls one after another; each one's wall time in ms."""
    out: list[float] = []
    for i in range(n):
        start = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


async def _throughput(call: Call, n: int, concurrency: int) -> float:
    """Calls per second with ``concurrency`` calls in flight, over ``n`` calls."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await call(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - start)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _measure(
    name: str, call: Call, n: int, concurrency: int, figures: dict[str, float]
) -> None:
    await _latencies(call, max(10, n // 10))  # warm-up: connections, caches, JIT-less paths
    lat = await _latencies(call, n)
    rate = await _throughput(call, n, concurrency)
    figures[f"{name}_p50_ms"] = round(statistics.median(lat), 3)
    figures[f"{name}_p99_ms"] = round(_pct(lat, 0.99), 3)
    figures[f"{name}_calls_per_s"] = round(rate, 1)
    _log(
        f"{name:15s} p50 {figures[f'{name}_p50_ms']:8.3f} ms   "
        f"p99 {figures[f'{name}_p99_ms']:8.3f} ms   {rate:9.1f} calls/s (x{concurrency})"
    )


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Seed a node, measure it and the echo server, and return the figures."""
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="lamarck-bench-node-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        started = time.perf_counter()
        node = start_node(home, args.embedder)
        figures["node_start_s"] = round(time.perf_counter() - started, 2)
        echo: subprocess.Popen[bytes] | None = None
        try:
            echo, echo_address = _start_echo()
            _log(f"node on {node.agent_addr} ({args.embedder} embedder), echo on {echo_address}")
            async with AsyncClient(node.agent_addr, timeout=60) as client:
                # Seed: each teaching outcome writes one mechanical lesson in the project.
                for i in range(args.lessons):
                    target = f"component-{i}"
                    await client.record_outcome(
                        outcome(
                            "seed",
                            [
                                (f"shell:pytest {target}/tests", "failed", target),
                                (f"shell:make test-{i}", "ok", target),
                            ],
                            i,
                        )
                    )
                _log(f"seeded {args.lessons} lessons")
                sample = outcome("bench", [("shell:pytest", "ok", "component-0")], 0)
                payload = json.dumps(sample).encode()

                async def record(i: int) -> Any:
                    # A passing turn with one ok step: the common case (stores the outcome,
                    # attributes nothing new).
                    return await client.record_outcome(
                        outcome(f"bench-{i % 64}", [("shell:pytest", "ok", f"c{i % 7}")], i)
                    )

                async def recall(i: int) -> Any:
                    return await client.recall(
                        f"run the tests of component-{i % args.lessons}",
                        session_id=f"recall-{i % 64}",
                        project_digest=PROJECT,
                    )

                first = await recall(0)
                figures["recall_lessons_returned"] = len(first.lessons)
                await _measure("record_outcome", record, args.calls, args.concurrency, figures)
                await _measure("recall", recall, args.calls, args.concurrency, figures)

            async with grpc.aio.insecure_channel(echo_address) as channel:
                # No (de)serializers: bytes travel as they are, the bare cost of a call.
                echo_call = channel.unary_unary(
                    ECHO_METHOD, request_serializer=None, response_deserializer=None
                )

                async def echo_once(i: int) -> Any:
                    return await echo_call(payload, timeout=60)

                await _measure("echo", echo_once, args.calls, args.concurrency, figures)
        finally:
            figures["node_exit_code"] = stop_node(node)
            if echo is not None:
                _stop_echo(echo)
    for name in ("record_outcome", "recall"):
        figures[f"{name}_p50_ratio"] = round(figures[f"{name}_p50_ms"] / figures["echo_p50_ms"], 2)
        figures[f"{name}_p99_ratio"] = round(figures[f"{name}_p99_ms"] / figures["echo_p99_ms"], 2)
        figures[f"{name}_throughput_ratio"] = round(
            figures[f"{name}_calls_per_s"] / figures["echo_calls_per_s"], 4
        )
    return figures


def main(argv: list[str] | None = None) -> int:
    """Entry point; prints a table and, last, one JSON line of figures."""
    parser = argparse.ArgumentParser(description="Benchmark a node's AgentService over gRPC.")
    parser.add_argument("--quick", action="store_true", help="small run, well under a minute")
    parser.add_argument("--calls", type=int, default=None, help="calls per measurement")
    parser.add_argument("--concurrency", type=int, default=16, help="calls in flight")
    parser.add_argument("--lessons", type=int, default=None, help="lessons seeded")
    parser.add_argument("--embedder", choices=("hashing", "minilm", "auto"), default="hashing")
    parser.add_argument("--serve-echo", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_echo:
        asyncio.run(serve_echo())
        return 0
    args.calls = args.calls or (300 if args.quick else 3000)
    args.lessons = args.lessons or (50 if args.quick else 500)
    figures = asyncio.run(run(args))
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
