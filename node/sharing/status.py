"""``NetworkStatus``: the network side's facts for ``lamarck node status`` and peer health.

Admission and live peers (``membership.py``), each peer's last whole pull and the pulls
running now (``anti_entropy.py``), and the outbox's depth and oldest entry, as one
``NetworkSnapshot`` (``lamarck.node.api.node_status``).
"""

from __future__ import annotations

from collections.abc import Callable

from lamarck.node.api.node_status import CatchUpProgress, NetworkSnapshot
from lamarck.node.gossip.outbox import Outbox
from lamarck.node.sharing.anti_entropy import AntiEntropy
from lamarck.node.sharing.ports import LivePeers

__all__ = ["NetworkStatus"]


class NetworkStatus:
    """The network side at a glance, read on each status."""

    def __init__(
        self,
        membership: LivePeers,
        outbox: Outbox,
        anti_entropy: Callable[[], AntiEntropy | None],
        *,
        incognito: bool,
    ) -> None:
        """``anti_entropy`` is the network side's pulls once it started them (None before)."""
        self._membership = membership
        self._outbox = outbox
        self._anti_entropy = anti_entropy
        self._incognito = incognito

    async def network_snapshot(self) -> NetworkSnapshot:
        """Admission, live peers, last syncs, the outbox, and the pulls under way."""
        pending = await self._outbox.pending()
        stamps = [e.created_at for e in pending if e.created_at is not None]
        pulls = self._anti_entropy()
        return NetworkSnapshot(
            self._membership.admission(),
            tuple(self._membership.live_peers()),
            dict(pulls.last_sync) if pulls is not None else {},
            len(pending),
            min(stamps) if stamps else None,
            self._incognito,
            catching_up(pulls),
        )


def catching_up(pulls: AntiEntropy | None) -> tuple[CatchUpProgress, ...]:
    """How far each running pull got now (none before the pulls started)."""
    if pulls is None:
        return ()
    return tuple(c.progress() for c in list(pulls.catching_up.values()))
