"""The integration services fixture: the same bodies against containers or embedded servers.

Which one this run used is in the report header and the terminal summary.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lamarck.domain.rows import LessonFilter
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import Admission, sign_enrollment, sign_registration
from lamarck.registry.redis_directory import RedisPeerDirectory
from tests.factories import lesson_row

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

DIM = 8
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_the_services_are_one_kind_or_the_other_and_say_which(integration_services: Any) -> None:
    services = integration_services
    assert services.source in ("testcontainers", "embedded")
    assert services.postgres_dsn.startswith(("postgresql://", "postgres://"))
    assert services.redis_url.startswith("redis://")
    assert services.description


async def test_a_lesson_store_migrates_and_keeps_a_lesson_on_the_services_postgres(
    integration_services: Any,
) -> None:
    store = await PostgresLessonStore.connect(integration_services.postgres_dsn, DIM, max_size=2)
    lesson_id = str(uuid.uuid4())
    try:
        await store.insert_lesson(
            lesson_row(
                lesson_id,
                at=T0,
                content="Run database migrations before restarting the api service.",
                operation="deploy.restart",
                confidence=0.8,
            )
        )
        assert (await store.get_lesson(lesson_id)).content.startswith("Run database migrations")
        ids = {r.id for r in await store.list_lessons(LessonFilter(statuses=None, limit=1000))}
        assert lesson_id in ids
    finally:
        await store.hard_delete(lesson_id)
        await store.close()


async def test_a_node_registers_on_the_services_redis(integration_services: Any) -> None:
    clock = SystemClock()
    rng = random.Random(5)
    operator, node = NodeIdentity.generate(rng), NodeIdentity.generate(rng)
    directory = RedisPeerDirectory.from_url(
        integration_services.redis_url,
        namespace="services-" + uuid.uuid4().hex,
        params=RegistryParams(admission=AdmissionMode.OPERATOR),
        clock=clock,
        operator_public_key=operator.public_key_b64,
    )
    try:
        now = clock.now()
        token = sign_enrollment(
            operator, node_id=node.node_id, issued_at=now, expires_at=now + timedelta(hours=1)
        )
        registration = sign_registration(
            node,
            address="127.0.0.1:7700",
            domains=(),
            version="0.1.0",
            nonce=(await directory.issue_nonce()).nonce,
            admission=Admission(mode=AdmissionMode.OPERATOR, enrollment_token=token),
            created_at=now,
        )
        await directory.register(registration)
        assert [p.node_id for p in await directory.live_peers()] == [node.node_id]
    finally:
        await directory.clear_namespace()
        await directory.aclose()
