"""The Postgres outbox on a real (embedded) PostgreSQL: idempotent enqueue, backoff, and rows
that survive closing and reopening the store (a node restart)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lamarck.domain.rows import LessonRow
from lamarck.errors import DeliveryFailed
from lamarck.gossip.publisher import GossipParams
from lamarck.node.gossip.outbox import OutboxWorker, PostgresOutbox
from lamarck.node.store.embedded import EmbeddedPostgres, default_server_settings
from lamarck.node.store.postgres import PostgresLessonStore
from tests.factories import publishable_lesson

pytestmark = pytest.mark.integration

DIM = 8
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def pg() -> Iterator[EmbeddedPostgres]:
    """An embedded PostgreSQL for this module."""
    home = Path(tempfile.mkdtemp(prefix="lamarck-outbox-"))
    settings = default_server_settings() | {"fsync": "off", "synchronous_commit": "off"}
    server = EmbeddedPostgres(home, settings=settings)
    server.start()
    try:
        yield server
    finally:
        server.delete_data()
        shutil.rmtree(home, ignore_errors=True)


def _lesson(lesson_id: str) -> LessonRow:
    return publishable_lesson(id=lesson_id, created_at=NOW, updated_at=NOW)


async def test_postgres_outbox_retries_with_backoff_and_survives_a_restart(
    pg: EmbeddedPostgres,
) -> None:
    dsn = pg.dsn_for("postgres")
    store = await PostgresLessonStore.connect(dsn, DIM, max_size=2)
    await store.pool.execute("TRUNCATE outbox, lessons CASCADE")
    lesson_id = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"
    await store.insert_lesson(_lesson(lesson_id))
    outbox = PostgresOutbox(lambda: store.pool)
    assert await outbox.enqueue(lesson_id, "h1", ["a", "b"], NOW) == 2
    assert await outbox.enqueue(lesson_id, "h1", ["b", "c"], NOW) == 1
    down = {"b", "c"}
    got: dict[str, list[bytes]] = {}

    async def send(target: str, raws: Sequence[bytes]) -> None:
        if target in down:
            raise DeliveryFailed(f"{target} is unreachable")
        got.setdefault(target, []).extend(raws)

    async def load(lid: str, content_hash: str) -> bytes | None:
        return f"{lid}:{content_hash}".encode()

    params = GossipParams(retry_base_s=5, retry_max_s=60)
    assert await OutboxWorker(outbox, send, load, params).run_once(NOW) == 1
    pending = await outbox.pending()
    assert [(p.target_node_id, p.attempts) for p in pending] == [("b", 1), ("c", 1)]
    assert all(p.next_attempt_at == NOW + timedelta(seconds=5) for p in pending)
    await store.close()

    # A restart: a new store and outbox over the same database still owe b and c.
    store = await PostgresLessonStore.connect(dsn, DIM, max_size=2)
    try:
        outbox = PostgresOutbox(lambda: store.pool)
        assert len(await outbox.pending()) == 2
        assert await outbox.due(NOW + timedelta(seconds=4), 10) == []
        down.clear()
        worker = OutboxWorker(outbox, send, load, params)
        assert await worker.run_once(NOW + timedelta(seconds=5)) == 2
        assert await outbox.pending() == []
        assert sorted(got) == ["a", "b", "c"]
    finally:
        await store.close()
