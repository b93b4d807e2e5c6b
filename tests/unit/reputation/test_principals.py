"""Independence is counted by principal, not by key; an endorser admits a bounded number."""

from __future__ import annotations

import pytest

from lamarck.errors import ConfigError
from lamarck.reputation.params import PrincipalParams
from lamarck.reputation.principals import (
    counts_by_principal,
    distinct_principals,
    endorsement_refusal,
    independent_count,
    one_per_principal,
)

FIFTY_KEYS = {f"lmk1sybil{k}": "mallory" for k in range(50)}
NETWORK = FIFTY_KEYS | {"lmk1alice": "op_a", "lmk1bob": "op_b"}


def test_fifty_keys_under_one_operator_confirm_as_one() -> None:
    assert distinct_principals(FIFTY_KEYS, NETWORK) == 1
    assert independent_count([*FIFTY_KEYS, "lmk1alice"], NETWORK) == 2


def test_an_unknown_identity_counts_for_nothing() -> None:
    assert independent_count(["lmk1stranger", "lmk1alice"], NETWORK) == 1


def test_a_single_principal_network_counts_identities() -> None:
    one_operator = {f"lmk1n{k}": "operator" for k in range(5)}
    assert not counts_by_principal(one_operator)
    assert independent_count(one_operator, one_operator) == 5
    assert counts_by_principal(NETWORK)


def test_one_identity_speaks_for_each_principal() -> None:
    order = ["lmk1sybil3", "lmk1sybil4", "lmk1alice", "lmk1stranger", "lmk1bob", "lmk1sybil0"]
    assert one_per_principal(order, NETWORK) == ("lmk1sybil3", "lmk1alice", "lmk1bob")


def test_an_endorser_may_admit_up_to_the_cap() -> None:
    params = PrincipalParams(max_identities_per_endorser=2)
    assert endorsement_refusal("lmk1alice", 1, params) is None
    assert endorsement_refusal("lmk1alice", 2, params) == "endorsement_cap"
    assert endorsement_refusal("", 0, params) == "no_endorsement"
    with pytest.raises(ConfigError):
        PrincipalParams(max_identities_per_endorser=0)
