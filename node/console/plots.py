"""Inline SVG charts drawn from values: no script, no external library, nothing fetched.

``bar_chart`` draws labelled horizontal bars (confidence bands, transfer success, update
velocity); ``calibration_curve`` draws accuracy against confidence per bin over the diagonal a
perfectly calibrated node would follow; ``timeline_chart`` draws imports and rejections per
time bin as paired columns. Sizes come from a validated ``PlotParams``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta

from lamarck.errors import ConfigError
from lamarck.health.figures import CalibrationBucket
from lamarck.node.console.activity import ActivityBin, ActivityTimeline
from lamarck.node.console.markup import Markup, el
from lamarck.proto.timefmt import format_ts

__all__ = [
    "PALETTE",
    "PlotParams",
    "bar_chart",
    "bin_text",
    "calibration_curve",
    "line_chart",
    "rate_series",
    "time_ticks",
    "timeline_chart",
]

#: Stroke colours of a line chart's series, in order (then again from the first).
PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
)


@dataclass(frozen=True, slots=True)
class PlotParams:
    """Chart geometry in SVG user units (pixels at 100 % zoom); every field positive."""

    # Width of a bar chart; the label column takes label_width of it.
    width: float = 480.0
    label_width: float = 150.0
    # Height of one bar and the gap below it.
    bar_height: float = 18.0
    bar_gap: float = 6.0
    # Side of the square calibration plot and its margin for axes and labels.
    square: float = 280.0
    margin: float = 36.0
    # Radius of a calibration point for the smallest and the largest bin.
    min_radius: float = 3.0
    max_radius: float = 9.0
    # Height of the time plot's drawing area, and at most this many dates under its axis.
    timeline_height: float = 160.0
    timeline_labels: int = 7

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(
                    f"invalid {f.name}: must be a number", reason="invalid_params", field=f.name
                )
            if not math.isfinite(value) or value <= 0:
                raise ConfigError(
                    f"invalid {f.name}: must be finite and > 0, got {value}",
                    reason="invalid_params",
                    field=f.name,
                )
        if self.label_width >= self.width:
            raise ConfigError(
                "invalid label_width: must be < width", reason="invalid_params", field="label_width"
            )
        if self.min_radius > self.max_radius:
            raise ConfigError(
                "invalid min_radius: must be <= max_radius",
                reason="invalid_params",
                field="min_radius",
            )


#: Where the calibration plot's axes carry a tick.
_QUARTERS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _n(value: float) -> str:
    """A coordinate with two decimals at most (short, stable output)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def bar_chart(
    bars: Sequence[tuple[str, float | None]],
    *,
    title: str,
    p: PlotParams,
    scale: float | None = None,
    unit: str = "",
    percent: bool = False,
) -> Markup:
    """Horizontal bars, one per ``(label, value)``; a ``None`` value is drawn as "n/a".

    ``scale`` is the value of a full-width bar (default: the largest value, or 1 for rates).
    """
    values = [v for _, v in bars if v is not None]
    full = scale if scale is not None else (1.0 if percent else max(values, default=0.0))
    track = p.width - p.label_width
    height = len(bars) * (p.bar_height + p.bar_gap)
    items: list[Markup] = [el("title", title)]
    for i, (label, value) in enumerate(bars):
        y = i * (p.bar_height + p.bar_gap)
        text_y = y + p.bar_height * 0.75
        items.append(el("text", label, x="0", y=_n(text_y), class_="label"))
        if value is None:
            items.append(el("text", "n/a", x=_n(p.label_width), y=_n(text_y), class_="na"))
            continue
        length = track * min(1.0, value / full) if full > 0 else 0.0
        shown = f"{value:.1%}" if percent else f"{value:g}{unit}"
        items.append(
            el(
                "rect",
                x=_n(p.label_width),
                y=_n(y),
                width=_n(max(0.0, length)),
                height=_n(p.bar_height),
                class_="bar",
                data_value=shown,
            )
        )
        items.append(el("text", shown, x=_n(p.label_width + max(0.0, length) + 4), y=_n(text_y)))
    return el(
        "svg",
        *items,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {_n(p.width + 60)} {_n(max(height, p.bar_height))}",
        role="img",
        aria_label=title,
        class_="chart",
    )


