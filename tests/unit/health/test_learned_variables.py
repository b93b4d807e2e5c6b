"""``learned_variables``: the health report's section of learned context-variable classes."""

from __future__ import annotations

from lamarck.learning.params import LearningParams
from lamarck.node.api.health_loader import learned_variables
from lamarck.node.lessons.core import LEARNER_STATE_KEY
from lamarck.node.store.memory import InMemoryLessonStore


async def test_the_fixed_list_holds_until_outcomes_teach_otherwise() -> None:
    store = InMemoryLessonStore()
    before = await learned_variables(store, LearningParams())
    assert before["domain"] == {"class": "critical", "learned": False, "correct": 0, "incorrect": 0}
    await store.put_state(
        LEARNER_STATE_KEY,
        {"version": 1, "variables": {"domain": {"correct": 9, "incorrect": 1}}},
    )
    after = await learned_variables(store, LearningParams())
    assert after["domain"] == {"class": "negligible", "learned": True, "correct": 9, "incorrect": 1}
