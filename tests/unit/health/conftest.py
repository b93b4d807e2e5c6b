"""A small builder of stored lessons, events and predictions for health-report tests.

Times are given as "days/hours ago" from one fixed ``NOW`` so every test reads as a story.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lamarck.domain.rows import Category, LessonEvent, LessonRow, LessonStatus
from lamarck.health.figures import HealthReport
from lamarck.health.inputs import HealthInputs, Prediction
from lamarck.health.params import HealthParams
from lamarck.health.report import health_report
from tests.factories import lesson_row

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def ago(days: float = 0.0, hours: float = 0.0) -> datetime:
    """``NOW`` minus a duration."""
    return NOW - timedelta(days=days, hours=hours)


class StoreBuilder:
    """Collects rows, events and predictions, then runs the report over them."""

    now = NOW

    @staticmethod
    def ago(days: float = 0.0, hours: float = 0.0) -> datetime:
        """``NOW`` minus a duration."""
        return ago(days, hours)

    def __init__(self) -> None:
        self.rows: dict[str, LessonRow] = {}
        self.events: list[LessonEvent] = []
        self.predictions: list[Prediction] = []
        self._outcomes = 0

    def lesson(
        self,
        lesson_id: str,
        *,
        confidence: float = 0.5,
        status: LessonStatus = LessonStatus.ACTIVE,
        created_days_ago: float = 10.0,
        used_days_ago: float | None = 0.0,
        context: dict[str, Any] | None = None,
        born: float | None = None,
        birth_kind: str = "created",
        category: Category = Category.LESSON,
    ) -> str:
        """Store a lesson and its birth event (at ``born``, default its confidence)."""
        created = ago(created_days_ago)
        self.rows[lesson_id] = lesson_row(
            lesson_id,
            at=created,
            content=f"lesson {lesson_id}",
            operation="op",
            status=status,
            confidence=confidence,
            category=category,
            last_used=None if used_days_ago is None else ago(used_days_ago),
            context=context or {},
        )
        self.events.append(
            LessonEvent(
                lesson_id,
                created,
                birth_kind,
                "loop",
                None,
                confidence if born is None else born,
            )
        )
        return lesson_id

    def _outcome(self) -> str:
        self._outcomes += 1
        return f"outcome-{self._outcomes}"

    def test(
        self,
        lesson_id: str,
        kind: str,
        *,
        before: float,
        after: float,
        days_ago: float = 1.0,
        hours_ago: float = 0.0,
        similarity: float | None = 0.95,
        with_outcome: bool = True,
    ) -> None:
        """A reality test of a lesson: a ``confirmed`` or ``contradicted`` event."""
        reason = "" if similarity is None else f"similarity={similarity:.2f}"
        self.events.append(
            LessonEvent(
                lesson_id,
                ago(days_ago, hours_ago),
                kind,
                "loop",
                before,
                after,
                reason=reason,
                outcome_id=self._outcome() if with_outcome else "",
            )
        )

    def event(
        self,
        lesson_id: str,
        kind: str,
        *,
        days_ago: float = 0.0,
        hours_ago: float = 0.0,
        before: float | None = None,
        after: float | None = None,
        actor: str = "loop",
    ) -> None:
        """Any other event of the log."""
        self.events.append(
            LessonEvent(lesson_id, ago(days_ago, hours_ago), kind, actor, before, after)
        )

    def predict(
        self,
        confidence: float,
        *,
        correct: bool,
        days_ago: float = 1.0,
        predicted: bool = True,
    ) -> None:
        """A resolved prediction that came true (``correct``) or not."""
        self.predictions.append(
            Prediction(
                subject="op",
                predicted_success=predicted,
                confidence=confidence,
                at=ago(days_ago),
                actual_success=predicted if correct else not predicted,
            )
        )

    def inputs(self) -> HealthInputs:
        """The values the edge would load."""
        return HealthInputs(tuple(self.rows.values()), tuple(self.events), tuple(self.predictions))

    def report(self, params: HealthParams | None = None) -> HealthReport:
        """Run the report at ``NOW``."""
        return health_report(self.inputs(), params or HealthParams(), NOW)


@pytest.fixture
def store() -> StoreBuilder:
    """An empty store builder."""
    return StoreBuilder()
