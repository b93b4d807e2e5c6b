"""The in-memory reputation book: both ports over the pure core, with an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lamarck.proto.clock import FixedClock
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation, ReputationSink, ReputationView
from lamarck.reputation.scores import ScorePart, TrustBand

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _book() -> tuple[InMemoryReputation, FixedClock]:
    clock = FixedClock(T0)
    return InMemoryReputation(ReputationParams(), clock), clock


def test_in_memory_book_implements_both_ports() -> None:
    book, _ = _book()
    assert isinstance(book, ReputationView)
    assert isinstance(book, ReputationSink)


def test_unknown_node_scores_the_admitted_newcomer_default() -> None:
    book, _ = _book()
    assert book.score("lmk1new") == pytest.approx(0.5)
    assert book.band("lmk1new") is TrustBand.MEDIUM


def test_relayed_penalty_about_one_record_counts_once() -> None:
    book, clock = _book()
    for _ in range(10):
        book.emit(ReputationEvent(EventKind.POISONED, "lmk1x", clock.now(), record_hash="h1"))
        clock.advance(60)
    assert book.explain("lmk1x").counts[EventKind.POISONED] == 1
    assert book.score("lmk1x") == pytest.approx(0.35, abs=1e-3)


def test_score_recovers_toward_neutral_as_the_clock_advances() -> None:
    book, clock = _book()
    book.emit(ReputationEvent(EventKind.EQUIVOCATION, "lmk1x", clock.now(), record_hash="h"))
    low = book.score("lmk1x")
    clock.advance(30 * 86_400)
    assert low < book.score("lmk1x") < 0.5


def test_explain_shows_why() -> None:
    book, clock = _book()
    book.emit(ReputationEvent(EventKind.LESSON_CONFIRMED, "lmk1x", clock.now(), domain="pg"))
    why = book.explain("lmk1x")
    assert why.parts[ScorePart.P1_REALITY_CONFIRMED] > 0
    assert book.expertise("lmk1x", "pg") > book.expertise("lmk1x", "other")
