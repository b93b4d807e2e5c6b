"""The recorder's outcomes against a real node: accepted as honest, and they teach."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lamarck.agent import RunRecorder, project_digest
from lamarck.cli import app
from lamarck.client import Client

pytestmark = pytest.mark.integration

BAD, GOOD = "shell:pytest tests/", "shell:pytest"
runner = CliRunner(env={k: None for k in os.environ if k.startswith("LAMARCK_")})


def test_failed_then_passing_pytest_is_accepted_and_creates_a_mechanical_lesson(
    node: Any, project_dir: Path
) -> None:
    target = f"suite-{uuid.uuid4().hex[:8]}"
    project = project_digest(project_dir)
    rec = RunRecorder(session_id=f"rec-{target}", goal="make the tests pass", project=project)
    rec.check("test", passed=False, operation=BAD, target=target)
    rec.tool_call("edit", "ok", target="conftest.py", mutates=True)
    rec.check("test", passed=True, operation=GOOD, target=target)
    result = rec.finish()
    assert result.outcome.passed
    with Client.from_home(node.home, timeout=20) as client:
        recorded = client.record_outcome(result.outcome)  # not refused as optimistic_outcome
        [lesson_id] = recorded.ids("created")
        [lesson] = client.list_lessons(operation=GOOD, scope=f"project:{project}").lessons
    assert lesson.id == lesson_id
    assert lesson.content == f"Prefer `{GOOD}` over `{BAD}` for {target}."
    assert f"avoid:{BAD}" in lesson.tags


def test_record_outcome_cli_takes_a_hand_written_run_then_recall_and_check_show_it(
    node: Any, project_dir: Path
) -> None:
    target = f"cli-{uuid.uuid4().hex[:8]}"
    run = {
        "session_id": f"hook-{target}",
        "goal": "make the tests pass",
        "events": [
            {
                "type": "check",
                "kind": "test",
                "result": "failed",
                "operation": BAD,
                "target": target,
            },
            {
                "type": "check",
                "kind": "test",
                "result": "passed",
                "operation": GOOD,
                "target": target,
            },
        ],
    }
    home = ["--home", str(node.home), "--project", str(project_dir)]
    done = runner.invoke(app, ["record-outcome", "-", *home, "--json"], input=json.dumps(run))
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["passed"] is True and [c["kind"] for c in report["changes"]] == ["created"]

    shown = runner.invoke(app, ["recall", f"run the tests of {target}", *home])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("Lessons:") and target in shown.stdout

    checked = runner.invoke(app, ["check", BAD, *home])
    assert checked.exit_code == 0, checked.output
    assert GOOD in checked.stdout


def test_record_outcome_cli_says_why_nothing_was_learned(node: Any, project_dir: Path) -> None:
    run = {
        "session_id": f"hook-{uuid.uuid4().hex[:8]}",
        "goal": "g",
        "events": [{"type": "tool_call", "operation": GOOD, "result": "ok"}],
    }
    done = runner.invoke(
        app,
        ["record-outcome", "-", "--home", str(node.home), "--project", str(project_dir)],
        input=json.dumps(run),
    )
    assert done.exit_code == 0, done.output
    assert "not passed" in done.stdout and "no lesson learned: no_check_ran" in done.stdout


def test_record_outcome_cli_refuses_a_bad_run_with_its_reason(node: Any, project_dir: Path) -> None:
    done = runner.invoke(
        app,
        ["record-outcome", "-", "--home", str(node.home), "--project", str(project_dir)],
        input='{"session_id": "s", "goal": "g", "events": [{"type": "nap"}]}',
    )
    assert done.exit_code != 0
    assert "lamarck: malformed:" in done.stderr and "Traceback" not in done.stderr
