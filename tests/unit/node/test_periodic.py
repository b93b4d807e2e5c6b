"""``Periodic``: the one loop every background round of the node runs on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from lamarck.errors import ConfigError, StoreUnavailable
from lamarck.node.periodic import Periodic, cancel_and_wait


class _Sleeps:
    """An injected sleep: records each wait and hands control back to the test."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)  # yield, as a real wait would


async def _until(event: asyncio.Event, bound_s: float = 5.0) -> None:
    async with asyncio.timeout(bound_s):
        await event.wait()


async def test_it_runs_the_step_after_each_wait_until_stopped() -> None:
    sleeps, rounds, third = _Sleeps(), [], asyncio.Event()

    async def step() -> None:
        rounds.append(len(rounds))
        if len(rounds) >= 3:
            third.set()

    loop = Periodic("counting", step, 2.5, sleep=sleeps)
    loop.start()
    await _until(third)
    await loop.stop()
    assert not loop.running
    done = len(rounds)
    await asyncio.sleep(0)
    assert len(rounds) == done  # nothing runs after stop
    assert set(sleeps.waits) == {2.5}


async def test_stop_ends_the_loop_even_when_a_round_loses_the_cancel() -> None:
    # A step that swallows its cancel, as Python 3.11's wait_for can when the awaited call
    # completes as the cancel arrives: a loop that only a cancel ends would run on for ever.
    entered = asyncio.Event()
    swallowed = 0
    rounds = 0

    async def step() -> None:
        nonlocal swallowed, rounds
        rounds += 1
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            swallowed += 1  # and returns as if the call had completed

    loop = Periodic("stubborn", step, 0.0)
    loop.start()
    async with asyncio.timeout(5):
        await entered.wait()
    async with asyncio.timeout(5):
        await loop.stop()
    assert swallowed == 1 and rounds == 1 and not loop.running
    entered.clear()
    loop.start()  # a stopped loop starts again
    async with asyncio.timeout(5):
        await entered.wait()
        await loop.stop()
    assert swallowed == 2


async def test_a_failing_round_is_logged_once_per_kind_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcomes: list[BaseException | None] = [
        StoreUnavailable("down", reason="store_unavailable"),
        StoreUnavailable("still down", reason="store_unavailable"),
        ValueError("other"),
        None,
        None,
    ]
    seen, all_seen = 0, asyncio.Event()

    async def step() -> None:
        nonlocal seen
        outcome = outcomes[min(seen, len(outcomes) - 1)]
        seen += 1
        if seen >= len(outcomes):
            all_seen.set()
        if outcome is not None:
            raise outcome

    loop = Periodic("flaky", step, 0.0, sleep=_Sleeps())
    with caplog.at_level(logging.DEBUG, logger="lamarck.node.periodic"):
        loop.start()
        await _until(all_seen)
        await loop.stop()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    # Two kinds of failure: two tracebacks, not three; the repeat is a debug line.
    assert errors == ["flaky round failed", "flaky round failed"]
    assert any(r.getMessage().startswith("flaky round failed again") for r in caplog.records)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "flaky round works again"
    ]
    assert loop.failing == ""


async def test_the_wait_can_follow_how_long_the_round_took() -> None:
    sleeps, now, second = _Sleeps(), [100.0], asyncio.Event()
    rounds = 0

    async def step() -> None:
        nonlocal rounds
        rounds += 1
        now[0] += 4.0  # each round takes 4 s of the injected clock
        if rounds >= 2:
            second.set()

    loop = Periodic("paced", step, lambda took: 10.0 - took, sleep=sleeps, monotonic=lambda: now[0])
    loop.start()
    await _until(second)
    await loop.stop()
    assert sleeps.waits[0] == pytest.approx(6.0)  # rest of a 10 s spacing


async def test_wait_first_waits_before_the_first_round() -> None:
    sleeps, rounds, first = _Sleeps(), [], asyncio.Event()

    async def step() -> None:
        rounds.append(len(sleeps.waits))
        first.set()

    loop = Periodic("later", step, 7.0, wait_first=True, sleep=sleeps)
    loop.start()
    await _until(first)
    await loop.stop()
    assert rounds[0] == 1  # one wait came before the first round


async def test_one_round_by_hand_logs_instead_of_raising(caplog: pytest.LogCaptureFixture) -> None:
    async def step() -> None:
        raise StoreUnavailable("down", reason="store_unavailable")

    loop = Periodic("by hand", step, 1.0)
    with caplog.at_level(logging.ERROR, logger="lamarck.node.periodic"):
        await loop.round()
    assert loop.failing == "StoreUnavailable:store_unavailable"
    assert [r.getMessage() for r in caplog.records] == ["by hand round failed"]
    await loop.stop()  # never started: nothing to do


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "1"])
def test_a_fixed_wait_must_be_a_finite_number_at_least_zero(bad: object) -> None:
    async def step() -> None:
        pass

    with pytest.raises(ConfigError, match="the odd round's wait"):
        Periodic("odd", step, bad)  # type: ignore[arg-type]


async def test_a_stop_under_a_callers_bound_gives_up_instead_of_hanging() -> None:
    # A round that never ends, whatever it is told: the caller's bound (the daemon's
    # stop_part_timeout_s) must still end the stop, its cancel never swallowed by it.
    entered, release = asyncio.Event(), asyncio.Event()

    async def step() -> None:
        entered.set()
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue

    loop = Periodic("hung", step, 0.0)
    loop.start()
    async with asyncio.timeout(5):
        await entered.wait()
    stopping = asyncio.ensure_future(_bounded_stop(loop, 0.05))
    done, _ = await asyncio.wait({stopping}, timeout=5)
    assert done == {stopping}, "the stop swallowed its caller's cancel"
    assert isinstance(stopping.exception(), TimeoutError)
    release.set()  # let the round end, so the test leaves no task behind


async def _bounded_stop(loop: Periodic, seconds: float) -> None:
    async with asyncio.timeout(seconds):
        await loop.stop()


async def test_cancel_and_wait_names_the_errors_tasks_ended_with() -> None:
    started = asyncio.Event()

    async def fails_on_cancel() -> None:
        try:
            started.set()
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise ValueError("cleanup failed") from None

    async def plain() -> None:
        await asyncio.sleep(3600)

    failing, cancelled = asyncio.ensure_future(fails_on_cancel()), asyncio.ensure_future(plain())
    async with asyncio.timeout(5):
        await started.wait()
        errors = await cancel_and_wait([failing, cancelled])
    assert [str(e) for e in errors] == ["cleanup failed"]
    assert cancelled.cancelled()
    assert await cancel_and_wait([]) == []
