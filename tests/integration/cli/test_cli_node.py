"""The operator CLI against real node processes (embedded Postgres, hashing embedder).

Lessons are made the way an agent makes them, through the SDK (outcomes and claims); every
command under test then runs through typer's CliRunner, reads the node only through its
agent API, and its table and ``--json`` output are checked against what the SDK sees.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.client import Client
from lamarck.operator import OperatorClient
from lamarck.proto.clock import SystemClock
from lamarck.proto.signed import SignedMemory
from tests.factories import outcome_obj

pytestmark = pytest.mark.integration

# The daemon's real-process fixture lives in the node tests' conftest; load it by path so
# this folder reuses it rather than keeping a second copy of how a node is started.
_FIXTURE_FILE = Path(__file__).resolve().parents[1] / "node" / "conftest.py"


def _node_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lamarck_node_process_fixture", _FIXTURE_FILE)
    if spec is None or spec.loader is None:
        raise AssertionError(f"the node process fixture is missing: {_FIXTURE_FILE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


fixtures = _node_fixtures()
# The developer's LAMARCK_* settings must not reach the commands under test.
runner = CliRunner(env={k: None for k in os.environ if k.startswith("LAMARCK_")})
PROJECT = "c1" * 32


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """Two running nodes (A holds lessons, B receives bundles), stopped at the end."""
    a = fixtures.start_node(tmp_path_factory.mktemp("cli-a"))
    try:
        b = fixtures.start_node(tmp_path_factory.mktemp("cli-b"))
    except BaseException:
        a.stop()
        raise
    try:
        yield a, b
    finally:
        b.stop()
        a.stop()


@pytest.fixture(scope="module")
def node(nodes: tuple[Any, Any]) -> Any:
    """Node A."""
    return nodes[0]


def _outcome(steps: list[tuple[str, str, str]], *, passed: bool = True) -> dict[str, Any]:
    return outcome_obj(
        outcome_id=str(uuid.uuid4()),
        session_id=f"cli-{uuid.uuid4().hex[:8]}",
        turn_index=1,
        project=PROJECT,
        goal_digest="make the test suite pass",
        steps=steps,
        created_at=SystemClock().now(),
        passed=passed,
    )


def learn(node: Any) -> tuple[str, str]:
    """A failed then a working command on the same target: the node learns one lesson.

    Returns (lesson id, outcome id). Each call uses fresh operation keys, so tests sharing
    the module's node do not confirm each other's lessons.
    """
    tag = uuid.uuid4().hex[:8]
    outcome = _outcome(
        [
            (f"shell:make test-{tag}", "failed", "the suite"),
            (f"shell:pytest-{tag}", "ok", "the suite"),
        ]
    )
    with Client(node.agent_addr) as client:
        result = client.record_outcome(outcome)
    [lesson_id] = result.ids("created")
    return lesson_id, result.outcome_id


def claim(node: Any, text: str) -> str:
    """A model's claim: stored as a claimed lesson."""
    with Client(node.agent_addr) as client:
        return client.remember(text, f"git:commit-{uuid.uuid4().hex[:8]}").lesson.id


def cli(node: Any, *args: str) -> Any:
    """Run ``lamarck ARGS --home <node's home>`` and return the result."""
    return runner.invoke(app, [*args, "--home", str(node.home)])


