"""Recall re-rank: similarity × context match × confidence × recency, pure and stable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lamarck.learning.params import LessonParams
from lamarck.learning.ranking import Candidate, idle_days, rank, recency, score

P = LessonParams()


def cand(
    key: str, cosine: float = 0.5, ctx: float = 1.0, conf: float = 0.5, idle: float = 0.0
) -> Candidate:
    return Candidate(key, cosine, ctx, conf, idle)


def test_recency_halves_every_half_life() -> None:
    assert recency(0.0, P) == 1.0
    assert recency(P.recency_half_life_days, P) == pytest.approx(0.5)


def test_score_is_the_product_of_the_four_factors() -> None:
    c = cand("a", cosine=0.0, ctx=0.3, conf=0.8, idle=P.recency_half_life_days)
    assert score(c, P) == pytest.approx(0.5 * 0.3 * 0.8 * 0.5)


def test_each_factor_orders_the_recall() -> None:
    assert [r.key for r in rank([cand("low", cosine=0.1), cand("high", cosine=0.9)], P)] == [
        "high",
        "low",
    ]
    assert [r.key for r in rank([cand("x", ctx=0.3), cand("y", ctx=1.0)], P)] == ["y", "x"]
    assert [r.key for r in rank([cand("x", conf=0.3), cand("y", conf=0.9)], P)] == ["y", "x"]
    assert [r.key for r in rank([cand("old", idle=90), cand("new", idle=1)], P)] == ["new", "old"]


def test_ties_are_broken_deterministically() -> None:
    assert [r.key for r in rank([cand("b"), cand("a")], P)] == ["a", "b"]


def test_idle_days_counts_from_last_use_or_creation() -> None:
    now = datetime(2026, 1, 10, tzinfo=UTC)
    created = now - timedelta(days=9)
    assert idle_days(now, None, created) == pytest.approx(9.0)
    assert idle_days(now, now - timedelta(days=2), created) == pytest.approx(2.0)
