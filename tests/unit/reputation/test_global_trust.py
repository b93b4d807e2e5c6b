"""EigenTrust: a hand-computed example, the power-iteration definition, anchors, Sybils."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import ConfigError
from lamarck.reputation.global_trust import eigentrust, global_trust
from lamarck.reputation.params import GlobalTrustParams

RAW = GlobalTrustParams(anchor_weight=0.2, local_floor=0.0)


def test_a_hand_computed_four_node_network() -> None:
    # A (pre-trusted) trusts B; B trusts C and D equally; C and D trust A. With a = 0.2:
    #   tB = 0.8 tA, tC = tD = 0.8 * 0.5 * tB = 0.32 tA, tA = 0.8 (tC + tD) + 0.2
    #   => tA = 0.2 / 0.488 = 25/61, tB = 20/61, tC = tD = 8/61.
    local = {"A": {"B": 1.0}, "B": {"C": 0.5, "D": 0.5}, "C": {"A": 1.0}, "D": {"A": 1.0}}
    result = global_trust(local, ["A"], "A", RAW)
    assert result.converged
    expected = {"A": 25 / 61, "B": 20 / 61, "C": 8 / 61, "D": 8 / 61}
    for peer, value in expected.items():
        assert result.of(peer) == pytest.approx(value, abs=1e-9)


def test_without_pre_trusted_peers_this_node_is_the_sole_anchor() -> None:
    local = {"me": {"B": 0.9}, "B": {"C": 0.9}, "X": {"Y": 1.0}, "Y": {"X": 1.0}}
    result = global_trust(local, [], "me", GlobalTrustParams())
    assert result.anchors == ("me",)
    assert result.of("me") > result.of("B") > result.of("C") > 0
    # A clique that only vouches for itself, unreached from the anchor, gets nothing.
    assert result.of("X") == 0.0 and result.of("Y") == 0.0


def test_a_sybil_cluster_gets_only_what_honest_peers_lend_it() -> None:
    honest = {"A": {"B": 1.0}, "B": {"A": 1.0, "S0": 0.6}}
    sybils = {f"S{k}": {f"S{j}": 1.0 for j in range(20) if j != k} for k in range(20)}
    result = global_trust(honest | sybils, ["A"], "A", GlobalTrustParams())
    total_sybil = sum(result.of(f"S{k}") for k in range(20))
    # B's only gift is a sliver of what B holds; everything else flows back to the anchor.
    assert total_sybil < result.of("A")
    assert sum(result.values.values()) == pytest.approx(1.0)


def test_trust_at_or_below_the_floor_lends_nothing() -> None:
    result = global_trust({"me": {"B": 0.5, "C": 0.8}}, [], "me", GlobalTrustParams())
    assert result.of("B") == 0.0 and result.of("C") > 0.0


def test_self_trust_and_broken_values_are_ignored() -> None:
    local = {"me": {"me": 1.0, "B": float("nan"), "C": 2.0}}
    result = global_trust(local, [], "me", RAW)
    assert result.of("B") == 0.0
    assert result.of("C") > 0.0


def test_the_result_is_deterministic_whatever_the_input_order() -> None:
    rng = np.random.default_rng(3)
    local = {
        f"n{i}": {f"n{j}": float(rng.random()) for j in range(30) if j != i} for i in range(30)
    }
    shuffled = {k: dict(reversed(list(v.items()))) for k, v in reversed(list(local.items()))}
    a = global_trust(local, ["n0", "n1"], "n0", RAW)
    b = global_trust(shuffled, ["n1", "n0"], "n0", RAW)
    assert dict(a.values) == dict(b.values)


def test_it_converges_for_a_thousand_peers() -> None:
    rng = np.random.default_rng(0)
    n, per = 1000, 10
    src = np.repeat(np.arange(n), per)
    dst = rng.integers(0, n, size=n * per)
    weight = rng.random(n * per)
    result = eigentrust(src, dst, weight, n, np.arange(5), GlobalTrustParams())
    assert result.converged and result.trust.sum() == pytest.approx(1.0)


def test_global_trust_params_are_validated() -> None:
    for bad in (
        {"anchor_weight": 0.0},
        {"anchor_weight": 1.0},
        {"tolerance": 0.1},
        {"max_iterations": 0},
        {"local_floor": 1.0},
    ):
        with pytest.raises(ConfigError):
            GlobalTrustParams(**bad)  # type: ignore[arg-type]


def _dense_power_iteration(
    n: int, edges: list[tuple[int, int, float]], anchors: list[int], a: float
) -> np.ndarray:
    """The definition, literally: a dense matrix, dangling rows replaced by p, 2000 steps."""
    s = np.zeros((n, n))
    for i, j, w in edges:
        if i != j:
            s[i, j] += w
    p = np.zeros(n)
    p[sorted(set(anchors))] = 1.0
    p /= p.sum()
    c = np.zeros((n, n))
    for i in range(n):
        total = s[i].sum()
        c[i] = s[i] / total if total > 0 else p
    t = p.copy()
    for _ in range(2000):
        t = (1 - a) * c.T @ t + a * p
    return t


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=12),
    data=st.data(),
    a=st.floats(min_value=0.05, max_value=0.9),
)
def test_eigentrust_matches_the_power_iteration_definition_on_random_graphs(
    n: int, data: st.DataObject, a: float
) -> None:
    edges = data.draw(
        st.lists(
            st.tuples(
                st.integers(0, n - 1), st.integers(0, n - 1), st.floats(min_value=0.01, max_value=1)
            ),
            max_size=40,
        )
    )
    anchors = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
    params = GlobalTrustParams(anchor_weight=a, tolerance=1e-12, max_iterations=5000)
    got = eigentrust(
        np.array([e[0] for e in edges], dtype=np.int64),
        np.array([e[1] for e in edges], dtype=np.int64),
        np.array([e[2] for e in edges], dtype=np.float64),
        n,
        np.array(anchors, dtype=np.int64),
        params,
    )
    assert got.converged
    np.testing.assert_allclose(got.trust, _dense_power_iteration(n, edges, anchors, a), atol=1e-9)
