"""Anti-entropy's bounded round: which peers one round pulls from (``sync_sample``), and that
``AntiEntropy.once`` asks exactly those (the simulator runs the same function)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from types import SimpleNamespace

from lamarck.gossip.publisher import GossipParams
from lamarck.node.importing.view import HeldRecords
from lamarck.node.sharing.anti_entropy import AntiEntropy, sync_sample
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.scores import PeerBand

SELF = NodeIdentity.from_seed(b"\x73" * 32)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
PEERS = [f"lmk1{i:032x}" for i in range(20)]


def test_a_round_asks_every_peer_as_given_when_they_fit() -> None:
    params = dataclasses.replace(GossipParams(), sync_peers_per_round=8)
    few = list(reversed(PEERS[:8]))
    assert sync_sample(few, params, random.Random(1)) == few


def test_a_round_over_more_peers_asks_a_seeded_sample_in_id_order() -> None:
    params = dataclasses.replace(GossipParams(), sync_peers_per_round=5)
    picked = sync_sample(PEERS, params, random.Random(3))
    assert len(picked) == 5 and picked == sorted(picked) and set(picked) <= set(PEERS)
    # The rule AntiEntropy.once had inline before it was extracted: same draws, same answer.
    assert picked == sorted(random.Random(3).sample(PEERS, 5))
    assert sync_sample(PEERS, params, random.Random(3)) == picked


def test_once_pulls_from_exactly_the_sampled_peers() -> None:
    params = dataclasses.replace(GossipParams(), sync_peers_per_round=4)
    asked: list[str] = []
    node = AntiEntropy(
        InMemoryLessonStore(),
        SELF,
        params,
        # Only its index of versions kept as history is read: sync_with is replaced.
        pipeline=SimpleNamespace(view=SimpleNamespace(held=HeldRecords())),  # type: ignore[arg-type]
        client=None,  # type: ignore[arg-type]
        band_of=lambda _: PeerBand.TRUSTED,
        live_peers=lambda: list(PEERS),
        clock=FixedClock(NOW),
        rng=random.Random(9),
    )

    async def sync_with(
        peer: str, held: set[str] | None = None, projects: Sequence[str] | None = None
    ) -> int:
        asked.append(peer)
        return 1

    node.sync_with = sync_with  # type: ignore[method-assign]
    assert asyncio.run(node.once()) == 4
    assert asked == sync_sample(PEERS, params, random.Random(9))
