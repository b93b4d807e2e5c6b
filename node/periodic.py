"""``Periodic``: one background round, run again and again until the node stops it.

Every loop of the node runs on this class (maintenance, the store and health gauges, the
sharing rounds), so each has the same three guarantees instead of its own ``while True``:

* ``stop`` ends the loop even when a cancel is lost below it. On Python 3.11,
  ``asyncio.wait_for`` (and library code written like it) returns the awaited result instead
  of raising when a cancel arrives just as the call completes; a loop that only a cancel ends
  then runs for ever, and a node's bounded stop leaves it behind (the supervisor's did, and
  failed CI: ``docs/architecture.md``). The loop here also reads a stop flag after each
  round and each wait.
* a failing round never ends the loop, and its failure is logged once per kind (the error's
  type and typed reason), not once a round: a store down for a minute prints one traceback,
  not sixty; the first round that works again says so.
* the wait between rounds is data: a number of seconds, or a function of how long the round
  took (the health gauges keep to their share of the node's time).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from lamarck.errors import ConfigError

__all__ = ["Periodic", "Wait", "cancel_and_wait"]

_log = logging.getLogger(__name__)

#: Seconds to wait after a round: fixed, or computed from the seconds the round took.
Wait = float | Callable[[float], float]


async def cancel_and_wait(tasks: Collection[asyncio.Task[Any]]) -> list[BaseException]:
    """Cancel ``tasks`` and wait for them to end; the errors they ended with (cancels aside).

    ``asyncio.wait``, not ``await task``: a caller's cancel (its bound on the stop) interrupts
    the wait even while a task refuses its own cancel, where awaiting the task would wait on
    with it; such a task is left to end by itself.
    """
    if not tasks:
        return []
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)
    return [e for t in tasks if not t.cancelled() and (e := t.exception()) is not None]


def _failure_kind(error: Exception) -> str:
    return f"{type(error).__name__}:{getattr(error, 'reason', '')}"


class Periodic:
    """Runs ``step`` every ``wait`` seconds on the running loop between ``start`` and ``stop``.

    ``wait_first``: the first round comes after one wait (the caller ran one itself).
    ``sleep`` and ``monotonic`` are injected by tests; the node uses asyncio's and time's.
    """

    def __init__(
        self,
        name: str,
        step: Callable[[], Awaitable[object]],
        wait: Wait,
        *,
        wait_first: bool = False,
        logger: logging.Logger | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Refuse a fixed wait that is not a finite number >= 0 (``ConfigError``)."""
        if not callable(wait) and (
            isinstance(wait, bool)
            or not isinstance(wait, int | float)
            or not math.isfinite(wait)
            or wait < 0
        ):
            raise ConfigError(f"the {name} round's wait must be a finite number >= 0, got {wait!r}")
        self.name = name
        self._step = step
        self._wait = wait
        self._wait_first = wait_first
        self._log = logger if logger is not None else _log
        self._sleep = sleep
        self._monotonic = monotonic
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        #: The kind of the last round's failure ("" while rounds work).
        self.failing = ""

    @property
    def running(self) -> bool:
        """Whether the loop is started and not yet ended."""
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the loop (a no-op while it runs); a stopped one can start again."""
        if self.running:
            return
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        """End the loop and wait for it: the round under way is cancelled."""
        self._stopping = True
        task, self._task = self._task, None
        if task is None:
            return
        # A loop whose round refuses its cancel ends at its flag when the round does.
        for error in await cancel_and_wait([task]):
            self._log.error("%s loop ended by %r", self.name, error)

    def _seconds(self, took: float) -> float:
        wait = self._wait
        return max(0.0, wait(took) if callable(wait) else wait)

    async def _run(self) -> None:
        if self._wait_first:
            await self._sleep(self._seconds(0.0))
        while not self._stopping:
            started = self._monotonic()
            await self.round()
            if self._stopping:
                break
            await self._sleep(self._seconds(self._monotonic() - started))

    async def round(self) -> None:
        """One round now; a failure is logged (once per kind in a row), never raised."""
        try:
            await self._step()
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a background loop never dies: the next round retries
            kind = _failure_kind(e)
            if kind != self.failing:
                self._log.exception("%s round failed", self.name)
            else:
                self._log.debug("%s round failed again: %s", self.name, e)
            self.failing = kind
        else:
            if self.failing:
                self._log.info("%s round works again", self.name)
            self.failing = ""
