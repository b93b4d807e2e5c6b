"""The console's HTTP layer and its gatekeeping, without a browser: a real ConsoleApp over a
real OperatorServicer and the in-memory store, and the asyncio listener on 127.0.0.1:0."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from lamarck.domain.rows import (
    LessonEvent,
    QuarantineRow,
    RejectionRow,
)
from lamarck.health.params import HealthParams
from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.console.http import SECURITY_HEADERS, ConsoleParams, Request, Response
from lamarck.node.console.plots import PlotParams
from lamarck.node.console.server import COOKIE, ConsoleApp, console_hosts, start_console
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.reputation.params import ReputationParams
from tests.factories import lesson_row

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CSRF = "c" * 32
TOKEN = "operator-secret"


class Ticks:
    """A monotonic clock a test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def app(
    store: InMemoryLessonStore,
    quorum: Callable[[str], str] | None = None,
    *,
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1"),
    login_code: str | None = None,
    clock: Callable[[], float] | None = None,
    params: ConsoleParams | None = None,
) -> ConsoleApp:
    operator = OperatorServicer(
        store,
        FixedClock(NOW),
        pipeline=lambda: pytest.fail("unused"),
        health=HealthParams(),
        quorum=quorum,
    )
    sessions = iter(f"session-{n}" for n in range(100))
    return ConsoleApp(
        operator,
        lambda: store,
        reputation=lambda: None,
        params=params or ConsoleParams(),
        plot=PlotParams(),
        reputation_params=ReputationParams(),
        csrf_token=CSRF,
        token=TOKEN,
        hosts=hosts,
        login_code=login_code,
        clock=clock or Ticks(),
        new_session=lambda: next(sessions),
    )


#: What a script sends instead of a session cookie.
BEARER = {"authorization": f"Bearer {TOKEN}"}


def get(path: str, host: str = "127.0.0.1:8080", **headers: str) -> Request:
    return Request("GET", path, headers={"host": host, **headers})


def authed(path: str, host: str = "127.0.0.1:8080", **headers: str) -> Request:
    return get(path, host, **BEARER, **headers)


def post(path: str, body: str, host: str = "127.0.0.1:8080", **headers: str) -> Request:
    return Request(
        "POST",
        path,
        headers={
            "host": host,
            "content-type": "application/x-www-form-urlencoded",
            **headers,
        },
        body=body.encode(),
    )


def set_cookie(reply: Response) -> str:
    [cookie] = [v for k, v in reply.headers if k == "Set-Cookie"]
    return cookie


async def test_pages_answer_an_operator_and_embed_the_token() -> None:
    reply = await app(InMemoryLessonStore(dim=8)).handle(authed("/health"))
    assert reply.status == 200
    assert f'content="{CSRF}"'.encode() in reply.body


@pytest.mark.parametrize(
    "host", ["evil.example:8080", "127.0.0.1.nip.io:8080", "127.0.0.1.nip.io", "127.attacker.test"]
)
async def test_a_host_name_not_configured_exactly_is_refused(host: str) -> None:
    # A DNS name rebound to 127.0.0.1 (even one starting with "127.") is refused before any
    # credential is looked at.
    reply = await app(InMemoryLessonStore(dim=8)).handle(authed("/", host=host))
    assert reply.status == 403 and b"bad_host" in reply.body


async def test_configured_host_names_are_answered_exactly() -> None:
    console = app(InMemoryLessonStore(dim=8), hosts=("127.0.0.1", "Node.LAN"))
    assert (await console.handle(authed("/health", host="node.lan:8080"))).status == 200
    assert (await console.handle(authed("/health", host="node.lan.evil"))).status == 403
    assert console_hosts("0.0.0.0", ["node.lan"]) == {"127.0.0.1", "localhost", "::1", "node.lan"}
    assert "10.0.0.5" in console_hosts("10.0.0.5")


