"""``python -m bench``: which files are benches, reading a bench's JSON line, judging goals."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.__main__ import GOALS, Goal, bench_names, last_json, table_rows  # noqa: E402


def test_every_timed_bench_is_found_and_the_corpus_generators_are_not() -> None:
    names = bench_names()
    assert {"protocol", "store", "sharing", "trust"} <= set(names)
    assert "lesson_corpus" not in names and "autonomy_corpus" not in names


def test_the_last_json_object_line_is_the_figures_and_noise_is_ignored() -> None:
    text = 'progress\n{"a": 1}\nGOAL x: met\n{"b": 2.5}\n[1, 2]\n'
    assert last_json(text) == {"b": 2.5}
    assert last_json("no figures here\n{broken") is None


def test_a_goal_is_judged_on_its_side_and_nan_never_meets_it() -> None:
    at_most = Goal("b", "x_ms", "<=", 10.0, "store")
    assert at_most.met(10.0) and not at_most.met(10.5)
    assert not Goal("b", "x_ratio", ">=", 0.5, "store").met(float("nan"))


def test_the_table_shows_value_baseline_ratio_and_verdict_for_benches_that_ran() -> None:
    rows = table_rows(
        {
            "peers": {"recall_p50_ratio": 0.4, "mem0_search_p50_ms": 2.0},
            "fleet": {"repeated_mistakes_ratio": 1.2, "isolated_repeated_known_mistakes": 12.0},
        }
    )
    by_key = {r[1]: r for r in rows}
    assert by_key["recall_p50_ratio"][3:] == ("2", "0.4", "<= 0.5", "met")
    assert by_key["repeated_mistakes_ratio"][-1] == "NOT MET"
    assert all(r[0] in ("peers", "fleet") for r in rows)  # benches that did not run: no rows
    assert len({(g.bench, g.key) for g in GOALS}) == len(GOALS)


def test_a_figure_with_no_goal_named_is_shown_and_never_judged() -> None:
    rows = table_rows(
        {
            "fleet": {
                "fleet_rss_mb": 842.1,
                "mistakes_reduction": 0.82,
                "repeated_mistakes_ratio": 0.2,
            }
        }
    )
    by_key = {r[1]: r for r in rows}
    assert by_key["fleet_rss_mb"][2:] == ("842.1", "-", "-", "none named", "-")
    # The reduction is shown; with its poisoning node, the ratio is what is judged.
    assert by_key["mistakes_reduction"][-1] == "-"
    assert by_key["repeated_mistakes_ratio"][-1] == "met"
    assert table_rows({"fleet": {}}) == []  # not measured: no row


def test_the_learning_verdict_judges_by_the_goal_of_its_condition() -> None:
    from lamarck.fleet.report import learning_verdict

    figures = {
        "shared_repeated_known_mistakes": 3.0,
        "isolated_repeated_known_mistakes": 24.0,
        "mistakes_reduction": 0.875,
    }
    honest = learning_verdict(figures)
    assert "(goal: at least 90% fewer; NOT met)" in honest
    poisoned = learning_verdict(figures, byzantine=1)
    assert "With 1 poisoning node" in poisoned and "(3 vs 24: met)" in poisoned
    assert "node(s)" not in poisoned and "3.0" not in poisoned
    assert "No honest decision followed a poisoned lesson." in poisoned
    followed = learning_verdict({**figures, "shared_poisoned_decisions": 2.0}, byzantine=1)
    assert "2 honest decisions followed a poisoned lesson" in followed
