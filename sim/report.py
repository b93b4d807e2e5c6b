"""The simulator's table: one row per (N, Byzantine share), the issue's figures as columns."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["COLUMNS", "format_table"]

#: (figure name, column header, format) in print order.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("push_reach", "push reach", "{:.0%}"),
    ("prop_p50_s", "p50 s", "{:.2f}"),
    ("prop_p99_s", "p99 s", "{:.1f}"),
    ("messages_per_lesson", "msgs/lesson", "{:.0f}"),
    ("bytes_per_node_per_lesson", "B/node/lesson", "{:.0f}"),
    ("ae_bytes_per_node_per_round", "AE B/node/round", "{:.0f}"),
    ("max_hops", "hops", "{:.0f}"),
    ("repair_p99_s", "repair p99 s", "{:.0f}"),
    ("churn_push_reach", "churn push", "{:.0%}"),
    ("churn_final_reach", "churn final", "{:.0%}"),
    ("interactions_to_graylist", "to graylist", "{:.0f}"),
    ("graylisted_by_all_share", "gray share", "{:.0%}"),
    ("poison_accepted", "poison acc", "{:.0f}"),
    ("poison_in_prompt", "in prompt", "{:.0f}"),
    ("poisoned_decisions", "poisoned dec", "{:.0f}"),
    ("poisoned_ties", "ties", "{:.0f}"),
    ("poison_harm", "harm", "{:.0f}"),
    ("accepted_from_graylisted", "acc gray", "{:.0f}"),
    ("tainted", "tainted", "{:.0f}"),
    ("poison_live_end", "poison live", "{:.0f}"),
    ("honest_lost", "lost", "{:.0f}"),
    ("eclipse_victim_share", "eclipse", "{:.0%}"),
    ("sybil_admitted", "sybil adm", "{:.0f}"),
    ("sybil_voter_seats", "sybil seats", "{:.0f}"),
    ("events_per_s", "events/s", "{:.0f}"),
    ("wall_s", "wall s", "{:.0f}"),
)


def _cell(value: float | None, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "never"
    return fmt.format(value)


def format_table(rows: Sequence[tuple[int, float, Mapping[str, float]]]) -> str:
    """Rows of (N, Byzantine share, figures) as a fixed-width text table."""
    header = ["N", "byz", *(h for _, h, _ in COLUMNS)]
    body = [
        [str(n), f"{share:.0%}", *(_cell(figs.get(k), f) for k, _, f in COLUMNS)]
        for n, share, figs in rows
    ]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *body]]
    return "\n".join(lines)
