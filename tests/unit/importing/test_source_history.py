"""SourceHistory keeps running totals; its statistics equal a brute-force recount."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from lamarck.node.importing.view import SourceHistory

T0 = datetime(2026, 11, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def _reference(times: list[datetime], confs: list[float], now: datetime) -> tuple[float, ...]:
    n = len(times)
    span = max(1.0, (now - min(times)) / DAY)
    recent = sum(1 for t in times if now - t <= DAY)
    mean = sum(confs) / n
    std = math.sqrt(sum((c - mean) ** 2 for c in confs) / n)
    return (n, n / span, recent, mean, std)


@pytest.mark.parametrize("seed", range(20))
def test_stats_match_a_recount_of_every_arrival(seed: int) -> None:
    rng = random.Random(seed)
    history = SourceHistory()
    times: list[datetime] = []
    confs: list[float] = []
    now = T0
    for _ in range(rng.randint(1, 300)):
        now += timedelta(minutes=rng.expovariate(1 / 30))  # arrivals in clock order
        c = rng.random()
        history.add("src", now, c)
        times.append(now)
        confs.append(c)
        if rng.random() < 0.2:
            at = now + timedelta(minutes=rng.uniform(0, 120))
            s = history.stats("src", at)
            got = (s.records_seen, s.mean_daily_rate, s.recent_daily_rate)
            got += (s.mean_confidence, s.confidence_std)
            assert got == pytest.approx(_reference(times, confs, at), abs=1e-9)


def test_an_unknown_source_has_empty_stats() -> None:
    assert SourceHistory().stats("nobody", T0).records_seen == 0
