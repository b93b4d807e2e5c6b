"""The whole simulated report: calibration rows, then every (N, Byzantine share) run."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lamarck.sim.calibration import PushFigures, push_calibration, tree_depth
from lamarck.sim.params import SimParams
from lamarck.sim.report import format_table
from lamarck.sim.scenarios import run_all
from lamarck.sim.state import SimCores

__all__ = ["CALIBRATION_SIZES", "SuiteResult", "calibration_lines", "run_suite"]

#: The network sizes bench/sharing.py runs for real.
CALIBRATION_SIZES = (5, 10, 20)


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """Calibration figures and one figure set per (N, Byzantine share)."""

    calibration: tuple[PushFigures, ...]
    rows: tuple[tuple[int, float, Mapping[str, float]], ...]

    def table(self) -> str:
        """The fixed-width table of the scale runs."""
        return format_table(self.rows)

    def flat(self) -> dict[str, float]:
        """Every figure under one flat name (for the JSON line)."""
        out: dict[str, float] = {}
        for c in self.calibration:
            key = f"cal_n{c.nodes}_dpm{c.direct_push_max}"
            out[f"{key}_messages_per_lesson"] = c.messages_per_lesson
            out[f"{key}_messages_ratio"] = c.messages_per_lesson / (c.nodes - 1)
            out[f"{key}_max_hops"] = float(c.max_hops)
        for n, share, figs in self.rows:
            for k, v in figs.items():
                out[f"n{n}_byz{round(share * 100)}_{k}"] = v
        return out

    def json_line(self) -> str:
        """One JSON object (infinities as null)."""
        flat = {k: (v if math.isfinite(v) else None) for k, v in self.flat().items()}
        return json.dumps(flat, sort_keys=True)


def calibration_lines(figs: Sequence[PushFigures], fanout: int) -> list[str]:
    """One line per calibration run, with the real network's figure beside it."""
    out = []
    for c in figs:
        mode = "direct push" if c.direct_push_max else "tree (--direct-push-max 0)"
        want_hops = 1 if c.direct_push_max >= c.nodes - 1 else tree_depth(c.nodes, fanout)
        out.append(
            f"N={c.nodes:>2} {mode:<27} messages/lesson {c.messages_per_lesson:5.1f} "
            f"(real: N-1 = {c.nodes - 1}; ratio {c.messages_per_lesson / (c.nodes - 1):.2f})  "
            f"hops {c.max_hops} (expected {want_hops})  every node reached: {c.all_reached}"
        )
    return out


def run_suite(
    sizes: Sequence[int],
    shares: Sequence[float],
    *,
    seed: int,
    base: SimParams,
    cores: SimCores,
    progress: Callable[[str], None] = lambda _m: None,
) -> SuiteResult:
    """Calibrate at N = 5, 10, 20, then run every size and share."""
    cal = tuple(
        push_calibration(n, dpm, seed=seed)
        for n in CALIBRATION_SIZES
        for dpm in (cores.gossip.direct_push_max, 0)
    )
    rows = []
    for n in sizes:
        for share in shares:
            params = dataclasses.replace(base, nodes=n, byzantine_share=share, seed=seed)
            figs = run_all(params, cores)
            progress(
                f"N={n} byzantine {share:.0%}: {figs.wall_s:.1f} s, "
                f"{figs.values['events_per_s']:.0f} events/s"
            )
            rows.append((n, share, figs.values))
    return SuiteResult(cal, tuple(rows))
