"""RecordLimits: the issue's numbers by default, and unusable limits refused on construction."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lamarck.errors import ConfigError
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits


def test_defaults_are_the_numbers_of_the_issue() -> None:
    assert DEFAULT_LIMITS.max_content_bytes == 4096
    assert DEFAULT_LIMITS.max_record_bytes == 65536
    assert DEFAULT_LIMITS.max_evidence == 64
    assert DEFAULT_LIMITS.max_tags == 32
    assert RecordLimits() == DEFAULT_LIMITS


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(RecordLimits)])
@pytest.mark.parametrize("value", [0, -1, True, 1.5, "10", None, 2**53])
def test_every_limit_must_be_a_positive_safe_int_and_the_error_names_it(
    field: str, value: Any
) -> None:
    with pytest.raises(ConfigError) as info:
        RecordLimits(**{field: value})
    assert info.value.details["field"] == field
    assert field in str(info.value)


def test_a_part_may_not_exceed_the_whole() -> None:
    with pytest.raises(ConfigError, match="max_content_bytes"):
        RecordLimits(max_content_bytes=70000)
    with pytest.raises(ConfigError, match="max_tag_chars"):
        RecordLimits(max_tag_chars=300)
    with pytest.raises(ConfigError, match="max_short_chars"):
        RecordLimits(max_short_chars=2000)


def test_limits_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_LIMITS.max_tags = 99  # type: ignore[misc]


def test_tighter_and_looser_limits_are_allowed_when_consistent() -> None:
    assert RecordLimits(max_tags=1, max_record_bytes=8192).max_tags == 1
    assert RecordLimits(max_record_bytes=1 << 20, max_content_bytes=1 << 16).max_content_bytes


DEEP = b'{"content": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"


def test_a_record_nested_past_the_depth_limit_is_refused_before_any_decoder_recurses() -> None:
    from lamarck.errors import InvalidRecord
    from lamarck.proto.memory import parse_memory
    from lamarck.proto.signed import SignedMemory

    assert len(DEEP) < DEFAULT_LIMITS.max_record_bytes
    for parse in (SignedMemory.from_json, parse_memory):
        with pytest.raises(InvalidRecord) as info:
            parse(DEEP)
        assert info.value.reason == "too_deep"


def test_depth_counts_brackets_that_nest_not_those_inside_strings() -> None:
    from lamarck.proto.limits import too_deep

    assert not too_deep(b"[" * 32 + b"]" * 32, 32)
    assert too_deep(b"[" * 33 + b"]" * 33, 32)
    # 40 brackets in a string, and an escaped quote that does not end it.
    text = b'{"a": "' + b"[" * 40 + b'\\" [[[[", "b": [[1]]}'
    assert not too_deep(text, 3)
    assert too_deep(text, 2)
    # Siblings add no depth.
    assert not too_deep(b"[" + b"[1]," * 100 + b"[2]]", 2)
