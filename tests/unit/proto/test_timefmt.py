"""RFC 3339 UTC timestamps: one spelling per instant, everything else refused."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lamarck.errors import InvalidRecord
from lamarck.proto.timefmt import CANONICAL_TS_PATTERN, format_ts, is_canonical_ts, parse_ts


def test_format_omits_zero_fraction_and_writes_six_digits_otherwise() -> None:
    assert format_ts(datetime(2024, 1, 15, 10, 30, tzinfo=UTC)) == "2024-01-15T10:30:00Z"
    assert format_ts(datetime(2024, 1, 15, 10, 30, 0, 5, tzinfo=UTC)) == (
        "2024-01-15T10:30:00.000005Z"
    )
    assert format_ts(datetime(9, 1, 1, tzinfo=UTC)) == "0009-01-01T00:00:00Z"


def test_format_converts_other_zones_to_utc() -> None:
    plus2 = timezone(timedelta(hours=2))
    assert format_ts(datetime(2024, 1, 1, 1, 0, tzinfo=plus2)) == "2023-12-31T23:00:00Z"


def test_format_refuses_naive_datetimes() -> None:
    with pytest.raises(InvalidRecord) as info:
        format_ts(datetime(2024, 1, 1))
    assert info.value.reason == "bad_timestamp"


def test_parse_accepts_z_plus_zero_and_short_fractions() -> None:
    expected = datetime(2024, 1, 15, 10, 30, 0, 500000, tzinfo=UTC)
    assert parse_ts("2024-01-15T10:30:00.5Z") == expected
    assert parse_ts("2024-01-15T10:30:00.500000+00:00") == expected
    assert parse_ts("2024-01-15T10:30:00Z").tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-15T10:30:00+01:00",
        "2024-01-15T10:30:00-00:00",
        "2024-01-15T10:30:00",
        "2024-01-15T10:30:00z",
        "2024-01-15t10:30:00Z",
        "2024-01-15 10:30:00Z",
        "2024-01-15T10:30Z",
        "2024-01-15T10:30:00.1234567Z",
        "2024-01-15T10:30:60Z",
        "2024-02-30T00:00:00Z",
        "2024-13-01T00:00:00Z",
        "٢٠٢٤-01-15T10:30:00Z",
        " 2024-01-15T10:30:00Z",
        "2024-01-15T10:30:00Z\n",
        "",
        None,
        1705314600,
    ],
)
def test_parse_rejects_non_utc_naive_and_malformed(text: Any) -> None:
    with pytest.raises(InvalidRecord) as info:
        parse_ts(text)
    assert info.value.reason == "bad_timestamp"


def test_only_the_format_ts_spelling_is_canonical() -> None:
    assert is_canonical_ts("2024-01-15T10:30:00Z")
    assert is_canonical_ts("2024-01-15T10:30:00.500000Z")
    assert not is_canonical_ts("2024-01-15T10:30:00.5Z")
    assert not is_canonical_ts("2024-01-15T10:30:00.000000Z")
    assert not is_canonical_ts("2024-01-15T10:30:00+00:00")


@given(st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7))])))
def test_format_then_parse_is_the_same_instant_and_stable(dt: datetime) -> None:
    try:
        text = format_ts(dt)
    except (OverflowError, InvalidRecord):
        return  # converting to UTC left the representable range (year 1 or 9999 edges)
    assert re.fullmatch(CANONICAL_TS_PATTERN, text)
    back = parse_ts(text)
    assert back == dt
    assert format_ts(back) == text
    assert is_canonical_ts(text)
