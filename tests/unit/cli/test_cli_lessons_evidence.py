"""``lamarck lessons list`` / ``show`` and ``recall`` / ``check`` print each lesson's evidence
class and support."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lamarck.cli import agent_cmds, app
from lamarck.cli import lessons as lessons_cli
from lamarck.client import (
    CheckResult,
    Conflict,
    Evidence,
    HistoryEntry,
    Lesson,
    LessonPage,
    RecallResult,
)

runner = CliRunner()
AT = datetime(2026, 3, 1, tzinfo=UTC)


def lesson(lesson_id: str, evidence: Evidence, origin: str = "imported") -> Lesson:
    return Lesson(
        id=lesson_id,
        version=1,
        content=f"lesson {lesson_id}",
        confidence=0.29,
        status="active",
        scope="global",
        operation="shell:make docs",
        category="operation",
        memory_type="ac",
        access_level="public",
        origin=origin,
        source_node_id="lmk1peer",
        tags=(),
        evidence_outcome_ids=(),
        success_count=0,
        failure_count=0,
        created_at=AT,
        updated_at=AT,
        superseded_by="",
        situation=None,
        context={},
        imported_from=("lmk1peer",),
        original_confidence=0.5,
        record_json=json.dumps({"id": lesson_id, "content": f"lesson {lesson_id}"}).encode(),
        evidence=evidence,
    )


UNVERIFIED = lesson(
    "u1", Evidence("unverified", peers=1, label="unverified, from 1 peer, confidence 0.29")
)
CORROBORATED = lesson(
    "c1",
    Evidence(
        "corroborated",
        independent_principals=2,
        peers=3,
        label="corroborated by 2 independent principals, confidence 0.29",
    ),
)


class FakeClient:
    def list_lessons(self, **kw: Any) -> LessonPage:
        return LessonPage((CORROBORATED, UNVERIFIED), "")

    def get_lesson(self, lesson_id: str) -> Lesson:
        return UNVERIFIED

    def history(self, lesson_id: str) -> list[HistoryEntry]:
        return [
            HistoryEntry(
                at=AT,
                kind="created",
                version=1,
                status="active",
                confidence_before=0.0,
                confidence=0.29,
                outcome_id="",
                actor="peer",
                reason="",
                record_json=UNVERIFIED.record_json,
            )
        ]


@pytest.fixture(autouse=True)
def fake_node(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def client_for(home: Path) -> Iterator[FakeClient]:
        yield FakeClient()

    monkeypatch.setattr(lessons_cli, "client_for", client_for)


def test_list_shows_the_evidence_column_and_json_carries_it(tmp_path: Path) -> None:
    env = {"COLUMNS": "250", "NO_COLOR": "1"}
    shown = runner.invoke(app, ["lessons", "list", "--home", str(tmp_path)], env=env)
    assert shown.exit_code == 0, shown.output
    assert "evidence" in shown.output
    assert "corroborated by 2 independent principals" in shown.output
    assert "unverified, from 1 peer" in shown.output
    as_json = runner.invoke(app, ["lessons", "list", "--home", str(tmp_path), "--json"])
    listed = json.loads(as_json.output)
    assert [x["evidence"]["class"] for x in listed] == ["corroborated", "unverified"]
    assert listed[0]["evidence"]["independent_principals"] == 2


def test_show_names_the_class(tmp_path: Path) -> None:
    env = {"COLUMNS": "250", "NO_COLOR": "1"}
    shown = runner.invoke(app, ["lessons", "show", "u1", "--home", str(tmp_path)], env=env)
    assert shown.exit_code == 0, shown.output
    assert "unverified, from 1 peer, confidence 0.29" in shown.output
    facts = json.loads(
        runner.invoke(app, ["lessons", "show", "u1", "--home", str(tmp_path), "--json"]).output
    )
    assert facts["evidence"]["class"] == "unverified" and facts["evidence"]["peers"] == 1


class FakeAgentClient:
    def recall(self, task: str, context: Any = None, **kw: Any) -> RecallResult:
        return RecallResult((CORROBORATED,), "Lessons:", (0.5,), (UNVERIFIED,))

    def check_operation(self, operation: str, **kw: Any) -> CheckResult:
        conflict = Conflict(operation, (CORROBORATED, UNVERIFIED), holds="c1")
        return CheckResult(
            "A lesson on file ...", "", "", ("c1", "u1"), (CORROBORATED,), (conflict,)
        )


def test_recall_and_check_json_carry_each_lessons_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    @contextmanager
    def client_for(home: Path) -> Iterator[FakeAgentClient]:
        yield FakeAgentClient()

    monkeypatch.setattr(agent_cmds, "client_for", client_for)
    home = ["--home", str(tmp_path), "--json"]
    recalled = json.loads(runner.invoke(app, ["recall", "build the docs", *home]).output)
    assert [x["evidence"] for x in recalled["lessons"]] == ["corroborated"]
    assert recalled["unverified_hints"][0]["label"].startswith("unverified, from 1 peer")
    checked = json.loads(runner.invoke(app, ["check", "shell:make docs", *home]).output)
    assert checked["lessons"][0]["independent_principals"] == 2
    [conflict] = checked["conflicts"]
    assert conflict["holds"] == "c1"
    assert [s["evidence"] for s in conflict["sides"]] == ["corroborated", "unverified"]


def test_list_says_when_it_was_cut_and_where_each_lesson_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = lesson("l1", Evidence("proven", label="proven here, confidence 0.29"), "local")

    class ThreeLessons(FakeClient):
        def list_lessons(self, **kw: Any) -> LessonPage:
            return LessonPage((local, CORROBORATED, UNVERIFIED)[: kw["page_size"]], "")

    @contextmanager
    def client_for(home: Path) -> Iterator[FakeClient]:
        yield ThreeLessons()

    monkeypatch.setattr(lessons_cli, "client_for", client_for)
    env = {"COLUMNS": "250", "NO_COLOR": "1"}
    cut = runner.invoke(app, ["lessons", "list", "--limit", "2", "--home", str(tmp_path)], env=env)
    assert cut.exit_code == 0, cut.output
    assert "first 2 lessons; more on file (raise --limit" in cut.output
    assert "lesson(s)" not in cut.output
    rows = [line for line in cut.output.splitlines() if "│ l1 " in line or "│ c1 " in line]
    assert "local" in rows[0] and "imported from lmk1peer" in rows[1]
    whole = runner.invoke(app, ["lessons", "list", "--home", str(tmp_path)], env=env)
    assert "3 lessons" in whole.output and "more on file" not in whole.output
    # A running fleet's name for the source stands beside its id.
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    nodes = [{"name": "node4", "home": str(fleet), "node_id": "lmk1peer"}]
    (fleet / "fleet.json").write_text(json.dumps({"supervisor_pid": os.getpid(), "nodes": nodes}))
    named = runner.invoke(
        app,
        ["lessons", "list", "--home", str(tmp_path)],
        env={**env, "LAMARCK_FLEET_DIR": str(fleet)},
    )
    assert "imported from node4 lmk1peer" in named.output
