"""Canonical bytes: RFC 8785 vectors, error translation, agreement with an independent JCS
implementation (the ``jcs`` package), and the fast canonical check on received bytes."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import jcs
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import InvalidRecord
from lamarck.proto.canonical import (
    MAX_SAFE_INTEGER,
    canonical_bytes,
    parse_json,
    parse_received,
    sha256_hex,
)

# Floats that sit on the boundaries of ECMAScript's number formatting (RFC 8785 §3.2.2.3):
# positional below 1e21 and down to 1e-6, exponent notation outside; the smallest subnormal;
# negative zero; the largest finite double; integers at the edge of IEEE exactness.
AWKWARD_FLOATS = [
    1e21,
    1e20,
    999999999999999900000.0,
    5e-324,
    -0.0,
    1e-7,
    1e-6,
    0.000001234,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    2.0**53,
    9007199254740991.0,
    0.1,
    1.0,
    -1.5,
    123456789012345680000.0,
    4.35,
    0.002,
    1e16,
    1.5e-5,
    333333333.3333333,
]

# Lone surrogates are excluded: no UTF-8 encoding exists for them, and both implementations
# refuse them (checked separately below).
_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_safe_int = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
_float = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(AWKWARD_FLOATS),
)
# Integers beyond +-(2**53 - 1) are deliberately not generated for the jcs comparison: the
# two implementations differ by design there, not by a bug. rfc8785 refuses them (I-JSON,
# RFC 8785 §3.2.2.3 requires exact IEEE representation); jcs silently rounds them through
# float(), e.g. 2**53 + 1 -> "9007199254740992". test_out_of_range_integers_are_refused
# pins rfc8785's behaviour instead.
_json_scalar = st.one_of(st.none(), st.booleans(), _safe_int, _float, _text)
_json = st.recursive(
    _json_scalar,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(_text, children, max_size=5),
    ),
    max_leaves=25,
)


def test_rfc8785_key_order_is_by_utf16_code_units() -> None:
    # RFC 8785 §3.2.3: the sorting example.
    obj = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    keys = list(json.loads(canonical_bytes(obj)))
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1e21, b"1e+21"),
        (1e20, b"100000000000000000000"),
        (5e-324, b"5e-324"),
        (-0.0, b"0"),
        (1e-7, b"1e-7"),
        (1e-6, b"0.000001"),
        (1.0, b"1"),
        (0.1, b"0.1"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        (9007199254740991, b"9007199254740991"),
        (-9007199254740991, b"-9007199254740991"),
    ],
)
def test_numbers_follow_ecmascript_formatting(value: float, expected: bytes) -> None:
    assert canonical_bytes(value) == expected


def test_strings_escape_only_what_rfc8785_escapes() -> None:
    s = '\u0000\u001f\b\f\n\r\t"\\/\u007f\u2028é€😀'
    expected = '"\\u0000\\u001f\\b\\f\\n\\r\\t\\"\\\\/\u007f\u2028é€😀"'.encode()
    assert canonical_bytes(s) == expected


def test_canonical_bytes_have_no_whitespace_and_sorted_keys() -> None:
    assert canonical_bytes({"b": [1, {"d": None, "c": True}], "a": "x"}) == (
        b'{"a":"x","b":[1,{"c":true,"d":null}]}'
    )


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        math.inf,
        -math.inf,
        2**53,
        -(2**53),
        {1: "non-string key"},
        {"k": [math.nan]},
        "\ud800",
        {"k": object()},
        b"bytes",
    ],
    # Not repr: an object's repr names its address, and pytest-xdist workers must collect
    # the same ids.
    ids=lambda bad: re.sub(r" at 0x[0-9a-f]+", "", repr(bad)),
)
def test_values_json_cannot_carry_are_not_canonicalizable(bad: Any) -> None:
    with pytest.raises(InvalidRecord) as info:
        canonical_bytes(bad)
    assert info.value.reason == "not_canonicalizable"


def test_out_of_range_integers_are_refused() -> None:
    assert canonical_bytes(MAX_SAFE_INTEGER) == str(MAX_SAFE_INTEGER).encode()
    with pytest.raises(InvalidRecord):
        canonical_bytes(MAX_SAFE_INTEGER + 1)


def test_sha256_hex_is_lowercase_hex() -> None:
    assert sha256_hex(b"abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


@settings(max_examples=400)
@given(_json)
def test_canonical_bytes_match_independent_jcs(value: Any) -> None:
    assert canonical_bytes(value) == jcs.canonicalize(value)


@given(st.sampled_from(AWKWARD_FLOATS))
def test_awkward_floats_match_independent_jcs(value: float) -> None:
    assert canonical_bytes(value) == jcs.canonicalize(value)
    assert canonical_bytes({"k": [value]}) == jcs.canonicalize({"k": [value]})


@given(st.dictionaries(st.text(min_size=1, max_size=4), _safe_int, min_size=2, max_size=8))
def test_unicode_key_order_matches_independent_jcs(value: dict[str, int]) -> None:
    # Keys drawn from the whole of Unicode (hypothesis' default alphabet includes astral
    # planes), where UTF-16 and code point order differ.
    try:
        expected = jcs.canonicalize(value)
    except UnicodeEncodeError:
        # Lone surrogate: no UTF-8 form exists; both implementations refuse.
        with pytest.raises(InvalidRecord):
            canonical_bytes(value)
        return
    assert canonical_bytes(value) == expected


# ---- received bytes: the fast canonical check -------------------------------------------


def _serialisations(value: Any) -> list[bytes]:
    """Several spellings of the same JSON value; only the RFC 8785 one is canonical."""
    out = [rfc8785.dumps(value)]
    out.append(
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    )
    out.append(json.dumps(value, ensure_ascii=True).encode())
    out.append(json.dumps(value, indent=1, ensure_ascii=False).encode())
    return out


@settings(max_examples=400)
@given(_json)
def test_received_bytes_are_canonical_exactly_when_rfc8785_says_so(value: Any) -> None:
    for raw in _serialisations(value):
        received = parse_received(raw)
        assert received.is_canonical == (rfc8785.dumps(parse_json(raw)) == raw), raw
        assert received.value == parse_json(raw)


@settings(max_examples=400)
@given(_json)
def test_every_canonical_form_parses_back_to_itself(value: Any) -> None:
    # Whatever can be signed can be verified: canonical bytes are recognised as canonical.
    raw = canonical_bytes(value)
    assert parse_received(raw).is_canonical
    assert canonical_bytes(parse_json(raw)) == raw


@settings(max_examples=300)
@given(st.dictionaries(_text, _json, max_size=6), _text)
def test_canonical_bytes_without_a_member_match_rfc8785(value: dict[str, Any], key: str) -> None:
    value = {**value, key: {"x": 1}}
    reduced = {k: v for k, v in value.items() if k != key}
    for detach in (None, key):
        received = parse_received(rfc8785.dumps(value), detach=detach)
        assert received.is_canonical
        assert received.canonical_bytes_without(key) == rfc8785.dumps(reduced)


@settings(max_examples=300)
@given(st.dictionaries(_text, _json, max_size=6), _text, _json)
def test_detaching_a_member_while_parsing_agrees_with_rfc8785(
    value: dict[str, Any], key: str, member: Any
) -> None:
    # The one-pass split (members below the key, the key, members above) must decide
    # canonicality exactly as rfc8785 does, for every spelling of the object.
    value = {**value, key: member}
    reduced = {k: v for k, v in value.items() if k != key}
    for raw in _serialisations(value):
        received = parse_received(raw, detach=key)
        parsed = parse_json(raw)
        assert received.is_canonical == (rfc8785.dumps(parsed) == raw), raw
        if received.is_canonical:
            assert received.canonical_bytes_without(key) == rfc8785.dumps(reduced)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1.0}',  # RFC 8785 writes 1
        b'{"a":1e-05}',  # RFC 8785 writes 0.00001
        b'{"a":1E+21}',  # upper-case exponent
        b'{"a":-0}',  # RFC 8785 writes 0
        b'{"a":1,"a":1}',  # duplicate key
        b'{"b":1,"a":2}',  # unsorted
        b'{"a": 1}',  # whitespace
        b'{"a":"\\u00e9"}',  # escaped non-control character
        b'{"a":"\\ud83d\\ude00"}',  # escaped astral character
        b'{"\\ud83d\\ude00":1,"\xef\xac\xb3":2}',  # escaped astral key, sorts differently
        b'{"a":9007199254740993}',  # no double equals it
        b'{"a":"\\ud800"}',  # lone surrogate
        b"\xef\xbb\xbf{}",  # byte-order mark
        b'{"a":1}\n',  # trailing newline
    ],
)
def test_non_canonical_received_bytes_are_detected(raw: bytes) -> None:
    for detach in (None, "a", "b"):
        try:
            received = parse_received(raw, detach=detach)
        except InvalidRecord as exc:
            assert exc.reason == "malformed"
            return
        assert not received.is_canonical


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1e+21}',
        b'{"a":0.00001}',
        b'{"a":100000000000000000000}',  # the double 1e20, read back as that double
        b'{"a":9007199254740992}',  # the double 2**53
        # U+1F600 (UTF-16 D83D DE00) sorts before U+FB33 in UTF-16, after it in code points.
        b'{"\xf0\x9f\x98\x80":1,"\xef\xac\xb3":2}',
        b'{"a":[0.5,-7,"\xc3\xa9",null,true,false,{}]}',
    ],
)
def test_canonical_received_bytes_outside_the_fast_domain_are_accepted(raw: bytes) -> None:
    assert parse_received(raw).is_canonical
    assert parse_received(raw, detach="a").is_canonical


def test_python_code_point_order_is_not_canonical_for_astral_keys() -> None:
    assert not parse_received(b'{"\xef\xac\xb3":2,"\xf0\x9f\x98\x80":1}').is_canonical


@pytest.mark.parametrize(
    "raw", [b"", b"{", b"NaN", b'{"a":NaN}', b'{"a":Infinity}', b"\xff", b'{"a":"\xed\xa0\x80"}']
)
def test_invalid_json_is_malformed(raw: bytes) -> None:
    for parse in (parse_received, parse_json):
        with pytest.raises(InvalidRecord) as info:
            parse(raw)
        assert info.value.reason == "malformed"
