"""The guard's situation memory follows the influence rule: an unverified peer blocker never
makes the agent probe, refuse or stop; a proven or corroborated one does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lamarck.agent.guard import NodeSituationMemory
from lamarck.client import Evidence, Lesson, LessonPage, Situation

AT = datetime(2026, 3, 1, tzinfo=UTC)


def situation_lesson(lesson_id: str, evidence_class: str) -> Lesson:
    return Lesson(
        id=lesson_id,
        version=1,
        content="npm login asks for a one-time password",
        confidence=0.6,
        status="active",
        scope="global",
        operation="",
        category="situation",
        memory_type="ac",
        access_level="public",
        origin="imported" if evidence_class != "proven_here" else "local",
        source_node_id="lmk1peer",
        tags=(),
        evidence_outcome_ids=(),
        success_count=0,
        failure_count=0,
        created_at=AT,
        updated_at=AT,
        superseded_by="",
        situation=Situation(
            tool="shell",
            subject=f"npm-{lesson_id}",
            kind="auth",
            interactive=True,
            env_fingerprint="",
            unblock="",
            probe="",
            source="declared",
        ),
        context={},
        imported_from=(),
        original_confidence=None,
        record_json=b"",
        evidence=Evidence(evidence_class),
    )


class Node:
    def list_lessons(self, **kw: Any) -> LessonPage:
        return LessonPage(
            (
                situation_lesson("mine", "proven_here"),
                situation_lesson("vouched", "corroborated"),
                situation_lesson("rumour", "unverified"),
            ),
            "",
        )


def test_only_lessons_that_may_drive_decisions_are_loaded() -> None:
    loaded = NodeSituationMemory(Node()).load()  # type: ignore[arg-type]
    assert [x.lesson_id for x in loaded] == ["mine", "vouched"]
