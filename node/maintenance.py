"""The node's own maintenance: the per-scope cap and reconcile passes, on a schedule.

Adaptive memory caps each scope at ``max_active_per_scope`` active lessons of the node's own
(imported copies are not capped) and decays what goes unused; both are rules of the lesson
service (``node/lessons/maintenance.py``). This loop is what makes a running node apply them:
the cap every ``cap_interval_s`` (a burst of outcomes must not leave a scope over its cap for
a day), reconcile every
``reconcile_interval_s`` (the decay rules count one step per pass, so passes are daily).
"""

from __future__ import annotations

import logging
from datetime import datetime

from lamarck.node.lessons.service import LessonService
from lamarck.node.params import MaintenanceParams
from lamarck.node.periodic import Periodic
from lamarck.proto.clock import Clock

__all__ = ["MaintenanceLoop"]

_log = logging.getLogger(__name__)


class MaintenanceLoop:
    """Runs the lesson service's cap and reconcile passes on their intervals."""

    def __init__(self, lessons: LessonService, params: MaintenanceParams, clock: Clock) -> None:
        self._lessons = lessons
        self._params = params
        self._clock = clock
        self._last_reconcile: datetime | None = None
        # A pass that fails (the store is down) is logged once; the next pass retries.
        self._loop = Periodic("maintenance", self.tick, params.cap_interval_s, logger=_log)

    async def tick(self) -> None:
        """One pass: reconcile when it is due (it enforces the cap too), else the cap alone."""
        now = self._clock.now()
        due = (
            self._last_reconcile is not None
            and (now - self._last_reconcile).total_seconds() >= self._params.reconcile_interval_s
        )
        if self._last_reconcile is None:
            # The first pass after start: the cap now, the first decay a full interval later.
            self._last_reconcile = now
        if due:
            result = await self._lessons.reconcile()
            self._last_reconcile = now
            if result.decayed or result.capped:
                _log.info(
                    "reconcile: %d decayed, %d retired, %d over the cap",
                    len(result.decayed),
                    len(result.retired),
                    len(result.capped),
                )
            return
        capped = await self._lessons.enforce_cap()
        if capped:
            _log.info("%d lessons over their scope's cap superseded", len(capped))

    def start(self) -> None:
        """Run ``tick`` now and then every ``cap_interval_s`` until ``stop``."""
        self._loop.start()

    async def stop(self) -> None:
        """End the loop (the pass under way is cancelled)."""
        await self._loop.stop()
