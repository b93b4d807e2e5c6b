"""``lamarck mcp``: the Model Context Protocol server over a home's node.

Built on the maintained ``mcp`` SDK (2.x, ``mcp.server.mcpserver.MCPServer``). Two transports:

* stdio, for coding agents that launch the server themselves (Claude Code, Cursor, ...);
* streamable HTTP, on loopback by default; on any other address every request must carry
  ``Authorization: Bearer <token>`` with the node's agent token (``<home>/agent.token``,
  created on first need), the same credential that guards the agent API it fronts.

Tools are :class:`lamarck.mcp.tools.LamarckTools`; resources are a lesson
(``lamarck://lessons/{lesson_id}``) and its history (``.../history``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from pydantic import Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from lamarck import __version__
from lamarck.errors import ConfigError
from lamarck.mcp.tools import DESCRIPTIONS, LamarckTools, argument_error
from lamarck.net import is_loopback_host
from lamarck.token import token_matches

__all__ = [
    "INSTRUCTIONS",
    "BearerAuth",
    "McpParams",
    "build_server",
    "serve_http",
]

INSTRUCTIONS = (
    "lamarck is a memory shared by a network of coding agents: lessons learned from real "
    "runs. Each lesson is labelled 'proven here' (this node's runs confirmed it), "
    "'corroborated' (independent operators' runs confirmed it) or 'unverified' (a peer's "
    "lesson nobody independent confirmed: a hint, never advice). Before a task call recall; "
    "before a risky command call check_operation; after the task, pass or fail, call "
    "record_outcome with what ran. Lessons come only from outcomes."
)


_MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class McpParams:
    """Constants of the HTTP transport; validated on construction."""

    #: Path of the streamable HTTP endpoint.
    http_path: str = "/mcp"
    #: Default HTTP port (the node's peer and agent APIs default to 7700 and 7701).
    http_port: int = 7702
    #: Bytes of one HTTP request body (a run is at most a 64 KiB record; room for framing).
    max_request_body_bytes: int = 256 * 1024
    #: Listen backlog of the HTTP socket.
    backlog: int = 64

    def __post_init__(self) -> None:
        if not self.http_path.startswith("/"):
            raise ConfigError("invalid http_path; must start with '/'", field="http_path")
        for name in ("max_request_body_bytes", "backlog"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"invalid {name}; must be an int >= 1", field=name)
        port = self.http_port
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= _MAX_PORT:
            raise ConfigError(f"invalid http_port; must be 0..{_MAX_PORT}", field="http_port")


class _LamarckServer(MCPServer):
    """An MCP server whose every tool failure reads ``lamarck: <reason>: <text>``.

    The SDK words a bad argument as pydantic's multi-line report (with a documentation URL)
    and prefixes a tool's own error with ``Error executing tool <name>``; the model gets
    the one shape every lamarck surface uses instead.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Call the tool; a refusal leaves as ``ToolError("lamarck: <reason>: <text>")``."""
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as e:
            cause = e.__cause__
            if isinstance(cause, ValidationError):
                raise argument_error(cause) from None
            if isinstance(cause, ToolError):
                raise ToolError(str(cause)) from None
            raise


def build_server(tools: LamarckTools) -> MCPServer:
    """The MCP server exposing ``tools`` and the lesson resources."""
    server: MCPServer = _LamarckServer(
        "lamarck", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    async def recall(
        task: Annotated[str, Field(description="the user's request or your plan, in words")],
        domain: Annotated[str, Field(description="optional domain, e.g. 'python-testing'")] = "",
        limit: Annotated[int, Field(ge=1, le=5, description="at most this many lessons")] = 5,
    ) -> dict[str, Any]:
        return await tools.recall(task, domain, limit=limit)

    async def check_operation(
        operation: Annotated[str, Field(description="the operation key, e.g. 'shell:pytest'")],
        tool: Annotated[str, Field(description="optional tool name (for known blockers)")] = "",
        subject: Annotated[str, Field(description="optional subject the tool acts on")] = "",
    ) -> dict[str, Any]:
        return await tools.check_operation(operation, tool, subject)

    async def record_outcome(
        run: Annotated[
            dict[str, Any],
            Field(description="the run (lamarck run JSON, kind 'run'); see the tool text"),
        ],
    ) -> dict[str, Any]:
        return await tools.record_outcome(run)

    async def remember(
        content: Annotated[str, Field(description="one imperative sentence of advice")],
        operation: Annotated[str, Field(description="the operation key it is about")] = "",
        tags: Annotated[list[str] | None, Field(description="optional tags")] = None,
    ) -> dict[str, Any]:
        return await tools.remember(content, operation, tags or ())

    async def report_use(
        lesson_ids: Annotated[list[str], Field(description="ids of recalled lessons")],
        applied: Annotated[bool, Field(description="true: applied; false: dismissed")] = True,
        note: Annotated[str, Field(description="optional note")] = "",
    ) -> dict[str, Any]:
        return await tools.report_use(lesson_ids, applied, note=note)

    async def list_lessons(
        scope: Annotated[str, Field(description="'global' or 'project:<digest>'")] = "",
        status: Annotated[str, Field(description="claimed|active|superseded|retired")] = "",
        operation: Annotated[str, Field(description="only lessons about this operation")] = "",
        min_confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0,
        page_size: Annotated[int, Field(ge=1, le=100)] = 20,
        page_token: Annotated[str, Field(description="from the previous page")] = "",
    ) -> dict[str, Any]:
        return await tools.list_lessons(
            scope, status, operation, min_confidence, page_size, page_token
        )

    async def lesson_history(
        lesson_id: Annotated[str, Field(description="the lesson id")],
    ) -> dict[str, Any]:
        return await tools.lesson_history(lesson_id)

    async def retire_lesson(
        lesson_id: Annotated[str, Field(description="the lesson id")],
        reason: Annotated[str, Field(description="why it is withdrawn (required)")],
    ) -> dict[str, Any]:
        return await tools.retire_lesson(lesson_id, reason)

    for fn in (
        recall,
        check_operation,
        record_outcome,
        remember,
        report_use,
        list_lessons,
        lesson_history,
        retire_lesson,
    ):
        server.add_tool(fn, name=fn.__name__, description=DESCRIPTIONS[fn.__name__])

    async def lesson_resource(lesson_id: str) -> str:
        return await _as_resource(lambda: tools.lesson(lesson_id))

    async def history_resource(lesson_id: str) -> str:
        return await _as_resource(lambda: tools.lesson_history(lesson_id))

    server.resource(
        "lamarck://lessons/{lesson_id}",
        name="lesson",
        description="A lesson: its current version, status, confidence and signed record.",
        mime_type="application/json",
    )(lesson_resource)
    server.resource(
        "lamarck://lessons/{lesson_id}/history",
        name="lesson_history",
        description="Every event of a lesson, oldest first.",
        mime_type="application/json",
    )(history_resource)
    return server


async def _as_resource(read: Callable[[], Awaitable[dict[str, Any]]]) -> str:
    """A resource's JSON text; a lamarck failure is a resource error with its reason."""
    try:
        return json.dumps(await read(), ensure_ascii=False)
    except ToolError as e:
        raise ResourceError(str(e)) from None


