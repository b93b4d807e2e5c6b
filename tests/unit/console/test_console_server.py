"""The console's HTTP layer and its gatekeeping, without a browser: a real ConsoleApp over a
real OperatorServicer and the in-memory store, and the asyncio listener on 127.0.0.1:0."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from lamarck.errors import ConfigError
from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.console.http import SECURITY_HEADERS, ConsoleParams, Request
from lamarck.node.console.plots import PlotParams
from lamarck.node.console.server import COOKIE, ConsoleApp, start_console
from lamarck.node.health.params import HealthParams
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.port import (
    LessonEvent,
    LessonRow,
    LessonStatus,
    QuarantineRow,
    RejectionRow,
)
from lamarck.proto.clock import FixedClock

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CSRF = "c" * 32
TOKEN = "operator-secret"


def app(
    store: InMemoryLessonStore,
    token: str | None = None,
    quorum: Callable[[str], str] | None = None,
) -> ConsoleApp:
    operator = OperatorServicer(
        store,
        FixedClock(NOW),
        pipeline=lambda: pytest.fail("unused"),
        health=HealthParams(),
        quorum=quorum,
    )
    return ConsoleApp(
        operator,
        lambda: store,
        reputation=lambda: None,
        params=ConsoleParams(),
        plot=PlotParams(),
        csrf_token=CSRF,
        token=token,
        loopback_only=token is None,
    )


def get(path: str, host: str = "127.0.0.1:8080", **headers: str) -> Request:
    return Request("GET", path, headers={"host": host, **headers})


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


async def test_pages_answer_on_a_loopback_host_and_embed_the_token() -> None:
    reply = await app(InMemoryLessonStore(dim=8)).handle(get("/health"))
    assert reply.status == 200
    assert f'content="{CSRF}"'.encode() in reply.body


async def test_a_rebound_dns_name_is_refused_on_loopback() -> None:
    reply = await app(InMemoryLessonStore(dim=8)).handle(get("/", host="evil.example:8080"))
    assert reply.status == 403 and b"bad_host" in reply.body


async def test_off_loopback_pages_need_the_operator_token() -> None:
    console = app(InMemoryLessonStore(dim=8), token=TOKEN)
    assert (await console.handle(get("/health", host="node.lan"))).status == 303
    bearer = get("/health", host="node.lan", authorization=f"Bearer {TOKEN}")
    assert (await console.handle(bearer)).status == 200
    cookie = get("/health", host="node.lan", cookie=f"{COOKIE}={TOKEN}")
    assert (await console.handle(cookie)).status == 200
    wrong = get("/health", host="node.lan", authorization="Bearer nope")
    assert (await console.handle(wrong)).status == 303


async def test_login_sets_an_http_only_strict_cookie_only_for_the_right_token() -> None:
    console = app(InMemoryLessonStore(dim=8), token=TOKEN)
    ok = await console.handle(post("/login", f"csrf_token={CSRF}&token={TOKEN}", host="node.lan"))
    assert ok.status == 303
    assert (
        "Set-Cookie",
        f"{COOKIE}={TOKEN}; HttpOnly; SameSite=Strict; Path=/",
    ) in ok.headers
    bad = await console.handle(post("/login", f"csrf_token={CSRF}&token=x", host="node.lan"))
    assert bad.status == 401


async def test_posts_without_the_page_token_or_from_another_origin_change_nothing() -> None:
    store = InMemoryLessonStore(dim=8)
    await store.quarantine(QuarantineRow("q1", "h", "lmk1src", ("outlier",), NOW, b"{}"))
    console = app(store)
    no_token = await console.handle(post("/quarantine/q1/reject", "note=x"))
    other_origin = await console.handle(
        post("/quarantine/q1/reject", f"csrf_token={CSRF}&note=x", origin="http://evil.example")
    )
    cross_site = await console.handle(
        post(
            "/quarantine/q1/reject", f"csrf_token={CSRF}&note=x", **{"sec-fetch-site": "cross-site"}
        )
    )
    assert [r.status for r in (no_token, other_origin, cross_site)] == [403, 403, 403]
    assert [r.state for r in await store.list_quarantine(None)] == ["pending"]
    done = await console.handle(post("/quarantine/q1/reject", f"csrf_token={CSRF}&note=bad"))
    assert done.status == 303
    assert [r.state for r in await store.list_quarantine(None)] == ["rejected"]
    again = await console.handle(post("/quarantine/q1/reject", f"csrf_token={CSRF}&note=bad"))
    assert again.status == 409


def test_the_console_refuses_to_listen_beyond_loopback_without_a_token() -> None:
    store = InMemoryLessonStore(dim=8)
    with pytest.raises(ConfigError) as err:
        asyncio.run(start_console(app(store), "0.0.0.0:0", params=ConsoleParams(), token=None))
    assert err.value.reason == "console_needs_token"


async def _raw(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    reply = await reader.read()
    writer.close()
    return reply


async def test_the_listener_answers_with_security_headers_and_bounds_requests() -> None:
    params = ConsoleParams(max_body_bytes=1024)
    server = await start_console(
        app(InMemoryLessonStore(dim=8)), "127.0.0.1:0", params=params, token=None
    )
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


async def test_the_health_page_plots_stored_imports_and_rejections_by_day() -> None:
    store = InMemoryLessonStore(dim=8)
    for n, days_ago in enumerate((0, 0, 1, 30)):
        at = NOW - timedelta(days=days_ago)
        row = LessonRow(
            f"imp-{n}",
            f"lesson {n}",
            "op",
            "global",
            LessonStatus.ACTIVE,
            0.5,
            at,
            at,
            source_node_id="lmk1src",
            imported_from="lmk1src",
        )
        await store.insert_lesson(row, [LessonEvent(row.id, at, "imported", "lmk1src")])
    for hours_ago, reason in ((1, "bad_signature"), (2, "bad_signature"), (50, "stale")):
        at = NOW - timedelta(hours=hours_ago)
        await store.record_rejection(RejectionRow("lmk1src", reason, "h", at))
    reply = await app(store).handle(get("/health"))
    body = reply.body.decode()
    assert reply.status == 200 and 'id="activity"' in body
    # The default window is 14 days: the import 30 days ago is not drawn.
    assert "3 imported, 3 rejected in 14 bins of 24 h" in body
    columns = re.findall(r'class="(imported|rejected)" data-value="(\d+)"', body)
    assert [int(v) for k, v in columns if k == "imported"][-2:] == [1, 2]
    assert [int(v) for k, v in columns if k == "rejected"][-3:] == [1, 0, 2]
    assert "2 rejected (bad_signature 2)" in body


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

    reply = await app(store, quorum=quorum).handle(get("/quarantine"))
    body = reply.body.decode()
    assert reply.status == 200
    assert sorted(asked) == ["hash-1", "hash-2"]
    assert ">0.37<" in body and "neutral_peer" in body
    assert "validate 2 · contradict 0 · abstain 1 (accept at 5, reject at 3)" in body
    assert 'href="/reputation/lmk1v1"' in body and "none yet (awaiting votes)" in body
    assert body.count(">not asked<") == 1
