"""``ReputationBook``: the in-memory book with everything the operator's table shows.

An :class:`~lamarck.reputation.port.InMemoryReputation` (the labelled-part scorer behind both
ports) that also keeps, per peer and from the same events:

* **pairwise trust** (this node -> peer, ``lamarck.reputation.pairwise``): each new event is
  one interaction, positive if it raises a score (reality), neutral for internal agreement,
  negative otherwise;
* **predictions**: each reality event is one of the peer's lessons put to the test; the
  weighted accuracy weighs each by the event weight (the lesson's confidence);
* **last seen**: the time of its latest event.

Nothing here is stored on its own: a persistent adapter replays the events and gets all of it
back (``lamarck.node.store.reputation``). **Global trust** is recomputed on demand
(:meth:`ReputationBook.recompute_global_trust`, on a schedule the node sets) by EigenTrust over
this node's own pairwise row (the peers it has judged) and the rows of the peers' verified
trust summaries it is handed, anchored in the operator's pre-trusted peers, or this node when
there are none (never a uniform vector). A peer no row rates is unknown (``None``), never 0.
:func:`table_rows` turns the book into the table's rows (pure).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from lamarck.errors import ConfigError
from lamarck.proto.clock import Clock
from lamarck.reputation import scores
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.global_trust import GlobalTrust, global_trust
from lamarck.reputation.pairwise import Interaction, interaction_of, update_pairwise
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams
from lamarck.reputation.port import InMemoryReputation
from lamarck.reputation.scores import ReputationState
from lamarck.reputation.table import ReputationRow

__all__ = ["PeerLedger", "ReputationBook", "TrustConfig", "table_rows"]


@dataclass(frozen=True, slots=True)
class TrustConfig:
    """What the book needs besides the scorer's params: pairwise and global trust rules, who
    this node is (its own row and an anchor), and the operator's pre-trusted peers.

    ``self_id`` "" (a book not told who it belongs to) keeps pairwise trust but cannot compute
    global trust (``ConfigError``).
    """

    self_id: str
    pairwise: PairwiseParams = field(default_factory=PairwiseParams)
    global_trust: GlobalTrustParams = field(default_factory=GlobalTrustParams)
    pretrusted: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if any(not p for p in self.pretrusted):
            raise ConfigError("invalid pretrusted: a pre-trusted peer id is empty")


@dataclass(frozen=True, slots=True)
class PeerLedger:
    """Per-peer figures besides the score, derived from the events (an immutable value)."""

    pairwise: float
    last_seen: datetime | None = None
    # Whether this node has judged the peer: at least one positive or negative interaction
    # (internal agreement alone proves nothing about it).
    judged: bool = False
    # Sum of the weights of reality events, and of those that confirmed.
    tested_weight: float = 0.0
    confirmed_weight: float = 0.0

    @property
    def weighted_accuracy(self) -> float | None:
        """Confirmed share of the tested weight; ``None`` before any reality event."""
        if self.tested_weight <= 0.0:
            return None
        return self.confirmed_weight / self.tested_weight


class ReputationBook(InMemoryReputation):
    """Both reputation ports plus pairwise trust, predictions, last seen and global trust."""

    def __init__(self, params: ReputationParams, clock: Clock, trust: TrustConfig) -> None:
        super().__init__(params, clock)
        self._trust = trust
        self._ledgers: dict[str, PeerLedger] = {}
        self._global: GlobalTrust | None = None
        self._global_at: datetime | None = None

    @property
    def trust(self) -> TrustConfig:
        """The pairwise and global trust configuration."""
        return self._trust

    def emit(self, event: ReputationEvent) -> None:
        """Apply ``event`` (once per key) to the score and to the peer's ledger."""
        if event.key in self._seen:
            return
        super().emit(event)
        node = event.node_id
        ledger = self._ledgers.get(node) or PeerLedger(pairwise=self._trust.pairwise.initial)
        tested, confirmed = ledger.tested_weight, ledger.confirmed_weight
        if event.kind.is_reality:
            tested += event.weight
            if event.kind is EventKind.LESSON_CONFIRMED:
                confirmed += event.weight
        seen = ledger.last_seen
        interaction = interaction_of(event.kind)
        pairwise = update_pairwise(ledger.pairwise, interaction, self._trust.pairwise)
        if event.kind is EventKind.OPERATOR_RESET:
            # The operator's reset restores direct trust with the score: a newcomer's.
            pairwise = self._trust.pairwise.initial
        self._ledgers[node] = PeerLedger(
            pairwise=pairwise,
            last_seen=event.at if seen is None or event.at > seen else seen,
            tested_weight=tested,
            confirmed_weight=confirmed,
            judged=ledger.judged or interaction is not Interaction.NEUTRAL,
        )

    # -- reads ------------------------------------------------------------------------------
    def now(self) -> datetime:
        """The book's clock reading: the instant scores are read at."""
        return self._now()

    def peers(self) -> tuple[str, ...]:
        """Every node this book has an event about, sorted."""
        return tuple(sorted(self._states))

    def state(self, node_id: str) -> ReputationState | None:
        """The scorer's state for ``node_id`` as of its last event (``None``: no events)."""
        return self._states.get(node_id)

    def ledger(self, node_id: str) -> PeerLedger:
        """The peer's ledger (a fresh one for a node with no events)."""
        return self._ledgers.get(node_id) or PeerLedger(pairwise=self._trust.pairwise.initial)

    def pairwise(self, node_id: str) -> float:
        """This node's direct trust in ``node_id``, in [0, 1]."""
        return self.ledger(node_id).pairwise

    def local_trust(self) -> dict[str, float]:
        """This node's row of local trust: its pairwise trust in every peer it has judged
        (what its signed summary says, and its own row of the matrix)."""
        return {
            node: ledger.pairwise
            for node, ledger in sorted(self._ledgers.items())
            if ledger.judged and node != self._trust.self_id
        }

    # -- global trust -------------------------------------------------------------------------
    def recompute_global_trust(
        self, now: datetime, summaries: Mapping[str, Mapping[str, float]] | None = None
    ) -> GlobalTrust:
        """EigenTrust over this node's own row and ``summaries`` (peers' verified rows by
        signer, already cut to signers in good standing), anchored in the operator's
        pre-trusted peers, or this node when there are none; kept until the next
        recomputation (``now`` is when)."""
        trust = self._trust
        if not trust.self_id:
            raise ConfigError(
                "global trust needs this node's id (TrustConfig.self_id)", reason="no_self_id"
            )
        local: dict[str, Mapping[str, float]] = {
            signer: row for signer, row in (summaries or {}).items() if signer != trust.self_id
        }
        local[trust.self_id] = self.local_trust()
        self._global = global_trust(local, trust.pretrusted, trust.self_id, trust.global_trust)
        self._global_at = now
        return self._global

    @property
    def global_trust(self) -> GlobalTrust | None:
        """The last global trust computed (``None`` before the first recomputation)."""
        return self._global

    @property
    def global_trust_at(self) -> datetime | None:
        """When global trust was last recomputed."""
        return self._global_at

    def global_of(self, node_id: str) -> float | None:
        """``node_id``'s global trust as last computed; ``None`` (unknown) before any, or when
        no row rated it and it is no anchor."""
        return None if self._global is None else self._global.known(node_id)


