"""What the rest of the node sees of reputation: read a score, emit an event.

Import, gossip and voter selection only ask ``ReputationView.score(node_id)`` and compare it
with thresholds; everything that happens is reported through ``ReputationSink.emit(event)``.
``InMemoryReputation`` implements both over the pure core in ``lamarck.reputation.scores``; a
persistent adapter must behave the same (in particular, drop an event whose ``key`` it has
already applied).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from lamarck.proto.clock import Clock
from lamarck.reputation import scores
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import ReputationState, ScoreBreakdown, TrustBand
from lamarck.reputation.transfer import TrackRecord

__all__ = ["InMemoryReputation", "ReputationSink", "ReputationView", "TrackRecords"]


@runtime_checkable
class ReputationView(Protocol):
    """Reads scores; the only thing import, gossip and voter selection need."""

    def score(self, node_id: str) -> float:
        """The node's current score in [0, 1]."""
        ...


@runtime_checkable
class TrackRecords(Protocol):
    """Reads a source's reality-judged record here (confidence transfer's probation). A view
    without it puts every source on probation: fail closed."""

    def track_record(self, node_id: str) -> TrackRecord:
        """How many of the node's lessons this node's own outcomes confirmed, contradicted."""
        ...


@runtime_checkable
class ReputationSink(Protocol):
    """Receives reputation events; never returns a score."""

    def emit(self, event: ReputationEvent) -> None:
        """Record one event (idempotent by ``event.key``)."""
        ...


class InMemoryReputation:
    """Both ports over the pure scorer, in memory; for tests, simulation and small nodes.

    A node with no events scores ``initial_score``: admission (the registry's job, checked
    before any score is read) is what makes an identity count at all.
    """

    def __init__(self, params: ReputationParams, clock: Clock) -> None:
        self._params = params
        self._clock = clock
        self._states: dict[str, ReputationState] = {}
        self._seen: set[str] = set()

    @property
    def params(self) -> ReputationParams:
        """The parameters this book scores with."""
        return self._params

    def emit(self, event: ReputationEvent) -> None:
        """Apply ``event`` unless an event with the same key was already applied."""
        if event.key in self._seen:
            return
        self._seen.add(event.key)
        state = self._states.get(event.node_id)
        if state is None:
            state = scores.new_state(event.node_id, min(event.at, self._now()), self._params)
        self._states[event.node_id] = scores.apply(state, event, self._params)

    def score(self, node_id: str) -> float:
        """The node's score now, in [0, 1]."""
        state = self._states.get(node_id)
        if state is None:
            return self._params.initial_score
        return scores.score(state, self._now(), self._params)

    def band(self, node_id: str) -> TrustBand:
        """The node's transfer-table band now."""
        return scores.trust_band(self.score(node_id), self._params)

    def track_record(self, node_id: str) -> TrackRecord:
        """The reality events about the node's lessons: confirmed and contradicted."""
        state = self._states.get(node_id)
        if state is None:
            return TrackRecord()
        counts = state.counts
        return TrackRecord(
            confirmed=counts.get(EventKind.LESSON_CONFIRMED, 0),
            contradicted=counts.get(EventKind.LESSON_CONTRADICTED, 0),
        )

    def explain(self, node_id: str) -> ScoreBreakdown:
        """The node's score now with its labelled parts."""
        now = self._now()
        state = self._states.get(node_id) or scores.new_state(node_id, now, self._params)
        return scores.explain(state, now, self._params)

    def expertise(self, node_id: str, domain: str) -> float:
        """The node's expertise in ``domain`` now."""
        now = self._now()
        state = self._states.get(node_id) or scores.new_state(node_id, now, self._params)
        return scores.expertise(state, domain, now, self._params)

    def _now(self) -> datetime:
        return self._clock.now()
