"""The agent-service tests' nodes: ``node`` (a fresh in-process node) and ``other`` (a second
node whose registry knows the first)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lamarck.proto.identity import NodeIdentity
from tests.unit.node.agent_node import Node, start_node


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    n = await start_node(1)
    try:
        yield n
    finally:
        await n.client.close()
        await n.server.stop(None)


@pytest.fixture
async def other() -> AsyncIterator[Node]:
    """A second node whose registry knows the first."""
    n = await start_node(2, known=[NodeIdentity.from_seed(bytes([1]) * 32)])
    try:
        yield n
    finally:
        await n.client.close()
        await n.server.stop(None)
