"""``Trust``: global trust at the node, recomputed on its schedule and summarized for peers.

Each recomputation runs EigenTrust (``lamarck.reputation``, pure, ~10 ms for 1,000 peers)
over this node's own row and the signed summaries of signers in good standing now
(``SummaryIntake.rows`` in ``summaries.py``), refreshes the reputation gauges, and signs this
node's new summary; Sync answers serve the signed summaries held (none when incognito).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from lamarck.errors import RegistryError
from lamarck.node.api.reputation import GlobalTrustBook, HasBook, recompute_global_trust
from lamarck.node.sharing.summaries import SummaryIntake
from lamarck.proto.clock import Clock

__all__ = ["Trust"]

_log = logging.getLogger("lamarck.node.sharing")


class Trust:
    """This node's global-trust rounds and the trust summaries its Syncs serve."""

    def __init__(
        self,
        summaries: SummaryIntake,
        book: GlobalTrustBook,
        *,
        revoked: Callable[[], Awaitable[frozenset[str]]],
        clock: Clock,
        incognito: bool,
    ) -> None:
        """``revoked`` reads every id the registry revoked now (their summaries count for
        nothing); ``incognito`` serves no summary."""
        self.summaries = summaries
        self._book = book
        self._revoked = revoked
        self._clock = clock
        self._incognito = incognito

    async def recompute(self) -> None:
        """Recompute global trust over this node's row and the summaries of signers in good
        standing now, refresh the reputation gauges, and sign this node's new summary for the
        Sync answers it serves."""
        now = self._clock.now()
        try:
            rows = self.summaries.rows(now, revoked=await self._revoked())
        except RegistryError as e:
            # Whose summaries still count cannot be told: this round counts none (fail closed).
            _log.warning("global trust from this node's own row only: %s", e)
            rows = {}
        book = self._book
        recompute_global_trust(book, now, rows)
        if isinstance(book, HasBook):
            self.summaries.sign_own(book.book.local_trust(), now)

    def served(self) -> list[bytes]:
        """The signed trust summaries a Sync answer carries (none when incognito: whom this
        node trusts says whom it deals with)."""
        if self._incognito:
            return []
        return list(self.summaries.served(self._clock.now()))
