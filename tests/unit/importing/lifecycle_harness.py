"""A second node (``NodeB``) that imports what a first one exports, and the outcomes its agent
records: shared by the lesson-lifecycle tests."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence

from pipeline_harness import (
    Harness,
)

from lamarck.domain.rows import LessonFilter
from lamarck.learning.params import LearningParams
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.lessons.service import LessonService
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome
from lamarck.reputation.transfer import TransferParams
from tests.factories import outcome_obj

DIM = 64
OPERATION = "deploy.restart"  # the operation of tests.factories.memory_obj
BAD, GOOD, TARGET = "shell:pytest tests/", "shell:pytest", "the test suite"
ALL = LessonFilter(statuses=None, limit=1000)


def outcome(
    clock: FixedClock,
    n: int,
    steps: Sequence[tuple[str, str, str | None]],
    *,
    passed: bool = True,
    in_play: Sequence[str] = (),
) -> Outcome:
    """One turn's outcome record."""
    obj = outcome_obj(
        outcome_id=str(uuid.UUID(int=20_000 + n, version=4)),
        session_id=f"s{n}",
        turn_index=n,
        project="a1" * 32,
        goal_digest=f"task {n}",
        steps=steps,
        created_at=clock.now(),
        passed=passed,
        in_play=list(in_play),
    )
    return Outcome.from_obj(obj)


class NodeB(Harness):
    """The importing node: the pipeline harness plus a lesson service over its store."""

    def __init__(self) -> None:
        super().__init__()
        self.service = LessonService(
            self.store,
            HashingEmbedder(dim=DIM),
            self.clock,
            LearningParams(),
            rng=random.Random(11),
            transfer=TransferParams(),
        )
        self.n = 0

    async def confirm(self, lesson_id: str) -> None:
        """A local run that used the copy and succeeded: B's own evidence."""
        self.n += 1
        result = await self.service.record_outcome(
            outcome(self.clock, self.n, [(OPERATION, "ok", None)], in_play=[lesson_id])
        )
        assert result.ids("confirmed") == [lesson_id]
