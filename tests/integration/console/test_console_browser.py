"""The console end to end in headless Chromium (Debian's ``chromium``, driven by Playwright's
Python package with the system browser; nothing is downloaded).

A real console server (``start_console`` on 127.0.0.1:0) runs in the test's event loop over a
real OperatorServicer, import pipeline and reputation book, on the in-memory store filled
with lessons, reality tests, quarantined records and reputation events. The browser loads
each page, sorts the reputation table, approves and rejects quarantined records (the store
changes), and a forged cross-site POST is refused. A screenshot of each page is saved under
``tests/artifacts/console/`` (ignored by git; the path is printed).
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from playwright import async_api as playwright_api

from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.api.reputation_source import BookReputation
from lamarck.node.console.http import ConsoleParams
from lamarck.node.console.plots import PlotParams
from lamarck.node.console.server import ConsoleApp, ConsoleServer, start_console
from lamarck.node.health.params import HealthParams
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.port import (
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
    QuarantineRow,
)
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.book import ReputationBook, TrustConfig, table_rows
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams
from lamarck.reputation.table import ReputationRow

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ME = NodeIdentity.from_seed(b"\x05" * 32)
SOURCE = NodeIdentity.from_seed(b"\x07" * 32)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "console"
HAVE_CHROMIUM = shutil.which("chromium") is not None or Path(CHROMIUM).exists()
PEERS = {"lmk1alpha": 6, "lmk1bravo": 1, "lmk1charlie": 3}


class TinyEmbedder:
    """Deterministic bag-of-words hashing."""

    dim = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, 0] = 0.1
            for word in re.findall(r"\w+", text.lower()):
                slot = int(hashlib.sha256(word.encode()).hexdigest(), 16) % (self.dim - 1) + 1
                out[row, slot] += 1.0
            out[row] /= np.linalg.norm(out[row])
        return out


def signed(n: int) -> SignedMemory:
    """Record ``n``: an active, evidenced lesson signed by SOURCE."""
    created = format_ts(NOW - timedelta(days=3))
    obj: dict[str, Any] = {
        "schema_version": "2.0",
        "id": str(uuid.UUID(int=n, version=4)),
        "type": "AC",
        "content": f"Run database migrations before restarting api service {n}.",
        "confidence": 0.95,
        "access_level": "public",
        "context": {"domain": "deploy", "environment": "staging", "tools": ["alembic"]},
        "provenance": {
            "source_agent_id": SOURCE.node_id,
            "source_type": "empirical",
            "created_at": created,
            "updated_at": created,
        },
        "evidence": [
            {
                "type": "empirical",
                "description": "migration ran",
                "timestamp": created,
                "validator": "reality",
                "outcome_id": str(uuid.UUID(int=1000 + n, version=4)),
            }
        ],
        "lesson": {"operation": "deploy.restart", "scope": "global", "status": "active"},
        "confidence_interval": {"mean": 0.95, "std_dev": 0.1},
    }
    return SignedMemory.sign(MemoryV2.from_obj(obj), SOURCE)


def held(n: int) -> QuarantineRow:
    """A pending quarantine row holding record ``n``."""
    sm = signed(n)
    return QuarantineRow(
        id=f"q{n}",
        content_hash=sm.content_hash,
        source_node_id=sm.source_agent_id,
        reasons=("unverified_high_confidence", "statistical_outlier"),
        received_at=NOW - timedelta(minutes=10 - n),
        signed_record=sm.raw,
    )


def lesson(n: int, confidence: float, status: LessonStatus = LessonStatus.ACTIVE) -> LessonRow:
    """A local lesson learned ``n`` days ago."""
    created = NOW - timedelta(days=20 + n)
    return LessonRow(
        id=f"lesson-{n}",
        content=f"Check the disk before writing large files on host {n}.",
        operation=f"fs.write.{n}",
        scope="global" if n % 2 else "project:" + "ab" * 8,
        status=status,
        confidence=confidence,
        created_at=created,
        updated_at=created,
        context={"domain": "ops", "environment": "prod"},
        last_used=NOW - timedelta(days=n),
    )


class EventLog:
    """The book and its event log, as ``BookReputation`` reads a ``PostgresReputation``."""

    def __init__(self, book: ReputationBook, log: list[ReputationEvent]) -> None:
        self._book, self._log = book, log

    def rows(self, *, principal_of: Any, **_: Any) -> list[ReputationRow]:
        return table_rows(self._book, principal_of=principal_of)

    async def history(self, node_id: str, limit: int = 100) -> list[ReputationEvent]:
        return [e for e in reversed(self._log) if e.node_id == node_id][:limit]


@dataclass
class Console:
    """The served console and what it runs over."""

    server: ConsoleServer
    store: InMemoryLessonStore
    book: ReputationBook


async def _fill(store: InMemoryLessonStore) -> None:
    """Lessons with reality tests (confirmations, a contradiction) and held records."""
    for n, confidence in enumerate((0.9, 0.8, 0.55, 0.3, 0.75)):
        await store.insert_lesson(lesson(n, confidence))
    await store.insert_lesson(lesson(5, 0.2, LessonStatus.RETIRED))
    events = []
    for n in range(5):
        at = NOW - timedelta(days=5 - n)
        events.append(LessonEvent(f"lesson-{n}", at - timedelta(days=15), "created", "loop"))
        events.append(
            LessonEvent(
                f"lesson-{n}",
                at,
                "confirmed" if n != 3 else "contradicted",
                "loop",
                0.6,
                0.7 if n != 3 else 0.3,
                reason="similarity=0.93" if n != 4 else "similarity=0.80",
                outcome_id=f"outcome-{n}",
            )
        )
    await store.append_events(events)
    for n in (1, 2, 3):
        await store.quarantine(held(n))


@pytest.fixture
async def console() -> AsyncIterator[Console]:
    store = InMemoryLessonStore(dim=TinyEmbedder.dim)
    clock = FixedClock(NOW)
    book = ReputationBook(
        ReputationParams(), clock, TrustConfig(ME.node_id, PairwiseParams(), GlobalTrustParams())
    )
    log: list[ReputationEvent] = []
    for peer, confirmations in PEERS.items():
        for k in range(confirmations):
            at = NOW - timedelta(hours=k + 1)
            log.append(
                ReputationEvent(
                    EventKind.LESSON_CONFIRMED, peer, at, 0.8, f"h-{peer}-{k}", "deploy", "ok"
                )
            )
    log.append(ReputationEvent(EventKind.BAD_SIGNATURE, "lmk1bravo", NOW, detail="forged"))
    for event in log:
        book.emit(event)
    await _fill(store)
    pipeline = ImportPipeline(
        store=store,
        view=StoreImportView(store, book, ME.node_id),
        pins=None,
        reputation=book,
        embedder=TinyEmbedder(),
        clock=clock,
        rng=random.Random(5),
    )
    reputation = BookReputation(EventLog(book, log), history_limit=100)
    operator = OperatorServicer(
        store,
        clock,
        pipeline=pipeline,
        sink=lambda: book,
        health=HealthParams(),
        node_id=ME.node_id,
        reputation=lambda: reputation,
    )
    params = ConsoleParams()
    app = ConsoleApp(
        operator,
        lambda: store,
        reputation=lambda: reputation,
        params=params,
        plot=PlotParams(),
        csrf_token="test-csrf-" + "x" * 20,
    )
    server = await start_console(app, "127.0.0.1:0", params=params, token=None)
    try:
        yield Console(server, store, book)
    finally:
        await server.stop()


@pytest.fixture
async def page() -> AsyncIterator[Any]:
    if not HAVE_CHROMIUM:
        pytest.fail("Debian's chromium is not installed (apt-get install -y chromium)")
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1200, "height": 900})
            yield await context.new_page()
        finally:
            await browser.close()


async def _shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


async def test_every_page_loads_and_is_screenshotted(console: Console, page: Any) -> None:
    base = console.server.url.rstrip("/")
    expectations = {
        "overview": ("/", "Overview"),
        "reputation": ("/reputation", "Reputation"),
        "peer": ("/reputation/lmk1alpha", "Peer lmk1alpha"),
        "quarantine": ("/quarantine", "Quarantine"),
        "lessons": ("/lessons", "Lessons"),
        "lesson": ("/lessons/lesson-3", "Lesson"),
        "health": ("/health", "Health"),
    }
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for name, (path, title) in expectations.items():
        response = await page.goto(base + path)
        assert response is not None and response.status == 200, (path, response)
        assert await page.inner_text("h1") == title
        assert (await _shot(page, name)).stat().st_size > 0
    assert not errors
    await page.goto(base + "/health")
    assert await page.locator("#calibration svg circle").count() >= 1
    assert await page.locator("#distribution svg rect.bar").count() == 3
    await page.goto(base + "/lessons/lesson-3")
    assert "contradicted" in await page.inner_text("main")
    await page.goto(base + "/")
    assert "3 pending" in await page.inner_text("main")


async def test_the_reputation_table_sorts_by_a_header_click(console: Console, page: Any) -> None:
    await page.goto(console.server.url + "reputation")
    score_header = page.locator("#reputation thead th", has_text="score")
    peers = page.locator("#reputation tbody tr td:first-child")
    await score_header.click()
    ascending = await peers.all_inner_texts()
    await score_header.click()
    descending = await peers.all_inner_texts()
    assert ascending[0] == "lmk1bravo" and descending[0] == "lmk1alpha"
    assert descending == list(reversed(ascending))
    assert await score_header.get_attribute("aria-sort") == "descending"
    await page.select_option("select[data-filter='domains']", "deploy")
    assert await page.locator("#reputation tbody tr:visible").count() == len(PEERS)


async def test_approve_and_reject_in_the_browser_change_the_store(
    console: Console, page: Any
) -> None:
    await page.goto(console.server.url + "quarantine")
    approve = page.locator("#q-q1 form.decide").filter(has_text="approve")
    await approve.locator("input[name=note]").fill("checked with the team")
    await approve.locator("button").click()
    await page.wait_for_url(re.compile(r"/quarantine"))
    reject = page.locator("#q-q2 form.decide").filter(has_text="reject")
    await reject.locator("input[name=note]").fill("looks planted")
    await reject.locator("button").click()
    await page.wait_for_url(re.compile(r"/quarantine"))
    states = {r.id: r.state for r in await console.store.list_quarantine(None)}
    assert states == {"q1": "approved", "q2": "rejected", "q3": "pending"}
    imported = await console.store.list_lessons(LessonFilter(statuses=None, imported=True))
    assert [r.content for r in imported] == [signed(1).memory.content]
    decisions = await console.store.lesson_events(["q1", "q2"])
    assert [(e.lesson_id, e.kind, e.actor, e.reason, e.at) for e in decisions] == [
        ("q1", "approved", "operator", "checked with the team", NOW),
        ("q2", "rejected", "operator", "looks planted", NOW),
    ]
    text = await page.inner_text("#q-q2")
    assert "by operator at 2026-03-01T12:00:00Z: looks planted" in text
    await _shot(page, "quarantine-decided")


async def test_a_forged_cross_site_post_is_refused_and_changes_nothing(
    console: Console, page: Any
) -> None:
    # A page served from another origin posts a form to the console, as a hostile site would.
    target = console.server.url + "quarantine/q3/approve"
    hostile = (
        f"<form id=f method=post action='{target}'>"
        "<input name=note value=pwned><input name=csrf_token value=guess></form>"
        "<script>document.getElementById('f').submit()</script>"
    )
    await page.route(
        "http://attacker.test/", lambda route: route.fulfill(body=hostile, content_type="text/html")
    )
    async with page.expect_response(lambda r: r.url == target) as forged:
        await page.goto("http://attacker.test/")
    assert (await forged.value).status == 403
    # The same form from the console's own origin but without the page's token: refused too
    # (a page script could not even send it: the console's CSP allows no fetch at all).
    origin = console.server.url.rstrip("/")
    reply = await page.request.post(target, form={"note": "x"}, headers={"Origin": origin})
    assert reply.status == 403
    rows = {r.id: r.state for r in await console.store.list_quarantine(None)}
    assert rows["q3"] == "pending"
    assert not await console.store.lesson_events(["q3"])