async def test_every_page_needs_the_operator_login_on_loopback_too() -> None:
    console = app(InMemoryLessonStore(dim=8))
    for path in ("/", "/health", "/quarantine", "/lessons", "/reputation"):
        reply = await console.handle(get(path))
        assert reply.status == 303 and ("Location", "/login") in reply.headers, path
    # The raw operator token in a cookie is not a session; a wrong bearer is refused.
    assert (await console.handle(get("/health", cookie=f"{COOKIE}={TOKEN}"))).status == 303
    assert (await console.handle(get("/health", authorization="Bearer nope"))).status == 303
    store = InMemoryLessonStore(dim=8)
    await store.quarantine(QuarantineRow("q1", "h", "lmk1src", ("outlier",), NOW, b"{}"))
    decided = await app(store).handle(post("/quarantine/q1/reject", f"csrf_token={CSRF}&note=x"))
    assert decided.status == 401
    # Another site's form is refused as such, whatever credentials it lacks.
    forged = post("/quarantine/q1/reject", "note=x", origin="http://evil.example")
    assert (await app(store).handle(forged)).status == 403
    assert [r.state for r in await store.list_quarantine(None)] == ["pending"]


async def test_login_sets_a_random_session_cookie_http_only_and_strict() -> None:
    console = app(InMemoryLessonStore(dim=8))
    ok = await console.handle(post("/login", f"csrf_token={CSRF}&token={TOKEN}"))
    assert ok.status == 303
    cookie = set_cookie(ok)
    assert cookie == f"{COOKIE}=session-0; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200"
    assert TOKEN not in cookie
    assert (await console.handle(get("/health", cookie=f"{COOKIE}=session-0"))).status == 200
    assert (await console.handle(get("/health", cookie=f"{COOKIE}=session-9"))).status == 303
    bad = await console.handle(post("/login", f"csrf_token={CSRF}&token=x"))
    assert bad.status == 401


async def test_the_one_time_login_url_opens_one_session_only() -> None:
    console = app(InMemoryLessonStore(dim=8), login_code="once")

    def login(code: str) -> Request:
        return Request("GET", "/login", {"code": code}, {"host": "127.0.0.1"})

    assert (await console.handle(get("/login"))).status == 200  # no code: the sign-in form
    wrong = await console.handle(login("nope"))
    assert wrong.status == 401 and b"bad_login_code" in wrong.body
    first = await console.handle(login("once"))
    assert first.status == 303 and set_cookie(first).startswith(f"{COOKIE}=session-0;")
    again = await console.handle(login("once"))
    assert again.status == 401 and b"bad_login_code" in again.body


async def test_a_session_expires_and_logout_ends_it() -> None:
    ticks = Ticks()
    console = app(InMemoryLessonStore(dim=8), clock=ticks, params=ConsoleParams(session_ttl_s=60))
    await console.handle(post("/login", f"csrf_token={CSRF}&token={TOKEN}"))
    await console.handle(post("/login", f"csrf_token={CSRF}&token={TOKEN}"))
    first, second = f"{COOKIE}=session-0", f"{COOKIE}=session-1"
    assert (await console.handle(get("/", cookie=first))).status == 200
    out = await console.handle(post("/logout", f"csrf_token={CSRF}", cookie=first))
    assert out.status == 303 and "Max-Age=0" in set_cookie(out)
    assert (await console.handle(get("/", cookie=first))).status == 303
    ticks.now += 61
    assert (await console.handle(get("/", cookie=second))).status == 303


async def test_posts_without_the_page_token_or_from_another_origin_change_nothing() -> None:
    store = InMemoryLessonStore(dim=8)
    await store.quarantine(QuarantineRow("q1", "h", "lmk1src", ("outlier",), NOW, b"{}"))
    console = app(store)
    no_token = await console.handle(post("/quarantine/q1/reject", "note=x", **BEARER))
    other_origin = await console.handle(
        post(
            "/quarantine/q1/reject",
            f"csrf_token={CSRF}&note=x",
            origin="http://evil.example",
            **BEARER,
        )
    )
    cross_site = await console.handle(
        post(
            "/quarantine/q1/reject",
            f"csrf_token={CSRF}&note=x",
            **{"sec-fetch-site": "cross-site"},
            **BEARER,
        )
    )
    assert [r.status for r in (no_token, other_origin, cross_site)] == [403, 403, 403]
    assert [r.state for r in await store.list_quarantine(None)] == ["pending"]
    done = await console.handle(
        post("/quarantine/q1/reject", f"csrf_token={CSRF}&note=bad", **BEARER)
    )
    assert done.status == 303
    assert [r.state for r in await store.list_quarantine(None)] == ["rejected"]
    again = await console.handle(
        post("/quarantine/q1/reject", f"csrf_token={CSRF}&note=bad", **BEARER)
    )
    assert again.status == 409


