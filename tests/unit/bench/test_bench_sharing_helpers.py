"""The pure helpers of ``bench/sharing.py``: percentiles, Prometheus counters, goal verdicts."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

# `bench` is a directory at the repository root, importable from there (not installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.sharing import Goal, counter_samples, percentile


def test_percentile_is_nearest_rank_over_observed_values() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile(reversed(values), 0.5) == 50.0  # order of the input does not matter


def test_percentile_of_few_values_p99_is_the_maximum() -> None:
    assert percentile([3.0, 1.0, 2.0], 0.99) == 3.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([7.0], 0.01) == 7.0


def test_percentile_keeps_an_infinite_value() -> None:
    assert percentile([1.0, math.inf], 0.99) == math.inf


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5])
def test_percentile_refuses_a_quantile_outside_0_1(q: float) -> None:
    with pytest.raises(ValueError):
        percentile([1.0, 2.0], q)


def test_percentile_refuses_no_values() -> None:
    with pytest.raises(ValueError):
        percentile([], 0.5)


def _exposition() -> str:
    registry = CollectorRegistry()
    imports = Counter("lamarck_imports", "imports", ["result", "reason"], registry=registry)
    rpcs = Counter("lamarck_rpc_requests", "rpcs", ["server", "method", "code"], registry=registry)
    imports.labels(result="accepted", reason="").inc(4)
    imports.labels(result="duplicate", reason="").inc(9)
    imports.labels(result="rejected", reason="bad_signature").inc()
    rpcs.labels(server="peer", method="/lamarck.v1.PeerService/Publish", code="OK").inc(13)
    rpcs.labels(server="agent", method="/lamarck.v1.AgentService/Recall", code="OK").inc(2)
    return generate_latest(registry).decode()


def test_counter_samples_reads_the_total_samples_with_their_labels() -> None:
    samples = counter_samples(_exposition(), "lamarck_imports")
    by_result = {labels["result"]: value for labels, value in samples}
    assert by_result == {"accepted": 4.0, "duplicate": 9.0, "rejected": 1.0}
    assert sum(value for _, value in samples) == 14.0


def test_counter_samples_skips_created_samples_and_other_families() -> None:
    samples = counter_samples(_exposition(), "lamarck_rpc_requests")
    assert sorted((labels["server"], value) for labels, value in samples) == [
        ("agent", 2.0),
        ("peer", 13.0),
    ]
    assert counter_samples(_exposition(), "lamarck_missing") == []


def test_goal_at_most_includes_its_bound() -> None:
    assert Goal("p99 ms", 1000.0, 1000.0, at_most=True).met
    assert not Goal("p99 ms", 1000.5, 1000.0, at_most=True).met
    assert not Goal("p99 ms", math.inf, 1000.0, at_most=True).met


def test_goal_at_least_and_its_line() -> None:
    met = Goal("pipeline vs raw", 0.83, 0.5, at_most=False)
    missed = Goal("messages / (N-1)", 2.53, 2.0, at_most=True)
    assert met.met
    assert met.line() == "GOAL pipeline vs raw: 0.83 (goal >= 0.5): met"
    assert missed.line() == "GOAL messages / (N-1): 2.53 (goal <= 2): NOT MET"
