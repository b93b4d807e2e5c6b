"""The operator's reputation table: every column, sorted, filtered by domain, as text and JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from lamarck.reputation.scores import PeerBand
from lamarck.reputation.table import (
    ReputationRow,
    SortKey,
    named_parts,
    render_table,
    row_to_obj,
    select_rows,
)

SEEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ROWS = [
    ReputationRow(
        peer="lmk1alice",
        principal="op_a",
        band=PeerBand.TRUSTED,
        score=0.81,
        parts={"p1_reality_confirmed": 0.31, "p3_votes_wrong": 0.0},
        predictions=10,
        correct=9,
        weighted_accuracy=0.93,
        pairwise=0.75,
        global_trust=0.4,
        accepted=12,
        rejected={"poisoned": 1},
        votes_right=4,
        votes_wrong=1,
        domains={"pg": 0.75},
        expert_domains=("pg",),
        last_seen=SEEN,
    ),
    ReputationRow(peer="lmk1mallory", principal="op_m", band=PeerBand.GRAYLISTED, score=0.05),
    ReputationRow(peer="lmk1bob", principal="op_b", band=PeerBand.NEUTRAL, score=0.5),
]


def test_the_wide_table_shows_every_column_for_a_peer() -> None:
    text = render_table(ROWS, wide=True)
    header, first = text.splitlines()[:2]
    for column in ("PRINCIPAL", "BAND", "PARTS", "W.ACC", "PAIRWISE", "GLOBAL", "VOTES R/W"):
        assert column in header
    for cell in (
        "lmk1alice",
        "op_a",
        "trusted",
        "0.810",
        "reality confirmed +0.310",
        "9/10",
        "0.75",
        "4/1",
    ):
        assert cell in first
    assert "1 (poisoned:1)" in first and "2026-03-01T12:00:00Z" in first


def test_rows_sort_by_the_chosen_column_and_filter_by_domain() -> None:
    assert [r.peer for r in select_rows(ROWS)] == ["lmk1alice", "lmk1bob", "lmk1mallory"]
    by_peer = select_rows(ROWS, sort=SortKey.PEER)
    assert [r.peer for r in by_peer] == ["lmk1alice", "lmk1bob", "lmk1mallory"]
    assert [r.peer for r in select_rows(ROWS, domain="pg")] == ["lmk1alice"]
    assert "pg:0.75" in render_table(ROWS, domain="pg", wide=True)


def test_json_rows_round_trip_through_json() -> None:
    obj = json.loads(json.dumps([row_to_obj(r) for r in ROWS]))
    assert obj[0]["band"] == "trusted" and obj[1]["last_seen"] is None
    assert obj[0]["records_rejected"] == {"poisoned": 1}


def test_the_default_table_fits_120_columns_with_labels_and_the_parts_named() -> None:
    long_id = "lmk1" + "q" * 52
    row = ReputationRow(
        peer=long_id,
        principal="op_" + "x" * 52,
        band=PeerBand.GRAYLISTED,
        score=0.07000014602972499,
        parts={
            "p0_admission": 0.1,
            "p1_reality_confirmed": 0.125,
            "p5_poisoned": -0.4,
            "p7_replay": -0.05,
            "p9_votes_right": 0.0,
        },
        rejected={"poisoned": 3, "bad_signature": 2},
        last_seen=SEEN,
    )
    text = render_table([*ROWS, row], labels={long_id: "node7"})
    assert all(len(line) <= 120 for line in text.splitlines()), text
    [line] = [x for x in text.splitlines() if "node7" in x]
    # The label beside the start of the id; the two largest parts, named; rounded numbers.
    assert "node7 lmk1qqqqqqqq…" in line and "graylisted" in line and "0.070" in line
    assert line.endswith("poisoned -0.400, reality confirmed +0.125")
    assert "p1=" not in text and "0.07000014" not in text
    assert "5" in line.split()  # rejected records, totalled
    wide = render_table([row], labels={long_id: "node7"}, wide=True)
    assert f"node7 {long_id}" in wide and "replay -0.050" in wide and "votes right" not in wide


def test_parts_are_ordered_by_effect_and_zero_parts_are_hidden() -> None:
    parts = {"p10_operator_contradicted": -0.2, "p2_reality_contradicted": 0.05, "p3_x": 0.0}
    assert named_parts(parts) == [("operator contradicted", -0.2), ("reality contradicted", 0.05)]
