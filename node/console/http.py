"""A deliberately small HTTP/1.1 layer for the console, on ``asyncio`` streams.

One request per connection (the response says ``Connection: close``), no chunked bodies, no
keep-alive, no TLS (the console listens on loopback by default; off loopback put it behind a
TLS proxy on a network the operator chose: its session cookie is as good as the login).
Request lines, headers and bodies are bounded by :class:`ConsoleParams`; anything malformed
or too large is refused with a typed error the server turns into 400 / 413 / 431. Every
response carries headers that keep pages from being framed, sniffed or cached, and a
Content-Security-Policy that allows nothing from outside the node.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field, fields
from http import HTTPStatus
from urllib.parse import parse_qsl, unquote, urlsplit

from lamarck.errors import ConfigError, InvalidRecord

__all__ = [
    "MAX_ACTIVITY_BINS",
    "SECURITY_HEADERS",
    "ConsoleParams",
    "Request",
    "Response",
    "encode_response",
    "read_request",
]

#: Sent with every response: nothing external, no framing, no sniffing, no caching.
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
)


#: The most bins the health page's activity plot draws (its window over its bin width).
MAX_ACTIVITY_BINS = 400


@dataclass(frozen=True, slots=True)
class ConsoleParams:
    """Bounds of the console's HTTP layer and pages; every field positive."""

    # Longest request line and all headers together, in bytes.
    max_request_line: int = 8192
    max_header_bytes: int = 16384
    # Largest request body (a decision form), in bytes.
    max_body_bytes: int = 65536
    # Seconds a client has to send its whole request.
    read_timeout_s: float = 10.0
    # Lessons listed on the lessons page (highest confidence first).
    lessons_shown: int = 500
    # Longest operator note kept with a decision, in characters.
    note_max_chars: int = 500
    # The health page's imports-and-rejections plot: hours shown back from now, the width of
    # one bin in hours (24: by day, 1: by hour; at most ``MAX_ACTIVITY_BINS`` bins in the
    # window), and at most this many imported lessons and rejection log rows read to draw it.
    activity_window_h: float = 336.0
    activity_bin_h: float = 24.0
    activity_max_rows: int = 20000
    # Bins follow the node's age: the finest width of a fixed ladder (a minute, 5 and 15
    # minutes, an hour, 6 hours, a day; never finer than needed, never wider than
    # activity_bin_h) that draws the node's whole history in at most this many bins.
    activity_target_bins: int = 60
    # Peers whose score over time the reputation page draws (the lowest scores first).
    trend_peers: int = 8
    # Seconds a console session lasts after its login, and most sessions kept at once (the
    # oldest is forgotten first).
    session_ttl_s: float = 43200.0
    max_sessions: int = 64

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
        if self.activity_bin_h > self.activity_window_h:
            raise ConfigError(
                "invalid activity_bin_h: must be <= activity_window_h",
                reason="invalid_params",
                field="activity_bin_h",
            )
        if math.ceil(self.activity_window_h / self.activity_bin_h) > MAX_ACTIVITY_BINS:
            raise ConfigError(
                f"invalid activity_window_h: more than {MAX_ACTIVITY_BINS} bins",
                reason="invalid_params",
                field="activity_window_h",
            )


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed request: method, decoded path, query, headers (lower-case names), body."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def form(self) -> dict[str, str]:
        """The body as an ``application/x-www-form-urlencoded`` form (last value wins)."""
        kind = self.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise InvalidRecord("a form must be url-encoded", reason="bad_form")
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidRecord("a form must be UTF-8", reason="bad_form") from e
        return dict(parse_qsl(text, keep_blank_values=True))

    def cookie(self, name: str) -> str | None:
        """The value of cookie ``name``, if sent."""
        for part in self.headers.get("cookie", "").split(";"):
            key, sep, value = part.strip().partition("=")
            if sep and key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class Response:
    """A response: status, body, its content type and any extra headers."""

    status: int
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def _bad(message: str, reason: str = "bad_request") -> InvalidRecord:
    return InvalidRecord(message, reason=reason)


async def _line(reader: asyncio.StreamReader, limit: int) -> bytes:
    """One CRLF-terminated line of at most ``limit`` bytes."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError as e:
        raise _bad("request line or header too long", "header_too_large") from e
    except asyncio.IncompleteReadError as e:
        raise _bad("connection closed mid-request") from e
    if len(line) > limit:
        raise _bad("request line or header too long", "header_too_large")
    return line.rstrip(b"\r\n")


async def _read(reader: asyncio.StreamReader, p: ConsoleParams) -> Request:
    request_line = (await _line(reader, p.max_request_line)).decode("latin-1")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _bad("malformed request line")
    method, target, _ = parts
    headers: dict[str, str] = {}
    total = 0
    while True:
        line = await _line(reader, p.max_header_bytes)
        if not line:
            break
        total += len(line)
        if total > p.max_header_bytes:
            raise _bad("headers too large", "header_too_large")
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name.strip():
            raise _bad("malformed header")
        headers[name.strip().lower()] = value.strip()
    if "transfer-encoding" in headers:
        raise _bad("chunked bodies are not accepted")
    length_text = headers.get("content-length", "0")
    if not length_text.isdigit():
        raise _bad("bad Content-Length")
    length = int(length_text)
    if length > p.max_body_bytes:
        raise _bad("request body too large", "too_large")
    try:
        body = await reader.readexactly(length) if length else b""
    except asyncio.IncompleteReadError as e:
        raise _bad("connection closed mid-body") from e
    split = urlsplit(target)
    if split.scheme or split.netloc or not split.path.startswith("/"):
        raise _bad("only origin-form request targets are accepted")
    query = dict(parse_qsl(split.query, keep_blank_values=True))
    return Request(method.upper(), unquote(split.path), query, headers, body)


async def read_request(reader: asyncio.StreamReader, p: ConsoleParams) -> Request:
    """Read one request within ``p.read_timeout_s``; ``InvalidRecord`` when it is malformed,
    too large or too slow."""
    try:
        async with asyncio.timeout(p.read_timeout_s):
            return await _read(reader, p)
    except TimeoutError as e:
        raise _bad("request not received in time", "request_timeout") from e


def encode_response(response: Response) -> bytes:
    """The response's bytes: status line, headers (security headers included), body."""
    reason = HTTPStatus(response.status).phrase
    lines = [
        f"HTTP/1.1 {response.status} {reason}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
        "Connection: close",
        *(f"{k}: {v}" for k, v in SECURITY_HEADERS),
        *(f"{k}: {v}" for k, v in response.headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + response.body
