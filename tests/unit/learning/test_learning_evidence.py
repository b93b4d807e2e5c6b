"""The rule that carries this node's own evidence onto a newer version from the source."""

from __future__ import annotations

import pytest

from lamarck.errors import ConfigError
from lamarck.learning.evidence import LocalCopy, confidence_on_new_version, local_evidence
from lamarck.learning.params import ConfidenceParams, EvidenceParams

P = EvidenceParams()


def test_a_confirmed_copy_keeps_its_local_gain_when_the_source_re_pushes_the_same_claim() -> None:
    # The figures: transferred at 0.296, confirmed here to 0.443, re-pushed.
    copy = LocalCopy(confidence=0.443, transferred=0.296, outcomes=1)
    assert confidence_on_new_version(copy, 0.296, P) == pytest.approx(0.443)


def test_the_local_margin_moves_with_the_sources_newer_claim() -> None:
    copy = LocalCopy(confidence=0.443, transferred=0.296, outcomes=1)
    assert confidence_on_new_version(copy, 0.35, P) == pytest.approx(0.497)
    contradicted = LocalCopy(confidence=0.2, transferred=0.4, outcomes=1)
    assert confidence_on_new_version(contradicted, 0.5, P) == pytest.approx(0.3)


def test_a_copy_nothing_happened_to_takes_the_new_transferred_confidence_exactly() -> None:
    copy = LocalCopy(confidence=0.296, transferred=0.296, outcomes=0)
    # Not clamped to the learning floor: the transfer's own answer stands.
    assert confidence_on_new_version(copy, 0.01, P) == 0.01


def test_the_result_stays_within_the_learning_clamp() -> None:
    copy = LocalCopy(confidence=0.9, transferred=0.5, outcomes=3)
    assert confidence_on_new_version(copy, 0.8, P) == ConfidenceParams().ceiling
    down = LocalCopy(confidence=0.05, transferred=0.6, outcomes=2)
    assert confidence_on_new_version(down, 0.3, P) == ConfidenceParams().floor


def test_an_unknown_transfer_keeps_the_current_confidence_only_when_there_is_local_evidence() -> (
    None
):
    tested = LocalCopy(confidence=0.443, transferred=None, outcomes=1)
    assert local_evidence(tested, 0.3) == pytest.approx(0.143)
    assert confidence_on_new_version(tested, 0.3, P) == pytest.approx(0.443)
    untouched = LocalCopy(confidence=0.2, transferred=None, outcomes=0)
    assert confidence_on_new_version(untouched, 0.3, P) == 0.3


def test_carry_local_scales_the_local_evidence() -> None:
    copy = LocalCopy(confidence=0.5, transferred=0.3, outcomes=1)
    assert confidence_on_new_version(copy, 0.3, EvidenceParams(carry_local=0.5)) == (
        pytest.approx(0.4)
    )
    assert confidence_on_new_version(copy, 0.3, EvidenceParams(carry_local=0.0)) == 0.3


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_carry_local_outside_zero_one_is_refused(bad: float) -> None:
    with pytest.raises(ConfigError) as err:
        EvidenceParams(carry_local=bad)
    assert "carry_local" in str(err.value)
