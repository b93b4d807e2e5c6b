"""A part that never finishes its stop cannot keep the node alive or its home locked."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from lamarck.node.config import NodeSettings
from lamarck.node.daemon import Node
from lamarck.node.lock import HomeLock


class _Stubborn:
    """A part whose stop swallows its cancellation and goes on waiting (as a gRPC server
    whose shutdown never completes does)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def stop(self) -> None:
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                continue


class _Failing:
    async def stop(self) -> None:
        raise RuntimeError("the part broke while stopping")


class _Prompt:
    def __init__(self) -> None:
        self.stopped = False

    async def stop(self) -> None:
        self.stopped = True


class _Sharing:
    """Sharing whose reputation flush never finishes (a store that stopped answering)."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.flushing = _Stubborn()

    async def stop_loops(self) -> None:
        self.steps.append("loops")

    async def flush_reputation(self) -> None:
        self.steps.append("flush")
        await self.flushing.stop()

    async def close(self) -> None:
        self.steps.append("close")


def _node(tmp_path: Path) -> Node:
    home = tmp_path / "home"
    home.mkdir()
    return Node(NodeSettings(home=home, stop_part_timeout_s=0.2))


async def test_a_stuck_part_is_left_behind_and_the_rest_still_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    node = _node(tmp_path)
    node._lock.acquire()
    node._locked = True
    stuck, failing, console = _Stubborn(), _Failing(), _Prompt()
    node._supervisor = stuck  # type: ignore[assignment]
    node._maintenance = failing  # type: ignore[assignment]
    node._console = console  # type: ignore[assignment]

    with caplog.at_level(logging.ERROR, logger="lamarck.node.daemon"):
        await asyncio.wait_for(node.stop(), timeout=10)

    assert node.abandoned == ["supervisor"]
    assert console.stopped  # the parts after the stuck and the failing one were stopped
    messages = [r.getMessage() for r in caplog.records]
    assert any("stopping supervisor took longer than 0.2 s" in m for m in messages)
    assert any("stopping maintenance failed" in m for m in messages)
    # The home is unlocked: another node may start on it.
    second = HomeLock(node.home)
    second.acquire()
    second.release()
    stuck.release.set()


async def test_a_hung_reputation_flush_still_lets_the_node_leave_the_peer_list(
    tmp_path: Path,
) -> None:
    # One bound used to cover the loops, the flush and the deregistration together, and the
    # flush alone could use all of it: the node then stayed on the live list until its TTL.
    node = _node(tmp_path)
    sharing = _Sharing()
    node._sharing = sharing  # type: ignore[assignment]
    await asyncio.wait_for(node.stop(), timeout=10)
    assert sharing.steps == ["loops", "flush", "close"]
    assert node.abandoned == ["reputation flush"]
    sharing.flushing.release.set()


async def test_a_clean_stop_leaves_nothing_behind(tmp_path: Path) -> None:
    node = _node(tmp_path)
    console = _Prompt()
    node._console = console  # type: ignore[assignment]
    await node.stop()
    assert console.stopped and node.abandoned == []
