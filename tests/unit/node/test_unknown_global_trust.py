"""A peer nobody has judged shows global trust "unknown", never 0, on every surface: the
table's text and JSON, the wire row (unset), the SDK's row (None), the console, the gauge
(no series)."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import REGISTRY

from lamarck.node.api.reputation import row_to_pb
from lamarck.node.console.pages import peer_page, reputation_page
from lamarck.node.metrics import apply_reputation, export_peer_scores
from lamarck.operator import _reputation_row
from lamarck.proto.clock import FixedClock
from lamarck.reputation.book import ReputationBook, TrustConfig, table_rows
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams
from lamarck.reputation.scores import PeerBand
from lamarck.reputation.table import ReputationRow, SortKey, render_table, row_to_obj

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KNOWN = ReputationRow(
    peer="lmk1known", principal="", band=PeerBand.NEUTRAL, score=0.5, global_trust=0.0
)
UNKNOWN = ReputationRow(peer="lmk1unknown", principal="", band=PeerBand.NEUTRAL, score=0.5)


def _gauge(peer: str) -> float | None:
    return REGISTRY.get_sample_value("lamarck_peer_global_trust", {"peer": peer})


def test_the_book_says_unknown_for_a_peer_only_met_never_judged() -> None:
    clock = FixedClock(T0)
    trust = TrustConfig("lmk1self", PairwiseParams(), GlobalTrustParams())
    book = ReputationBook(ReputationParams(), clock, trust)
    book.emit(ReputationEvent(EventKind.LESSON_CONTRADICTED, "lmk1liar", T0))
    # Memory agreeing with memory proves nothing about the peer: it stays unjudged.
    book.emit(ReputationEvent(EventKind.INTERNAL_AGREEMENT, "lmk1met", T0))
    book.recompute_global_trust(T0)
    rows = {r.peer: r for r in table_rows(book, principal_of={}, peers=["lmk1live"])}
    assert rows["lmk1liar"].global_trust == 0.0
    assert rows["lmk1met"].global_trust is None
    assert rows["lmk1live"].global_trust is None
    assert book.local_trust() == {"lmk1liar": book.pairwise("lmk1liar")}


def test_the_table_prints_unknown_and_sorts_it_below_zero() -> None:
    text = render_table([UNKNOWN, KNOWN], sort=SortKey.GLOBAL)
    lines = text.splitlines()
    assert lines[1].startswith("lmk1known") and " 0.000 " in lines[1]
    assert lines[2].startswith("lmk1unknown") and "unknown" in lines[2]
    assert row_to_obj(UNKNOWN)["global_trust"] is None
    assert row_to_obj(KNOWN)["global_trust"] == 0.0


def test_the_wire_row_leaves_unknown_unset_and_the_sdk_reads_none() -> None:
    assert not row_to_pb(UNKNOWN).HasField("global_trust")
    assert row_to_pb(KNOWN).HasField("global_trust")
    assert _reputation_row(row_to_pb(UNKNOWN)).global_trust is None
    assert _reputation_row(row_to_pb(KNOWN)).global_trust == 0.0


def test_the_console_shows_unknown() -> None:
    assert "unknown" in str(reputation_page([UNKNOWN]))
    assert "unknown" in str(peer_page(UNKNOWN, []))
    assert "unknown" not in str(reputation_page([KNOWN]))


def test_the_gauge_has_no_series_for_an_unknown_peer() -> None:
    export_peer_scores(True)  # per-peer series are off unless the operator asks for them
    try:
        _apply_known_and_unknown()
    finally:
        export_peer_scores(False)


def _apply_known_and_unknown() -> None:
    apply_reputation([("lmk1known", 0.5, "neutral", 0.0), ("lmk1unknown", 0.5, "neutral", None)])
    assert _gauge("lmk1known") == 0.0
    assert _gauge("lmk1unknown") is None
