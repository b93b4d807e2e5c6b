"""The reality signal: this node's own outcomes about lessons it imported, as reputation events.

When an outcome is attributed to an imported lesson, the lesson's confidence
moves by the local learning rules (``lamarck.node.lessons.service``), and its **source** — the
node that signed it, ``imported_from``, never the peer that relayed it — gets a
``lesson_confirmed`` or ``lesson_contradicted`` event. These are the only events that can raise
a score (``EventKind.is_reality``).

The event's weight is the confidence the source itself claimed (``original_confidence``):
being wrong about a sure claim costs more, and being right about a hedged one earns less. Its
``cause`` is the outcome: one outcome judging one record is one event (its key is record,
outcome and kind), whichever path reports it — attribution, or the settlement of a conflict the
same outcome decided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from lamarck.domain.rows import LessonRow
from lamarck.learning.attribution import Attribution, Effect
from lamarck.reputation.events import EventKind, ReputationEvent

__all__ = ["reality_events"]

_KIND: Mapping[Effect, EventKind] = {
    Effect.CONFIRMED: EventKind.LESSON_CONFIRMED,
    Effect.CONTRADICTED: EventKind.LESSON_CONTRADICTED,
}


def reality_events(
    lessons: Sequence[LessonRow],
    attributions: Sequence[Attribution],
    *,
    outcome_id: str,
    at: datetime,
) -> tuple[ReputationEvent, ...]:
    """One event per attributed imported lesson; own lessons and unattributed ones give none.

    ``lessons`` are the in-play rows as they were before the outcome was applied.
    """
    by_id = {row.id: row for row in lessons}
    events: list[ReputationEvent] = []
    for att in attributions:
        kind = _KIND.get(att.effect)
        row = by_id.get(att.lesson_id)
        if kind is None or row is None or not row.imported_from:
            continue
        # Every imported row keeps the signed value; a row without one weighs by its own.
        claimed = row.original_confidence if row.original_confidence is not None else row.confidence
        domain = row.context.get("domain", "") if isinstance(row.context, Mapping) else ""
        events.append(
            ReputationEvent(
                kind=kind,
                node_id=row.imported_from,
                at=at,
                weight=min(1.0, max(0.0, claimed)),
                record_hash=row.content_hash or "",
                domain=domain if isinstance(domain, str) else "",
                detail=f"outcome {outcome_id} {att.effect.value} lesson {row.id}",
                cause=outcome_id,
            )
        )
    return tuple(events)
