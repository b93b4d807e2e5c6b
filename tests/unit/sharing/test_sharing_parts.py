"""The network side's parts on their own: global trust and its served summaries, the status."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from lamarck.errors import RegistryError
from lamarck.gossip.audience import band_reader
from lamarck.node.api.node_status import Admission, AdmissionState
from lamarck.node.gossip.outbox import InMemoryOutbox
from lamarck.node.sharing.status import NetworkStatus
from lamarck.node.sharing.summaries import SummaryIntake
from lamarck.node.sharing.trust import Trust
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.params import ReputationParams, SummaryParams
from lamarck.reputation.port import InMemoryReputation
from lamarck.reputation.summaries import TrustSummaries

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ME = NodeIdentity.from_seed(bytes([1]) * 32)
PEER = NodeIdentity.from_seed(bytes([2]) * 32).node_id


class _Book:
    """A global-trust book that remembers the summary rows each recomputation counted."""

    def __init__(self) -> None:
        self.counted: list[Mapping[str, Mapping[str, float]] | None] = []

    def recompute_global_trust(
        self, now: datetime, summaries: Mapping[str, Mapping[str, float]] | None = None
    ) -> Any:
        self.counted.append(summaries)
        return SimpleNamespace(converged=True, iterations=1, residual=0.0)

    def rows(self, **_: Any) -> list[Any]:
        return []


def _intake() -> SummaryIntake:
    params = ReputationParams()
    book = InMemoryReputation(params, FixedClock(T0))
    return SummaryIntake(
        TrustSummaries(SummaryParams(), ME.node_id),
        identity=ME,
        pins=lambda: None,
        band_of=band_reader(book, params),
        reputation=book,
        clock=FixedClock(T0),
    )


def _trust(book: _Book, *, incognito: bool = False, registry_down: bool = False) -> Trust:
    async def revoked() -> frozenset[str]:
        if registry_down:
            raise RegistryError("registry unreachable", reason="registry_unavailable")
        return frozenset()

    return Trust(_intake(), book, revoked=revoked, clock=FixedClock(T0), incognito=incognito)


def test_a_recomputation_counts_no_summary_while_revocations_cannot_be_read() -> None:
    book = _Book()
    asyncio.run(_trust(book, registry_down=True).recompute())
    assert book.counted == [{}]


def test_an_incognito_node_serves_no_trust_summary() -> None:
    shared, hidden = _trust(_Book()), _trust(_Book(), incognito=True)
    for trust in (shared, hidden):
        trust.summaries.sign_own({PEER: 1.0}, T0)
    assert len(shared.served()) == 1
    assert hidden.served() == []


class _Registry:
    def live_peers(self) -> list[str]:
        return [PEER]

    def admission(self) -> Admission:
        return Admission(AdmissionState.ADMITTED, mode="open")


def test_the_status_before_any_pull_has_the_outbox_and_the_live_peers() -> None:
    outbox = InMemoryOutbox()
    asyncio.run(outbox.enqueue("lesson-1", "c" * 64, [PEER], T0))
    status = NetworkStatus(_Registry(), outbox, lambda: None, incognito=False)
    snapshot = asyncio.run(status.network_snapshot())
    assert snapshot.admission.state is AdmissionState.ADMITTED
    assert (snapshot.live_peers, snapshot.outbox_depth, snapshot.outbox_oldest) == (
        (PEER,),
        1,
        T0,
    )
    assert (snapshot.last_sync, snapshot.catching_up) == ({}, ())