def cli_json(node: Any, *args: str) -> Any:
    """Run a command with ``--json``; it must succeed and print exactly one JSON document."""
    result = cli(node, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# -- node status ----------------------------------------------------------------------------


def test_status_shows_the_running_node_and_its_lesson_counts(node: Any) -> None:
    learn(node)
    claim(node, "Prefer small commits.")
    facts = cli_json(node, "node", "status")
    assert facts["node_id"] == node.node_id
    assert facts["pid"] == node.pid
    assert facts["health"] == "SERVING"
    assert facts["listen"] == node.info["listen"]
    assert facts["agent_listen"] == node.info["agent_listen"]
    assert facts["embedder"].startswith("hashing")
    assert facts["database"] == "embedded"
    with Client(node.agent_addr) as client:
        for status in ("claimed", "active", "superseded", "retired"):
            page = client.list_lessons(statuses=status, page_size=500)
            assert facts["lessons"][status] == len(page.lessons)
    assert facts["lessons"]["active"] >= 1 and facts["lessons"]["claimed"] >= 1

    table = cli(node, "node", "status")
    assert table.exit_code == 0, table.output
    for value in (node.node_id, "SERVING", node.info["agent_listen"], "embedded"):
        assert value in table.stdout
    assert f"active {facts['lessons']['active']}" in table.stdout


# -- lessons --------------------------------------------------------------------------------


def test_lessons_list_matches_the_sdk_and_filters(node: Any) -> None:
    lesson_id, _ = learn(node)
    claimed = claim(node, "Run the linter before committing.")
    listed = cli_json(node, "lessons", "list", "--limit", "500")
    with Client(node.agent_addr) as client:
        expected = client.list_lessons(page_size=500).lessons
    assert [x["id"] for x in listed] == [x.id for x in expected]
    by_id = {x["id"]: x for x in listed}
    assert by_id[lesson_id]["status"] == "active"
    assert by_id[lesson_id]["record"]["id"] == lesson_id
    assert by_id[claimed]["status"] == "claimed"

    active = cli_json(node, "lessons", "list", "--status", "active")
    assert lesson_id in {x["id"] for x in active} and claimed not in {x["id"] for x in active}
    assert all(x["status"] == "active" for x in active)
    both = cli_json(node, "lessons", "list", "--status", "active", "--status", "claimed")
    assert {lesson_id, claimed} <= {x["id"] for x in both}
    assert cli_json(node, "lessons", "list", "--category", "situation") == []
    assert cli_json(node, "lessons", "list", "--min-confidence", "0.99") == []
    scoped = cli_json(node, "lessons", "list", "--scope", f"project:{PROJECT}")
    assert lesson_id in {x["id"] for x in scoped}
    assert len(cli_json(node, "lessons", "list", "--limit", "1")) == 1

    table = cli(node, "lessons", "list", "--status", "active")
    assert table.exit_code == 0, table.output
    assert lesson_id in table.stdout
    assert claimed not in table.stdout


def test_lessons_show_history_edit_and_retire(node: Any) -> None:
    lesson_id, outcome_id = learn(node)
    shown = cli_json(node, "lessons", "show", lesson_id)
    assert shown["id"] == lesson_id and shown["status"] == "active" and shown["version"] == 1
    assert shown["record"]["id"] == lesson_id
    assert shown["history"][0]["kind"] == "created"
    assert shown["history"][0]["outcome_id"] == outcome_id
    # Whether it is shared comes from the publisher's rule, with the reason when it is not.
    assert shown["shared"] is (shown["not_shared_reason"] == "")

    edited = cli_json(
        node, "lessons", "edit", lesson_id, "Run pytest from the repository root.",
        "--expected-version", "1",
    )  # fmt: skip
    assert edited["version"] == 2
    assert edited["content"] == "Run pytest from the repository root."
    assert edited["status"] == "active"

    stale = cli(node, "lessons", "edit", lesson_id, "Something else.", "--expected-version", "1")
    assert stale.exit_code == 1
    assert stale.stdout == ""
    assert _one_error_line(stale.stderr).startswith("lamarck: version_conflict: ")

    retired = cli_json(node, "lessons", "retire", edited["id"], "--reason", "no longer true")
    assert retired["status"] == "retired"

    history = cli_json(node, "lessons", "history", lesson_id)
    assert [(e["kind"], e["version"]) for e in history] == [
        ("created", 1),
        ("superseded", 1),
        ("edited", 2),
        ("retired", 2),
    ]
    assert history[2]["record"]["content"] == "Run pytest from the repository root."

    now = cli_json(node, "lessons", "show", lesson_id)
    assert now["status"] == "retired" and now["version"] == 2
    assert now["content"] == "Run pytest from the repository root."

    table = cli(node, "lessons", "history", lesson_id)
    assert table.exit_code == 0, table.output
    for word in ("created", "edited", "retired", outcome_id):
        assert word in table.stdout
    show_table = cli(node, "lessons", "show", lesson_id)
    assert show_table.exit_code == 0, show_table.output
    assert "Run pytest from the repository root." in show_table.stdout
    assert "shared" in show_table.stdout


def test_lessons_share_sets_who_may_receive_a_lesson(node: Any) -> None:
    lesson_id, _ = learn(node)
    peer = "lmk1" + "q" * 32
    shared = cli_json(node, "lessons", "share", lesson_id, "private", "--recipient", peer)
    assert (shared["access_level"], shared["recipients"]) == ("private", [peer])
    assert shared["id"] == lesson_id and shared["version"] == 1
    nobody = cli(node, "lessons", "share", lesson_id, "private")
    assert nobody.exit_code == 1
    assert _one_error_line(nobody.stderr).startswith("lamarck: no_recipients: ")
    back = cli_json(node, "lessons", "share", lesson_id, "public")
    assert (back["access_level"], back["recipients"]) == ("public", [])


def test_unknown_lesson_is_not_found_on_one_line(node: Any) -> None:
    missing = str(uuid.uuid4())
    for args in (["show", missing], ["history", missing], ["retire", missing]):
        result = cli(node, "lessons", *args)
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        assert _one_error_line(result.stderr).startswith("lamarck: not_found: ")


def test_outcomes_list_names_the_outcomes_behind_lessons(node: Any) -> None:
    lesson_id, outcome_id = learn(node)
    outcomes = cli_json(node, "outcomes", "list", "--limit", "10000")
    by_id = {o["outcome_id"]: o for o in outcomes}
    assert lesson_id in {x["lesson_id"] for x in by_id[outcome_id]["lessons"]}
    table = runner.invoke(app, ["outcomes", "list", "--limit", "10000", "--home", str(node.home)])
    assert table.exit_code == 0, table.output
    assert outcome_id in table.stdout


# -- export / import ------------------------------------------------------------------------


def test_export_to_stdout_is_the_signed_bundle(node: Any) -> None:
    lesson_id, _ = learn(node)
    result = cli(node, "export", "-", "--status", "active")
    assert result.exit_code == 0, result.output
    lines = result.stdout_bytes.splitlines()
    assert lines
    ids = set()
    for line in lines:
        signed = SignedMemory.from_json(line)
        signed.verify(SystemClock().now(), 300)
        assert signed.source_agent_id == node.node_id
        ids.add(signed.memory.id)
    assert lesson_id in ids
    with Client(node.agent_addr) as client:
        assert result.stdout_bytes == client.export_bundle(statuses="active")


def test_export_to_a_file_and_import_it_into_another_node(
    nodes: tuple[Any, Any], tmp_path: Path
) -> None:
    a, b = nodes
    lesson_id, _ = learn(a)
    bundle = tmp_path / "lessons.jsonl"
    summary = cli_json(a, "export", str(bundle), "--status", "active")
    assert summary["path"] == str(bundle)
    data = bundle.read_bytes()
    assert summary["records"] == len(data.splitlines()) and summary["bytes"] == len(data)

    dry = cli_json(b, "import", str(bundle), "--dry-run")
    assert dry["dry_run"] is True and dry["records"] == summary["records"]
    with Client(b.agent_addr) as client:
        assert lesson_id not in {x.id for x in client.list_lessons(page_size=500).lessons}

    done = cli_json(b, "import", str(bundle))
    # B's registry is its own and knows no key of A: every line waits for an operator.
    assert done["counts"].get("quarantined", 0) == summary["records"]
    assert {x["reason"] for x in done["acks"]} == {"unknown_signer"}
    assert [a["line"] for a in done["acks"]] == list(range(1, summary["records"] + 1))
    with OperatorClient.from_home(b.home) as desk:
        for entry in desk.list_quarantine():
            if entry.source_node_id == a.node_id:
                desk.approve(entry.id)
    with Client(b.agent_addr) as client:
        mine = next(
            x
            for x in client.list_lessons(origin="imported", page_size=500).lessons
            if SignedMemory.from_json(x.record_json).memory.id == lesson_id
        )
    assert mine.origin == "imported" and mine.source_node_id == a.node_id

    again = cli(b, "import", str(bundle))
    assert again.exit_code == 0, again.output
    assert "duplicate" in again.stdout


def test_import_reports_refused_lines_without_failing(
    nodes: tuple[Any, Any], tmp_path: Path
) -> None:
    a, b = nodes
    learn(a)
    with Client(a.agent_addr) as client:
        good = client.export_bundle(statuses="active").splitlines()[0]
    bundle = tmp_path / "bad.jsonl"
    bundle.write_bytes(b"{not json\n" + good.replace(b"Prefer", b"Avoid", 1) + b"\n")
    report = cli_json(b, "import", str(bundle))
    assert [x["status"] for x in report["acks"]] == ["rejected", "rejected"]
    assert all(x["reason"] for x in report["acks"])
    table = cli(b, "import", str(bundle))
    assert table.exit_code == 0, table.output
    assert "lines not accepted" in table.stdout


def test_a_deeply_nested_line_is_refused_too_deep_and_the_rest_imports(
    nodes: tuple[Any, Any], tmp_path: Path
) -> None:
    # The node reads each line ahead of importing it (its embedder is primed a chunk ahead):
    # a line of 30,000 brackets once raised RecursionError there and the call answered
    # INTERNAL; it is refused on its bytes now, and the good line after it is imported.
    a, b = nodes
    learn(a)
    with Client(a.agent_addr) as client:
        good = client.export_bundle(statuses="active").splitlines()[-1]
    deep = b'{"content": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    bundle = tmp_path / "deep.jsonl"
    bundle.write_bytes(deep + b"\n" + good + b"\n")
    report = cli_json(b, "import", str(bundle))
    first, second = report["acks"]
    assert (first["status"], first["reason"]) == ("rejected", "too_deep")
    assert second["status"] in ("quarantined", "duplicate")


def test_reputation_reset_lifts_a_peer_and_keeps_the_note_in_its_history(
    nodes: tuple[Any, Any], tmp_path: Path
) -> None:
    a, b = nodes
    learn(a)
    bundle = tmp_path / "from-a.jsonl"
    cli_json(a, "export", str(bundle), "--status", "active")
    cli_json(b, "import", str(bundle))
    with OperatorClient.from_home(b.home) as desk:
        for entry in desk.list_quarantine():
            if entry.source_node_id == a.node_id:
                desk.approve(entry.id)
    # B now knows A (it imported A's lessons): an operator resets A's standing at B.
    missing = cli(b, "reputation", "reset", a.node_id)
    assert missing.exit_code != 0
    done = cli_json(b, "reputation", "reset", a.node_id, "--note", "audited its operator")
    assert done["peer"] == a.node_id and done["band"] == "neutral"
    assert [e["kind"] for e in done["events"]] == ["operator_reset"]
    shown = cli_json(b, "reputation", "show", a.node_id)
    newest = shown["events"][0]
    assert (newest["kind"], newest["source"]) == ("operator_reset", "operator")
    assert newest["detail"] == "operator reset: audited its operator"
    unknown = cli(b, "reputation", "reset", "lmk1" + "0" * 32, "--note", "x")
    assert unknown.exit_code == 1 and "not_found" in unknown.stderr


def test_export_json_to_stdout_is_a_usage_error(node: Any) -> None:
    result = cli(node, "export", "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert _one_error_line(result.stderr).startswith("lamarck: usage: ")


# -- node start, through the CLI itself ------------------------------------------------------


def _cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lamarck.cli", *args]


def _wait_serving(home: Path, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        assert process.poll() is None, f"node exited with {process.returncode}"
        try:
            info = json.loads((home / "node.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            info = {}
        if info.get("pid") == process.pid and info.get("serving"):
            return
        assert time.monotonic() < deadline, "the node did not report SERVING in time"
        time.sleep(0.05)  # bounded poll of the node's own report


def test_node_start_serves_until_sigterm_and_refuses_a_second_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    flags = [
        "--home", str(home), "--listen", "127.0.0.1:0", "--agent-listen", "127.0.0.1:0",
        "--embedder", "hashing", "--log-format", "json",
    ]  # fmt: skip
    env = fixtures.node_env()
    out, err = (tmp_path / "stdout").open("wb"), (tmp_path / "stderr").open("wb")
    with out, err:
        process = subprocess.Popen(
            _cli_command("node", "start", *flags), stdout=out, stderr=err, env=env
        )
    try:
        _wait_serving(home, process, fixtures.START_TIMEOUT_S)
        facts = json.loads(
            runner.invoke(app, ["node", "status", "--home", str(home), "--json"]).stdout
        )
        assert facts["health"] == "SERVING" and facts["pid"] == process.pid
        assert (home / "keys" / "identity.pem").exists()  # created on first start

        second = subprocess.run(
            _cli_command("node", "start", *flags),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert second.returncode == 1
        line = _one_error_line(second.stderr)
        assert line.startswith("lamarck: already_running: ") and str(process.pid) in line
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=fixtures.STOP_TIMEOUT_S)
    assert code == 0
    # Logging JSON, the start banner is one JSON line among the logs, stdout carries no text.
    started = [
        json.loads(line)
        for line in (tmp_path / "stderr").read_text().splitlines()
        if '"node started"' in line
    ]
    assert [s["node_id"] for s in started] == [facts["node_id"]]
    assert started[0]["agent_listen"] and (tmp_path / "stdout").read_text().strip() == ""
    gone = runner.invoke(app, ["node", "status", "--home", str(home)])
    assert gone.exit_code == 1
    assert _one_error_line(gone.stderr).startswith("lamarck: node_not_running: ")
