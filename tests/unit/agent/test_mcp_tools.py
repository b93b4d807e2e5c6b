"""The MCP tools over a scripted node: errors as tool errors, runs derived, bearer auth."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from mcp import Client

from lamarck.agent.run import RunParams
from lamarck.client import (
    CheckResult,
    Conflict,
    Evidence,
    Lesson,
    LessonChange,
    OutcomeResult,
    RecallResult,
)
from lamarck.errors import ConfigError, LamarckError, NotFound
from lamarck.mcp.server import INSTRUCTIONS, BearerAuth, McpParams, build_server, serve_http
from lamarck.mcp.tools import DESCRIPTIONS, LamarckTools, NodeLink
from lamarck.proto.clock import FixedClock
from lamarck.proto.outcome import Outcome

PROJECT = "cd" * 32
BAD, GOOD = "shell:pytest tests/", "shell:pytest"


class ScriptedNode:
    """Stands in for AsyncClient: records what it was sent, fails when told to."""

    def __init__(self, fail: LamarckError | None = None, why: str = "") -> None:
        self.fail = fail
        self.why = why  # the node's nothing_learned reason when no lesson changed
        self.outcomes: list[Outcome] = []
        self.closed = False

    async def record_outcome(self, outcome: Outcome) -> OutcomeResult:
        if self.fail is not None:
            raise self.fail
        self.outcomes.append(outcome)
        changes = ()
        if outcome.passed and len(outcome.approach) > 1:
            changes = (LessonChange("L1", "created", 1, 0.0, 0.5, "active"),)
        return OutcomeResult(outcome.id, False, changes, "" if changes else self.why)

    async def history(self, lesson_id: str) -> list[Any]:
        raise NotFound(f"unknown lessons: {lesson_id}")

    async def get_lesson(self, lesson_id: str) -> Any:
        raise NotFound(f"lesson {lesson_id} not found")

    async def close(self) -> None:
        self.closed = True


def tools_for(node: ScriptedNode, connects: list[int] | None = None) -> LamarckTools:
    def connect() -> Any:
        if connects is not None:
            connects.append(1)
        return node

    return LamarckTools(
        NodeLink(connect),
        project=PROJECT,
        session_id="mcp-session",
        clock=FixedClock(datetime(2026, 3, 1, tzinfo=UTC)),
        rng=random.Random(3),
        params=RunParams(),
    )


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


RUN = {
    "goal": "make the test suite pass",
    "events": [
        {"type": "check", "kind": "test", "result": "failed", "operation": BAD, "target": "s"},
        {"type": "check", "kind": "test", "result": "passed", "operation": GOOD, "target": "s"},
    ],
}


async def test_record_outcome_derives_the_run_with_the_server_defaults() -> None:
    node = ScriptedNode()
    async with Client(build_server(tools_for(node))) as client:
        result = await client.call_tool("record_outcome", {"run": RUN})
    assert not result.is_error, _text(result)
    [sent] = node.outcomes
    assert sent.passed and sent.project == PROJECT and sent.session_id == "mcp-session"
    assert sent.created_at == "2026-03-01T00:00:00Z"
    assert result.structured_content is not None
    assert result.structured_content["changes"][0]["kind"] == "created"
    assert "nothing_learned" not in result.structured_content


async def test_record_outcome_says_why_nothing_was_learned_in_the_nodes_words() -> None:
    node = ScriptedNode(why="not_attributed")
    run = {
        "goal": "g",
        "events": [{"type": "check", "kind": "lint", "result": "passed"}],
        "prediction": {"expected": "fail", "confidence": 0.6},
    }
    async with Client(build_server(tools_for(node))) as client:
        result = await client.call_tool("record_outcome", {"run": run})
    assert result.structured_content is not None
    assert result.structured_content["nothing_learned"] == "not_attributed"
    assert result.structured_content["prediction_correct"] is False
    [sent] = node.outcomes
    assert sent.prediction is not None and sent.prediction.expected == "fail"


async def test_a_lamarck_refusal_is_a_tool_error_with_its_reason_and_no_traceback() -> None:
    node = ScriptedNode(fail=LamarckError("no way", reason="secret_detected"))
    async with Client(build_server(tools_for(node))) as client:
        refused = await client.call_tool("record_outcome", {"run": RUN})
        missing = await client.call_tool("lesson_history", {"lesson_id": "nope"})
    assert refused.is_error and _text(refused) == "lamarck: secret_detected: no way"
    assert missing.is_error and "not_found" in _text(missing)
    assert "Traceback" not in _text(refused) + _text(missing)


async def test_a_malformed_run_is_refused_before_reaching_the_node() -> None:
    node = ScriptedNode()
    async with Client(build_server(tools_for(node))) as client:
        result = await client.call_tool("record_outcome", {"run": {"goal": "g", "surprise": 1}})
    assert result.is_error and "malformed" in _text(result) and node.outcomes == []


async def test_bad_arguments_are_one_line_lamarck_errors_without_pydantic_urls() -> None:
    async with Client(build_server(tools_for(ScriptedNode()))) as client:
        empty = await client.call_tool("retire_lesson", {"lesson_id": "L1", "reason": ""})
        blank = await client.call_tool("retire_lesson", {"lesson_id": "L1", "reason": " "})
        missing = await client.call_tool("retire_lesson", {"lesson_id": "L1"})
        no_task = await client.call_tool("recall", {})
    for refused in (empty, blank):
        assert refused.is_error
        assert _text(refused) == "lamarck: no_reason: say why the lesson is retired"
    assert missing.is_error and _text(missing) == "lamarck: bad_argument: reason: Field required"
    assert no_task.is_error and _text(no_task).startswith("lamarck: bad_argument: task: ")
    assert "pydantic" not in _text(missing) + _text(no_task)


async def test_a_run_without_events_is_refused_with_a_reason_and_not_recorded() -> None:
    node = ScriptedNode()
    async with Client(build_server(tools_for(node))) as client:
        result = await client.call_tool("record_outcome", {"run": {"goal": "g", "events": []}})
    assert result.is_error and _text(result).startswith("lamarck: no_events: ")
    assert node.outcomes == []


async def test_a_missing_lesson_resource_is_an_error_naming_the_reason() -> None:
    async with Client(build_server(tools_for(ScriptedNode()))) as client:
        with pytest.raises(Exception, match="not_found"):
            await client.read_resource("lamarck://lessons/nope")


async def test_an_unavailable_node_is_dialled_again_on_the_next_call() -> None:
    connects: list[int] = []
    node = ScriptedNode(fail=LamarckError("down", reason="unavailable"))
    tools = tools_for(node, connects)
    async with Client(build_server(tools)) as client:
        await client.call_tool("record_outcome", {"run": RUN})
        node.fail = None
        result = await client.call_tool("record_outcome", {"run": RUN})
    assert not result.is_error and len(connects) == 2 and node.closed


def test_every_tool_description_says_when_to_call_it() -> None:
    assert set(DESCRIPTIONS) == {
        "recall",
        "check_operation",
        "record_outcome",
        "remember",
        "report_use",
        "list_lessons",
        "lesson_history",
        "retire_lesson",
    }
    assert all(text.startswith("Call") for text in DESCRIPTIONS.values())
    assert "CLAIM" in DESCRIPTIONS["remember"] and "record_outcome" in DESCRIPTIONS["remember"]
    # Without in_play a lesson applied from check_operation is never confirmed or promoted.
    assert "in_play" in DESCRIPTIONS["record_outcome"]
    assert "report_use" in DESCRIPTIONS["record_outcome"]


async def _asgi_status(app: Any, headers: list[tuple[bytes, bytes]]) -> int:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "headers": headers}, receive, send)
    return int(sent[0]["status"])


async def test_bearer_auth_refuses_a_missing_or_wrong_token_and_passes_the_right_one() -> None:
    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    guarded = BearerAuth(inner, "s3cret")
    assert await _asgi_status(guarded, []) == 401
    assert await _asgi_status(guarded, [(b"authorization", b"Bearer nope")]) == 401
    assert await _asgi_status(guarded, [(b"authorization", b"bearer s3cret")]) == 200


async def test_serving_off_loopback_without_a_token_is_refused() -> None:
    server = build_server(tools_for(ScriptedNode()))
    with pytest.raises(ConfigError) as caught:
        await serve_http(
            server, host="0.0.0.0", port=0, token=None, params=McpParams(), on_ready=print
        )
    assert caught.value.reason == "token_required"


@pytest.mark.parametrize(
    "bad", [{"http_path": "mcp"}, {"http_port": 70000}, {"backlog": 0}, {"http_port": True}]
)
def test_mcp_params_are_validated(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        McpParams(**bad)


# -- evidence on every tool ---------------------------------------------------------------


def _lesson(lesson_id: str, evidence: Evidence) -> Lesson:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    return Lesson(
        id=lesson_id,
        version=1,
        content=f"Prefer `{GOOD}` over `{BAD}` for the suite.",
        confidence=0.29,
        status="active",
        scope="global",
        operation=GOOD,
        category="operation",
        memory_type="ac",
        access_level="public",
        origin="imported",
        source_node_id="lmk1peer",
        tags=(),
        evidence_outcome_ids=(),
        success_count=0,
        failure_count=0,
        created_at=at,
        updated_at=at,
        superseded_by="",
        situation=None,
        context={},
        imported_from=("lmk1peer",),
        original_confidence=0.5,
        record_json=b"",
        evidence=evidence,
    )


PROVEN = Evidence("proven_here", label="proven here, confidence 0.80")
UNVERIFIED = Evidence("unverified", peers=1, label="unverified, from 1 peer, confidence 0.29")


class EvidenceNode(ScriptedNode):
    """A node whose recall and check show a proven lesson, a hint and a conflict."""

    async def recall(self, task: str, context: Any = None, **kw: Any) -> RecallResult:
        proven, hint = _lesson("P", PROVEN), _lesson("U", UNVERIFIED)
        conflict = Conflict(GOOD, (proven, _lesson("X", UNVERIFIED)), holds="P")
        return RecallResult((proven,), "Lessons:", (0.5,), (hint,), (conflict,))

    async def check_operation(self, operation: str, **kw: Any) -> CheckResult:
        conflict = Conflict(GOOD, (_lesson("U", UNVERIFIED), _lesson("X", UNVERIFIED)))
        return CheckResult("Contested on ...", "", "", ("U", "X"), (), (conflict,))


async def test_recall_and_check_give_each_lessons_evidence_class_and_label() -> None:
    async with Client(build_server(tools_for(EvidenceNode()))) as client:
        recalled = await client.call_tool("recall", {"task": "run the tests"})
        checked = await client.call_tool("check_operation", {"operation": BAD})
    r = recalled.structured_content
    assert r is not None
    [advice] = r["lessons"]
    assert advice["evidence"]["class"] == "proven_here"
    [hint] = r["unverified_hints"]
    assert hint["evidence"] == {
        "class": "unverified",
        "independent_principals": 0,
        "peers": 1,
        "certified": False,
        "own_principal": False,
        "label": "unverified, from 1 peer, confidence 0.29",
    }
    [conflict] = r["conflicts"]
    assert conflict["holds"] == "P" and [s["id"] for s in conflict["sides"]] == ["P", "X"]
    c = checked.structured_content
    assert c is not None and c["lessons"] == []
    assert c["conflicts"][0]["holds"] is None
    assert [s["evidence"]["class"] for s in c["conflicts"][0]["sides"]] == ["unverified"] * 2


def test_no_tool_text_calls_recalled_lessons_proved_and_each_class_is_explained() -> None:
    texts = [*DESCRIPTIONS.values(), INSTRUCTIONS]
    assert not any("proved for similar" in t for t in texts)
    for name in ("recall", "check_operation", "list_lessons"):
        text = DESCRIPTIONS[name]
        for word in ("'proven here'", "'corroborated'", "'unverified'"):
            assert word in text, (name, word)
        assert "never advice" in text
    assert "'unverified'" in INSTRUCTIONS and "never advice" in INSTRUCTIONS
