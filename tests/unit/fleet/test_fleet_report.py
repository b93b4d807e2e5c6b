"""The fleet report: one per-node table that tells routine re-gossip from attacks, and a
closing paragraph printed as prose, not as a narrow centred caption."""

from __future__ import annotations

from rich.console import Console

from lamarck.fleet.report import (
    NODES_LEGEND,
    NodeCounts,
    learning_table,
    learning_verdict,
    nodes_table,
    split_refusals,
)


def _render(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_routine_re_gossip_is_counted_apart_from_attacks() -> None:
    rejected = {"replay": 87.0, "graylisted_source": 5.0, "injected_instruction": 3.0}
    assert split_refusals(rejected) == (92, {"injected_instruction": 3})
    honest = NodeCounts({"active": 43.0}, {"accepted": 20.0, "duplicate": 117.0}, rejected)
    text = _render(nodes_table(["node1", "node2"], ["honest", "honest"], [honest, None], [6, 0]))
    [row] = [line for line in text.splitlines() if "node1" in line]
    cells = row.replace("│", " ").split()
    assert cells[:9] == [
        "node1",
        "honest",
        "6",
        "43",
        "20",
        "117",
        "0",
        "92",
        "injected_instruction",
    ]
    assert "replay" not in text and "43.0" not in text
    assert "re-gossip" in text and "routine" in NODES_LEGEND and "attacks" in NODES_LEGEND


def test_the_closing_paragraph_is_prose_across_the_terminal() -> None:
    figures = {
        "shared_repeated_known_mistakes": 4.0,
        "isolated_repeated_known_mistakes": 24.0,
        "mistakes_reduction": 0.8333,
    }
    verdict = learning_verdict(figures, byzantine=1)
    assert "(4 vs 24: met)" in verdict and "node(s)" not in verdict and ".0 " not in verdict
    table = learning_table(figures)
    assert table.caption is None  # a caption is centred and wrapped to the table's width
    lines = [x for x in _render(verdict).splitlines() if x.strip()]
    # One paragraph filling a 200-column terminal from its left edge, not ~50 columns centred.
    assert lines[0].startswith("Known mistakes repeated") and len(lines[0]) > 150
