"""The health page's imports-and-rejections plot, read from a ``LessonStore``.

``lamarck.node.console.activity`` bins times; this module reads them: the ``imported``
events of imported lessons (a lesson last changed before the window cannot have been
imported in it, so its events are not asked for) and the rejection log's newest rows, both
bounded by ``ConsoleParams.activity_max_rows``.
"""

from __future__ import annotations

from datetime import datetime

from lamarck.domain.rows import LessonFilter
from lamarck.node.api.health_loader import EVENT_CHUNK, LESSON_PAGE
from lamarck.node.console.activity import (
    ActivityTimeline,
    activity_timeline,
    bins_for_age,
    window_start,
)
from lamarck.node.console.http import ConsoleParams
from lamarck.node.store.port import LessonStore

__all__ = ["IMPORTED_EVENT", "load_activity"]

#: The event kind the import pipeline logs when it stores a record.
IMPORTED_EVENT = "imported"


async def _import_times(store: LessonStore, since: datetime, max_rows: int) -> list[datetime]:
    """When each imported lesson (every version) was imported, from ``since`` on."""
    ids: list[str] = []
    offset = 0
    while offset < max_rows:
        page = await store.list_lessons(
            LessonFilter(
                statuses=None,
                imported=True,
                limit=min(LESSON_PAGE, max_rows - offset),
                offset=offset,
            )
        )
        ids.extend(row.id for row in page if row.updated_at >= since)
        offset += len(page)
        if len(page) < LESSON_PAGE:
            break
    times: list[datetime] = []
    for start in range(0, len(ids), EVENT_CHUNK):
        for event in await store.lesson_events(ids[start : start + EVENT_CHUNK]):
            if event.kind == IMPORTED_EVENT and event.at >= since:
                times.append(event.at)
    return times


async def load_activity(store: LessonStore, p: ConsoleParams, now: datetime) -> ActivityTimeline:
    """Imports and rejections binned over the window ending at ``now``, in bins fitted to the
    age of the node's history within the configured window (``bins_for_age``: from its
    oldest import or refusal)."""
    since = window_start(now, p)
    max_rows = int(p.activity_max_rows)
    imports = await _import_times(store, since, max_rows)
    rejections = [
        (row.received_at, row.reason)
        for row in await store.list_rejections(max_rows)
        if row.received_at >= since
    ]
    oldest = min([*imports, *(at for at, _ in rejections)], default=now)
    fitted = bins_for_age(now - oldest, p)
    return activity_timeline(imports, rejections, now=now, p=fitted)
