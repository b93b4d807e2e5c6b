"""Confidence transfer: the seed formula, the table as ceilings, verified votes only."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import ConfigError
from lamarck.reputation.params import ProbationParams, ReputationParams
from lamarck.reputation.scores import TrustBand, trust_band
from lamarck.reputation.transfer import (
    TrackRecord,
    TransferInputs,
    TransferParams,
    TransferRule,
    claim_ceiling,
    imported_confidence,
    on_probation,
    reality_tested_confidence,
    transfer_confidence,
    verified_validation_ratio,
)

P = TransferParams()
RP = ReputationParams()


#: A source judged right a thousand times here: past probation, claims believed to 0.9975.
SEASONED = TrackRecord(confirmed=1000)


def _inputs(c: float, r: float, **kw: object) -> TransferInputs:
    kw.setdefault("track", SEASONED)
    return TransferInputs(original_confidence=c, reputation=r, band=trust_band(r, RP), **kw)  # type: ignore[arg-type]


def test_formula_matches_the_seed() -> None:
    # min(0.9, c * 0.6 * (0.5 + 0.5 r) + ratio * 0.2)
    assert transfer_confidence(0.8, 0.6, 0.5, P) == pytest.approx(0.8 * 0.6 * 0.8 + 0.1)
    assert transfer_confidence(1.0, 1.0, 1.0, P) == pytest.approx(0.8)


def test_formula_is_capped_at_point_nine() -> None:
    params = TransferParams(cross_agent_factor=1.0, validation_boost=1.0)
    assert transfer_confidence(1.0, 1.0, 1.0, params) == pytest.approx(0.9)


def test_non_finite_inputs_fail_closed() -> None:
    assert transfer_confidence(float("nan"), 1.0, 0.0, P) == 0.0
    assert transfer_confidence(0.8, float("nan"), float("inf"), P) == pytest.approx(0.8 * 0.3)


def test_ratio_counts_only_verified_votes_and_is_zero_without_any() -> None:
    assert verified_validation_ratio(0, 0) == 0.0
    assert verified_validation_ratio(3, 1) == pytest.approx(0.75)
    with pytest.raises(ValueError):
        verified_validation_ratio(-1, 0)


def test_same_agent_next_session_keeps_ninety_five_percent() -> None:
    result = imported_confidence(_inputs(0.8, 0.0, same_agent=True), P)
    assert result.rule is TransferRule.SAME_AGENT
    assert result.confidence == pytest.approx(0.76)


def test_cross_agent_high_reputation_uses_formula_under_the_point_seven_ceiling() -> None:
    result = imported_confidence(_inputs(0.8, 1.0), P)
    assert result.rule is TransferRule.HIGH_REPUTATION
    assert result.confidence == pytest.approx(0.8 * 0.6)
    assert result.confidence <= 0.8 * 0.7


def test_medium_and_low_reputation_rows() -> None:
    medium = imported_confidence(_inputs(0.8, 0.5), P)
    low = imported_confidence(_inputs(0.8, 0.0), P)
    assert medium.rule is TransferRule.MEDIUM_REPUTATION
    assert low.rule is TransferRule.LOW_REPUTATION
    assert low.confidence == pytest.approx(0.8 * 0.3)
    assert low.confidence < medium.confidence


def test_table_row_caps_the_vote_boost_instead_of_multiplying_it() -> None:
    # Formula alone: 0.5*0.6*1.0 + 1.0*0.2 = 0.5; the high-reputation row caps it at 0.35.
    result = imported_confidence(_inputs(0.5, 1.0, supporting_votes=2), P)
    assert result.base == pytest.approx(0.5)
    assert result.confidence == pytest.approx(0.35)


def test_validated_by_others_requires_a_verified_quorum_certificate() -> None:
    result = imported_confidence(_inputs(0.5, 1.0, supporting_votes=3, quorum_certified=True), P)
    assert result.rule is TransferRule.VALIDATED_BY_OTHERS
    assert result.confidence == pytest.approx(0.4)


def test_verified_contradictions_apply_the_point_three_row() -> None:
    result = imported_confidence(
        _inputs(0.9, 1.0, supporting_votes=1, contradicting_votes=3, quorum_certified=True), P
    )
    assert result.rule is TransferRule.CONTRADICTED
    assert result.confidence <= 0.9 * 0.3


def test_reality_tested_adds_point_two_of_original_within_cap() -> None:
    assert reality_tested_confidence(0.4, 0.8, P) == pytest.approx(0.56)
    assert reality_tested_confidence(0.85, 0.9, P) == pytest.approx(0.9)
    assert reality_tested_confidence(0.95, 0.9, P) == pytest.approx(0.95)  # never lowers


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cap", 0.0),
        ("cross_agent_factor", 1.5),
        ("reputation_weight", 0.7),
        ("medium_reputation", 0.8),
        ("contradicted", 0.4),
        ("validation_boost", float("nan")),
    ],
)
def test_params_name_the_broken_field(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        TransferParams(**{field: value})


_unit = st.floats(0.0, 1.0)
_votes = st.integers(0, 50)


@settings(max_examples=300, deadline=None)
@given(_unit, _unit, _unit)
def test_formula_always_in_zero_to_cap(c: float, r: float, ratio: float) -> None:
    assert 0.0 <= transfer_confidence(c, r, ratio, P) <= 0.9


@settings(max_examples=300, deadline=None)
@given(_unit, _unit, _unit, _votes, _votes, st.booleans(), st.booleans())
def test_transfer_always_in_range_and_monotone_in_reputation(
    c: float, r1: float, r2: float, sup: int, con: int, cert: bool, same: bool
) -> None:
    lo, hi = sorted((r1, r2))
    kw = {
        "supporting_votes": sup,
        "contradicting_votes": con,
        "quorum_certified": cert,
        "same_agent": same,
    }
    a = imported_confidence(_inputs(c, lo, **kw), P).confidence
    b = imported_confidence(_inputs(c, hi, **kw), P).confidence
    assert 0.0 <= a <= 0.9
    assert 0.0 <= b <= 0.9
    assert a <= b + 1e-12
    assert transfer_confidence(c, lo, 0.5, P) <= transfer_confidence(c, hi, 0.5, P) + 1e-12


@settings(max_examples=200, deadline=None)
@given(_unit, _unit, _votes, _votes)
def test_contradiction_never_raises_a_transfer(c: float, r: float, sup: int, con: int) -> None:
    clean = imported_confidence(_inputs(c, r, supporting_votes=sup), P).confidence
    contested = imported_confidence(
        _inputs(c, r, supporting_votes=sup, contradicting_votes=con), P
    ).confidence
    assert contested <= clean + 1e-12


def test_band_of_inputs_matches_reputation_thresholds() -> None:
    assert _inputs(0.5, 0.7).band is TrustBand.HIGH


# -- probation and the claim ceiling ------------------------------------------------------------

NEW = TrackRecord()


def test_a_new_source_claiming_point_eight_gains_nothing_over_claiming_point_five() -> None:
    sure = imported_confidence(_inputs(0.8, 0.5, track=NEW), P)
    modest = imported_confidence(_inputs(0.5, 0.5, track=NEW), P)
    assert sure == modest
    assert sure.rule is TransferRule.PROBATION
    # The low row over the newcomer's ceiling: 0.5 * 0.3 (it was 0.36 for a 0.8 claim).
    assert sure.confidence == pytest.approx(0.15)


def test_an_admitted_liar_and_an_honest_newcomer_start_alike_at_the_low_band() -> None:
    # Whatever score admission gave them, neither has a record here yet.
    for r in (0.5, 0.75, 1.0):
        first = imported_confidence(_inputs(0.65, r, track=NEW), P)
        assert first.rule is TransferRule.PROBATION
        assert first.confidence == pytest.approx(0.15)


def test_probation_ends_after_the_stated_number_of_reality_judged_interactions() -> None:
    n = P.probation.interactions
    assert n == 5
    before = TrackRecord(confirmed=n - 1)
    after = TrackRecord(confirmed=n)
    assert on_probation(before, P.probation) and not on_probation(after, P.probation)
    assert imported_confidence(_inputs(0.65, 0.5, track=before), P).rule is TransferRule.PROBATION
    done = imported_confidence(_inputs(0.65, 0.5, track=after), P)
    assert done.rule is TransferRule.MEDIUM_REPUTATION
    # Contradictions are judgements too: a liar leaves probation as fast, with a low ceiling.
    liar = TrackRecord(contradicted=n)
    assert not on_probation(liar, P.probation)
    assert claim_ceiling(liar, P.probation) == pytest.approx(0.25)


def test_the_claim_ceiling_is_the_confirmed_share_smoothed_toward_the_newcomer_s() -> None:
    pp = P.probation
    assert claim_ceiling(NEW, pp) == pytest.approx(0.5)
    assert claim_ceiling(TrackRecord(confirmed=5), pp) == pytest.approx(0.75)
    assert claim_ceiling(TrackRecord(confirmed=20), pp) == pytest.approx(0.9)
    assert claim_ceiling(TrackRecord(confirmed=5, contradicted=5), pp) == pytest.approx(0.5)
    # A claim below the ceiling is kept as it is.
    modest = imported_confidence(_inputs(0.3, 0.5, track=TrackRecord(confirmed=20)), P)
    assert modest.confidence == pytest.approx(transfer_confidence(0.3, 0.5, 0.0, P), abs=1e-12)


def test_a_verified_certificate_still_decides_the_row_during_probation() -> None:
    certified = imported_confidence(
        _inputs(0.8, 0.5, track=NEW, supporting_votes=4, quorum_certified=True), P
    )
    assert certified.rule is TransferRule.VALIDATED_BY_OTHERS
    # ... over the capped claim: the certificate vouches for the lesson, not the claim.
    assert certified.confidence <= 0.5 * P.validated_by_others


def test_no_probation_when_the_operator_sets_zero_interactions() -> None:
    params = TransferParams(probation=ProbationParams(interactions=0))
    first = imported_confidence(_inputs(0.5, 0.5, track=NEW), params)
    assert first.rule is TransferRule.MEDIUM_REPUTATION


@pytest.mark.parametrize(
    "kw",
    [
        {"interactions": -1},
        {"interactions": True},
        {"interactions": 2.5},
        {"new_source_claim": 0.0},
        {"new_source_claim": float("nan")},
        {"new_source_claim": 1.5},
    ],
)
def test_probation_params_name_the_broken_field(kw: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=next(iter(kw))):
        ProbationParams(**kw)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    c=st.floats(0.0, 1.0),
    r=st.floats(0.0, 1.0),
    confirmed=st.integers(0, 50),
    contradicted=st.integers(0, 50),
)
def test_one_more_confirmation_never_lowers_a_transfer(
    c: float, r: float, confirmed: int, contradicted: int
) -> None:
    now = TrackRecord(confirmed, contradicted)
    more = TrackRecord(confirmed + 1, contradicted)
    a = imported_confidence(_inputs(c, r, track=now), P).confidence
    b = imported_confidence(_inputs(c, r, track=more), P).confidence
    assert b >= a - 1e-12
