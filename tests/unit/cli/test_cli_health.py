"""`lamarck health`, OperatorService.GetHealth / GetStatus and the health gauges, over an
in-memory store.

The OperatorService runs on a real grpc.aio server (127.0.0.1:0) on its own event loop in a
background thread; a ``node.json`` in a temporary home points the CLI at it, as the daemon's
does. Stores are built to raise the critical warning or to stay healthy.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import grpc.aio
import pytest
from prometheus_client import REGISTRY
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.domain.rows import (
    LessonEvent,
    LessonRow,
    QuarantineRow,
    RejectionRow,
)
from lamarck.errors import ConfigError
from lamarck.health.params import HealthParams, refresh_spacing_s
from lamarck.health.render import gauge_values, report_from_json
from lamarck.node import metrics
from lamarck.node.api.interceptors import ErrorInterceptor
from lamarck.node.api.node_status import (
    Admission,
    AdmissionState,
    CatchUpProgress,
    NetworkSnapshot,
    build_status,
    peer_serving,
    status_rows,
    status_to_json,
)
from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.recall_index import RecallIndexState, RecallIndexStatus
from lamarck.proto.clock import FixedClock
from lamarck.proto.v1 import operator_pb2, operator_pb2_grpc
from lamarck.reputation.book import ReputationBook, TrustConfig, table_rows
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams
from lamarck.reputation.table import ReputationRow
from tests.factories import lesson_row

T = TypeVar("T")
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
runner = CliRunner()


def lesson(n: int, confidence: float = 0.8) -> LessonRow:
    """An active local lesson created ten days ago."""
    return lesson_row(
        f"l{n}",
        content=f"Run migrations before restarting service {n}.",
        operation="deploy.restart",
        confidence=confidence,
        at=NOW - timedelta(days=10),
        last_used=NOW - timedelta(days=1),
    )


def confirmed(n: int, k: int) -> LessonEvent:
    """A reality confirmation of lesson ``n`` (cites an outcome) ``k`` days ago."""
    return LessonEvent(
        f"l{n}",
        NOW - timedelta(days=k),
        "confirmed",
        "loop",
        0.75,
        0.8,
        reason="similarity=0.95",
        outcome_id=f"o{n}-{k}",
    )


class BookSource:
    """A ReputationSource over an in-memory book and the events emitted into it."""

    def __init__(self, book: ReputationBook, log: list[ReputationEvent]) -> None:
        self._book, self._log = book, log

    async def rows(self) -> list[ReputationRow]:
        return table_rows(self._book, principal_of={})

    async def history(self, node_id: str) -> list[ReputationEvent]:
        return [e for e in reversed(self._log) if e.node_id == node_id]


@dataclass
class FakeNode:
    """An OperatorService on a background loop, and the home that points at it."""

    home: Path
    store: InMemoryLessonStore
    loop: asyncio.AbstractEventLoop
    servicer: OperatorServicer
    network: list[NetworkSnapshot | None]

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout=30)

    def cli(self, *args: str) -> Any:
        return runner.invoke(app, [*args, "--home", str(self.home)])


@pytest.fixture
def node(tmp_path: Path) -> Iterator[FakeNode]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    store = InMemoryLessonStore(dim=8)
    clock = FixedClock(NOW)
    trust = TrustConfig("lmk1me", PairwiseParams(), GlobalTrustParams())
    book = ReputationBook(ReputationParams(), clock, trust)
    log = [
        ReputationEvent(EventKind.LESSON_CONFIRMED, "lmk1good", NOW - timedelta(hours=2)),
        ReputationEvent(EventKind.BAD_SIGNATURE, "lmk1bad", NOW - timedelta(hours=1)),
    ]
    for event in log:
        book.emit(event)
    network: list[NetworkSnapshot | None] = [None]

    async def snapshot() -> NetworkSnapshot:
        current = network[0]
        assert current is not None
        return current

    def source() -> Any:
        return snapshot if network[0] is not None else None

    servicer = OperatorServicer(
        store,
        clock,
        pipeline=lambda: pytest.fail("no approval in these tests"),
        health=HealthParams(),
        node_id="lmk1me",
        network=source,
        reputation=lambda: BookSource(book, log),
    )

    async def start() -> tuple[grpc.aio.Server, int]:
        server = grpc.aio.server(interceptors=[ErrorInterceptor()])
        operator_pb2_grpc.add_OperatorServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    fake = FakeNode(tmp_path, store, loop, servicer, network)
    server, port = fake.run(start())
    info = {"pid": os.getpid(), "agent_listen": f"127.0.0.1:{port}"}
    (tmp_path / "node.json").write_text(json.dumps(info), encoding="utf-8")
    try:
        yield fake
    finally:
        fake.run(server.stop(None))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def test_an_empty_node_is_healthy_and_exits_zero(node: FakeNode) -> None:
    result = node.cli("health")
    assert result.exit_code == 0, result.output
    assert "healthy: no warnings" in result.stdout


def test_lessons_never_tested_by_reality_raise_the_critical_warning_and_exit_2(
    node: FakeNode,
) -> None:
    for n in range(3):
        node.run(node.store.insert_lesson(lesson(n)))
    result = node.cli("health")
    assert result.exit_code == 2, result.output
    assert "CRITICAL: No external validations" in result.stdout
    as_json = node.cli("health", "--json")
    assert as_json.exit_code == 2
    data = json.loads(as_json.stdout)
    assert [w["code"] for w in data["warnings"]] == ["no_external_validation"]
    assert data["distribution"]["total"] == 3


def test_reality_confirmations_count_as_external_validations_and_predictions(
    node: FakeNode,
) -> None:
    for n in range(3):
        node.run(node.store.insert_lesson(lesson(n)))
    node.run(node.store.append_events([confirmed(n, k) for n in range(3) for k in (1, 2)]))
    result = node.cli("health", "--json")
    assert result.exit_code == 0, result.output
    report = report_from_json(json.loads(result.stdout))
    assert report.validation.total == 6 and report.validation.confirmed == 6
    # Each reality test is an implicit prediction of success at the lesson's confidence.
    assert report.predictions.resolved == 6 and report.predictions.accuracy == 1.0
    assert [t.attempts for t in report.transfer if t.name == "identical"] == [6]
    assert not report.warnings


def test_get_health_is_refused_without_health_params() -> None:
    servicer = OperatorServicer(
        InMemoryLessonStore(dim=8), FixedClock(NOW), pipeline=lambda: pytest.fail("unused")
    )
    with pytest.raises(ConfigError) as err:
        asyncio.run(servicer.GetHealth(operator_pb2.GetHealthRequest(), None))
    assert err.value.reason == "health_unconfigured"


def _status(node: FakeNode) -> dict[str, Any]:
    reply = node.run(node.servicer.GetStatus(operator_pb2.GetStatusRequest(), None))
    data: dict[str, Any] = json.loads(reply.status_json)
    return data


def test_status_counts_quarantine_and_rejections_by_reason_and_ranks_reputation(
    node: FakeNode,
) -> None:
    for n, reasons in enumerate(
        [("statistical_outlier",), ("statistical_outlier", "unverified_high_confidence")]
    ):
        row = QuarantineRow(f"q{n}", f"h{n}", "lmk1bad", reasons, NOW, b"{}")
        node.run(node.store.quarantine(row))
    for reason in ("bad_signature", "bad_signature", "replay"):
        node.run(node.store.record_rejection(RejectionRow("lmk1bad", reason, reason, NOW)))
    node.run(node.store.insert_lesson(lesson(1)))
    status = _status(node)
    assert status["node_id"] == "lmk1me"
    assert status["quarantine"] == {
        "pending": 2,
        "by_reason": {"statistical_outlier": 2, "unverified_high_confidence": 1},
    }
    assert status["rejections"] == {"bad_signature": 2, "replay": 1}
    # 3 reasons for 2 records: the row says a record can have several.
    assert status_rows(status)["quarantine"] == (
        "2 records pending (by reason: statistical_outlier 2, unverified_high_confidence 1;"
        " a record can be held for several reasons, each counted)"
    )
    assert [w["code"] for w in status["warnings"]] == ["no_external_validation"]
    assert [r["node_id"] for r in status["reputation_top"]] == ["lmk1good", "lmk1bad"]
    # No network side yet: the peer service must not say SERVING.
    assert status["network"] is None and status["peer_serving"] is False


def test_a_refused_node_says_why_and_is_not_serving_peers(node: FakeNode) -> None:
    node.network[0] = NetworkSnapshot(
        Admission(
            AdmissionState.REFUSED,
            mode="operator",
            registry="redis://registry:6379 (namespace prod)",
            reason="revoked",
            message="revoked by the operator",
        )
    )
    status = _status(node)
    assert status["peer_serving"] is False
    assert status["network"]["admission"]["reason"] == "revoked"
    rows = status_rows(status)
    assert rows["admission"].startswith("refused: revoked (revoked by the operator)")
    assert rows["registry"] == "redis://registry:6379 (namespace prod)"


def test_an_admitted_node_reports_peers_last_sync_and_outbox_age(node: FakeNode) -> None:
    node.network[0] = NetworkSnapshot(
        Admission(AdmissionState.ADMITTED, mode="endorsed", by="endorsement", registry="embedded"),
        live_peers=("lmk1a", "lmk1b"),
        last_sync={"lmk1a": NOW - timedelta(minutes=1)},
        outbox_depth=4,
        outbox_oldest=NOW - timedelta(seconds=90),
    )
    status = _status(node)
    assert status["peer_serving"] is True
    assert status["network"]["outbox"] == {
        "depth": 4,
        "oldest_at": "2026-03-01T11:58:30Z",
        "oldest_age_s": 90.0,
    }
    rows = status_rows(status)
    assert rows["live peers"] == "2: lmk1a, lmk1b"
    assert rows["outbox"] == "4 undelivered, oldest 90 s"
    assert rows["last sync"] == "lmk1a 2026-03-01T11:59:00Z"
    metrics.apply_status(status)
    assert REGISTRY.get_sample_value("lamarck_outbox_pending") == 4
    assert REGISTRY.get_sample_value("lamarck_admission", {"state": "admitted"}) == 1
    assert REGISTRY.get_sample_value("lamarck_peers_live") == 2


def test_a_long_pull_shows_how_far_it_got(node: FakeNode) -> None:
    """A running Sync pull (a catch-up) is in the status with its progress and rate, in the
    JSON and in the rows the CLI and the console show."""
    node.network[0] = NetworkSnapshot(
        Admission(AdmissionState.ADMITTED, mode="open"),
        live_peers=("lmk1a",),
        catching_up=(CatchUpProgress("lmk1a", NOW - timedelta(seconds=100), 12_000, 40_000),),
    )
    status = _status(node)
    assert status["network"]["catching_up"] == [
        {
            "peer": "lmk1a",
            "started_at": "2026-03-01T11:58:20Z",
            "imported": 12_000,
            "offered": 40_000,
            "records_per_s": 120.0,
        }
    ]
    assert status_rows(status)["catching up"] == (
        "from lmk1a: 12000 of 40000 offered so far (120 records/s since 2026-03-01T11:58:20Z)"
    )
    node.network[0] = NetworkSnapshot(Admission(AdmissionState.ADMITTED, mode="open"))
    assert "catching up" not in status_rows(_status(node))


def test_the_status_says_where_recall_searches() -> None:
    """The recall index's state is in the JSON and in the rows the CLI and the console show;
    a store without one (the in-memory adapter, an older node) shows no row."""

    def rows(state: RecallIndexState | None) -> dict[str, str]:
        status = build_status(
            node_id="lmk1me",
            now=NOW,
            network=None,
            pending_reasons={},
            rejection_reasons=[],
            imports={},
            recall_index=state,
        )
        return status_rows(status_to_json(status))

    on = RecallIndexState(RecallIndexStatus.ON, 1987, 5000)
    assert rows(on)["recall search"] == "in memory: 1987 lessons (up to 5000)"
    outgrown = RecallIndexState(RecallIndexStatus.OUTGROWN, 0, 5000)
    assert rows(outgrown)["recall search"].startswith("in Postgres: more than 5000 lessons")
    not_read = RecallIndexState(RecallIndexStatus.NOT_READ, 0, 5000)
    assert rows(not_read)["recall search"].startswith("not read yet")
    off = RecallIndexState(RecallIndexStatus.OFF, 0, 0)
    assert rows(off)["recall search"] == "in Postgres: the index is off (max_rows 0)"
    assert "recall search" not in rows(None)


def test_an_in_memory_store_has_no_recall_index_in_the_status(node: FakeNode) -> None:
    assert _status(node)["recall_index"] is None


def test_degraded_admission_still_serves_peers_from_the_cache() -> None:
    degraded = NetworkSnapshot(Admission(AdmissionState.DEGRADED))
    pending = NetworkSnapshot(Admission(AdmissionState.PENDING))
    assert peer_serving(degraded) and not peer_serving(pending)


def test_health_gauges_are_replaced_not_accumulated(node: FakeNode) -> None:
    for n in range(3):
        node.run(node.store.insert_lesson(lesson(n)))
    reply = node.run(node.servicer.GetHealth(operator_pb2.GetHealthRequest(), None))
    report = report_from_json(json.loads(reply.report_json))
    metrics.apply_health(gauge_values(report))
    warning = {"figure": "warning_no_external_validation"}
    assert REGISTRY.get_sample_value("lamarck_health", warning) == 1
    assert REGISTRY.get_sample_value("lamarck_health", {"figure": "distribution_total"}) == 3
    node.run(node.store.append_events([confirmed(0, 1)]))
    reply = node.run(node.servicer.GetHealth(operator_pb2.GetHealthRequest(), None))
    metrics.apply_health(gauge_values(report_from_json(json.loads(reply.report_json))))
    assert REGISTRY.get_sample_value("lamarck_health", warning) is None
    assert REGISTRY.get_sample_value("lamarck_health", {"figure": "validation_total"}) == 1


def test_the_refresher_sets_the_gauges_from_its_sources() -> None:
    async def values() -> dict[str, float]:
        return {"healthy": 1.0, "distribution_total": 7.0}

    refresher = metrics.HealthRefresher(values, 60.0)
    asyncio.run(refresher.refresh())
    assert REGISTRY.get_sample_value("lamarck_health", {"figure": "distribution_total"}) == 7


def test_import_counts_read_the_process_counter() -> None:
    before = metrics.import_counts().get("rejected", {}).get("test_reason_15", 0)
    metrics.IMPORTS.labels(result="rejected", reason="test_reason_15").inc()
    assert metrics.import_counts()["rejected"]["test_reason_15"] == before + 1


def test_a_status_shows_the_warnings_of_a_recent_report_without_reading_the_store_again() -> None:
    store = InMemoryLessonStore(dim=8)
    clock = FixedClock(NOW)
    servicer = OperatorServicer(
        store,
        clock,
        pipeline=lambda: pytest.fail("unused"),
        health=HealthParams(status_warnings_max_age_s=30.0),
        node_id="lmk1me",
    )

    async def codes() -> list[str]:
        return [w["code"] for w in (await servicer.status())["warnings"]]

    async def scenario() -> None:
        await servicer.health_report()  # the node's refresh: nothing stored, no warning
        await store.insert_lesson(lesson(1))
        clock.advance(30)
        assert await codes() == []  # the refresh's report, 30 s old
        clock.advance(1)
        assert await codes() == ["no_external_validation"]  # too old: computed again

    asyncio.run(scenario())
    with pytest.raises(ConfigError):
        HealthParams(status_warnings_max_age_s=-1.0)


class SlowFacts(InMemoryLessonStore):
    """Its lessons' facts take ``seconds`` of the clock to read: a report over a big store."""

    def __init__(self, clock: FixedClock, seconds: float) -> None:
        super().__init__(dim=8)
        self._clock, self._seconds = clock, seconds

    async def lesson_facts(self, after: str, limit: int) -> list[Any]:
        self._clock.advance(self._seconds)
        return await super().lesson_facts(after, limit)