class BearerAuth:
    """ASGI wrapper: every HTTP request needs ``Authorization: Bearer <token>`` (constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        """Guard ``app`` with ``token``."""
        self._app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse an HTTP request without the token (401); pass everything else through."""
        if scope["type"] == "http":
            presented: str | None = None
            for key, value in scope.get("headers", ()):
                if key.lower() == b"authorization":
                    text = value.decode("latin-1")
                    if text[:7].lower() == "bearer ":
                        presented = text[7:].strip()
            if not token_matches(self._token, presented):
                body = json.dumps(
                    {"error": "unauthenticated", "message": "a bearer token is required"}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


async def serve_http(
    server: MCPServer,
    *,
    host: str,
    port: int,
    token: str | None,
    params: McpParams,
    on_ready: Callable[[str], None],
) -> None:
    """Serve streamable HTTP on ``host:port`` until cancelled; ``on_ready(url)`` once bound.

    Off loopback ``token`` is required (``ConfigError`` otherwise).
    """
    import uvicorn

    if token is None and not is_loopback_host(host):
        raise ConfigError(
            f"serving MCP on {host} (not loopback) needs a bearer token", reason="token_required"
        )
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=params.http_path,
        max_request_body_size=params.max_request_body_bytes,
        host=host,
    )
    if token is not None:
        app = BearerAuth(app, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e}", reason="bind_failed") from e
    sock.listen(params.backlog)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    on_ready(f"http://{shown}:{bound}{params.http_path}")
    await uvicorn.Server(config).serve(sockets=[sock])
