"""Global trust over peers' summaries: a summary weighs what its signer is trusted, colluders
and slanderers stay out of the honest band, and a peer nobody judged is unknown, never 0."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.reputation.global_trust import global_trust
from lamarck.reputation.params import GlobalTrustParams

PARAMS = GlobalTrustParams()
RAW = GlobalTrustParams(local_floor=0.0)
HONEST = ("h1", "h2", "h3", "h4")
COLLUDERS = ("c1", "c2", "c3")
# This node ("me") and four honest peers who judged each other from their own outcomes.
HONEST_ROWS: dict[str, dict[str, float]] = {
    "me": {"h1": 0.8, "h2": 0.7, "h3": 0.6},
    "h1": {"h2": 0.8, "h3": 0.7, "h4": 0.7, "me": 0.8},
    "h2": {"h1": 0.8, "h3": 0.6, "h4": 0.75},
    "h3": {"h1": 0.7, "h4": 0.7},
    "h4": {"h2": 0.8, "h3": 0.65},
}
# Three admitted colluders praise each other and slander every honest node.
COLLUDER_ROWS: dict[str, dict[str, float]] = {
    c: {**{d: 1.0 for d in COLLUDERS if d != c}, **dict.fromkeys((*HONEST, "me"), 0.0)}
    for c in COLLUDERS
}
#: The honest band under collusion: each honest peer keeps at least this share of the global
#: trust it has without the colluders' summaries, and stays above every colluder.
HONEST_BAND = 0.75


def test_colluders_nobody_honest_trusts_move_nothing_and_get_nothing() -> None:
    alone = global_trust(HONEST_ROWS, [], "me", PARAMS)
    attacked = global_trust(HONEST_ROWS | COLLUDER_ROWS, [], "me", PARAMS)
    for h in HONEST:
        assert attacked.of(h) == pytest.approx(alone.of(h), abs=1e-9)
        assert attacked.of(h) > 0.1
    for c in COLLUDERS:
        assert attacked.of(c) == pytest.approx(0.0, abs=1e-12)


def test_colluders_who_fooled_two_honest_nodes_keep_the_honest_peers_in_their_band() -> None:
    # h1 and this node were fooled once each: they lend the clique a little.
    fooled = HONEST_ROWS | {
        "h1": {**HONEST_ROWS["h1"], "c1": 0.6},
        "me": {**HONEST_ROWS["me"], "c2": 0.55},
    }
    alone = global_trust(HONEST_ROWS, [], "me", PARAMS)
    attacked = global_trust(fooled | COLLUDER_ROWS, [], "me", PARAMS)
    top_colluder = max(attacked.of(c) for c in COLLUDERS)
    for h in HONEST:
        assert attacked.of(h) >= HONEST_BAND * alone.of(h)
        assert attacked.of(h) > top_colluder
    # What the clique holds is bounded by what honest rows lend it, praise or not.
    assert sum(attacked.of(c) for c in COLLUDERS) < 0.25


def test_slander_takes_nothing_away_it_only_lends_nothing() -> None:
    fooled = HONEST_ROWS | {"h1": {**HONEST_ROWS["h1"], "c1": 0.6}}
    praising_only = {c: {d: v for d, v in row.items() if v > 0} for c, row in COLLUDER_ROWS.items()}
    with_slander = global_trust(fooled | COLLUDER_ROWS, [], "me", PARAMS)
    without = global_trust(fooled | praising_only, [], "me", PARAMS)
    for h in HONEST:
        assert with_slander.of(h) == pytest.approx(without.of(h), abs=1e-12)


def test_a_summary_weighs_what_its_signer_is_trusted_c_transpose_t() -> None:
    # me trusts s1 twice as much as s2 (above the floor); each vouches for one peer alone.
    rows = {"me": {"s1": 0.9, "s2": 0.7}, "s1": {"p1": 1.0}, "s2": {"p2": 1.0}}
    result = global_trust(rows, [], "me", PARAMS)
    assert result.of("s1") == pytest.approx(2 * result.of("s2"))
    assert result.of("p1") / result.of("p2") == pytest.approx(result.of("s1") / result.of("s2"))
    assert result.of("p1") == pytest.approx((1 - PARAMS.anchor_weight) * result.of("s1"))


def test_pretrusted_peers_are_the_anchors_and_this_node_counts_through_them() -> None:
    rows = {"me": {"p1": 0.9}, "a": {"me": 0.9, "p2": 0.9}}
    result = global_trust(rows, ["a"], "me", PARAMS)
    assert result.anchors == ("a",)
    assert result.of("a") > result.of("me") > result.of("p1") > 0.0
    # Without "a"'s word this node holds nothing, so its own row gives nothing either.
    mute = global_trust({"me": {"p1": 0.9}}, ["a"], "me", PARAMS)
    assert mute.of("p1") == 0.0 and mute.known("p1") == 0.0


def test_a_peer_nobody_judged_is_unknown_and_a_distrusted_one_is_zero() -> None:
    rows = {"me": {"good": 0.9, "bad": 0.1}, "good": {"me": 0.9}, "loner": {}}
    result = global_trust(rows, [], "me", PARAMS)
    assert result.known("bad") == 0.0
    assert (result.known("good") or 0.0) > 0.0
    assert result.known("loner") is None  # it signed a summary, nobody rated it
    assert result.known("never-seen") is None
    assert result.known("me") is not None  # an anchor is always known


# -- many shapes ----------------------------------------------------------------------------
NAMES = [f"n{k}" for k in range(8)]
_rows = st.dictionaries(
    st.sampled_from(NAMES),
    st.dictionaries(st.sampled_from(NAMES), st.floats(min_value=0.0, max_value=1.0), max_size=6),
    min_size=1,
    max_size=8,
)


@settings(max_examples=80, deadline=None)
@given(rows=_rows, row=st.dictionaries(st.sampled_from(NAMES), st.floats(0.0, 1.0), max_size=8))
def test_a_signer_nobody_trusts_changes_nobodys_global_trust(
    rows: dict[str, dict[str, float]], row: dict[str, float]
) -> None:
    # "x" is an admitted stranger: no row rates it, so its trust is 0 and its summary is
    # weighed by 0, whatever it says.
    before = global_trust(rows, [], "n0", PARAMS)
    after = global_trust(rows | {"x": row}, [], "n0", PARAMS)
    for peer in NAMES:
        assert after.of(peer) == pytest.approx(before.of(peer), abs=1e-8)
    assert after.of("x") == pytest.approx(0.0, abs=1e-12)
    assert after.known("x") is None


@settings(max_examples=80, deadline=None)
@given(rows=_rows, anchors=st.lists(st.sampled_from(NAMES), max_size=3))
def test_global_trust_is_a_distribution_and_unknown_exactly_where_nobody_rated(
    rows: dict[str, dict[str, float]], anchors: list[str]
) -> None:
    result = global_trust(rows, anchors, "n0", PARAMS)
    assert result.converged
    assert sum(result.values.values()) == pytest.approx(1.0)
    assert all(v >= 0.0 for v in result.values.values())
    rated = {j for i, row in rows.items() for j in row if j != i}
    for peer in [*NAMES, "never"]:
        expected_known = peer in rated or peer in result.anchors
        assert (result.known(peer) is not None) == expected_known


@settings(max_examples=60, deadline=None)
@given(rows=_rows, signer=st.sampled_from(NAMES), scale=st.floats(0.05, 1.0))
def test_the_scale_a_signer_writes_gives_its_row_no_extra_weight(
    rows: dict[str, dict[str, float]], signer: str, scale: float
) -> None:
    scaled = rows | {signer: {j: v * scale for j, v in rows.get(signer, {}).items()}}
    a = global_trust(rows, [], "n0", RAW)
    b = global_trust(scaled, [], "n0", RAW)
    for peer in NAMES:
        assert b.of(peer) == pytest.approx(a.of(peer), abs=1e-7)
