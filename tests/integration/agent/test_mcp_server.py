"""``lamarck mcp`` end to end: the SDK's own MCP client, over stdio and streamable HTTP, against
a real node.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from lamarck.agent import project_digest

pytestmark = pytest.mark.integration

BAD, GOOD = "shell:pytest tests/", "shell:pytest"
TOOLS = {
    "recall",
    "check_operation",
    "record_outcome",
    "remember",
    "report_use",
    "list_lessons",
    "lesson_history",
    "retire_lesson",
}
#: Bound on ``lamarck mcp --transport http`` saying where it listens.
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LAMARCK_")}


def _mcp_argv(home: Path, project: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "lamarck.cli",
        "mcp",
        "--home",
        str(home),
        "--project",
        str(project),
        *extra,
    ]


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    if result.structured_content is not None:
        value: dict[str, Any] = result.structured_content
        return value
    return dict(json.loads(_text(result)))


def _run(target: str) -> dict[str, Any]:
    return {
        "goal": "make the test suite pass",
        "events": [
            {
                "type": "check",
                "kind": "test",
                "result": "failed",
                "operation": BAD,
                "target": target,
            },
            {
                "type": "tool_call",
                "operation": "edit",
                "result": "ok",
                "target": "conftest.py",
                "mutates": True,
            },
            {
                "type": "check",
                "kind": "test",
                "result": "passed",
                "operation": GOOD,
                "target": target,
            },
        ],
        "prediction": {"expected": "pass", "confidence": 0.7},
    }


async def _agent_session(client: Client, project: str, target: str) -> None:
    """What a coding agent does through the tools on the suite ``target``; asserts each
    step's effect. The target is fixed, not random: under the node's hashing embedder a
    random suite name put the lesson below the relevance floor in about one run in 200
    (its signed buckets cancelled the words the task shares with the lesson)."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    assert all("Call" in (t.description or "") for t in listed.tools)  # says WHEN

    recorded = _data(await client.call_tool("record_outcome", {"run": _run(target)}))
    assert recorded["passed"] is True
    [created] = [c for c in recorded["changes"] if c["kind"] == "created"]
    lesson_id = created["lesson_id"]

    recalled = _data(await client.call_tool("recall", {"task": f"run the tests of {target}"}))
    assert recalled["section"].startswith("Lessons:")
    assert lesson_id in [x["id"] for x in recalled["lessons"]]

    checked = _data(await client.call_tool("check_operation", {"operation": BAD}))
    assert GOOD in checked["preamble"] and lesson_id in checked["lesson_ids"]

    used = _data(await client.call_tool("report_use", {"lesson_ids": [lesson_id]}))
    assert used["recorded"] == 1

    page = _data(
        await client.call_tool("list_lessons", {"operation": GOOD, "scope": f"project:{project}"})
    )
    assert lesson_id in [x["id"] for x in page["lessons"]]

    claim = _data(
        await client.call_tool(
            "remember", {"content": f"Run {target} with -x first.", "operation": "shell:pytest -x"}
        )
    )
    assert claim["lesson"]["status"] == "claimed" and "claim" in claim["note"]

    resource = await client.read_resource(f"lamarck://lessons/{lesson_id}")
    body = json.loads(resource.contents[0].text)  # type: ignore[union-attr]
    assert body["id"] == lesson_id and body["status"] == "active"
    assert body["record"]["lesson"]["operation"] == GOOD

    retired = _data(
        await client.call_tool(
            "retire_lesson", {"lesson_id": lesson_id, "reason": "superseded by CI config"}
        )
    )
    assert retired["lesson"]["status"] == "retired"
    history = _data(await client.call_tool("lesson_history", {"lesson_id": lesson_id}))
    assert history["events"][0]["kind"] == "created"
    assert history["events"][-1]["kind"] == "retired"
    assert history["events"][-1]["reason"] == "superseded by CI config"
    resource = await client.read_resource(f"lamarck://lessons/{lesson_id}/history")
    assert json.loads(resource.contents[0].text)["events"] == history["events"]  # type: ignore[union-attr]

    # Errors reach the model as tool errors carrying lamarck's reason, never a traceback.
    missing = str(uuid.uuid4())
    failed = await client.call_tool("lesson_history", {"lesson_id": missing})
    assert failed.is_error and "not_found" in _text(failed) and "Traceback" not in _text(failed)
    bad_run = await client.call_tool(
        "record_outcome",
        {"run": {"goal": "g", "events": [{"type": "check", "kind": "deploy", "result": "passed"}]}},
    )
    assert bad_run.is_error and "malformed" in _text(bad_run)
    assert "Traceback" not in _text(bad_run)


async def test_stdio_transport_serves_every_tool_against_a_real_node(
    node: Any, project_dir: Path
) -> None:
    argv = _mcp_argv(node.home, project_dir)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_env())
    async with Client(params) as client:
        await _agent_session(client, project_digest(project_dir), "suite-stdio")


async def test_without_a_running_node_a_tool_says_node_not_running(
    tmp_path: Path, project_dir: Path
) -> None:
    argv = _mcp_argv(tmp_path / "empty-home", project_dir)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_env())
    async with Client(params) as client:
        result = await client.call_tool("recall", {"task": "anything"})
    assert result.is_error and "node_not_running" in _text(result)
    assert "Traceback" not in _text(result)


@pytest.fixture
def http_server(node: Any, project_dir: Path) -> Iterator[Any]:
    """Factory: start ``lamarck mcp --transport http`` on ``host``; returns (url, process)."""
    started: list[subprocess.Popen[bytes]] = []

    def start(host: str) -> str:
        argv = _mcp_argv(
            node.home, project_dir, "--transport", "http", "--host", host, "--port", "0"
        )
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
        started.append(process)
        assert process.stdout is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([process.stdout], [], [], max(left, 0))
            if not ready:
                raise AssertionError("lamarck mcp did not say where it listens in time")
            chunk = os.read(process.stdout.fileno(), 1)
            if not chunk:
                err = process.stderr.read() if process.stderr else b""
                raise AssertionError(f"lamarck mcp exited: {err.decode()[-2000:]}")
            line += chunk
        return line.decode().strip().rsplit(" ", 1)[-1]

    yield start
    for process in started:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


async def test_streamable_http_on_loopback_serves_every_tool(
    http_server: Any, node: Any, project_dir: Path
) -> None:
    url = http_server("127.0.0.1")
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    async with Client(url) as client:
        await _agent_session(client, project_digest(project_dir), "suite-http")


async def test_streamable_http_off_loopback_needs_the_bearer_token(
    http_server: Any, node: Any, project_dir: Path
) -> None:
    url = http_server("0.0.0.0").replace("0.0.0.0", "127.0.0.1")
    token = (Path(node.home) / "agent.token").read_text().strip()
    async with httpx2.AsyncClient() as raw:
        refused = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        wrong = await raw.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Authorization": "Bearer nope"},
        )
    assert refused.status_code == 401 and wrong.status_code == 401
    assert refused.json()["error"] == "unauthenticated"
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        result = _data(await client.call_tool("check_operation", {"operation": "shell:ls"}))
    assert result["preamble"] == ""
