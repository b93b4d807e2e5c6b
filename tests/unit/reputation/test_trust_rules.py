"""Pairwise trust, expertise, the validation hierarchy and the one band set."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lamarck.errors import ConfigError
from lamarck.reputation import scores
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.pairwise import Interaction, interaction_of, pairwise_trust, update_pairwise
from lamarck.reputation.params import PairwiseParams, ReputationParams
from lamarck.reputation.scores import PeerBand, TrustBand

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE = "lmk1peer"
P = ReputationParams()
PW = PairwiseParams()


def _apply(state: scores.ReputationState, kind: EventKind, at: datetime = T0, **kw: object):  # type: ignore[no-untyped-def]
    return scores.apply(state, ReputationEvent(kind, NODE, at, **kw), P)  # type: ignore[arg-type]


def _fresh() -> scores.ReputationState:
    return scores.new_state(NODE, T0, P)


# -- Pairwise trust (seed "Trust Evolution") ----------------------------------------------------


def test_pairwise_trust_rises_slowly_falls_quickly_and_decays_when_neutral() -> None:
    assert update_pairwise(0.5, Interaction.POSITIVE, PW) == pytest.approx(0.55)
    assert update_pairwise(0.5, Interaction.NEGATIVE, PW) == pytest.approx(0.35)
    assert update_pairwise(0.5, Interaction.NEUTRAL, PW) == pytest.approx(0.495)
    assert pairwise_trust([], PW) == 0.5


def test_pairwise_trust_stays_within_zero_and_one() -> None:
    assert pairwise_trust([Interaction.POSITIVE] * 30, PW) == 1.0
    assert pairwise_trust([Interaction.NEGATIVE] * 10, PW) == 0.0
    assert update_pairwise(float("nan"), Interaction.POSITIVE, PW) == pytest.approx(0.05)


def test_one_negative_interaction_undoes_three_positive_ones() -> None:
    trust = pairwise_trust([Interaction.POSITIVE] * 3 + [Interaction.NEGATIVE], PW)
    assert trust == pytest.approx(0.5)


def test_reputation_events_map_to_interactions() -> None:
    assert interaction_of(EventKind.LESSON_CONFIRMED) is Interaction.POSITIVE
    assert interaction_of(EventKind.EQUIVOCATION) is Interaction.NEGATIVE
    assert interaction_of(EventKind.INTERNAL_AGREEMENT) is Interaction.NEUTRAL


def test_pairwise_params_are_validated() -> None:
    for bad in (
        {"negative_step": 0.01},
        {"positive_step": 0.0},
        {"neutral_decay": 0.0},
        {"initial": float("inf")},
    ):
        with pytest.raises(ConfigError):
            PairwiseParams(**bad)  # type: ignore[arg-type]


# -- Expertise (seed "Agent Specialization") ----------------------------------------------------


def test_expertise_starts_low_rises_by_005_falls_by_01_to_a_floor() -> None:
    state = _fresh()
    assert scores.expertise(state, "pg", T0, P) == pytest.approx(0.3)
    state = _apply(state, EventKind.LESSON_CONFIRMED, domain="pg")
    assert scores.expertise(state, "pg", T0, P) == pytest.approx(0.35)
    for k in range(5):
        state = _apply(state, EventKind.LESSON_CONTRADICTED, T0 + timedelta(seconds=k), domain="pg")
    assert scores.expertise(state, "pg", T0, P) == pytest.approx(0.1)


def test_an_expert_is_at_or_above_07() -> None:
    state = _fresh()
    for _ in range(8):
        state = _apply(state, EventKind.LESSON_CONFIRMED, T0, domain="k8s")
    assert scores.expertise(state, "k8s", T0, P) == pytest.approx(0.7)
    assert scores.expert_domains(state, T0, P) == ("k8s",)
    assert not scores.is_expert(0.69, P)


# -- Validation hierarchy ------------------------------------------------------------------------


def test_contradictions_weigh_by_who_established_them() -> None:
    def loss(kind: EventKind) -> float:
        return P.initial_score - scores.score(_apply(_fresh(), kind), T0, P)

    ladder = [
        loss(EventKind.LESSON_CONTRADICTED),
        loss(EventKind.OPERATOR_CONTRADICTED),
        loss(EventKind.PEER_CONTRADICTED),
        loss(EventKind.DOC_CONTRADICTED),
        loss(EventKind.INTERNAL_AGREEMENT),
    ]
    assert ladder == sorted(ladder, reverse=True) and len(set(ladder)) == 5
    assert ladder[0] == pytest.approx(P.contradict_loss)
    assert ladder[1] == pytest.approx(P.contradict_loss * P.weight_operator)
    assert ladder[-1] == 0.0


def test_the_same_lesson_arriving_many_times_never_raises_anyone() -> None:
    state = _fresh()
    for k in range(50):
        state = _apply(state, EventKind.INTERNAL_AGREEMENT, T0 + timedelta(seconds=k))
    assert scores.score(state, T0 + timedelta(minutes=1), P) == P.initial_score
    assert state.counts[EventKind.INTERNAL_AGREEMENT] == 50


def test_hierarchy_params_must_keep_the_order() -> None:
    with pytest.raises(ConfigError, match="weight_operator"):
        ReputationParams(weight_operator=1.0)
    with pytest.raises(ConfigError, match="weight_documentation"):
        ReputationParams(weight_documentation=0.6)
    with pytest.raises(ConfigError, match="weight_documentation"):
        ReputationParams(weight_documentation=0.0)


# -- Bands -------------------------------------------------------------------------------------


def test_bands_cut_one_threshold_set() -> None:
    assert scores.peer_band(0.7, P) is PeerBand.TRUSTED
    assert scores.trust_band(0.7, P) is TrustBand.HIGH  # the transfer table's row agrees
    assert scores.peer_band(0.5, P) is PeerBand.NEUTRAL
    assert scores.peer_band(0.3, P) is PeerBand.NEUTRAL
    assert scores.peer_band(0.19, P) is PeerBand.GRAYLISTED
    assert scores.peer_band(float("nan"), P) is PeerBand.GRAYLISTED


def test_band_thresholds_are_validated() -> None:
    with pytest.raises(ConfigError, match="graylist_threshold"):
        ReputationParams(graylist_threshold=0.5)
    with pytest.raises(ConfigError, match="graylist_threshold"):
        ReputationParams(medium_threshold=0.3, graylist_threshold=0.35)


def _graylisted() -> scores.ReputationState:
    state = _fresh()
    for k in range(3):
        state = _apply(state, EventKind.LESSON_CONTRADICTED, T0 + timedelta(seconds=k))
    assert scores.peer_band(scores.score(state, T0, P), P) is PeerBand.GRAYLISTED
    return state


def test_a_graylisted_peer_does_not_recover_by_waiting() -> None:
    state = _graylisted()
    before = scores.score(state, T0, P)
    assert scores.score(state, T0 + timedelta(days=3650), P) == before


def test_a_graylisted_peer_recovers_only_through_reality() -> None:
    state = _graylisted()
    later = T0 + timedelta(days=30)
    for k in range(20):
        state = _apply(state, EventKind.INTERNAL_AGREEMENT, later + timedelta(seconds=k))
    assert scores.peer_band(scores.score(state, later, P), P) is PeerBand.GRAYLISTED
    k = 0
    while scores.peer_band(scores.score(state, later, P), P) is PeerBand.GRAYLISTED:
        k += 1
        state = _apply(state, EventKind.LESSON_CONFIRMED, later + timedelta(minutes=k))
    assert k > 1
    # Once out, time heals again: the score drifts back toward neutral.
    assert scores.score(state, later + timedelta(days=365), P) > scores.score(state, later, P)
