"""What each MCP tool does, over a node's AgentService (the SDK's ``AsyncClient``).

The tools are plain async methods of :class:`LamarckTools`, returning JSON-shaped dicts; the
server module only registers them. Every lamarck failure (a refusal, a missing lesson, no
node running) leaves as ``ToolError("<reason>: <message>")``, so the model reads the reason
and never a stack trace.

The descriptions tell the model *when* to call each tool: the usual failure of a shared
memory is an agent that forgets to look before acting or to report after.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from lamarck.agent.run import RunParams, outcome_from_document
from lamarck.client import AsyncClient, Conflict, HistoryEntry, Lesson
from lamarck.errors import InvalidRecord, LamarckError
from lamarck.proto.clock import Clock

__all__ = [
    "DESCRIPTIONS",
    "EVIDENCE_TEXT",
    "LamarckTools",
    "NodeLink",
    "argument_error",
    "conflict_view",
    "history_view",
    "lamarck_errors",
    "lesson_view",
]

_T = TypeVar("_T")
# Reasons after which the cached channel is dropped: the node may have restarted elsewhere.
_RECONNECT_REASONS = frozenset({"unavailable", "node_not_running"})

#: What each evidence class means, in every tool text that shows lessons.
EVIDENCE_TEXT = (
    "Every lesson carries its evidence: 'proven here' (this node's own runs confirmed it), "
    "'corroborated' (signed outcome reports from at least two independent operators other "
    "than its author confirm it, or a quorum of them accepted it), or 'unverified' (from "
    "peers; nobody independent has confirmed it: a hint at most, never proof and never "
    "advice; only a hint 'of this node's operator' may be tried first, any other only once "
    "your own way failed, and another operator's hint is shown only as the 'prefer B over A' "
    "claim it carries, in this node's words), with the number of independent principals "
    "behind it and its confidence."
)

DESCRIPTIONS: dict[str, str] = {
    "recall": (
        "Call FIRST, before planning any task: returns the lessons on file for similar work "
        "(a ready 'Lessons:' prompt section, the advice with ids, unverified hints and "
        "conflicts). Only proven-here and corroborated lessons are advice; unverified hints "
        "are labelled as such; lessons that disagree are shown together, strongest evidence "
        "first. " + EVIDENCE_TEXT + " Lessons returned are 'in play' for this session; when "
        "you then call record_outcome, they are confirmed or contradicted by what really "
        "happened."
    ),
    "check_operation": (
        "Call right BEFORE running a command or tool you are unsure about (e.g. "
        "'shell:pytest tests/', 'shell:npm publish'): says what is on file for that operation "
        "(prefer another route, a known blocker, a probe to try first) and any conflict "
        "between lessons about it. Only proven-here or corroborated lessons are advice here; "
        "an unverified lesson never is. " + EVIDENCE_TEXT + " Empty when nothing is on file."
    ),
    "record_outcome": (
        "Call at the END of every task, pass or fail: send the run as JSON {session_id?, goal, "
        "events: [{type: 'tool_call', operation, result: ok|failed|refused, target?, mutates?} "
        "| {type: 'check', kind: test|lint|build, result: passed|failed|refused, operation?, "
        "target?} | {type: 'mutation', target?}], in_play?: [lesson ids], claim_ok?, prediction?: "
        "{expected: pass|fail, confidence}}. The outcome is derived from what ran, never from "
        "your claim: a failed command followed by another that worked on the same target, in "
        "a run whose checks pass, becomes a lesson (the same fix proven again in a second "
        "project confirms that lesson and makes it global). Only lessons IN PLAY are confirmed "
        "or contradicted by the outcome: those recall or check_operation returned in this "
        "session and those you passed to report_use are in play already; list in in_play the "
        "ids of any other lesson you applied (e.g. one read with list_lessons or in another "
        "session), or the run cannot confirm it. The reply says why nothing was learned "
        "otherwise."
    ),
    "remember": (
        "Call when you want to note advice you believe but have NOT verified: it is stored as "
        "a CLAIM, kept out of recall and sharing until an outcome confirms it. To record what "
        "just happened, call record_outcome instead (that is what creates proven lessons)."
    ),
    "report_use": (
        "Call after recall when you know which lessons you actually applied (applied=true) "
        "or deliberately ignored (applied=false): only applied lessons are judged by the outcome."
    ),
    "list_lessons": (
        "Call to browse lessons on file (by scope, status, operation, minimum confidence), "
        "e.g. when the user asks what the agents have learned. Not needed before a task: use "
        "recall. " + EVIDENCE_TEXT
    ),
    "lesson_history": (
        "Call to see why a lesson stands where it does: every event (created, confirmed, "
        "contradicted, edited, retired) with its confidence before and after and its reason."
    ),
    "retire_lesson": (
        "Call ONLY when the user asks to withdraw a lesson, or a lesson is clearly wrong or "
        "harmful: it stops being recalled or shared (kept in history). A reason is required."
    ),
}


@contextmanager
def lamarck_errors() -> Iterator[None]:
    """Turn a lamarck failure into a tool error the model can read: ``<reason>: <message>``."""
    try:
        yield
    except LamarckError as e:
        raise ToolError(f"lamarck: {e}") from None


def argument_error(exc: ValidationError) -> ToolError:
    """A tool's arguments that fail their schema, as ``lamarck: bad_argument: <field>: <why>``."""
    found = exc.errors(include_url=False, include_input=False)
    where = ".".join(str(p) for p in found[0]["loc"]) if found else "arguments"
    why = found[0]["msg"] if found else "invalid"
    return ToolError(f"lamarck: bad_argument: {where}: {why}")


