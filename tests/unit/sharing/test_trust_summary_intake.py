"""Summaries taken in from Sync: who is charged for a bad one, whose are refused, what counts."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from lamarck.gossip.audience import band_reader
from lamarck.node.sharing.summaries import SummaryIntake
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.trust_summary import make_summary, read_summary
from lamarck.reputation.book import ReputationBook, TrustConfig
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import (
    GlobalTrustParams,
    PairwiseParams,
    ReputationParams,
    SummaryParams,
)
from lamarck.reputation.port import InMemoryReputation
from lamarck.reputation.summaries import TrustSummaries

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ME = NodeIdentity.from_seed(bytes([1]) * 32)
RELAY = NodeIdentity.from_seed(bytes([2]) * 32).node_id
HONEST = NodeIdentity.from_seed(bytes([3]) * 32)
LIAR = NodeIdentity.from_seed(bytes([4]) * 32)
STRANGER = NodeIdentity.from_seed(bytes([5]) * 32)
PEER = NodeIdentity.from_seed(bytes([6]) * 32).node_id


class Pins:
    """A ``KeyPins`` over dicts: who is registered with which key, who is revoked."""

    def __init__(self, *admitted: NodeIdentity) -> None:
        self.keys = {i.node_id: i.public_key_b64 for i in admitted}
        self.revoked: set[str] = set()

    async def pinned_key(self, node_id: str) -> str | None:
        return self.keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        return node_id in self.revoked

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


def intake(
    pins: Pins | None, book: InMemoryReputation | None = None
) -> tuple[SummaryIntake, InMemoryReputation]:
    clock = FixedClock(T0)
    params = ReputationParams()
    book = book if book is not None else InMemoryReputation(params, clock)
    return (
        SummaryIntake(
            TrustSummaries(SummaryParams(), ME.node_id),
            identity=ME,
            pins=lambda: pins,
            band_of=band_reader(book, params),
            reputation=book,
            clock=clock,
        ),
        book,
    )


def graylist(book: InMemoryReputation, node: str) -> None:
    """Three reality contradictions at full weight graylist a newcomer."""
    for k in range(3):
        book.emit(ReputationEvent(EventKind.LESSON_CONTRADICTED, node, T0 - timedelta(minutes=k)))


def kinds(book: InMemoryReputation, node: str) -> dict[EventKind, int]:
    return dict(book.explain(node).counts)


def test_a_valid_summary_from_an_admitted_signer_is_kept_and_counts() -> None:
    summaries, _ = intake(Pins(HONEST))
    raw = make_summary(HONEST, {PEER: 0.8}, T0)
    tally = asyncio.run(summaries.receive(RELAY, [raw, raw]))
    assert (tally.accepted, tally.duplicate, tally.refused) == (1, 1, {})
    assert summaries.rows(T0, revoked=()) == {HONEST.node_id: {PEER: 0.8}}


def test_a_summary_broken_on_the_way_charges_neither_the_relay_nor_its_signer() -> None:
    # A relay forwards summaries it did not write; bytes broken on the way (by it or by
    # anyone on the path) prove nothing about who broke them.
    summaries, book = intake(Pins(HONEST))
    forged = make_summary(HONEST, {PEER: 0.6}, T0).replace(b"0.6", b"0.9")
    tally = asyncio.run(summaries.receive(RELAY, [forged, forged]))
    assert tally.refused == {"hash_mismatch": 2}
    assert kinds(book, RELAY) == {} and kinds(book, HONEST.node_id) == {}


def test_a_bad_signature_is_charged_to_a_signer_handing_over_its_own_summary_once() -> None:
    summaries, book = intake(Pins(HONEST))
    forged = make_summary(HONEST, {PEER: 0.6}, T0).replace(b"0.6", b"0.9")
    tally = asyncio.run(summaries.receive(HONEST.node_id, [forged, forged]))
    assert tally.refused == {"hash_mismatch": 2}
    assert kinds(book, HONEST.node_id) == {EventKind.BAD_SIGNATURE: 1}


def test_malformed_content_under_a_valid_signature_is_charged_to_the_signer() -> None:
    summaries, book = intake(Pins(LIAR))
    obj = {
        "schema_version": "1.0",
        "kind": "trust_summary",
        "signer_id": LIAR.node_id,
        "issued_at": "2026-03-01T12:00:00Z",
        "trust": [{"peer": PEER, "value": 7.0}],
    }
    raw = canonical_bytes(sign_object(RecordKind.trust_summary, obj, LIAR))
    tally = asyncio.run(summaries.receive(RELAY, [raw]))
    assert sum(tally.refused.values()) == 1
    assert kinds(book, LIAR.node_id) == {EventKind.REJECTED: 1}
    assert kinds(book, RELAY) == {}


def test_summaries_of_unadmitted_revoked_or_graylisted_signers_are_refused_uncharged() -> None:
    pins = Pins(HONEST, LIAR)
    pins.revoked.add(LIAR.node_id)
    summaries, book = intake(pins)
    graylisted = NodeIdentity.from_seed(bytes([7]) * 32)
    pins.keys[graylisted.node_id] = graylisted.public_key_b64
    graylist(book, graylisted.node_id)
    raws = [make_summary(i, {PEER: 0.9}, T0) for i in (STRANGER, LIAR, graylisted)]
    tally = asyncio.run(summaries.receive(RELAY, raws))
    assert tally.refused == {
        "unregistered_source": 1,
        "revoked_source": 1,
        "graylisted_signer": 1,
    }
    assert summaries.rows(T0, revoked=()) == {}
    assert kinds(book, RELAY) == {}


def test_without_a_registry_no_summary_is_believed() -> None:
    summaries, _ = intake(None)
    tally = asyncio.run(summaries.receive(RELAY, [make_summary(HONEST, {PEER: 0.8}, T0)]))
    assert tally.refused == {"registry_unavailable": 1}


def test_a_signer_revoked_or_graylisted_after_its_summary_arrived_stops_counting() -> None:
    summaries, book = intake(Pins(HONEST, LIAR))
    raws = [make_summary(i, {PEER: 0.9}, T0) for i in (HONEST, LIAR)]
    asyncio.run(summaries.receive(RELAY, raws))
    assert set(summaries.rows(T0, revoked=())) == {HONEST.node_id, LIAR.node_id}
    assert set(summaries.rows(T0, revoked=[LIAR.node_id])) == {HONEST.node_id}
    graylist(book, LIAR.node_id)
    assert set(summaries.rows(T0, revoked=())) == {HONEST.node_id}
    # Nor is it relayed any more.
    assert [read_summary(r).signer_id for r in summaries.served(T0)] == [HONEST.node_id]


def test_this_nodes_own_signed_summary_is_served_first() -> None:
    summaries, _ = intake(Pins(HONEST))
    asyncio.run(summaries.receive(RELAY, [make_summary(HONEST, {PEER: 0.8}, T0)]))
    own = summaries.sign_own({PEER: 0.7, ME.node_id: 1.0}, T0 + timedelta(seconds=1))
    served = summaries.served(T0 + timedelta(seconds=1))
    assert served[0] == own and read_summary(own).values() == {PEER: 0.7}
    assert [read_summary(r).signer_id for r in served[1:]] == [HONEST.node_id]


def test_three_admitted_colluders_do_not_move_the_honest_peers_out_of_their_band() -> None:
    # End to end over signed summaries: this node confirmed lessons of h1..h3, the honest peers
    # judged each other, h1 was fooled once by c1; three admitted colluders praise each other
    # and slander everyone honest.
    honest = [NodeIdentity.from_seed(bytes([40 + k]) * 32) for k in range(4)]
    colluders = [NodeIdentity.from_seed(bytes([60 + k]) * 32) for k in range(3)]
    h = [i.node_id for i in honest]
    c = [i.node_id for i in colluders]
    clock = FixedClock(T0)
    book = ReputationBook(
        ReputationParams(), clock, TrustConfig(ME.node_id, PairwiseParams(), GlobalTrustParams())
    )
    for k, (peer, times) in enumerate(((h[0], 6), (h[1], 4), (h[2], 2))):
        for n in range(times):
            at = T0 - timedelta(minutes=10 * k + n)
            book.emit(ReputationEvent(EventKind.LESSON_CONFIRMED, peer, at))
    honest_rows = {
        h[0]: {h[1]: 0.8, h[2]: 0.7, h[3]: 0.7, ME.node_id: 0.8, c[0]: 0.6},
        h[1]: {h[0]: 0.8, h[2]: 0.6, h[3]: 0.75},
        h[2]: {h[0]: 0.7, h[3]: 0.7},
        h[3]: {h[1]: 0.8, h[2]: 0.65},
    }
    slander = {x: 0.0 for x in (*h, ME.node_id)}
    raws = [make_summary(i, honest_rows[i.node_id], T0) for i in honest]
    attack = [make_summary(i, {**slander, **{x: 1.0 for x in c}}, T0) for i in colluders]
    summaries, _ = intake(Pins(*honest, *colluders), book)
    asyncio.run(summaries.receive(RELAY, raws))
    without = book.recompute_global_trust(T0, summaries.rows(T0, revoked=()))
    tally = asyncio.run(summaries.receive(RELAY, attack))
    assert tally.accepted == 3  # admitted, well-formed: they count, weighed by their trust
    attacked = book.recompute_global_trust(T0, summaries.rows(T0, revoked=()))
    top_colluder = max(attacked.of(x) for x in c)
    for peer in h:
        assert attacked.of(peer) >= 0.75 * without.of(peer)
        assert attacked.of(peer) > top_colluder
