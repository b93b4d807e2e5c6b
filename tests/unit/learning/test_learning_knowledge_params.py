"""Issue-18 params refuse every out-of-range, misordered or non-finite value, naming the field."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lamarck.errors import ConfigError
from lamarck.learning.knowledge_params import (
    ConflictParams,
    ConsolidationParams,
    KnowledgeParams,
    LifecycleParams,
    VariableParams,
)


def test_defaults_are_valid_and_match_the_seeds() -> None:
    p = KnowledgeParams()
    assert (p.conflicts.win_step, p.conflicts.win_cap) == (0.2, 0.8)
    assert (p.conflicts.lose_step, p.conflicts.lose_floor) == (0.3, 0.1)
    assert p.conflicts.min_context_similarity == 0.7
    v = p.variables
    assert (v.critical_error_rate, v.important_error_rate, v.minor_error_rate) == (0.7, 0.4, 0.2)
    assert v.min_observations == 3


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (ConflictParams, "min_context_similarity", 0.0),
        (ConflictParams, "min_claim_similarity", math.nan),
        (ConflictParams, "win_step", -0.2),
        (ConflictParams, "min_claim_overlap", 1.1),
        (ConflictParams, "win_cap", math.inf),
        (ConflictParams, "lose_floor", 0.9),  # not below the win cap
        (ConflictParams, "negation_markers", ()),
        (ConflictParams, "negation_markers", ("Not",)),
        (ConsolidationParams, "min_similarity", 1.5),
        (ConsolidationParams, "evidence_kept", 0),
        (ConsolidationParams, "evidence_kept", 65),
        (VariableParams, "min_observations", 0),
        (VariableParams, "important_error_rate", 0.8),  # above critical
        (VariableParams, "minor_error_rate", 0.5),  # above important
        (VariableParams, "critical_weight", 0.0),
        (VariableParams, "minor_weight", 0.7),  # above important
        (LifecycleParams, "verified_min_successes", 1),
        (LifecycleParams, "established_min_confidence", 0.5),  # below verified
        (LifecycleParams, "established_min_successes", 1),
        (KnowledgeParams, "conflicts", "nope"),
    ],
)
def test_invalid_value_is_refused_naming_its_field(cls: Any, field: str, value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        cls(**{field: value})
    assert err.value.details.get("field") == field
