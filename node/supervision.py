"""Supervision of the parts a node cannot answer without: its store and its own registry.

A :class:`Supervisor` probes each :class:`Supervised` part every ``probe_interval_s`` (a cheap
query: ``SELECT 1``, a Redis ``PING``). A failed probe marks the part down at once (the node's
health follows: ``NOT_SERVING``) and starts recovery with exponential backoff: a dead embedded
Postgres or Redis the node owns is started again, an external Postgres is reconnected. A part
is marked up again only by a probe that answers after recovery, so the node reports SERVING
only once it can answer.

The decisions are pure (:func:`decide`, :func:`backoff_s`, :func:`after_recovery` over a
:class:`PartState`); the loop around them is the edge. The parts themselves are small adapters
(:class:`StorePart`, :class:`RegistryPart`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from lamarck.errors import ConfigError, LamarckError
from lamarck.node.periodic import Periodic

__all__ = [
    "Decision",
    "PartState",
    "RegistryPart",
    "StorePart",
    "Supervised",
    "SupervisionParams",
    "Supervisor",
    "after_recovery",
    "backoff_s",
    "decide",
]

_log = logging.getLogger("lamarck.node.supervision")


@dataclass(frozen=True, slots=True)
class SupervisionParams:
    """How the node watches and recovers its store and registry; validated at construction."""

    #: Seconds between two probes of each part (> 0): bounds how long a dead part goes unseen.
    probe_interval_s: float = 1.0
    #: Seconds a probe may take before the part counts as down (> 0).
    probe_timeout_s: float = 2.0
    #: First delay between two recovery attempts, seconds (> 0).
    backoff_initial_s: float = 0.5
    #: Longest delay between two recovery attempts, seconds (>= backoff_initial_s).
    backoff_max_s: float = 30.0
    #: Growth of the delay per failed attempt (>= 1).
    backoff_factor: float = 2.0
    #: Random spread of each delay, as a fraction of it (0 <= jitter < 1): nodes sharing one
    #: external database do not all reconnect in the same instant.
    backoff_jitter: float = 0.1

    def __post_init__(self) -> None:
        """Validate every field."""
        for name in ("probe_interval_s", "probe_timeout_s", "backoff_initial_s", "backoff_max_s"):
            _check(name, getattr(self, name), low=0.0, low_open=True)
        _check("backoff_factor", self.backoff_factor, low=1.0)
        _check("backoff_jitter", self.backoff_jitter, low=0.0, high=1.0)
        if self.backoff_max_s < self.backoff_initial_s:
            raise ConfigError(
                f"invalid backoff_max_s={self.backoff_max_s}: must be >= backoff_initial_s",
                reason="invalid_config",
                field="backoff_max_s",
            )


def _check(
    name: str, value: object, *, low: float, low_open: bool = False, high: float | None = None
) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        number = float(value)  # type: ignore[arg-type]
        ok = (number > low if low_open else number >= low) and (high is None or number < high)
    if not ok:
        bound = f"> {low}" if low_open else f">= {low}"
        rule = f"a finite number {bound}" + (f" and < {high}" if high is not None else "")
        raise ConfigError(
            f"invalid {name}={value!r}: must be {rule}", reason="invalid_config", field=name
        )


# -- the pure core -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartState:
    """What the supervisor knows of one part."""

    #: Whether the node counts the part as answering (its health says so).
    up: bool = True
    #: Failed recovery attempts since the part went down.
    attempts: int = 0
    #: Monotonic time before which no recovery is attempted (backoff).
    retry_at: float = 0.0
    #: Monotonic time the part was marked down (``None`` while up).
    down_since: float | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do after one probe: the new state, whether health changes, whether to recover."""

    state: PartState
    #: ``True``/``False``: tell the node the part went up/down; ``None``: no change.
    mark: bool | None
    recover: bool


def decide(state: PartState, answered: bool, now: float) -> Decision:
    """The decision after a probe that ``answered`` (or not) at monotonic time ``now``."""
    if answered:
        if state.up:
            return Decision(state, None, False)
        return Decision(PartState(up=True), True, False)
    if state.up:
        # Down now: health flips at once, and the first recovery is tried right away.
        down = PartState(up=False, attempts=0, retry_at=now, down_since=now)
        return Decision(down, False, True)
    return Decision(state, None, now >= state.retry_at)


def backoff_s(attempts: int, params: SupervisionParams, rng: random.Random) -> float:
    """The delay before the next recovery after ``attempts`` failed ones (>= 1), jittered."""
    base = params.backoff_initial_s * params.backoff_factor ** max(0, attempts - 1)
    delay = min(params.backoff_max_s, base)
    spread = delay * params.backoff_jitter
    return max(0.0, delay + rng.uniform(-spread, spread))


def after_recovery(
    state: PartState, succeeded: bool, now: float, params: SupervisionParams, rng: random.Random
) -> PartState:
    """The state after a recovery attempt: a success waits for the next probe to mark the
    part up; a failure counts and schedules the next attempt after the backoff. Either way no
    new attempt comes before the backoff, so a part that recovers but still does not answer
    is not restarted in a tight loop."""
    attempts = state.attempts if succeeded else state.attempts + 1
    delay = backoff_s(max(1, attempts), params, rng)
    return replace(state, attempts=attempts, retry_at=now + delay)


