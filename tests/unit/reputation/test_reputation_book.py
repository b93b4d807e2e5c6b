"""The in-memory book behind the operator's table: pairwise trust, predictions, last seen,
global trust anchored in this node and the operator's pre-trusted peers, and the rows built
from it; a graylisted peer recovers only through reality."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lamarck.proto.clock import FixedClock
from lamarck.reputation.book import ReputationBook, TrustConfig, table_rows
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams
from lamarck.reputation.scores import PeerBand, ScorePart
from lamarck.reputation.table import SortKey, render_table, row_to_obj

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SELF = "lmk1self"
PARAMS = ReputationParams()
PAIRWISE = PairwiseParams()


def book(*pretrusted: str) -> tuple[ReputationBook, FixedClock]:
    clock = FixedClock(T0)
    trust = TrustConfig(SELF, PAIRWISE, GlobalTrustParams(), tuple(pretrusted))
    return ReputationBook(PARAMS, clock, trust), clock


def event(
    kind: EventKind,
    node: str,
    minutes: int = 0,
    *,
    weight: float = 1.0,
    domain: str = "",
    h: str = "",
) -> ReputationEvent:
    return ReputationEvent(
        kind, node, T0 + timedelta(minutes=minutes), weight=weight, domain=domain, record_hash=h
    )


def test_pairwise_trust_follows_the_seed_steps_per_new_event() -> None:
    b, _ = book()
    b.emit(event(EventKind.LESSON_CONFIRMED, "lmk1a", 1))
    b.emit(event(EventKind.LESSON_CONFIRMED, "lmk1a", 2))
    assert b.pairwise("lmk1a") == pytest.approx(0.6)
    b.emit(event(EventKind.REJECTED, "lmk1a", 3, h="r1"))
    assert b.pairwise("lmk1a") == pytest.approx(0.45)
    # The same fact reported again is not a second interaction.
    b.emit(event(EventKind.REJECTED, "lmk1a", 4, h="r1"))
    assert b.pairwise("lmk1a") == pytest.approx(0.45)
    # Memory agreeing with memory is neutral: it only decays trust.
    b.emit(event(EventKind.INTERNAL_AGREEMENT, "lmk1a", 5))
    assert b.pairwise("lmk1a") == pytest.approx(0.45 * 0.99)
    assert b.pairwise("lmk1never") == PAIRWISE.initial


def test_predictions_are_reality_events_weighted_by_confidence() -> None:
    b, _ = book()
    b.emit(event(EventKind.LESSON_CONFIRMED, "lmk1a", 1, weight=0.9))
    b.emit(event(EventKind.LESSON_CONTRADICTED, "lmk1a", 2, weight=0.3))
    b.emit(event(EventKind.POISONED, "lmk1a", 3, h="p"))
    ledger = b.ledger("lmk1a")
    assert ledger.weighted_accuracy == pytest.approx(0.9 / 1.2)
    assert ledger.last_seen == T0 + timedelta(minutes=3)
    assert b.ledger("lmk1b").weighted_accuracy is None


def test_global_trust_is_anchored_in_this_node_when_no_peer_is_pretrusted() -> None:
    b, clock = book()
    for k in range(6):
        b.emit(event(EventKind.LESSON_CONFIRMED, "lmk1good", k))
    b.emit(event(EventKind.LESSON_CONTRADICTED, "lmk1bad", 1))
    assert b.global_trust is None and b.global_of("lmk1good") is None  # not computed: unknown
    result = b.recompute_global_trust(clock.now())
    assert result.converged
    assert result.anchors == (SELF,)
    assert sum(result.values.values()) == pytest.approx(1.0)
    assert (b.global_of("lmk1good") or 0.0) > 0.0
    # Distrusted (below the local floor) lends nothing: judged, so 0, not unknown.
    assert b.global_of("lmk1bad") == 0.0
    # Nobody has judged this one: unknown, never 0.
    assert b.global_of("lmk1stranger") is None
    assert b.global_trust_at == T0


def test_with_pretrusted_peers_this_node_counts_as_far_as_they_trust_it() -> None:
    b, clock = book("lmk1anchor")
    for k in range(6):
        b.emit(event(EventKind.LESSON_CONFIRMED, "lmk1good", k))
    alone = b.recompute_global_trust(clock.now())
    assert alone.anchors == ("lmk1anchor",)
    # The anchor said nothing yet: this node's own row carries no weight of its own.
    assert alone.of("lmk1good") == pytest.approx(0.0)
    vouched = b.recompute_global_trust(clock.now(), {"lmk1anchor": {SELF: 0.9}})
    assert vouched.of(SELF) > 0.0 and vouched.of("lmk1good") > 0.0


def test_global_trust_is_the_same_for_the_same_events() -> None:
    results = []
    for _ in range(2):
        b, clock = book("lmk1z")
        for k, node in enumerate(("lmk1c", "lmk1a", "lmk1b", "lmk1a")):
            b.emit(event(EventKind.LESSON_CONFIRMED, node, k))
        results.append(dict(b.recompute_global_trust(clock.now()).values))
    assert results[0] == results[1]


def test_a_graylisted_peer_recovers_only_through_reality_or_its_operator() -> None:
    b, clock = book()
    for k in range(3):
        b.emit(event(EventKind.LESSON_CONTRADICTED, "lmk1liar", k))
    assert table_rows(b, principal_of={})[0].band is PeerBand.GRAYLISTED
    low = b.score("lmk1liar")
    # Time alone, and every non-reality kind but the operator's reset, leave it graylisted
    # and never higher.
    clock.advance(400 * 86_400)
    assert b.score("lmk1liar") == pytest.approx(low)
    minute = 10_000
    for kind in EventKind:
        if kind.raises or kind is EventKind.OPERATOR_RESET:
            continue
        minute += 1
        b.emit(event(kind, "lmk1liar", minute, h=f"x{minute}"))
        assert b.score("lmk1liar") <= low + 1e-12
    assert table_rows(b, principal_of={})[0].band is PeerBand.GRAYLISTED
    # Reality does lift it out.
    while b.score("lmk1liar") < PARAMS.graylist_threshold:
        minute += 1
        b.emit(event(EventKind.LESSON_CONFIRMED, "lmk1liar", minute))
    assert table_rows(b, principal_of={})[0].band is PeerBand.NEUTRAL


def test_an_operator_reset_lifts_a_graylisting_and_keeps_what_reality_judged() -> None:
    b, _ = book()
    for k in range(3):
        b.emit(event(EventKind.LESSON_CONTRADICTED, "lmk1liar", k))
    assert b.score("lmk1liar") < PARAMS.graylist_threshold
    b.emit(
        ReputationEvent(
            EventKind.OPERATOR_RESET, "lmk1liar", T0 + timedelta(minutes=9), detail="fixed key"
        )
    )
    [row] = table_rows(b, principal_of={})
    assert row.band is PeerBand.NEUTRAL and row.score == pytest.approx(PARAMS.initial_score)
    assert row.pairwise == pytest.approx(b.trust.pairwise.initial)
    # Reality's verdicts stay: three lessons judged, none confirmed.
    assert (row.predictions, row.correct) == (3, 0)
    assert b.track_record("lmk1liar").contradicted == 3
    # Each reset is its own fact (keyed by its time), counted in the peer's history.
    b.emit(ReputationEvent(EventKind.OPERATOR_RESET, "lmk1liar", T0 + timedelta(minutes=10)))
    assert b.explain("lmk1liar").counts[EventKind.OPERATOR_RESET] == 2


def test_rows_carry_every_column_of_the_table() -> None:
    b, clock = book()
    for k in range(9):
        b.emit(event(EventKind.LESSON_CONFIRMED, "lmk1a", k, weight=0.8, domain="pg"))
    b.emit(event(EventKind.VOTE_RIGHT, "lmk1a", 20, h="v1"))
    b.emit(event(EventKind.VOTE_WRONG, "lmk1a", 21, h="v2"))
    b.emit(event(EventKind.LESSON_CONFIRMED, SELF, 22))
    b.recompute_global_trust(clock.now())
    rows = table_rows(
        b,
        principal_of={"lmk1a": "op-key", "lmk1b": "lmk1a"},
        accepted={"lmk1a": 4},
        rejected={"lmk1b": {"poisoned": 2}},
        peers=["lmk1c"],
    )
    assert [r.peer for r in rows] == ["lmk1a", "lmk1b", "lmk1c"]  # never this node itself
    a, bee, c = rows
    assert a.principal == "op-key" and a.accepted == 4
    assert (a.predictions, a.correct, a.votes_right, a.votes_wrong) == (9, 9, 1, 1)
    assert a.weighted_accuracy == pytest.approx(1.0)
    assert a.parts[ScorePart.P1_REALITY_CONFIRMED.value] > 0.0
    assert a.parts[ScorePart.P3_VOTES_WRONG.value] < 0.0
    assert a.expert_domains == ("pg",) and a.domains["pg"] >= PARAMS.expert_threshold - 1e-9
    assert a.global_trust > 0.0 and a.pairwise > PAIRWISE.initial
    assert a.last_seen == T0 + timedelta(minutes=21)
    assert bee.rejected == {"poisoned": 2} and bee.principal == "lmk1a"
    assert c.score == PARAMS.initial_score and c.last_seen is None and c.band is PeerBand.NEUTRAL
    text = render_table(rows, sort=SortKey.GLOBAL, domain="pg")
    assert text.splitlines()[1].startswith("lmk1a")
    assert row_to_obj(a)["expert_domains"] == ["pg"]
