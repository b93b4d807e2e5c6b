"""The SDK's learning loop and situation memory against a real node process."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest

from lamarck.agent.guard import NodeSituationMemory
from lamarck.agent.loop import ActContext, LearningLoop, LoopParams, Task
from lamarck.agent.run import RunParams
from lamarck.agent.situation import Situation
from lamarck.client import Client
from lamarck.errors import LamarckError
from lamarck.node.learning.params import ContextParams
from lamarck.proto.clock import FixedClock

pytestmark = pytest.mark.integration

PROJECT = "ef" * 32


def fix_the_test(ctx: ActContext) -> None:
    ctx.recorder.check("test", passed=False, operation="shell:pytest tests/", target="suite")
    ctx.recorder.check("test", passed=True, operation="shell:pytest", target="suite")


def test_learning_loop_records_an_honest_outcome_and_the_node_learns_from_it(
    node_process: Any,
) -> None:
    node = node_process()
    with Client(node.agent_addr, timeout=20) as client:
        loop = LearningLoop(
            client,
            project=PROJECT,
            params=LoopParams(),
            context_params=ContextParams(),
            run_params=RunParams(),
            clock=FixedClock(datetime(2026, 3, 1, tzinfo=UTC)),
            rng=random.Random(11),
        )
        task = Task("make the test suite pass", {"domain": "python"})
        first = loop.run(task, fix_the_test, session_id="loop-1")
        assert first.update.outcome_id == first.result.outcome.id
        assert not first.update.duplicate
        assert first.observation.actual == "pass"
        # The failed-then-passing pair on one target teaches "prefer B over A".
        assert first.extracted.created, first.extracted.nothing_learned
        assert loop.calibration.predictions == 1

        memory = NodeSituationMemory(client)
        assert list(memory.load()) == []
        gh = Situation.declared(
            tool="check_cli_setup", subject="gh", kind="auth", probe="gh auth status"
        )
        with pytest.raises(LamarckError) as err:
            memory.store(gh)
        assert err.value.reason == "unsupported"
