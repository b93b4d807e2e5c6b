"""Held trust summaries: newest per signer, freshness, replays, what counts and what is served."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lamarck.errors import ConfigError
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.trust_summary import TrustSummary, make_summary, read_summary
from lamarck.reputation.params import SummaryParams
from lamarck.reputation.summaries import SummaryOutcome, TrustSummaries

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ME = NodeIdentity.from_seed(bytes([1]) * 32)
SIGNERS = [NodeIdentity.from_seed(bytes([20 + k]) * 32) for k in range(4)]
PEER = NodeIdentity.from_seed(bytes([50]) * 32).node_id
PARAMS = SummaryParams(max_age_s=600.0, max_future_s=60.0, served=2, max_signers=3)


def summary(who: NodeIdentity, at: datetime, value: float = 0.8) -> tuple[TrustSummary, bytes]:
    raw = make_summary(who, {PEER: value}, at)
    return read_summary(raw), raw


def offer(
    held: TrustSummaries, who: NodeIdentity, at: datetime, now: datetime, value: float = 0.8
) -> tuple[SummaryOutcome, str]:
    s, raw = summary(who, at, value)
    return held.offer(s, raw, now)


def test_a_newer_summary_replaces_the_held_one_and_an_older_one_is_refused() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    a = SIGNERS[0]
    assert offer(held, a, T0, T0, 0.6) == (SummaryOutcome.ACCEPTED, "")
    assert offer(held, a, T0 + timedelta(seconds=60), T0 + timedelta(seconds=61), 0.9)[0] is (
        SummaryOutcome.ACCEPTED
    )
    assert held.rows(T0 + timedelta(seconds=61)) == {a.node_id: {PEER: 0.9}}
    # The older summary replayed later (by anyone) never replaces the newer one.
    assert offer(held, a, T0, T0 + timedelta(seconds=62), 0.6) == (
        SummaryOutcome.REFUSED,
        "stale_summary",
    )
    # Another summary with the same issued_at is not newer either: the first one stays.
    assert offer(held, a, T0 + timedelta(seconds=60), T0 + timedelta(seconds=63), 0.1)[1] == (
        "stale_summary"
    )
    assert held.rows(T0 + timedelta(seconds=63)) == {a.node_id: {PEER: 0.9}}


def test_the_same_bytes_again_are_a_duplicate_not_a_refusal() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    s, raw = summary(SIGNERS[0], T0)
    assert held.offer(s, raw, T0)[0] is SummaryOutcome.ACCEPTED
    assert held.offer(s, raw, T0)[0] is SummaryOutcome.DUPLICATE


def test_a_summary_from_the_future_or_too_old_is_refused() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    assert offer(held, SIGNERS[0], T0 + timedelta(seconds=61), T0) == (
        SummaryOutcome.REFUSED,
        "future_summary",
    )
    assert offer(held, SIGNERS[0], T0 + timedelta(seconds=60), T0)[0] is SummaryOutcome.ACCEPTED
    assert offer(held, SIGNERS[1], T0 - timedelta(seconds=601), T0) == (
        SummaryOutcome.REFUSED,
        "expired_summary",
    )


def test_a_summary_stops_counting_once_it_is_older_than_max_age() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    offer(held, SIGNERS[0], T0, T0)
    assert SIGNERS[0].node_id in held.rows(T0 + timedelta(seconds=600))
    assert held.rows(T0 + timedelta(seconds=601)) == {}
    assert held.signers() == ()


def test_this_nodes_own_summary_read_back_from_a_peer_is_refused() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    assert offer(held, ME, T0, T0) == (SummaryOutcome.REFUSED, "own_summary")


def test_rows_leave_out_the_signers_excluded_now() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    for s in SIGNERS[:3]:
        offer(held, s, T0, T0)
    rows = held.rows(T0, exclude=[SIGNERS[1].node_id])
    assert set(rows) == {SIGNERS[0].node_id, SIGNERS[2].node_id}


def test_past_max_signers_the_oldest_summary_goes() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    for k, s in enumerate(SIGNERS):
        offer(held, s, T0 + timedelta(seconds=k), T0 + timedelta(seconds=k))
    assert held.signers() == tuple(sorted(s.node_id for s in SIGNERS[1:]))


def test_sync_serves_the_own_summary_first_then_the_newest_others_up_to_the_cap() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    assert held.served(T0) == []
    raws = []
    for k, s in enumerate(SIGNERS[:3]):
        _, raw = summary(s, T0 + timedelta(seconds=k))
        held.offer(read_summary(raw), raw, T0 + timedelta(seconds=k))
        raws.append(raw)
    own = make_summary(ME, {PEER: 0.7}, T0)
    held.set_own(own)
    now = T0 + timedelta(seconds=5)
    assert held.served(now) == [own, raws[2], raws[1]]
    assert held.served(now, exclude=[SIGNERS[2].node_id]) == [own, raws[1], raws[0]]


def test_summary_params_are_validated() -> None:
    for bad in (
        {"max_age_s": 0.0},
        {"max_age_s": float("nan")},
        {"max_future_s": -1.0},
        {"served": -1},
        {"max_signers": 0},
        {"served": True},
    ):
        with pytest.raises(ConfigError):
            SummaryParams(**bad)


def test_held_bytes_are_known_until_replaced_or_expired() -> None:
    held = TrustSummaries(PARAMS, ME.node_id)
    old, old_raw = summary(SIGNERS[0], T0)
    new, new_raw = summary(SIGNERS[0], T0 + timedelta(seconds=30), 0.4)
    held.offer(old, old_raw, T0)
    assert held.holds(old_raw)
    held.offer(new, new_raw, T0 + timedelta(seconds=30))
    assert not held.holds(old_raw) and held.holds(new_raw)
    # The replaced bytes replayed are judged again, and refused as stale.
    assert held.offer(old, old_raw, T0 + timedelta(seconds=31))[1] == "stale_summary"
    held.rows(T0 + timedelta(seconds=700))
    assert not held.holds(new_raw)