def calibration_curve(buckets: Sequence[CalibrationBucket], *, p: PlotParams) -> Markup:
    """Accuracy against mean confidence per bin, over the diagonal of perfect calibration."""
    side, m = p.square, p.margin

    def x(v: float) -> str:
        return _n(m + v * side)

    def y(v: float) -> str:
        return _n(m + (1.0 - v) * side)

    most = max((b.count for b in buckets), default=1)
    items: list[Markup] = [
        el("title", "Calibration: accuracy against confidence"),
        el("rect", x=x(0), y=y(1), width=_n(side), height=_n(side), class_="frame"),
        el("line", x1=x(0), y1=y(0), x2=x(1), y2=y(1), class_="diagonal"),
        el("text", "confidence", x=x(0.5), y=_n(m + side + m * 0.8), class_="axis"),
        el("text", "accuracy", x="0", y=y(1.05), class_="axis"),
    ]
    # Ticks every quarter on both axes, with their values.
    for t in _QUARTERS:
        items += [
            el("line", x1=x(t), y1=y(0), x2=x(t), y2=_n(m + side + 4), class_="tick"),
            el(
                "text",
                f"{t:g}",
                x=x(t),
                y=_n(m + side + 14),
                class_="tick-label x",
                text_anchor="middle",
            ),
            el("line", x1=_n(m - 4), y1=y(t), x2=x(0), y2=y(t), class_="tick"),
            el(
                "text",
                f"{t:g}",
                x=_n(m - 6),
                y=_n(m + (1.0 - t) * side + 3),
                class_="tick-label y",
                text_anchor="end",
            ),
        ]
    if buckets:
        points = " ".join(f"{x(b.mean_confidence)},{y(b.accuracy)}" for b in buckets)
        items.append(el("polyline", points=points, class_="curve"))
    for b in buckets:
        r = p.min_radius + (p.max_radius - p.min_radius) * math.sqrt(b.count / most)
        items.append(
            el(
                "circle",
                el(
                    "title",
                    f"{b.lo:.1f}-{b.hi:.1f}: {b.count} predictions, "
                    f"confidence {b.mean_confidence:.2f}, accuracy {b.accuracy:.0%}",
                ),
                cx=x(b.mean_confidence),
                cy=y(b.accuracy),
                r=_n(r),
                class_="point",
            )
        )
    total = _n(side + 2 * m)
    return el(
        "svg",
        *items,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {total} {total}",
        role="img",
        aria_label="Calibration curve",
        class_="chart calibration",
    )


def _bin_label(b: ActivityBin, hours: float) -> str:
    """A bin's start as ``MM-DD`` for bins of a day or more, ``HH:MM`` for bins under an hour,
    ``MM-DD HH:MM`` otherwise."""
    if hours >= 24:
        return b.start.strftime("%m-%d")
    return b.start.strftime("%H:%M" if hours < 1 else "%m-%d %H:%M")


def bin_text(hours: float) -> str:
    """A bin width as an operator reads it: ``1 min``, ``15 min``, ``6 h``, ``1 day``."""
    if hours >= 24:
        days = hours / 24
        return f"{days:g} day" + ("" if days == 1 else "s")
    if hours >= 1:
        return f"{hours:g} h"
    return f"{round(hours * 60):d} min"


def timeline_chart(timeline: ActivityTimeline, *, p: PlotParams) -> Markup:
    """Imports and rejections per bin as paired columns over a time axis (oldest left).

    Each column carries a ``<title>`` (the bin, its counts, rejections by reason) and its
    count in ``data-value``; the y axis runs from 0 to the busiest bin's count.
    """
    m, w, h = p.margin, p.width, p.timeline_height
    bins = timeline.bins
    slot = w / max(1, len(bins))
    column = slot * 0.4
    most = max((max(b.imports, b.rejections) for b in bins), default=0)
    scale = h / most if most else 0.0
    items: list[Markup] = [
        el("title", "Imports and rejections over time"),
        el("line", x1=_n(m), y1=_n(m + h), x2=_n(m + w), y2=_n(m + h), class_="frame"),
        el("text", str(most), x="0", y=_n(m + 4), class_="axis"),
        el("text", "0", x="0", y=_n(m + h), class_="axis"),
        el("rect", x=_n(m), y="4", width="10", height="10", class_="imported"),
        el("text", f"imported ({timeline.imports})", x=_n(m + 14), y="13"),
        el("rect", x=_n(m + w / 2), y="4", width="10", height="10", class_="rejected"),
        el("text", f"rejected ({timeline.rejections})", x=_n(m + w / 2 + 14), y="13"),
    ]
    stride = max(1, math.ceil(len(bins) / p.timeline_labels))
    for i, b in enumerate(bins):
        x0 = m + i * slot + (slot - 2 * column) / 2
        why = ", ".join(f"{reason} {n}" for reason, n in b.rejected.items())
        title = (
            f"{format_ts(b.start)} to {format_ts(b.end)}: {b.imports} imported, "
            f"{b.rejections} rejected" + (f" ({why})" if why else "")
        )
        for k, (count, kind) in enumerate(((b.imports, "imported"), (b.rejections, "rejected"))):
            height = count * scale
            items.append(
                el(
                    "rect",
                    el("title", title),
                    x=_n(x0 + k * column),
                    y=_n(m + h - height),
                    width=_n(column),
                    height=_n(height),
                    class_=kind,
                    data_value=str(count),
                    data_start=format_ts(b.start),
                )
            )
        if i % stride == 0:
            label = _bin_label(b, timeline.bin_hours)
            items.append(el("text", label, x=_n(m + i * slot), y=_n(m + h + 16), class_="axis"))
    return el(
        "svg",
        *items,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {_n(w + 2 * m)} {_n(h + 2 * m)}",
        role="img",
        aria_label="Imports and rejections over time",
        class_="chart timeline",
    )


