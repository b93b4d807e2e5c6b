"""Canonical bytes (RFC 8785, JSON Canonicalization Scheme) and content hashes.

Every signature in lamarck covers canonical bytes, so every node must produce the same bytes
for the same value. The canonical form is computed by the ``rfc8785`` package, never by code
of ours: a home-grown canonicaliser is exactly where two implementations quietly disagree.

Received records are handled by :func:`parse_received`. It parses the exact bytes once and
decides whether they *are* their own canonical form. ``rfc8785`` is pure Python and costs more
than the Ed25519 verification it feeds, so for the common case the check runs on the C
``json`` encoder instead, and only where that encoder provably writes the same bytes as RFC
8785 (see :class:`ReceivedJson`). Everything else falls back to ``rfc8785``; the property tests
compare both paths on generated JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, NoReturn

import rfc8785

from lamarck.errors import InvalidRecord

__all__ = [
    "MAX_SAFE_INTEGER",
    "ReceivedJson",
    "canonical_bytes",
    "parse_json",
    "parse_received",
    "sha256_hex",
]

# I-JSON (RFC 7493) / RFC 8785 §3.2.2.3: JSON numbers are IEEE doubles, so integers beyond
# 2**53 - 1 cannot be represented exactly; rfc8785 refuses them and so do we.
MAX_SAFE_INTEGER = 2**53 - 1

# UTF-8 lead bytes of code points above U+FFFF. Only such characters sort differently under
# RFC 8785 (UTF-16 code units) and Python's ``sorted`` (code points).
_ASTRAL_LEADS = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")


def canonical_bytes(obj: Any) -> bytes:
    """Return the RFC 8785 canonical JSON bytes of ``obj`` (via the ``rfc8785`` package).

    Raises ``InvalidRecord(reason="not_canonicalizable")`` for values JSON cannot carry
    exactly: NaN or infinite floats, integers beyond +-(2**53 - 1), non-string object keys,
    lone surrogates, or types that are not JSON.
    """
    try:
        return rfc8785.dumps(obj)
    except rfc8785.CanonicalizationError as exc:
        raise InvalidRecord(str(exc), reason="not_canonicalizable") from exc
    except (TypeError, ValueError, RecursionError) as exc:
        # rfc8785 lets a few Python errors through (e.g. sorting keys of mixed types).
        raise InvalidRecord(str(exc), reason="not_canonicalizable") from exc


def sha256_hex(data: bytes) -> str:
    """Return the lowercase hex SHA-256 digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


class _NeedsRfc8785(Exception):
    """Raised inside the JSON parser when the value leaves the fast path's proven domain."""


def _reject_constant(name: str) -> NoReturn:
    # json accepts NaN, Infinity and -Infinity by default; JSON (RFC 8259) does not.
    raise InvalidRecord(f"{name} is not JSON", reason="malformed")


def _fast_float(token: str) -> float:
    # The C encoder writes floats with repr(); RFC 8785 uses ECMAScript's format. They agree
    # exactly when repr() is plain positional notation with a fractional part: no exponent
    # ("1e-05" vs "0.00001") and no ".0" (repr(1.0) == "1.0" vs "1"). rfc8785 itself builds
    # its output from str(f) digits, so the digits are identical in that case.
    value = float(token)
    text = repr(value)
    if "e" in text or text.endswith(".0") or "n" in text:  # "n": inf / nan
        raise _NeedsRfc8785
    return value


def _fast_int(token: str) -> int:
    # The C encoder writes any int; RFC 8785 refuses those beyond the IEEE-exact range.
    value = int(token)
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise _NeedsRfc8785
    return value


def _json_number_int(token: str) -> int | float:
    # A JSON number is an IEEE double (I-JSON, RFC 7493). RFC 8785 writes the double 1e20 as
    # "100000000000000000000", which Python would read back as an int that rfc8785 refuses.
    # Reading an integer token beyond 2**53 - 1 as the double it denotes (as JavaScript does)
    # makes every canonical output parse back to a value with the same canonical bytes; a
    # token that is not the canonical spelling of its double (2**53 + 1) then fails the
    # canonical check because the double is written differently.
    value = int(token)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    as_double = float(token)
    # Beyond the largest double: keep the int, which rfc8785 refuses (not canonicalisable).
    return value if math.isinf(as_double) else as_double


# Sorted keys, no whitespace, raw UTF-8, control characters escaped exactly like RFC 8785
# (\b \f \n \r \t short forms, other C0 as lowercase \u00XX); NaN/inf refused (never present:
# the parser refused them). One instance: json.dumps would build a new encoder per call.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
_plain_dumps = _ENCODER.encode


def _has_astral(raw: bytes) -> bool:
    # F0..F4 are exactly the UTF-8 lead bytes of code points above U+FFFF (raw is valid
    # UTF-8, checked before). Substring search runs at memchr speed, ~5x a regex here.
    return not raw.isascii() and any(lead in raw for lead in _ASTRAL_LEADS)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRecord("record is not valid UTF-8", reason="malformed") from exc


def parse_json(raw: bytes) -> Any:
    """Parse ``raw`` as strict JSON (UTF-8, no NaN/Infinity); ``InvalidRecord`` otherwise.

    Integer tokens beyond +-(2**53 - 1) are read as the double they denote (JSON numbers are
    doubles), so canonical bytes always parse back to a value with the same canonical bytes.
    """
    try:
        return json.loads(_decode(raw), parse_int=_json_number_int, parse_constant=_reject_constant)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidRecord(f"record is not valid JSON: {exc}", reason="malformed") from exc


