"""RecordOutcome refuses an outcome dated beyond the node's clock-skew tolerance.

A lesson learned from a future-dated outcome carries future-dated evidence: every peer's
import pipeline refuses it (``future_timestamp``) and blames this node. So the outcome is
refused at the door, with the same reason and the same tolerance the import pipeline uses.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from lamarck.errors import ConfigError, InvalidRecord
from lamarck.learning.params import LearningParams
from lamarck.learning.prompt import estimate_tokens
from lamarck.node.lessons.core import LessonCore
from lamarck.node.lessons.outcomes import OutcomeLearning
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.transfer import TransferParams
from tests.factories import outcome_obj

SKEW_S = 300.0


class _Embedder:
    dim = 4

    def embed(self, texts: Any) -> npt.NDArray[np.float32]:
        return np.ones((len(texts), self.dim), dtype=np.float32) / 2.0


def _learning(clock: FixedClock, store: InMemoryLessonStore) -> OutcomeLearning:
    core = LessonCore(
        store,
        _Embedder(),
        clock,
        LearningParams(),
        rng=random.Random(3),
        token_counter=estimate_tokens,
        transfer=TransferParams(),
    )
    return OutcomeLearning(core, max_future_skew_s=SKEW_S)


def _outcome(created: str) -> Outcome:
    return Outcome.from_obj(
        outcome_obj(
            outcome_id=str(uuid.UUID(int=77, version=4)),
            session_id="s",
            turn_index=0,
            project="ab" * 32,
            goal_digest="task",
            steps=[
                ("shell:pytest tests/", "failed", "suite"),
                ("shell:pytest", "ok", "suite"),
            ],
            created_at=created,
            tokens=1,
        )
    )


async def test_an_outcome_dated_2999_is_refused_and_nothing_is_stored() -> None:
    clock, store = FixedClock(), InMemoryLessonStore(dim=4)
    with pytest.raises(InvalidRecord) as caught:
        await _learning(clock, store).record_outcome(_outcome("2999-01-01T00:00:00Z"))
    assert caught.value.reason == "future_timestamp"
    assert await store.existing_outcome_ids([str(uuid.UUID(int=77, version=4))]) == set()
    assert (await store.stats()).get("outcomes", 0) == 0


async def test_an_outcome_within_the_skew_is_learned() -> None:
    clock, store = FixedClock(), InMemoryLessonStore(dim=4)
    created = format_ts(clock.now() + timedelta(seconds=SKEW_S - 1))
    result = await _learning(clock, store).record_outcome(_outcome(created))
    assert result.recorded and [c.change for c in result.changes] == ["created"]


def test_the_default_skew_is_the_one_the_signed_record_check_uses() -> None:
    core: Any = object()
    assert OutcomeLearning(core)._max_future_skew_s == DEFAULT_MAX_FUTURE_SKEW_S


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_skew_is_a_config_error(bad: float) -> None:
    with pytest.raises(ConfigError):
        OutcomeLearning(object(), max_future_skew_s=bad)  # type: ignore[arg-type]