def table_rows(
    book: ReputationBook,
    *,
    principal_of: Mapping[str, str],
    accepted: Mapping[str, int] | None = None,
    rejected: Mapping[str, Mapping[str, int]] | None = None,
    peers: Iterable[str] = (),
) -> list[ReputationRow]:
    """One table row per peer the book, the import tallies or ``peers`` name (sorted by id).

    ``principal_of`` comes from the registry, ``accepted`` (records imported per source) and
    ``rejected`` (per source, per reason) from the store. This node itself is left out.
    """
    accepted = accepted or {}
    rejected = rejected or {}
    params = book.params
    now = book.now()
    names = set(book.peers()) | set(accepted) | set(rejected) | set(peers)
    names.discard(book.trust.self_id)
    rows = []
    for node in sorted(names):
        breakdown = book.explain(node)
        state = book.state(node)
        counts = breakdown.counts
        ledger = book.ledger(node)
        domains: Mapping[str, float] = {}
        experts: tuple[str, ...] = ()
        if state is not None:
            domains = scores.decay(state, now, params).domains
            experts = scores.expert_domains(state, now, params)
        confirmed = counts.get(EventKind.LESSON_CONFIRMED, 0)
        rows.append(
            ReputationRow(
                peer=node,
                principal=principal_of.get(node, ""),
                band=scores.peer_band(breakdown.score, params),
                score=breakdown.score,
                parts=MappingProxyType({p.value: v for p, v in breakdown.parts.items()}),
                predictions=confirmed + counts.get(EventKind.LESSON_CONTRADICTED, 0),
                correct=confirmed,
                weighted_accuracy=ledger.weighted_accuracy,
                pairwise=ledger.pairwise,
                global_trust=book.global_of(node),
                accepted=accepted.get(node, 0),
                rejected=MappingProxyType(dict(rejected.get(node, {}))),
                votes_right=counts.get(EventKind.VOTE_RIGHT, 0),
                votes_wrong=counts.get(EventKind.VOTE_WRONG, 0),
                domains=MappingProxyType(dict(sorted(domains.items()))),
                expert_domains=experts,
                last_seen=ledger.last_seen,
            )
        )
    return rows