@dataclass(frozen=True, slots=True)
class ReceivedJson:
    """The exact bytes received, their parsed value, and whether the bytes are canonical.

    ``fast`` records that the value lies in the domain where the C ``json`` encoder
    (``sort_keys``, compact separators, ``ensure_ascii=False``) writes exactly the RFC 8785
    bytes. The encoders differ in three places only, and ``fast`` excludes all three:

    1. floats: excluded unless ``repr`` is positional with a fraction (see ``_fast_float``);
    2. integers beyond +-(2**53 - 1): RFC 8785 refuses them, ``json`` writes them;
    3. key order: RFC 8785 sorts by UTF-16 code units, Python by code points; the two orders
       differ only for characters above U+FFFF, so any 4-byte UTF-8 sequence in the received
       bytes leaves the fast path. (If such a character arrived escaped instead, the bytes are
       not canonical either way: RFC 8785 never escapes it, and neither does ``json`` here;
       ``fast`` is therefore kept only for bytes found canonical.)

    Strings are escaped identically by both; lone surrogates make both fail to encode. The
    domain is closed under removing members, so it also holds for the value without its
    ``signature`` block (:meth:`canonical_bytes_without`). The property tests compare this
    path with rfc8785 on generated JSON.
    """

    raw: bytes
    value: Any
    is_canonical: bool
    fast: bool
    #: (key, canonical bytes of the top-level object without that member), when computed
    #: while parsing (``parse_received(raw, detach=key)``).
    detached: tuple[str, bytes] | None = None

    def canonical_bytes_of(self, value: Any) -> bytes:
        """Canonical bytes of ``value``, which must be built only from parts of ``self.value``."""
        if self.fast:
            try:
                return _plain_dumps(value).encode("utf-8")
            except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as exc:
                raise InvalidRecord(str(exc), reason="not_canonicalizable") from exc
        return canonical_bytes(value)

    def canonical_bytes_without(self, key: str) -> bytes:
        """Canonical bytes of the top-level object with member ``key`` removed."""
        if self.detached is not None and self.detached[0] == key:
            return self.detached[1]
        if not isinstance(self.value, dict):
            raise InvalidRecord("record is not a JSON object", reason="malformed")
        return self.canonical_bytes_of({k: v for k, v in self.value.items() if k != key})


def _fast_canonical(
    text: str, value: Any, detach: str | None
) -> tuple[bool, tuple[str, bytes] | None]:
    """Within the fast domain: are the bytes canonical, and the form without ``detach``."""
    if detach is None or not isinstance(value, dict) or detach not in value:
        return _plain_dumps(value) == text, None
    # One serialisation for both answers. With sorted keys, the object's canonical text is
    # the members below ``detach``, then ``detach``'s member, then those above, joined by
    # commas; without ``detach`` it is the same minus that member. Code point order equals
    # UTF-16 order here (no character above U+FFFF in canonical fast-domain bytes).
    below = _plain_dumps({k: v for k, v in value.items() if k < detach})[1:-1]
    above = _plain_dumps({k: v for k, v in value.items() if k > detach})[1:-1]
    member = _plain_dumps(detach) + ":" + _plain_dumps(value[detach])
    whole = "{" + ",".join(p for p in (below, member, above) if p) + "}"
    if whole != text:
        return False, None
    without = "{" + ",".join(p for p in (below, above) if p) + "}"
    return True, (detach, without.encode("utf-8"))


def parse_received(raw: bytes, *, detach: str | None = None) -> ReceivedJson:
    """Parse received bytes once and decide whether they are exactly their canonical form.

    Raises ``InvalidRecord(reason="malformed")`` when ``raw`` is not UTF-8 JSON. Bytes that
    parse but are not the canonical spelling of their value come back with
    ``is_canonical=False``: whitespace, unsorted or duplicate keys, escapes RFC 8785 does not
    write, a value it cannot canonicalise, or a number it spells differently (the token
    ``9007199254740993`` denotes the double 2**53, canonically ``9007199254740992``).

    ``detach`` (e.g. ``"signature"``) asks for the canonical bytes of the top-level object
    without that member as well, computed in the same pass (``canonical_bytes_without``).
    """
    text = _decode(raw)
    if not _has_astral(raw):
        try:
            value = json.loads(
                text,
                parse_float=_fast_float,
                parse_int=_fast_int,
                parse_constant=_reject_constant,
            )
        except _NeedsRfc8785:
            pass  # a number outside the fast domain: rfc8785 decides below
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InvalidRecord(f"record is not valid JSON: {exc}", reason="malformed") from exc
        else:
            try:
                is_canonical, detached = _fast_canonical(text, value, detach)
            except (ValueError, RecursionError):
                # Only reached through a lone surrogate written as an escape (\ud800), which
                # has no canonical form at all.
                is_canonical, detached = False, None
            # Only canonical bytes prove the value holds no character above U+FFFF (one
            # could have arrived as a \ud83d\ude00 escape); otherwise later work uses rfc8785.
            return ReceivedJson(raw, value, is_canonical, fast=is_canonical, detached=detached)
    value = parse_json(raw)
    try:
        is_canonical = canonical_bytes(value) == raw
    except InvalidRecord:
        is_canonical = False
    return ReceivedJson(raw=raw, value=value, is_canonical=is_canonical, fast=False)
