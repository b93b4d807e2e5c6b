"""Peers' signed local-trust summaries: which one counts per signer, and the rows they give.

Pure and in memory: the node verifies a received summary (``lamarck.proto.trust_summary``)
and checks its signer's standing in the registry and the reputation book at the edge, then
offers it here. The rules:

* **Newest per signer wins.** A summary whose ``issued_at`` is not after the one held for its
  signer is refused ``stale_summary`` (an older or replayed copy can never replace a newer
  one; the same bytes again are ``duplicate``, harmless: every relay serves them).
* **Fresh means recent.** A summary counts from its ``issued_at`` until ``max_age_s`` later
  (``expired_summary`` on arrival, left out of :meth:`TrustSummaries.rows` after that); one
  dated more than ``max_future_s`` ahead of this node's clock is ``future_summary``.
* **This node's own row is its own book**, never a summary of itself read back from a peer
  (``own_summary``).
* At most ``max_signers`` signers are held; past that the oldest summary is dropped.

Which signers' rows count (admitted, not revoked, not graylisted) is the caller's ``exclude``
at :meth:`TrustSummaries.rows`, read fresh at every recomputation, so a signer graylisted or
revoked after its summary arrived stops counting at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from lamarck.proto.trust_summary import TrustSummary
from lamarck.reputation.params import SummaryParams

__all__ = ["HeldSummary", "SummaryOutcome", "TrustSummaries", "summary_refusal"]


class SummaryOutcome(StrEnum):
    """What offering a summary did."""

    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class HeldSummary:
    """A verified summary and its exact bytes (what this node relays)."""

    summary: TrustSummary
    raw: bytes


def summary_refusal(
    summary: TrustSummary,
    held: TrustSummary | None,
    now: datetime,
    params: SummaryParams,
    self_id: str,
) -> str | None:
    """Why ``summary`` may not replace ``held`` (its signer's current one), or ``None``."""
    if summary.signer_id == self_id:
        return "own_summary"
    issued = summary.issued
    if issued > now + timedelta(seconds=params.max_future_s):
        return "future_summary"
    if issued + timedelta(seconds=params.max_age_s) < now:
        return "expired_summary"
    if held is not None and issued <= held.issued:
        return "stale_summary"
    return None


class TrustSummaries:
    """The newest fresh summary per signer, and this node's own signed summary."""

    def __init__(self, params: SummaryParams, self_id: str) -> None:
        if not self_id:
            raise ValueError("TrustSummaries needs this node's id")
        self._params = params
        self._self_id = self_id
        self._held: dict[str, HeldSummary] = {}
        # The exact bytes held, so a copy relayed again is known before any verification.
        self._raws: set[bytes] = set()
        self._own: bytes | None = None

    @property
    def params(self) -> SummaryParams:
        """The freshness and relay bounds."""
        return self._params

    def offer(self, summary: TrustSummary, raw: bytes, now: datetime) -> tuple[SummaryOutcome, str]:
        """Keep ``summary`` (already verified, its signer in good standing) if it is its
        signer's newest fresh one; returns what happened and the refusal reason ("" if none)."""
        held = self._held.get(summary.signer_id)
        if held is not None and held.raw == raw:
            return SummaryOutcome.DUPLICATE, ""
        reason = summary_refusal(
            summary, held.summary if held else None, now, self._params, self._self_id
        )
        if reason is not None:
            return SummaryOutcome.REFUSED, reason
        if held is not None:
            self._raws.discard(held.raw)
        self._held[summary.signer_id] = HeldSummary(summary, raw)
        self._raws.add(raw)
        if len(self._held) > self._params.max_signers:
            oldest = min(self._held.values(), key=lambda h: (h.summary.issued, h.summary.signer_id))
            self._drop(oldest.summary.signer_id)
        return SummaryOutcome.ACCEPTED, ""

    def holds(self, raw: bytes) -> bool:
        """Whether these exact bytes are a summary held now (a relayed copy: nothing to do)."""
        return raw in self._raws

    def held(self, signer_id: str) -> TrustSummary | None:
        """The summary held for ``signer_id`` (``None``: none)."""
        entry = self._held.get(signer_id)
        return entry.summary if entry is not None else None

    def signers(self) -> tuple[str, ...]:
        """Every signer a summary is held for, sorted."""
        return tuple(sorted(self._held))

    def rows(self, now: datetime, exclude: Iterable[str] = ()) -> dict[str, dict[str, float]]:
        """Each fresh held summary's row of local trust by signer, but for ``exclude`` (the
        signers not admitted, revoked or graylisted now). Expired summaries are dropped."""
        self._drop_expired(now)
        out = set(exclude)
        return {
            signer: held.summary.values()
            for signer, held in sorted(self._held.items())
            if signer not in out
        }

    def set_own(self, raw: bytes) -> None:
        """This node's newest signed summary (served first in every Sync answer)."""
        self._own = raw

    def served(self, now: datetime, exclude: Iterable[str] = ()) -> list[bytes]:
        """What a Sync answer carries: this node's own summary, then up to ``served`` fresh
        others, newest first (ties by signer), never those of ``exclude``."""
        self._drop_expired(now)
        out = set(exclude)
        others = sorted(
            (h for s, h in self._held.items() if s not in out),
            key=lambda h: (-h.summary.issued.timestamp(), h.summary.signer_id),
        )
        relayed = [h.raw for h in others[: self._params.served]]
        return ([self._own] if self._own is not None else []) + relayed

    def _drop_expired(self, now: datetime) -> None:
        age = timedelta(seconds=self._params.max_age_s)
        for signer in [s for s, h in self._held.items() if h.summary.issued + age < now]:
            self._drop(signer)

    def _drop(self, signer: str) -> None:
        self._raws.discard(self._held.pop(signer).raw)
