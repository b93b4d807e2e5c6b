"""Injected time: the core never reads the wall clock itself; callers pass a ``Clock``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "FixedClock", "SystemClock", "utcnow"]


class Clock(Protocol):
    """Anything that tells the current UTC time (timezone-aware)."""

    def now(self) -> datetime:
        """Return the current time, timezone-aware in UTC."""
        ...


class SystemClock:
    """The real wall clock, used only at the edge (daemon, CLI)."""

    def now(self) -> datetime:
        """Return ``datetime.now(UTC)``."""
        return datetime.now(UTC)


class FixedClock:
    """A clock that stands still until told to move; for deterministic tests and simulation."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FixedClock needs a timezone-aware start")

    def now(self) -> datetime:
        """Return the frozen time."""
        return self._now

    def advance(self, seconds: float) -> datetime:
        """Move forward by ``seconds`` and return the new time."""
        self._now += timedelta(seconds=seconds)
        return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (timezone-aware)."""
        if when.tzinfo is None:
            raise ValueError("FixedClock.set needs a timezone-aware datetime")
        self._now = when


def utcnow() -> datetime:
    """The wall clock; for the edge only (core code takes a ``Clock``)."""
    return datetime.now(UTC)