# -- the edge ----------------------------------------------------------------------------


class Supervised(Protocol):
    """A part the node needs: probed, and recovered when the probe fails."""

    #: The part's name in logs and health (``store``, ``registry``).
    name: str

    async def probe(self) -> bool:
        """Whether the part answers now (never raises for an outage)."""
        ...

    async def recover(self) -> None:
        """Restart or reconnect the part; raise ``LamarckError`` if it cannot be yet."""
        ...


#: Told each time a part goes down (``False``) or answers again (``True``).
OnChange = Callable[[str, bool], Awaitable[None]]


class Supervisor:
    """Probes each part every ``probe_interval_s``, reports changes, recovers with backoff."""

    def __init__(
        self,
        parts: Sequence[Supervised],
        on_change: OnChange,
        params: SupervisionParams,
        *,
        rng: random.Random,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._parts = list(parts)
        self._states = {p.name: PartState() for p in self._parts}
        self._on_change = on_change
        self.params = params
        self._rng = rng
        self._monotonic = monotonic
        # A round that raised past the probes' own handling is logged once and tried again at
        # the next; ``stop`` ends the loop even if a probe loses its cancel (``Periodic``).
        self._loop = Periodic(
            "supervision", self.run_once, params.probe_interval_s, wait_first=True, logger=_log
        )
        #: Per part: how many recoveries succeeded, and the last outage's figures.
        self.recoveries: dict[str, int] = {p.name: 0 for p in self._parts}
        self.last_outage_s: dict[str, float] = {}

    def state(self, name: str) -> PartState:
        """The supervisor's view of part ``name``."""
        return self._states[name]

    async def run_once(self) -> None:
        """Probe every part once, act on what the probes say."""
        for part in self._parts:
            await self._step(part)

    async def _step(self, part: Supervised) -> None:
        now = self._monotonic()
        answered = await part.probe()
        decision = decide(self._states[part.name], answered, now)
        state = decision.state
        if decision.mark is False:
            _log.error("%s unavailable: health NOT_SERVING, recovering", part.name)
            await self._on_change(part.name, False)
        elif decision.mark is True:
            since = self._states[part.name].down_since
            if since is not None:
                self.last_outage_s[part.name] = now - since
            _log.warning(
                "%s answers again: health SERVING",
                part.name,
                extra={"outage_s": self.last_outage_s.get(part.name)},
            )
            await self._on_change(part.name, True)
        if decision.recover:
            try:
                await part.recover()
            except LamarckError as e:
                state = after_recovery(state, False, self._monotonic(), self.params, self._rng)
                _log.warning(
                    "%s recovery failed (%s); next attempt in %.1fs",
                    part.name,
                    e.reason,
                    state.retry_at - self._monotonic(),
                )
            else:
                self.recoveries[part.name] += 1
                state = after_recovery(state, True, self._monotonic(), self.params, self._rng)
                self._states[part.name] = state
                # Recovered: a probe at once rather than a round later, so the node serves
                # again as soon as it can answer (and only then).
                await self._step(part)
                return
        self._states[part.name] = state

    def start(self) -> None:
        """Run :meth:`run_once` every ``probe_interval_s`` in a task."""
        self._loop.start()

    async def stop(self) -> None:
        """Stop the loop (an in-flight recovery is cancelled); the supervisor can start again."""
        await self._loop.stop()


class _Pingable(Protocol):
    async def ping(self, timeout_s: float) -> None: ...

    async def reconnect(self, dsn: str | None = None) -> None: ...


class _Restartable(Protocol):
    def is_running(self) -> bool: ...

    def restart(self) -> str: ...


class StorePart:
    """The lesson store: probed by ``SELECT 1``; an embedded server that died is started
    again (``restart``, off the loop), an external one reconnected."""

    name = "store"

    def __init__(
        self, store: _Pingable, timeout_s: float, embedded: _Restartable | None = None
    ) -> None:
        self._store = store
        self._timeout_s = timeout_s
        self._embedded = embedded

    async def probe(self) -> bool:
        """Whether ``SELECT 1`` answers within the timeout."""
        try:
            await self._store.ping(self._timeout_s)
        except LamarckError:
            return False
        return True

    async def recover(self) -> None:
        """Restart a dead embedded server, then reconnect the pool."""
        dsn = None
        embedded = self._embedded
        if embedded is not None and not await asyncio.to_thread(embedded.is_running):
            dsn = await asyncio.to_thread(embedded.restart)
        await self._store.reconnect(dsn)


class _Registry(Protocol):
    async def registry_answers(self) -> bool: ...

    async def recover_registry(self) -> None: ...


class RegistryPart:
    """The registry this node owns (its embedded Redis): probed by PING, restarted if dead."""

    name = "registry"

    def __init__(self, membership: _Registry) -> None:
        self._membership = membership

    async def probe(self) -> bool:
        """Whether the registry answers."""
        return await self._membership.registry_answers()

    async def recover(self) -> None:
        """Start the embedded Redis again and register again."""
        await self._membership.recover_registry()