def test_a_report_that_takes_long_is_made_less_often_and_a_status_reuses_it() -> None:
    # 5 s of report every 30 s is a sixth of a core; at most 5 % of the time: every 100 s.
    assert refresh_spacing_s(30.0, 0.2, 0.05) == 30.0
    assert refresh_spacing_s(30.0, 5.0, 0.05) == pytest.approx(100.0)
    clock = FixedClock(NOW)
    store = SlowFacts(clock, 5.0)  # one page, empty: a 5 s report
    servicer = OperatorServicer(
        store,
        clock,
        pipeline=lambda: pytest.fail("unused"),
        health=HealthParams(status_warnings_max_age_s=30.0, refresh_max_share=0.05),
        node_id="lmk1me",
    )

    async def codes() -> list[str]:
        return [w["code"] for w in (await servicer.status())["warnings"]]

    async def scenario() -> None:
        await servicer.health_report()  # the refresh's report, 5 s long
        await store.insert_lesson(lesson(1))
        clock.advance(90)
        assert await codes() == []  # 95 s old: the refresh has not come round yet
        clock.advance(10)
        assert await codes() == ["no_external_validation"]  # past its spacing: made again

    asyncio.run(scenario())
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(ConfigError):
            HealthParams(refresh_max_share=bad)


def test_the_refresher_waits_out_its_spacing_after_a_long_refresh() -> None:
    # The loop's own pacing, on the real loop with a tiny interval: a refresh that takes
    # 50 ms under a 50 % share is followed by at least 50 ms of rest.
    starts: list[float] = []
    third = asyncio.Event()

    async def values() -> dict[str, float]:
        starts.append(asyncio.get_running_loop().time())
        if len(starts) >= 3:
            third.set()
        await asyncio.sleep(0.05)
        return {}

    async def scenario() -> None:
        refresher = metrics.HealthRefresher(values, 0.001, max_share=0.5)
        refresher.start()
        await third.wait()
        await refresher.stop()

    asyncio.run(asyncio.wait_for(scenario(), 10))
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(g >= 0.095 for g in gaps), gaps
