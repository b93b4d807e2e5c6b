"""Imports and rejections over time, binned for the health page's plot.

A pure function over times: when each lesson was imported (the ``imported`` events of the
lesson event log) and when each record was refused, with the refusal's reason (the rejection
log's ``received_at``). Bins are ``ConsoleParams.activity_bin_h`` hours wide (24: one a day,
1: one an hour) and aligned on multiples of that width since the Unix epoch, so a day's bin
runs from midnight UTC to midnight and the same event always lands in the same bin; the last
bin is the one holding ``now``, and ``activity_window_h`` hours of bins are kept. Times
outside the bins (older, or ahead of ``now``'s bin) are not counted. ``bins_for_age`` fits
the width and window to how old the node's history is, so a node minutes old is drawn in
minutes and one weeks old in days.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from lamarck.errors import InvalidRecord
from lamarck.node.console.http import ConsoleParams

__all__ = [
    "BIN_LADDER_H",
    "ActivityBin",
    "ActivityTimeline",
    "activity_timeline",
    "bins_for_age",
    "window_start",
]

#: Bin widths the plots choose from, in hours: a minute, 5 and 15 minutes, an hour, 6 hours,
#: a day.
BIN_LADDER_H: tuple[float, ...] = (1 / 60, 5 / 60, 0.25, 1.0, 6.0, 24.0)
#: Fewest bins drawn, however young the node (one bar says nothing about a trend).
_MIN_BINS = 10

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ActivityBin:
    """One bin ``[start, end)``: lessons imported, and records refused by reason."""

    start: datetime
    end: datetime
    imports: int = 0
    rejected: Mapping[str, int] = field(default_factory=dict)

    @property
    def rejections(self) -> int:
        """Records refused in this bin, whatever the reason."""
        return sum(self.rejected.values())


@dataclass(frozen=True, slots=True)
class ActivityTimeline:
    """Consecutive bins, oldest first, each ``bin_hours`` wide."""

    bin_hours: float
    bins: tuple[ActivityBin, ...]

    @property
    def imports(self) -> int:
        """Lessons imported over the whole window."""
        return sum(b.imports for b in self.bins)

    @property
    def rejections(self) -> int:
        """Records refused over the whole window."""
        return sum(b.rejections for b in self.bins)


def bins_for_age(age: timedelta, p: ConsoleParams) -> ConsoleParams:
    """``p`` with its bin width and window fitted to a node whose history is ``age`` long.

    The width is the finest of ``BIN_LADDER_H`` (at most ``p.activity_bin_h``) that draws the
    whole history in at most ``p.activity_target_bins`` bins (a node minutes old: minute
    bins; hours old: 5 or 15 minutes, or hours; weeks old: days); the window holds the
    history plus the bin being filled, at least ``_MIN_BINS`` bins, at most
    ``p.activity_window_h`` hours.
    """
    hours = max(0.0, age.total_seconds() / 3600)
    ladder = [w for w in BIN_LADDER_H if w <= p.activity_bin_h] or [p.activity_bin_h]
    width = next((w for w in ladder if hours / w <= p.activity_target_bins), p.activity_bin_h)
    count = max(_MIN_BINS, math.ceil(hours / width) + 1)
    window = min(p.activity_window_h, width * count)
    if window < width:
        width = window
    return replace(p, activity_bin_h=width, activity_window_h=window)


def _aware(at: datetime) -> datetime:
    """``at`` in UTC; a naive time is refused (every stored time is UTC-aware)."""
    if at.tzinfo is None:
        raise InvalidRecord("activity times must be timezone-aware (UTC)", reason="naive_timestamp")
    return at.astimezone(UTC)


def _edges(now: datetime, p: ConsoleParams) -> tuple[datetime, timedelta, int]:
    """The first bin's start, a bin's width and how many bins."""
    width = timedelta(hours=p.activity_bin_h)
    # Rounded before the ceiling: a window of exactly n fractional-hour bins is n bins.
    count = math.ceil(round(p.activity_window_h / p.activity_bin_h, 6))
    # The bin holding now starts at the last multiple of the width since the epoch.
    last_start = _EPOCH + width * math.floor((_aware(now) - _EPOCH) / width)
    return last_start - width * (count - 1), width, count


def window_start(now: datetime, p: ConsoleParams) -> datetime:
    """When the oldest bin starts: events before it are not drawn (the loader reads from it)."""
    return _edges(now, p)[0]


def activity_timeline(
    imports: Iterable[datetime],
    rejections: Iterable[tuple[datetime, str]],
    *,
    now: datetime,
    p: ConsoleParams,
) -> ActivityTimeline:
    """Bin import times and ``(time, reason)`` rejections into the window ending with the bin
    that holds ``now``."""
    first, width, count = _edges(now, p)
    end = first + width * count

    def slot(at: datetime) -> int | None:
        at = _aware(at)
        if at < first or at >= end:
            return None
        return int((at - first) // width)

    imported = [0] * count
    for at in imports:
        i = slot(at)
        if i is not None:
            imported[i] += 1
    refused: list[Counter[str]] = [Counter() for _ in range(count)]
    for at, reason in rejections:
        i = slot(at)
        if i is not None:
            refused[i][reason] += 1
    bins = tuple(
        ActivityBin(
            start=first + width * i,
            end=first + width * (i + 1),
            imports=imported[i],
            rejected=dict(sorted(refused[i].items())),
        )
        for i in range(count)
    )
    return ActivityTimeline(bin_hours=p.activity_bin_h, bins=bins)
