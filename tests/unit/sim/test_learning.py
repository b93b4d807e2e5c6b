"""The simulated fleet learning curve: the node's own lesson service, the fleet's own driver."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet import driver as driver_core
from lamarck.node.lessons.core import OutcomeResult
from lamarck.node.lessons.outcomes import OutcomeLearning
from lamarck.node.lessons.service import LessonService
from lamarck.node.sharing.publishing import Publisher
from lamarck.sim.learning import LearningSimParams, run_learning

SMALL = LearningSimParams(nodes=3, agents=6, rounds=3, seed=0)


def test_simulated_learning_runs_the_real_lesson_service_and_sharing_beats_isolated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    original = OutcomeLearning.record_outcome

    async def spy(self: OutcomeLearning, outcome: Any, **kw: Any) -> OutcomeResult:
        calls.append(outcome.id)
        return await original(self, outcome, **kw)

    monkeypatch.setattr(OutcomeLearning, "record_outcome", spy)
    run = run_learning(SMALL)
    f = run.figures
    # Every turn of both arms went through the lesson service's outcome learning.
    assert len(calls) == f["shared_turns"] + f["isolated_turns"] == 2 * 6 * 3 * 2
    assert len(set(calls)) == len(calls)
    assert f["isolated_repeated_known_mistakes"] > 0
    assert f["shared_repeated_known_mistakes"] < f["isolated_repeated_known_mistakes"]
    assert run.acks.get("accepted", 0) > 0  # lessons crossed nodes through the import pipeline
    # The fleet driver's clock is given back after the run.
    assert driver_core.SystemClock.__name__ == "SystemClock"


def test_without_publishing_the_shared_arm_repeats_known_mistakes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def publish_nothing(self: Publisher, now: datetime) -> int:
        return 0

    monkeypatch.setattr(Publisher, "publish_once", publish_nothing)
    run = run_learning(SMALL)
    assert run.acks == {}
    # Only agents on the same node share lessons now: another node's agents repeat mistakes.
    assert run.figures["shared_repeated_known_mistakes"] > 0


def test_the_agents_advice_comes_from_the_lesson_service_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A service whose decision-time check finds nothing leaves every agent to its habit.
    async def nothing(self: LessonService, op_key: str, scope: str) -> None:
        return None

    monkeypatch.setattr(LessonService, "check", nothing)
    f = run_learning(SMALL).figures
    assert f["shared_repeated_known_mistakes"] > 0


def test_learning_params_refuse_a_fleet_larger_than_twenty_nodes() -> None:
    with pytest.raises(ConfigError):
        LearningSimParams(nodes=21)
    with pytest.raises(ConfigError):
        LearningSimParams(rpc_s=float("nan"))
