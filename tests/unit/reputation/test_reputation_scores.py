"""The pure reputation scorer: reality first, slow up, fast down, bounded, explained."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import ConfigError
from lamarck.reputation import scores
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import ScorePart, TrustBand

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE = "lmk1peer"
PARAMS = ReputationParams()


def _event(kind: EventKind, at: datetime = T0, weight: float = 1.0, h: str = "") -> ReputationEvent:
    return ReputationEvent(kind=kind, node_id=NODE, at=at, weight=weight, record_hash=h)


def _fresh() -> scores.ReputationState:
    return scores.new_state(NODE, T0, PARAMS)


def test_admitted_newcomer_starts_at_initial_score() -> None:
    params = ReputationParams(initial_score=0.3)
    assert scores.score(scores.new_state(NODE, T0, params), T0, params) == pytest.approx(0.3)


def test_only_reality_raises_a_score_and_internal_consistency_moves_nobody() -> None:
    for kind in EventKind:
        after = scores.apply(_fresh(), _event(kind), PARAMS)
        moved = scores.score(after, T0, PARAMS) - PARAMS.initial_score
        if kind in (EventKind.LESSON_CONFIRMED, EventKind.VOTE_RIGHT, EventKind.ATTESTATION_RIGHT):
            assert moved > 0, kind
        elif kind in (EventKind.INTERNAL_AGREEMENT, EventKind.OPERATOR_RESET):
            assert moved == 0  # a reset puts a newcomer back where it started
        else:
            assert moved < 0, kind


def test_trust_increases_slowly_and_decreases_quickly() -> None:
    up = scores.apply(_fresh(), _event(EventKind.LESSON_CONFIRMED), PARAMS)
    down = scores.apply(_fresh(), _event(EventKind.LESSON_CONTRADICTED), PARAMS)
    gain = scores.score(up, T0, PARAMS) - PARAMS.initial_score
    loss = PARAMS.initial_score - scores.score(down, T0, PARAMS)
    assert loss > 3 * gain


def test_equivocation_is_the_hardest_penalty() -> None:
    def loss(kind: EventKind) -> float:
        return PARAMS.initial_score - scores.score(
            scores.apply(_fresh(), _event(kind), PARAMS), T0, PARAMS
        )

    hardest = loss(EventKind.EQUIVOCATION)
    for kind in EventKind:
        if kind is not EventKind.LESSON_CONFIRMED:
            assert loss(kind) <= hardest


def test_reality_contradiction_outweighs_every_routine_protocol_penalty() -> None:
    for name in (
        "poisoned_penalty",
        "bad_signature_penalty",
        "vote_wrong_penalty",
        "rejected_penalty",
        "replay_penalty",
    ):
        assert getattr(PARAMS, name) <= PARAMS.contradict_loss


def test_weight_scales_the_step() -> None:
    heavy = scores.apply(_fresh(), _event(EventKind.LESSON_CONTRADICTED, weight=1.0), PARAMS)
    light = scores.apply(_fresh(), _event(EventKind.LESSON_CONTRADICTED, weight=0.2), PARAMS)
    assert scores.score(heavy, T0, PARAMS) < scores.score(light, T0, PARAMS)


def test_score_decays_toward_neutral_per_day() -> None:
    state = _fresh()
    # One contradiction: below neutral but not graylisted (a graylisted score does not decay).
    for _ in range(1):
        state = scores.apply(state, _event(EventKind.LESSON_CONTRADICTED), PARAMS)
    now_score = scores.score(state, T0, PARAMS)
    later = scores.score(state, T0 + timedelta(days=100), PARAMS)
    assert now_score < later < PARAMS.neutral_score
    expected = PARAMS.neutral_score - (PARAMS.neutral_score - now_score) * 0.99**100
    assert later == pytest.approx(expected)


def test_late_event_does_not_run_time_backwards() -> None:
    state = scores.decay(_fresh(), T0 + timedelta(days=10), PARAMS)
    after = scores.apply(state, _event(EventKind.REPLAY, at=T0), PARAMS)
    assert after.as_of == T0 + timedelta(days=10)


def test_breakdown_labels_the_parts_that_explain_the_score() -> None:
    state = _fresh()
    state = scores.apply(state, _event(EventKind.LESSON_CONFIRMED), PARAMS)
    state = scores.apply(state, _event(EventKind.EQUIVOCATION, h="abc"), PARAMS)
    why = scores.explain(state, T0, PARAMS)
    assert why.parts[ScorePart.P1_REALITY_CONFIRMED] > 0
    assert why.parts[ScorePart.P8_EQUIVOCATION] < 0
    assert why.parts[ScorePart.P5_POISONED] == 0
    assert why.counts[EventKind.EQUIVOCATION] == 1
    assert why.score == pytest.approx(why.neutral + sum(why.parts.values()))
    assert why.band is scores.trust_band(why.score, PARAMS)


def test_bands_follow_thresholds() -> None:
    assert scores.trust_band(0.7, PARAMS) is TrustBand.HIGH
    assert scores.trust_band(0.69, PARAMS) is TrustBand.MEDIUM
    assert scores.trust_band(0.4, PARAMS) is TrustBand.MEDIUM
    assert scores.trust_band(0.39, PARAMS) is TrustBand.LOW


def test_domain_expertise_moves_with_reality_in_that_domain_only() -> None:
    state = _fresh()
    confirmed = ReputationEvent(EventKind.LESSON_CONFIRMED, NODE, T0, domain="postgres")
    failed = ReputationEvent(EventKind.LESSON_CONTRADICTED, NODE, T0, domain="k8s")
    state = scores.apply(scores.apply(state, confirmed, PARAMS), failed, PARAMS)
    assert scores.expertise(state, "postgres", T0, PARAMS) == pytest.approx(0.35)
    assert scores.expertise(state, "k8s", T0, PARAMS) == pytest.approx(0.2)
    assert scores.expertise(state, "redis", T0, PARAMS) == pytest.approx(0.3)


def test_event_for_another_node_is_refused() -> None:
    other = ReputationEvent(EventKind.REPLAY, "lmk1other", T0)
    with pytest.raises(ValueError):
        scores.apply(_fresh(), other, PARAMS)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decay_per_day", 0.0),
        ("initial_score", 1.5),
        ("confirm_gain", float("nan")),
        ("contradict_loss", 0.01),
        ("equivocation_penalty", 0.1),
        ("poisoned_penalty", 0.2),
        ("medium_threshold", 0.9),
    ],
)
def test_params_name_the_broken_field(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        ReputationParams(**{field: value})


def test_event_refuses_naive_time_and_out_of_range_weight() -> None:
    with pytest.raises(ValueError):
        ReputationEvent(EventKind.REPLAY, NODE, datetime(2026, 1, 1))
    with pytest.raises(ValueError):
        ReputationEvent(EventKind.REPLAY, NODE, T0, weight=1.5)


def test_penalty_about_one_record_is_keyed_once_but_outcomes_are_not() -> None:
    a = ReputationEvent(EventKind.POISONED, NODE, T0, record_hash="h")
    b = ReputationEvent(EventKind.POISONED, NODE, T0 + timedelta(hours=1), record_hash="h")
    assert a.key == b.key
    c = ReputationEvent(EventKind.LESSON_CONFIRMED, NODE, T0, record_hash="h")
    d = ReputationEvent(EventKind.LESSON_CONFIRMED, NODE, T0 + timedelta(hours=1), record_hash="h")
    assert c.key != d.key


_kinds = st.sampled_from(list(EventKind))
_events = st.lists(
    st.tuples(_kinds, st.floats(0.0, 1.0), st.integers(0, 400 * 86_400)), max_size=60
)


@settings(max_examples=200, deadline=None)
@given(_events, st.floats(0.0, 1.0))
def test_score_stays_in_unit_interval_under_any_event_sequence(
    events: list[tuple[EventKind, float, int]], initial: float
) -> None:
    params = ReputationParams(initial_score=initial)
    state = scores.new_state(NODE, T0, params)
    for kind, weight, offset in events:
        at = T0 + timedelta(seconds=offset)
        state = scores.apply(state, ReputationEvent(kind, NODE, at, weight=weight), params)
        raw = params.neutral_score + sum(state.parts.values())
        assert -1e-9 <= raw <= 1 + 1e-9
        assert 0.0 <= scores.score(state, at, params) <= 1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(0.05, 0.6), st.floats(0.06, 0.35))
def test_a_trust_rise_takes_more_events_than_the_same_fall(start: float, delta: float) -> None:
    params = ReputationParams(initial_score=start)
    state = scores.new_state(NODE, T0, params)
    target = start + delta
    ups = 0
    while scores.score(state, T0, params) < target:
        state = scores.apply(state, ReputationEvent(EventKind.LESSON_CONFIRMED, NODE, T0), params)
        ups += 1
        assert ups < 10_000
    downs = 0
    while scores.score(state, T0, params) > start:
        state = scores.apply(
            state, ReputationEvent(EventKind.LESSON_CONTRADICTED, NODE, T0), params
        )
        downs += 1
    assert downs < ups
