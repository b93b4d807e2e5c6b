"""What the console's charts draw, computed from plain values: no I/O.

* ``score_series``: a peer's reputation score over time, replayed from its events with the
  book's own rule (``lamarck.reputation.scores.apply``), ending at the score the book holds now.
* ``quarantine_ages``: the pending held records counted by how long they have waited.
* ``evidence_counts``: lessons counted by evidence class (proven here, corroborated,
  unverified).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from lamarck.consensus.corroboration import EvidenceClass
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import apply, new_state, score

__all__ = ["AGE_BUCKETS", "evidence_counts", "quarantine_ages", "score_series"]

#: (label, upper bound) of the quarantine-age bars; the last one has no bound.
AGE_BUCKETS: tuple[tuple[str, timedelta | None], ...] = (
    ("< 10 min", timedelta(minutes=10)),
    ("10-60 min", timedelta(hours=1)),
    ("1-6 h", timedelta(hours=6)),
    ("6-24 h", timedelta(days=1)),
    ("1-7 days", timedelta(days=7)),
    ("> 7 days", None),
)


def score_series(
    node_id: str,
    events: Iterable[ReputationEvent],
    params: ReputationParams,
    *,
    now: datetime,
    current: float,
) -> list[tuple[datetime, float]]:
    """The peer's score after each of ``events`` (any order; replayed oldest first from the
    neutral start at the first one), then ``current`` (the book's score) at ``now``.

    With the whole history the last replayed point is the book's own score decayed to the
    event's time; with a truncated history (the newest events only) the line's start is
    approximate, its end is always the book's."""
    mine = sorted((e for e in events if e.node_id == node_id), key=lambda e: e.at)
    if not mine:
        return [(now, current)]
    state = new_state(node_id, mine[0].at, params)
    points = [(mine[0].at, score(state, mine[0].at, params))]
    for event in mine:
        state = apply(state, event, params)
        points.append((event.at, score(state, event.at, params)))
    points.append((max(now, points[-1][0]), current))
    return points


def quarantine_ages(received: Sequence[datetime], now: datetime) -> list[tuple[str, float]]:
    """How many held records have waited how long, one ``(label, count)`` per bucket."""
    counts = [0] * len(AGE_BUCKETS)
    for at in received:
        age = now - at
        for i, (_, bound) in enumerate(AGE_BUCKETS):
            if bound is None or age < bound:
                counts[i] += 1
                break
    return [(label, float(n)) for (label, _), n in zip(AGE_BUCKETS, counts, strict=True)]


def evidence_counts(classes: Iterable[EvidenceClass]) -> list[tuple[str, float]]:
    """Lessons per evidence class, in the order proven, corroborated, unverified."""
    tally = dict.fromkeys(EvidenceClass, 0)
    for c in classes:
        tally[c] += 1
    return [(c.value.replace("_", " "), float(n)) for c, n in tally.items()]
