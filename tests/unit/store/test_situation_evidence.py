"""A situation lesson's evidence is the turn that met the blocker (adaptive recovery, rule 6).

``record_situation`` accepts only outcomes in which a call to the situation's tool failed or
was refused; such a lesson is shareable (``why_not_shared`` is None), one without evidence
stays home (``no_evidence``), and meeting the blocker again adds the new turn as evidence.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from lamarck.errors import EvidenceError
from lamarck.gossip.publisher import GossipParams
from lamarck.gossip.share_reason import ShareReason, why_not_shared
from lamarck.learning.params import LearningParams
from lamarck.learning.situations import Situation
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome
from lamarck.proto.timefmt import format_ts
from lamarck.reputation.transfer import TransferParams

PROJECT = "a1" * 32
GH = Situation.declared(
    tool="check_cli_setup",
    subject="gh",
    kind="auth",
    interactive=True,
    unblock="run `gh auth login`",
    probe="gh auth status",
)


class Harness:
    """A lesson service over the in-memory store, and blocked turns to record."""

    def __init__(self) -> None:
        self.store = InMemoryLessonStore(dim=64)
        self.clock = FixedClock()
        self.service = LessonService(
            self.store,
            HashingEmbedder(64),
            self.clock,
            LearningParams(),
            rng=random.Random(3),
            transfer=TransferParams(),
        )
        self._n = 0

    async def turn(self, steps: Sequence[tuple[str, str]]) -> str:
        """Record an unverified turn with these (operation, result) steps; its outcome id."""
        self._n += 1
        obj: dict[str, Any] = {
            "id": str(uuid.UUID(int=500 + self._n, version=4)),
            "session_id": f"s{self._n}",
            "turn_index": 0,
            "project": PROJECT,
            "goal_digest": "list the open pull requests",
            "approach": [
                {"operation_key": op, "outcome": result, "target": "gh"} for op, result in steps
            ],
            "passed": False,
            "claim_ok": True,
            "steps": len(steps),
            "tokens": 0,
            "wall_s": 1.0,
            "created_at": format_ts(self.clock.now()),
        }
        result = await self.service.record_outcome(Outcome.from_obj(obj))
        return result.outcome_id


@pytest.fixture
def h() -> Harness:
    return Harness()


async def test_a_blocker_citing_its_escalated_turn_is_stored_with_it_and_shareable(
    h: Harness,
) -> None:
    met = await h.turn([("check_cli_setup", "failed"), ("sign_in_cli", "refused")])
    row = await h.service.record_situation(GH, "global", evidence=[met])
    assert row is not None and row.evidence == (met,)
    assert why_not_shared(row, GossipParams()) is None


async def test_a_blocker_without_evidence_stays_on_the_node(h: Harness) -> None:
    row = await h.service.record_situation(GH, "global")
    assert row is not None and row.evidence == ()
    assert why_not_shared(row, GossipParams()) == ShareReason.NO_EVIDENCE


@pytest.mark.parametrize(
    "steps",
    [
        [("check_cli_setup", "ok"), ("run_shell", "failed")],  # the tool worked
        [("web_fetch", "failed")],  # another tool failed
        [],
    ],
)
async def test_evidence_that_is_not_the_turn_that_met_the_blocker_is_refused(
    h: Harness, steps: list[tuple[str, str]]
) -> None:
    other = await h.turn(steps)
    with pytest.raises(EvidenceError) as e:
        await h.service.record_situation(GH, "global", evidence=[other])
    assert e.value.reason == "evidence_not_the_blocker"
    assert await h.service.situation_lessons("global") == []


async def test_every_cited_outcome_must_show_the_blocker(h: Harness) -> None:
    met = await h.turn([("check_cli_setup", "failed")])
    other = await h.turn([("check_cli_setup", "ok")])
    with pytest.raises(EvidenceError, match="evidence_not_the_blocker"):
        await h.service.record_situation(GH, "global", evidence=[met, other])


async def test_an_unknown_outcome_is_still_unknown_evidence(h: Harness) -> None:
    with pytest.raises(EvidenceError) as e:
        await h.service.record_situation(GH, "global", evidence=[str(uuid.uuid4())])
    assert e.value.reason == "unknown_evidence"


async def test_meeting_the_blocker_again_adds_that_turn_to_the_same_lesson(h: Harness) -> None:
    first = await h.turn([("check_cli_setup", "failed")])
    row = await h.service.record_situation(GH, "global")
    assert row is not None and why_not_shared(row, GossipParams()) == ShareReason.NO_EVIDENCE
    h.clock.advance(60)
    again = await h.service.record_situation(GH, "global", evidence=[first])
    assert again is not None and again.id == row.id and again.evidence == (first,)
    assert again.updated_at > row.updated_at  # a new version: peers get the evidence
    second = await h.turn([("check_cli_setup", "refused")])
    last = await h.service.record_situation(GH, "global", evidence=[second, first])
    assert last is not None and last.evidence == (first, second)
