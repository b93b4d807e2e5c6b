"""Confidence rules: adaptive memory's attributed steps shaped by Lamarckian memory's context
bands."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lamarck.learning.confidence import (
    Band,
    Confirmed,
    Contradicted,
    Decayed,
    apply_event,
    band_for,
    confirm,
    contradict,
    decay_unused,
    initial_confidence,
    should_retire,
)
from lamarck.learning.params import ConfidenceParams

P = ConfidenceParams()


def test_lesson_with_evidence_is_born_at_0_5_and_a_claim_at_0_3() -> None:
    assert initial_confidence(True, P) == 0.5
    assert initial_confidence(False, P) == 0.3


def test_confirmation_in_same_context_adds_0_15_and_contradiction_removes_0_25() -> None:
    assert confirm(0.5, 1.0, P) == pytest.approx(0.65)
    assert contradict(0.5, 1.0, P) == pytest.approx(0.25)


def test_success_in_different_context_adds_the_larger_generalisation_step() -> None:
    same = confirm(0.5, 1.0, P) - 0.5
    different = confirm(0.5, 0.3, P) - 0.5
    similar = confirm(0.5, 0.8, P) - 0.5
    assert different == pytest.approx(P.generalisation_step)
    assert different > same > similar > 0


def test_failure_in_different_context_barely_moves_confidence() -> None:
    assert 0.5 - contradict(0.5, 0.3, P) == pytest.approx(0.05)
    assert 0.5 - contradict(0.5, 0.8, P) == pytest.approx(0.125)
    assert 0.5 - contradict(0.5, 0.3, P) < 0.5 - contradict(0.5, 0.8, P) < 0.25 + 1e-12


def test_similarity_bands_follow_seed_004_thresholds() -> None:
    assert band_for(0.95, P) is Band.SAME
    assert band_for(0.9, P) is Band.SIMILAR
    assert band_for(0.71, P) is Band.SIMILAR
    assert band_for(0.7, P) is Band.DIFFERENT


def test_confidence_is_clamped_to_0_05_and_0_95() -> None:
    assert confirm(0.9, 1.0, P) == 0.95
    assert contradict(0.1, 1.0, P) == 0.05


def test_unused_lesson_decays_0_02_per_pass_plus_staleness_per_idle_day() -> None:
    assert decay_unused(0.5, 0.0, P) == pytest.approx(0.48)
    assert decay_unused(0.5, 10.0, P) == pytest.approx(0.47)


def test_lesson_below_0_2_is_retired() -> None:
    assert should_retire(0.19, P)
    assert not should_retire(0.2, P)


_events = st.one_of(
    st.builds(Confirmed, st.floats(0.0, 1.0)),
    st.builds(Contradicted, st.floats(0.0, 1.0)),
    st.builds(Decayed, st.floats(0.0, 3650.0)),
)


@given(start=st.floats(0.05, 0.95), events=st.lists(_events, max_size=60))
def test_confidence_stays_in_clamp_bounds_under_any_event_sequence(
    start: float, events: list[Confirmed | Contradicted | Decayed]
) -> None:
    c = start
    for event in events:
        c = apply_event(c, event, P)
        assert P.floor <= c <= P.ceiling


@given(c=st.floats(0.05, 0.95), s=st.floats(0.0, 1.0))
def test_a_success_never_lowers_and_a_failure_never_raises_confidence(c: float, s: float) -> None:
    assert confirm(c, s, P) >= c
    assert contradict(c, s, P) <= c
