"""RFC 3339 timestamps, UTC only, in one spelling.

The wire form is ``YYYY-MM-DDTHH:MM:SSZ`` or ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (exactly six
fraction digits, present only when the microseconds are non-zero). One instant has exactly one
spelling, so two honest nodes never produce different signed bytes for the same time. (The
strings do not sort chronologically when a fraction is present: compare ``parse_ts`` results.)

``parse_ts`` is a little more liberal than ``format_ts`` (1 to 6 fraction digits, ``+00:00``
for UTC) so that the edge can read what a human or another tool wrote; records themselves
only accept the canonical spelling (``is_canonical_ts``).
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

from lamarck.errors import InvalidRecord

__all__ = ["CANONICAL_TS_PATTERN", "format_ts", "is_canonical_ts", "parse_ts"]

#: The canonical wire spelling, as a regular expression (also published in the JSON Schema).
CANONICAL_TS_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{6})?Z$"

# ASCII digits only: ``\d`` in Python matches any Unicode digit, which ``datetime`` would then
# refuse with a less helpful message (or, worse, a future version might accept).
_PARSE_RE = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"T(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})"
    r"(?:\.(?P<frac>[0-9]{1,6}))?(?P<zone>Z|\+00:00)",
    re.ASCII,
)


def _bad(message: str, value: object) -> InvalidRecord:
    # Keep the offending value short in the error: it may be hostile and huge.
    return InvalidRecord(message, reason="bad_timestamp", value=repr(value)[:80])


def format_ts(dt: datetime) -> str:
    """Format a timezone-aware datetime as canonical RFC 3339 UTC (``...Z``).

    Raises ``InvalidRecord`` (reason ``bad_timestamp``) for a naive datetime: a time without a
    zone is a bug at the caller, not something to guess.
    """
    if not isinstance(dt, datetime):
        raise _bad("timestamp must be a datetime", dt)
    offset = dt.utcoffset()
    if offset is None:
        raise _bad("naive datetime; pass a timezone-aware UTC time", dt)
    utc = dt.astimezone(UTC) if offset != timedelta(0) else dt.replace(tzinfo=UTC)
    # Built by hand: strftime pads years below 1000 differently across platforms.
    base = (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    )
    if utc.microsecond:
        return f"{base}.{utc.microsecond:06d}Z"
    return f"{base}Z"


def parse_ts(s: str) -> datetime:
    """Parse an RFC 3339 UTC timestamp into a timezone-aware ``datetime`` in UTC.

    Accepts ``Z`` or ``+00:00`` and 1-6 fraction digits. Rejects (``InvalidRecord``, reason
    ``bad_timestamp``) any other offset, a missing zone, lower-case separators, leap seconds
    and anything malformed.
    """
    if not isinstance(s, str):
        raise _bad("timestamp must be a string", s)
    return _parse_str(s)


@functools.lru_cache(maxsize=4096)
def _parse_str(s: str) -> datetime:
    """``parse_ts`` of a string, kept per string: a record's timestamps are read at every
    stage that dates it (a datetime is immutable; a refusal raises and is never kept)."""
    m = _PARSE_RE.fullmatch(s)
    if m is None:
        raise _bad("not an RFC 3339 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.ffffff]Z)", s)
    frac = m.group("frac") or ""
    try:
        # Direct construction, not strptime: this sits on the record-parsing hot path.
        parsed = datetime(
            int(m.group("y")),
            int(m.group("mo")),
            int(m.group("d")),
            int(m.group("h")),
            int(m.group("mi")),
            int(m.group("s")),
            int(frac.ljust(6, "0")) if frac else 0,
            tzinfo=UTC,
        )
    except ValueError as exc:
        # Out-of-range fields (month 13, Feb 30, second 60): datetime cannot represent them.
        raise _bad(f"timestamp out of range: {exc}", s) from None
    return parsed


def is_canonical_ts(s: str) -> bool:
    """True if ``s`` parses and is spelled exactly as ``format_ts`` would spell it."""
    try:
        return format_ts(parse_ts(s)) == s
    except InvalidRecord:
        return False
