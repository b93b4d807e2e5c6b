"""The health report's edge: load its inputs from the store (``HealthReads``) and compute it.

``lamarck.health`` is pure; this module reads what it needs (the facts of every lesson of
category ``lesson`` in any status, a page at a time, and their event log in chunks) and calls
``health_report``. Predictions come from the reality tests in the event log
(``predictions_from_validations``) until the SDK's run recorder stores explicit predictions.
Used by ``OperatorService.GetHealth``, the health gauges and the console.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from lamarck.domain.rows import (
    LessonEvent,
    LessonFacts,
)
from lamarck.health.figures import HealthReport
from lamarck.health.inputs import (
    HealthInputs,
    predictions_from_validations,
    validations_from_events,
)
from lamarck.health.params import HealthParams
from lamarck.health.report import health_report
from lamarck.learning.params import LearningParams
from lamarck.learning.variables import VariableImportanceLearner
from lamarck.node.lessons.core import LEARNER_STATE_KEY
from lamarck.node.store.port import (
    EventLog,
    LessonQueries,
    StateStore,
    keyset_pages,
)

__all__ = [
    "EVENT_CHUNK",
    "LESSON_PAGE",
    "HealthReads",
    "current_report",
    "learned_variables",
    "load_health_inputs",
]

#: Lessons read per ``lesson_facts`` call.
LESSON_PAGE = 500
#: Lesson ids asked per ``lesson_events`` call (bounds one query's parameter list).
EVENT_CHUNK = 500


class HealthReads(LessonQueries, EventLog, Protocol):
    """The store's parts the health report reads: every lesson's facts and their events."""


async def _all_lessons(store: LessonQueries) -> list[LessonFacts]:
    """Every lesson (not situation) in any status, each once: its facts, a keyset page at a
    time (whole rows with their vectors and records, by OFFSET pages sorted by confidence,
    took 8.4 s at 20,000 lessons, on every status call and every health refresh)."""
    rows: list[LessonFacts] = []
    async for page in keyset_pages(store.lesson_facts, lambda facts: facts.id, LESSON_PAGE):
        rows.extend(page)
    return rows


async def load_health_inputs(store: HealthReads, params: HealthParams) -> HealthInputs:
    """The report's inputs as stored now: lessons, their events, implicit predictions."""
    lessons = await _all_lessons(store)
    ids = [row.id for row in lessons]
    events: list[LessonEvent] = []
    for start in range(0, len(ids), EVENT_CHUNK):
        events.extend(await store.lesson_events(ids[start : start + EVENT_CHUNK]))
    # Chunks are each in log order; a stable sort by time merges them and keeps append order
    # between events of one lesson at the same instant.
    events.sort(key=lambda e: e.at)
    predictions = predictions_from_validations(validations_from_events(events, params))
    return HealthInputs(lessons=lessons, events=events, predictions=predictions)


async def current_report(store: HealthReads, params: HealthParams, now: datetime) -> HealthReport:
    """The health report of ``store`` at ``now``."""
    return health_report(await load_health_inputs(store, params), params, now)


async def learned_variables(
    store: StateStore, params: LearningParams
) -> dict[str, dict[str, object]]:
    """The health report's ``variables`` section: per context variable, the
    class in force (learned, or the fixed list's until ``min_observations``), whether it was
    learned, and the predictions across a difference in it that held and failed."""
    stored = await store.get_state(LEARNER_STATE_KEY)
    learner = VariableImportanceLearner.from_json(stored) if stored else VariableImportanceLearner()
    vp = params.knowledge.variables
    out: dict[str, dict[str, object]] = {}
    for name, cls in learner.classes(vp, params.context).items():
        stats = learner.stats.get(name)
        out[name] = {
            "class": cls.value,
            "learned": learner.learned(name, vp) is not None,
            "correct": stats.correct if stats else 0,
            "incorrect": stats.incorrect if stats else 0,
        }
    return out
