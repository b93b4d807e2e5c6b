"""The supervisor marks a dead part down at once, recovers it with backoff, and marks it up
only when a probe answers again; the node's health follows (NodeServers)."""

from __future__ import annotations

import asyncio
import random

import pytest
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer

from lamarck.errors import ConfigError, StoreUnavailable
from lamarck.node.api.server import AGENT_SERVICE, PEER_SERVICE, NodeServers
from lamarck.node.supervision import (
    PartState,
    StorePart,
    SupervisionParams,
    Supervisor,
    after_recovery,
    backoff_s,
    decide,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
NO_JITTER = SupervisionParams(backoff_initial_s=0.5, backoff_max_s=4.0, backoff_jitter=0.0)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Part:
    """A part whose probe answers as told; recovery fails ``failures`` times, then fixes it."""

    name = "store"

    def __init__(self, failures: int = 0) -> None:
        self.answers = True
        self.failures = failures
        self.recoveries = 0

    async def probe(self) -> bool:
        return self.answers

    async def recover(self) -> None:
        self.recoveries += 1
        if self.failures > 0:
            self.failures -= 1
            raise StoreUnavailable("still down", reason="embedded_restart_failed")
        self.answers = True


def test_a_failed_probe_marks_the_part_down_and_recovers_at_once() -> None:
    decision = decide(PartState(), answered=False, now=5.0)
    assert decision.mark is False and decision.recover
    assert not decision.state.up and decision.state.down_since == 5.0


def test_an_answer_after_an_outage_marks_the_part_up_and_forgets_the_attempts() -> None:
    down = PartState(up=False, attempts=3, retry_at=50.0, down_since=1.0)
    decision = decide(down, answered=True, now=9.0)
    assert decision.mark is True and not decision.recover
    assert decision.state == PartState()


def test_no_recovery_before_the_backoff_has_passed() -> None:
    down = PartState(up=False, attempts=1, retry_at=10.0, down_since=1.0)
    assert not decide(down, answered=False, now=9.9).recover
    assert decide(down, answered=False, now=10.0).recover


def test_backoff_doubles_up_to_its_cap() -> None:
    rng = random.Random(1)
    delays = [backoff_s(n, NO_JITTER, rng) for n in range(1, 7)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_backoff_jitter_stays_within_its_fraction() -> None:
    params = SupervisionParams(backoff_initial_s=1.0, backoff_jitter=0.2)
    rng = random.Random(7)
    delays = [backoff_s(1, params, rng) for _ in range(200)]
    assert all(0.8 <= d <= 1.2 for d in delays)
    assert len(set(delays)) > 1


def test_a_failed_recovery_is_counted_and_scheduled_after_the_backoff() -> None:
    state = PartState(up=False, down_since=0.0)
    failed = after_recovery(state, False, 10.0, NO_JITTER, random.Random(1))
    assert failed.attempts == 1 and failed.retry_at == 10.5
    again = after_recovery(failed, False, 11.0, NO_JITTER, random.Random(1))
    assert again.attempts == 2 and again.retry_at == 12.0


@pytest.mark.parametrize(
    "field,value",
    [
        ("probe_interval_s", 0.0),
        ("probe_timeout_s", float("nan")),
        ("backoff_initial_s", -1.0),
        ("backoff_factor", 0.5),
        ("backoff_jitter", 1.0),
        ("backoff_max_s", float("inf")),
    ],
)
def test_invalid_supervision_params_are_refused_naming_the_field(field: str, value: float) -> None:
    with pytest.raises(ConfigError) as caught:
        SupervisionParams(**{field: value})
    assert caught.value.details["field"] == field


def test_a_backoff_cap_below_the_first_delay_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        SupervisionParams(backoff_initial_s=5.0, backoff_max_s=1.0)
    assert caught.value.details["field"] == "backoff_max_s"


async def test_the_supervisor_reports_down_retries_with_backoff_and_reports_up_on_an_answer() -> (
    None
):
    clock = _Clock()
    part = _Part(failures=2)
    changes: list[tuple[str, bool]] = []

    async def on_change(name: str, up: bool) -> None:
        changes.append((name, up))

    supervisor = Supervisor([part], on_change, NO_JITTER, rng=random.Random(1), monotonic=clock)
    await supervisor.run_once()
    assert changes == [] and part.recoveries == 0

    part.answers = False
    await supervisor.run_once()  # down: reported, first recovery fails
    assert changes == [("store", False)] and part.recoveries == 1
    clock.now += 0.2
    await supervisor.run_once()  # within the backoff: no attempt
    assert part.recoveries == 1
    clock.now += 0.5
    await supervisor.run_once()  # second attempt fails, backoff doubles
    assert part.recoveries == 2 and supervisor.state("store").attempts == 2
    clock.now += 1.1
    await supervisor.run_once()  # third attempt succeeds and the probe right after answers
    assert part.recoveries == 3
    assert changes == [("store", False), ("store", True)]
    assert supervisor.recoveries["store"] == 1
    assert supervisor.last_outage_s["store"] == pytest.approx(1.8)


class _SwallowsCancel(_Part):
    """A probe that loses the first cancel it gets, as Python 3.11's ``wait_for`` does when
    the awaited call completes as the cancel arrives: it answers instead of raising. Later
    cancels go through, so a supervisor without a stop flag fails the test, not hangs it."""

    def __init__(self) -> None:
        super().__init__()
        self.probing = asyncio.Event()
        self.swallowed = 0

    async def probe(self) -> bool:
        self.probing.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if self.swallowed:
                raise
            self.swallowed += 1
        return True


async def test_stop_ends_the_loop_even_when_a_probe_loses_the_cancel() -> None:
    part = _SwallowsCancel()

    async def on_change(name: str, up: bool) -> None:
        pass

    params = SupervisionParams(probe_interval_s=0.001)
    supervisor = Supervisor([part], on_change, params, rng=random.Random(1))
    supervisor.start()
    async with asyncio.timeout(10):
        await part.probing.wait()
    # Without the stop flag the loop probes again and stop() waits until a later cancel.
    async with asyncio.timeout(5):
        await supervisor.stop()
    assert part.swallowed == 1
    part.probing.clear()
    supervisor.start()  # a stopped supervisor starts again
    async with asyncio.timeout(10):
        await part.probing.wait()
        await supervisor.stop()


class _Stubborn(_Part):
    """Recovery claims success, but the part still does not answer."""

    async def recover(self) -> None:
        self.recoveries += 1


async def test_a_recovery_that_does_not_make_the_part_answer_keeps_it_down_and_backs_off() -> None:
    clock = _Clock()
    part = _Stubborn()
    changes: list[tuple[str, bool]] = []

    async def on_change(name: str, up: bool) -> None:
        changes.append((name, up))

    supervisor = Supervisor([part], on_change, NO_JITTER, rng=random.Random(1), monotonic=clock)
    part.answers = False
    await supervisor.run_once()
    assert changes == [("store", False)] and part.recoveries == 1
    await supervisor.run_once()  # same instant: the backoff holds the next attempt
    assert part.recoveries == 1 and changes == [("store", False)]
    clock.now += 0.5
    await supervisor.run_once()
    assert part.recoveries == 2 and not supervisor.state("store").up


class _Store:
    def __init__(self) -> None:
        self.up = False
        self.reconnected_to: list[str | None] = []

    async def ping(self, timeout_s: float) -> None:
        if not self.up:
            raise StoreUnavailable("down")

    async def reconnect(self, dsn: str | None = None) -> None:
        self.reconnected_to.append(dsn)


class _Embedded:
    def __init__(self, running: bool) -> None:
        self.running = running
        self.restarts = 0

    def is_running(self) -> bool:
        return self.running

    def restart(self) -> str:
        self.restarts += 1
        self.running = True
        return "postgresql://restarted"


async def test_a_dead_embedded_server_is_restarted_and_the_pool_moves_to_its_dsn() -> None:
    store, embedded = _Store(), _Embedded(running=False)
    part = StorePart(store, 1.0, embedded=embedded)
    assert not await part.probe()
    await part.recover()
    assert embedded.restarts == 1 and store.reconnected_to == ["postgresql://restarted"]


async def test_a_running_server_or_an_external_one_is_only_reconnected() -> None:
    store, embedded = _Store(), _Embedded(running=True)
    await StorePart(store, 1.0, embedded=embedded).recover()
    await StorePart(store, 1.0).recover()
    assert embedded.restarts == 0 and store.reconnected_to == [None, None]


async def _statuses(servers: NodeServers) -> tuple[int, int, int]:
    status = servers.health._server_status  # the servicer's own table
    return status[""], status[AGENT_SERVICE], status[PEER_SERVICE]


async def test_health_is_serving_only_while_the_store_answers_and_the_peer_side_also_needs_the_registry() -> (  # noqa: E501
    None
):
    servers = NodeServers(None, None, HealthServicer(), "", "")  # type: ignore[arg-type]
    await servers.set_serving(True)
    assert await _statuses(servers) == (SERVING, SERVING, SERVING)
    await servers.set_store_available(False)
    assert await _statuses(servers) == (NOT_SERVING, NOT_SERVING, NOT_SERVING)
    # Admission refreshed meanwhile must not bring the peer side back.
    await servers.set_peer_serving(True)
    assert await _statuses(servers) == (NOT_SERVING, NOT_SERVING, NOT_SERVING)
    await servers.set_store_available(True)
    assert await _statuses(servers) == (SERVING, SERVING, SERVING)
    await servers.set_registry_available(False)
    assert await _statuses(servers) == (SERVING, SERVING, NOT_SERVING)
    await servers.set_registry_available(True)
    await servers.set_peer_serving(False)
    assert await _statuses(servers) == (SERVING, SERVING, NOT_SERVING)
