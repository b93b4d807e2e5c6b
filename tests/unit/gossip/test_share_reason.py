"""Why a lesson is not shared: the publisher's own rule, told as the first condition it fails."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.domain.rows import Category, LessonRow, LessonStatus
from lamarck.gossip.publisher import PUBLISHED_STATUSES, GossipParams, may_publish
from lamarck.gossip.share_reason import (
    SHAREABLE_STATUSES,
    ShareReason,
    SharingState,
    share_status,
    why_not_shared,
)
from tests.factories import publishable_lesson

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PROJECT = "project:" + "ab" * 16
PARAMS = GossipParams()


rows = st.builds(
    publishable_lesson,
    status=st.sampled_from(list(LessonStatus)),
    confidence=st.floats(min_value=0.0, max_value=1.0),
    evidence=st.sampled_from([(), ("0b9c2d3e-4a5b-4c6d-8e7f-0123456789ab",)]),
    scope=st.sampled_from(["global", PROJECT, "project:" + "cd" * 16]),
    memory_type=st.sampled_from(["AC", "UC"]),
    tags=st.sampled_from([(), ("shareable",), ("other",)]),
    access_level=st.sampled_from(["public", "trusted", "private", "secret", ""]),
    recipients=st.sampled_from([(), ("lmk1" + "a" * 32,)]),
    imported_from=st.sampled_from([None, "lmk1" + "b" * 32]),
    category=st.sampled_from(list(Category)),
)
params = st.builds(
    GossipParams,
    publish_threshold=st.floats(min_value=0.0, max_value=1.0),
    shared_scopes=st.sampled_from([frozenset(), frozenset({PROJECT})]),
    uc_share_tag=st.sampled_from(["shareable", "team"]),
)


@settings(max_examples=600, deadline=None)
@given(rows, params)
def test_why_not_shared_agrees_with_may_publish_on_every_row(
    row: LessonRow, p: GossipParams
) -> None:
    assert (why_not_shared(row, p) is None) == may_publish(row, p)


def test_the_shareable_statuses_are_the_publishers() -> None:
    assert set(SHAREABLE_STATUSES) == set(PUBLISHED_STATUSES)


def test_each_failed_condition_is_named() -> None:
    assert why_not_shared(publishable_lesson(), PARAMS) is None
    cases = {
        ShareReason.IMPORTED_COPY: publishable_lesson(imported_from="lmk1" + "b" * 32),
        ShareReason.CLAIMED: publishable_lesson(status=LessonStatus.CLAIMED, evidence=()),
        ShareReason.NO_EVIDENCE: publishable_lesson(evidence=()),
        ShareReason.BELOW_PUBLISH_THRESHOLD: publishable_lesson(confidence=0.59),
        ShareReason.SCOPE_NOT_SHARED: publishable_lesson(scope=PROJECT),
        ShareReason.UC_NOT_TAGGED_SHAREABLE: publishable_lesson(memory_type="UC"),
        ShareReason.PRIVATE_WITHOUT_RECIPIENTS: publishable_lesson(access_level="private"),
        ShareReason.ACCESS_LEVEL: publishable_lesson(access_level="secret"),
    }
    solo = dataclasses.replace(PARAMS, team_sharing=False)
    for reason, row in cases.items():
        params = solo if reason is ShareReason.SCOPE_NOT_SHARED else PARAMS
        assert why_not_shared(row, params) == reason


def test_a_retired_lesson_below_the_threshold_is_still_shared_so_holders_end_their_copy() -> None:
    assert (
        why_not_shared(publishable_lesson(status=LessonStatus.RETIRED, confidence=0.1), PARAMS)
        is None
    )


def test_with_team_sharing_a_project_lesson_leaves_for_its_project_peers_only() -> None:
    # The row may leave; the audience policy then sends it only to peers of that project.
    assert (
        why_not_shared(publishable_lesson(scope=PROJECT), GossipParams(team_sharing=True)) is None
    )
    assert why_not_shared(publishable_lesson(scope=PROJECT), GossipParams(team_sharing=False)) == (
        ShareReason.SCOPE_NOT_SHARED
    )


def test_an_explicitly_shared_project_scope_is_shared() -> None:
    p = GossipParams(shared_scopes=frozenset({PROJECT}))
    assert why_not_shared(publishable_lesson(scope=PROJECT), p) is None


def test_the_node_state_comes_before_the_row() -> None:
    claimed = publishable_lesson(status=LessonStatus.CLAIMED)
    assert share_status(publishable_lesson(), None) == ShareReason.SHARING_OFF
    assert (
        share_status(publishable_lesson(), SharingState(PARAMS, incognito=True))
        == ShareReason.INCOGNITO
    )
    assert share_status(claimed, SharingState(PARAMS)) == ShareReason.CLAIMED
    assert share_status(publishable_lesson(), SharingState(PARAMS)) is None


# -- situation lessons (design sources: adaptive recovery): evidence decides, not confidence
# ---------------------------
_GH_BLOCKER: dict[str, Any] = {
    "tool": "check_cli_setup",
    "subject": "gh",
    "kind": "auth",
    "interactive": True,
    "unblock": "run `gh auth login`",
    "probe": "gh auth status",
    "source": "declared",
}


def situation(**over: Any) -> LessonRow:
    """A local situation lesson at its birth confidence, under the publish threshold."""
    return publishable_lesson(
        category=Category.SITUATION,
        operation="situation:" + "ef" * 32,
        confidence=0.5,
        situation=dict(_GH_BLOCKER),
        **over,
    )


def test_a_situation_lesson_citing_the_turn_that_met_it_is_shared_at_birth_confidence() -> None:
    row = situation()
    assert row.confidence < PARAMS.publish_threshold
    assert why_not_shared(row, PARAMS) is None and may_publish(row, PARAMS)


def test_a_situation_lesson_without_evidence_stays_home() -> None:
    row = situation(evidence=())
    assert why_not_shared(row, PARAMS) == ShareReason.NO_EVIDENCE
    assert not may_publish(row, PARAMS)


def test_an_ordinary_lesson_at_the_same_confidence_is_still_held_to_the_threshold() -> None:
    row = publishable_lesson(confidence=0.5)
    assert why_not_shared(row, PARAMS) == ShareReason.BELOW_PUBLISH_THRESHOLD


def test_a_situation_lesson_keeps_every_other_rule() -> None:
    assert why_not_shared(situation(imported_from="lmk1" + "b" * 32), PARAMS) == (
        ShareReason.IMPORTED_COPY
    )
    lone = GossipParams(team_sharing=False)
    assert why_not_shared(situation(scope=PROJECT), lone) == ShareReason.SCOPE_NOT_SHARED
    assert why_not_shared(situation(access_level="private"), PARAMS) == (
        ShareReason.PRIVATE_WITHOUT_RECIPIENTS
    )
