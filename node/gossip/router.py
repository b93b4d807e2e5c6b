"""Fanout push and forwarding with a hop limit and dedupe by content hash (issue 5 §2.3).

Pure-ish: peer choice uses an injected seeded ``random.Random``; the network send is an
injected async callable. The router remembers the content hashes it has pushed or forwarded
(bounded), so one record is forwarded at most once by this node however often it arrives.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence

from lamarck.errors import ConfigError
from lamarck.node.gossip.publisher import GossipParams

__all__ = ["ForwardSend", "GossipRouter"]

ForwardSend = Callable[[str, Sequence[bytes], int], Awaitable[None]]
"""Send records to one peer with a hop count; raises on failure."""


class GossipRouter:
    """Chooses fanout peers, decides what to forward, and remembers what it sent."""

    def __init__(
        self,
        params: GossipParams,
        rng: random.Random,
        self_node_id: str,
        *,
        max_seen: int = 100_000,
    ) -> None:
        if max_seen < 1:
            raise ConfigError("invalid max_seen: must be at least 1")
        self._params = params
        self._rng = rng
        self._self = self_node_id
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._max_seen = max_seen

    def choose(self, peers: Iterable[str], exclude: Iterable[str] = ()) -> list[str]:
        """Up to ``fanout`` distinct peers at random, never this node nor ``exclude``.

        Candidates are sorted first, so the choice depends only on the seed and the set.
        """
        skip = {self._self, *exclude}
        candidates = sorted({p for p in peers if p and p not in skip})
        k = min(self._params.fanout, len(candidates))
        return self._rng.sample(candidates, k)

    def first_sight(self, content_hash: str) -> bool:
        """True (and remember it) the first time ``content_hash`` is seen, False after."""
        if content_hash in self._seen:
            self._seen.move_to_end(content_hash)
            return False
        self._seen[content_hash] = None
        if len(self._seen) > self._max_seen:
            self._seen.popitem(last=False)
        return True

    def effective_hop_limit(self, hop_limit: int) -> int:
        """The batch's hop limit, or ours when it gives none; never above ours."""
        ours = self._params.hop_limit
        return ours if hop_limit <= 0 else min(hop_limit, ours)

    def should_forward(self, hop_count: int, hop_limit: int) -> bool:
        """Whether a record received at ``hop_count`` travels one more hop."""
        return hop_count + 1 < self.effective_hop_limit(hop_limit)

    async def forward(
        self,
        raws: Sequence[tuple[str, bytes]],
        *,
        peers: Iterable[str],
        hop_count: int,
        hop_limit: int,
        exclude: Iterable[str],
        send: ForwardSend,
    ) -> list[str]:
        """Forward accepted records (content hash, bytes) to a fresh fanout; returns targets.

        Records this router already forwarded are dropped; a failed send is only logged by
        the caller's ``send`` (anti-entropy repairs what forwarding misses).
        """
        if not self.should_forward(hop_count, hop_limit):
            return []
        fresh = [raw for h, raw in raws if self.first_sight(h)]
        if not fresh:
            return []
        targets = self.choose(peers, exclude)
        for target in targets:
            try:
                await send(target, fresh, hop_count + 1)
            except Exception:  # best effort: Sync repairs a lost forward
                continue
        return targets