def _time_format(span: timedelta) -> str:
    """How a tick's time reads over ``span``: the clock (to the second within ten minutes)
    within a day, else the date too."""
    if span <= timedelta(minutes=10):
        return "%H:%M:%S"
    if span <= timedelta(days=1):
        return "%H:%M"
    if span <= timedelta(days=7):
        return "%m-%d %H:%M"
    return "%m-%d"


def time_ticks(start: datetime, end: datetime, most: int) -> list[tuple[datetime, str]]:
    """At most ``most`` evenly spaced ticks from ``start`` to ``end`` (both included), each
    with its label in the format the span calls for."""
    span = end - start
    fmt = _time_format(span)
    if most <= 1 or span <= timedelta(0):
        return [(start, start.strftime(fmt))]
    step = span / (most - 1)
    return [(start + step * i, (start + step * i).strftime(fmt)) for i in range(most)]


def _nice_max(value: float) -> float:
    """The smallest of 1, 2, 2.5 or 5 times a power of ten that is at least ``value``."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(k * power for k in (1, 2, 2.5, 5, 10) if k * power >= value - 1e-12)


def line_chart(
    series: Sequence[tuple[str, Sequence[tuple[datetime, float]]]],
    *,
    title: str,
    p: PlotParams,
    start: datetime,
    end: datetime,
    y_max: float | None = None,
    unit: str = "",
) -> Markup:
    """One line per ``(name, points)`` over a time axis from ``start`` to ``end``, with ticks
    and their values on both axes and a legend; the y axis runs from 0 to ``y_max`` (default:
    a round number above the largest value).

    Each line carries its name in ``data-series`` and its points in ``data-points``; a series
    with one point is drawn as a dot.
    """
    m, w, h = p.margin, p.width, p.timeline_height
    left = m + 12  # room for the y tick values
    top = 8 + 14 * math.ceil(len(series) / 3)  # room for the legend, three names a row
    values = [v for _, points in series for _, v in points]
    high = y_max if y_max is not None else _nice_max(max(values, default=0.0))
    span = max((end - start).total_seconds(), 1.0)

    def x(at: datetime) -> float:
        return left + w * min(1.0, max(0.0, (at - start).total_seconds() / span))

    def y(v: float) -> float:
        return top + h * (1.0 - min(1.0, max(0.0, v / high)))

    items: list[Markup] = [
        el("title", title),
        el("rect", x=_n(left), y=_n(top), width=_n(w), height=_n(h), class_="frame"),
    ]
    for k in range(5):
        v = high * k / 4
        items += [
            el("line", x1=_n(left - 4), y1=_n(y(v)), x2=_n(left + w), y2=_n(y(v)), class_="grid"),
            el(
                "text",
                f"{v:.3g}{unit}",
                x=_n(left - 6),
                y=_n(y(v) + 3),
                class_="tick-label y",
                text_anchor="end",
            ),
        ]
    for at, label in time_ticks(start, end, p.timeline_labels):
        items += [
            el(
                "line",
                x1=_n(x(at)),
                y1=_n(top + h),
                x2=_n(x(at)),
                y2=_n(top + h + 4),
                class_="tick",
            ),
            el(
                "text",
                label,
                x=_n(x(at)),
                y=_n(top + h + 16),
                class_="tick-label x",
                text_anchor="middle",
            ),
        ]
    for i, (name, points) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        lx, ly = left + (i % 3) * (w / 3), 4 + 14 * (i // 3)
        items += [
            el("rect", x=_n(lx), y=_n(ly), width="10", height="10", fill=colour),
            el("text", name, x=_n(lx + 14), y=_n(ly + 9), class_="legend"),
        ]
        ordered = sorted(points)
        coords = " ".join(f"{_n(x(at))},{_n(y(v))}" for at, v in ordered)
        if len(ordered) == 1:
            ((at, v),) = ordered
            items.append(
                el(
                    "circle",
                    el("title", f"{name}: {v:.3g}{unit}"),
                    cx=_n(x(at)),
                    cy=_n(y(v)),
                    r="3",
                    fill=colour,
                    class_="series",
                    data_series=name,
                    data_points="1",
                )
            )
        elif ordered:
            items.append(
                el(
                    "polyline",
                    el("title", name),
                    points=coords,
                    fill="none",
                    stroke=colour,
                    stroke_width="2",
                    class_="series",
                    data_series=name,
                    data_points=str(len(ordered)),
                )
            )
    return el(
        "svg",
        *items,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {_n(w + left + m)} {_n(top + h + m)}",
        role="img",
        aria_label=title,
        class_="chart lines",
    )


def rate_series(timeline: ActivityTimeline) -> list[tuple[str, list[tuple[datetime, float]]]]:
    """Imports and refusals by reason per minute, one point per bin (at its middle): the
    series ``line_chart`` draws for the health page."""
    minutes = timeline.bin_hours * 60
    middle = timedelta(hours=timeline.bin_hours / 2)
    reasons = sorted({r for b in timeline.bins for r in b.rejected})
    out = [("imported", [(b.start + middle, b.imports / minutes) for b in timeline.bins])]
    for reason in reasons:
        out.append(
            (
                f"refused: {reason}",
                [(b.start + middle, b.rejected.get(reason, 0) / minutes) for b in timeline.bins],
            )
        )
    return out