def lesson_view(lesson: Lesson) -> dict[str, Any]:
    """A lesson as a tool result: what a model needs to read and cite it."""
    view: dict[str, Any] = {
        "id": lesson.id,
        "content": lesson.content,
        "confidence": round(lesson.confidence, 4),
        "status": lesson.status,
        "scope": lesson.scope,
        "operation": lesson.operation,
        "category": lesson.category,
        "origin": lesson.origin,
        "version": lesson.version,
        "success_count": lesson.success_count,
        "failure_count": lesson.failure_count,
        "tags": list(lesson.tags),
        "shared": lesson.shared,
        "evidence": {
            "class": lesson.evidence.evidence_class,
            "independent_principals": lesson.evidence.independent_principals,
            "peers": lesson.evidence.peers,
            "certified": lesson.evidence.certified,
            "own_principal": lesson.evidence.own_principal,
            "label": lesson.evidence.label,
        },
    }
    if not lesson.shared:
        view["not_shared_reason"] = lesson.not_shared_reason
    if lesson.situation is not None:
        s = lesson.situation
        view["situation"] = {
            "tool": s.tool,
            "subject": s.subject,
            "kind": s.kind,
            "unblock": s.unblock,
            "probe": s.probe,
        }
    return view


def conflict_view(conflict: Conflict) -> dict[str, Any]:
    """Lessons that disagree, as a tool result: sides strongest first, and which holds."""
    return {
        "operation": conflict.operation,
        "sides": [lesson_view(x) for x in conflict.sides],
        "holds": conflict.holds or None,
    }


def history_view(entry: HistoryEntry) -> dict[str, Any]:
    """One history event as a tool result."""
    return {
        "at": entry.at.isoformat(),
        "kind": entry.kind,
        "version": entry.version,
        "status": entry.status,
        "confidence_before": round(entry.confidence_before, 4),
        "confidence": round(entry.confidence, 4),
        "outcome_id": entry.outcome_id,
        "actor": entry.actor,
        "reason": entry.reason,
    }