async def _raw(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    reply = await reader.read()
    writer.close()
    return reply


async def test_the_listener_answers_with_security_headers_and_bounds_requests() -> None:
    params = ConsoleParams(max_body_bytes=1024)
    server = await start_console(app(InMemoryLessonStore(dim=8)), "127.0.0.1:0", params=params)
    try:
        ok = await _raw(server.port, b"GET /static/console.css HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert ok.startswith(b"HTTP/1.1 200 OK\r\n")
        for name, value in SECURITY_HEADERS:
            assert f"{name}: {value}".encode() in ok
        big = (
            b"POST /quarantine/q/approve HTTP/1.1\r\n"
            b"Host: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n"
        )
        assert (await _raw(server.port, big)).startswith(b"HTTP/1.1 413")
        assert (await _raw(server.port, b"garbage\r\n\r\n")).startswith(b"HTTP/1.1 400")
        missing = await _raw(server.port, b"GET /static/../x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert missing.startswith(b"HTTP/1.1 404")
    finally:
        await server.stop()


async def test_the_health_page_plots_stored_imports_and_rejections_in_bins_fitted_to_age() -> None:
    store = InMemoryLessonStore(dim=8)
    for n, days_ago in enumerate((0, 0, 1, 30)):
        at = NOW - timedelta(days=days_ago)
        row = lesson_row(
            f"imp-{n}",
            at=at,
            content=f"lesson {n}",
            operation="op",
            confidence=0.5,
            source_node_id="lmk1src",
            imported_from="lmk1src",
        )
        await store.insert_lesson(row, [LessonEvent(row.id, at, "imported", "lmk1src")])
    for hours_ago, reason in ((1, "bad_signature"), (2, "bad_signature"), (50, "stale")):
        at = NOW - timedelta(hours=hours_ago)
        await store.record_rejection(RejectionRow("lmk1src", reason, "h", at))
    reply = await app(store).handle(authed("/health"))
    body = reply.body.decode()
    assert reply.status == 200 and 'id="activity"' in body
    # The default window is 14 days: the import 30 days ago is not drawn; the oldest drawn
    # event is 50 hours old, so the bins are hours (50 of history and the one being filled).
    assert "3 imported, 3 rejected in 51 bins of 1 h" in body
    columns = re.findall(r'class="(imported|rejected)" data-value="(\d+)"', body)
    imported = [int(v) for k, v in columns if k == "imported"]
    rejected = [int(v) for k, v in columns if k == "rejected"]
    assert len(imported) == 51 and sum(imported) == 3 and imported[-1] == 2
    assert sum(rejected) == 3 and rejected[0] == 1  # the stale one opens the window
    assert "1 rejected (bad_signature 1)" in body
    # The same activity per minute, by reason: one line each.
    assert 'data-series="imported"' in body and 'data-series="refused: stale"' in body


async def test_the_quarantine_page_shows_stored_confidence_and_the_operator_services_quorum() -> (
    None
):
    store = InMemoryLessonStore(dim=8)
    held = QuarantineRow(
        "q1",
        "hash-1",
        "lmk1src",
        ("awaiting_quorum",),
        NOW,
        b"{}",
        confidence=0.37,
        transfer_rule="neutral_peer",
    )
    await store.quarantine(held)
    await store.quarantine(QuarantineRow("q2", "hash-2", "lmk1src", ("outlier",), NOW, b"{}"))
    entry = {
        "state": "pending",
        "rounds": 1,
        "reason": "awaiting_votes",
        "counts": {"validate": 2, "contradict": 0, "abstain": 1, "accept_at": 5, "reject_at": 3},
        "votes": [
            {
                "voter_id": "lmk1v1",
                "verdict": "confirm",
                "confidence": 0.8,
                "outcome_ids": ["o"],
                "counted": True,
                "ignored": "",
            },
        ],
        "certificate": None,
    }
    asked: list[str] = []

    def quorum(content_hash: str) -> str:
        asked.append(content_hash)
        return json.dumps(entry) if content_hash == "hash-1" else ""

    reply = await app(store, quorum=quorum).handle(authed("/quarantine"))
    body = reply.body.decode()
    assert reply.status == 200
    assert sorted(asked) == ["hash-1", "hash-2"]
    assert ">0.37<" in body and "neutral_peer" in body
    assert "validate 2 · contradict 0 · abstain 1 (accept at 5, reject at 3)" in body
    assert 'href="/reputation/lmk1v1"' in body and "none yet (awaiting votes)" in body
    assert body.count(">not asked<") == 1