@dataclass
class NodeLink:
    """The connection to a home's node, opened on first use inside the server's event loop.

    ``connect`` is ``AsyncClient.from_home`` bound to the home (tests may pass another).
    A failure that says the node is gone drops the channel, so the next call re-reads the
    home's ``node.json`` (a restarted node listens elsewhere).
    """

    connect: Callable[[], AsyncClient]
    _client: AsyncClient | None = None

    def client(self) -> AsyncClient:
        """The open client (connecting now if needed)."""
        if self._client is None:
            self._client = self.connect()
        return self._client

    async def call(self, use: Callable[[AsyncClient], Awaitable[_T]]) -> _T:
        """Run ``use`` on the client; lamarck errors become tool errors."""
        with lamarck_errors():
            try:
                return await use(self.client())
            except LamarckError as e:
                if e.reason in _RECONNECT_REASONS:
                    await self.close()
                raise

    async def close(self) -> None:
        """Close the channel, if open."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()


class LamarckTools:
    """The MCP tools of ``lamarck mcp``: one method per tool (see :data:`DESCRIPTIONS`)."""

    def __init__(
        self,
        link: NodeLink,
        *,
        project: str,
        session_id: str,
        clock: Clock,
        rng: random.Random,
        params: RunParams,
    ) -> None:
        """Serve ``link``'s node; ``project`` and ``session_id`` are the defaults of calls."""
        self.link = link
        self.project = project
        self.session_id = session_id
        self._clock = clock
        self._rng = rng
        self._params = params

    async def recall(
        self, task: str, domain: str = "", session_id: str = "", limit: int = 5
    ) -> dict[str, Any]:
        """The lessons for ``task`` and the prompt section (see DESCRIPTIONS["recall"])."""
        context = {"domain": domain} if domain else None
        result = await self.link.call(
            lambda c: c.recall(
                task,
                context,
                session_id=session_id or self.session_id,
                project_digest=self.project,
                limit=limit,
            )
        )
        return {
            "section": result.section,
            "lessons": [lesson_view(x) for x in result.lessons],
            "unverified_hints": [lesson_view(x) for x in result.hints],
            "conflicts": [conflict_view(c) for c in result.conflicts],
            "session_id": session_id or self.session_id,
        }

    async def check_operation(
        self, operation: str, tool: str = "", subject: str = "", session_id: str = ""
    ) -> dict[str, Any]:
        """What is on file for ``operation`` before it runs."""
        result = await self.link.call(
            lambda c: c.check_operation(
                operation,
                session_id=session_id or self.session_id,
                project_digest=self.project,
                tool=tool,
                subject=subject,
            )
        )
        return {
            "preamble": result.preamble,
            "probe": result.probe,
            "unblock": result.unblock,
            "lesson_ids": list(result.lesson_ids),
            "lessons": [lesson_view(x) for x in result.lessons],
            "conflicts": [conflict_view(c) for c in result.conflicts],
        }

    async def record_outcome(self, run: Mapping[str, Any]) -> dict[str, Any]:
        """Derive the outcome of ``run`` by the node's rules and record it."""
        document = dict(run)
        if document.get("kind", "run") == "run":
            document.setdefault("session_id", self.session_id)
        with lamarck_errors():
            outcome, derived = outcome_from_document(
                json.dumps(document, ensure_ascii=False),
                now=self._clock.now(),
                rng=self._rng,
                project=self.project,
                params=self._params,
            )
        result = await self.link.call(lambda c: c.record_outcome(outcome))
        reply: dict[str, Any] = {
            "outcome_id": result.outcome_id,
            "passed": outcome.passed,
            "duplicate": result.duplicate,
            "changes": [
                {
                    "lesson_id": c.lesson_id,
                    "kind": c.kind,
                    "confidence_before": round(c.confidence_before, 4),
                    "confidence_after": round(c.confidence_after, 4),
                    "status": c.status,
                }
                for c in result.changes
            ],
        }
        if result.nothing_learned:
            # The node's own reason (lamarck.learning.why), the same vocabulary the run's
            # forecast uses.
            reply["nothing_learned"] = result.nothing_learned
        if derived is not None and derived.prediction_correct is not None:
            reply["prediction_correct"] = derived.prediction_correct
        return reply

    async def remember(
        self, content: str, operation: str = "", tags: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Store unverified advice as a claim."""
        result = await self.link.call(
            lambda c: c.remember(
                content,
                operation,
                project_digest=self.project,
                tags=list(tags),
                session_id=self.session_id,
            )
        )
        return {
            "lesson": lesson_view(result.lesson),
            "created": result.created,
            # The node's words: a claim is kept out of recall and sharing until confirmed.
            "note": result.note,
        }

    async def report_use(
        self, lesson_ids: Sequence[str], applied: bool = True, session_id: str = "", note: str = ""
    ) -> dict[str, Any]:
        """Say which recalled lessons were applied (or dismissed)."""
        recorded = await self.link.call(
            lambda c: c.report_use(
                session_id or self.session_id, list(lesson_ids), applied=applied, note=note
            )
        )
        return {"recorded": recorded}

    async def list_lessons(
        self,
        scope: str = "",
        status: str = "",
        operation: str = "",
        min_confidence: float = 0.0,
        page_size: int = 20,
        page_token: str = "",
    ) -> dict[str, Any]:
        """One page of lessons matching the filter."""
        page = await self.link.call(
            lambda c: c.list_lessons(
                scope=scope or None,
                statuses=status or None,
                operation=operation or None,
                min_confidence=min_confidence or None,
                page_size=page_size,
                page_token=page_token,
            )
        )
        return {
            "lessons": [lesson_view(x) for x in page.lessons],
            "next_page_token": page.next_page_token,
        }

    async def lesson_history(self, lesson_id: str) -> dict[str, Any]:
        """Every event of a lesson, oldest first."""
        entries = await self.link.call(lambda c: c.history(lesson_id))
        return {"lesson_id": lesson_id, "events": [history_view(e) for e in entries]}

    async def retire_lesson(self, lesson_id: str, reason: str) -> dict[str, Any]:
        """Withdraw a lesson, with a reason."""
        if not reason.strip():
            with lamarck_errors():
                raise InvalidRecord("say why the lesson is retired", reason="no_reason")
        lesson = await self.link.call(lambda c: c.retire(lesson_id, reason=reason))
        return {"lesson": lesson_view(lesson)}

    async def lesson(self, lesson_id: str) -> dict[str, Any]:
        """A lesson as it stands now (GetLesson): its view, whether it is shared, its record."""
        lesson = await self.link.call(lambda c: c.get_lesson(lesson_id))
        return {**lesson_view(lesson), "record": _record(lesson.record_json)}


def _record(raw: bytes) -> Any:
    return json.loads(raw) if raw else None
