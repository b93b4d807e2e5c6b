"""Commands for shell hooks and non-Python agents, and the MCP server.

* ``lamarck recall "task"`` prints the "Lessons:" prompt section (``--json``: with the lessons);
* ``lamarck check "operation"`` prints the decision-time preamble (nothing when none);
* ``lamarck record-outcome FILE|-`` records a run (the recorder's JSON format, schema in
  ``lamarck/agent/run_schema.json``) or an outcome record, and says what was learned;
* ``lamarck mcp`` serves the Model Context Protocol (stdio, or streamable HTTP).

The project is the checkout holding ``--project DIR`` (default: the working directory),
keyed by :func:`lamarck.agent.project_digest` exactly as the node's store expects.
"""

from __future__ import annotations

import random
import sys
import uuid
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from lamarck.agent.project import project_digest
from lamarck.agent.run import RunParams, outcome_from_document
from lamarck.cli.connect import client_for
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json
from lamarck.client import AsyncClient, Conflict, Lesson
from lamarck.errors import CliError
from lamarck.proto.clock import SystemClock

__all__ = ["check", "mcp", "recall", "record_outcome", "register"]

ProjectOption = Annotated[
    Path | None,
    typer.Option(
        "--project",
        help="The project's checkout [default: the working directory].",
        show_default=False,
        file_okay=False,
    ),
]
SessionOption = Annotated[
    str,
    typer.Option("--session", help="The agent session (lessons recalled in it are in play)."),
]


class Transport(StrEnum):
    """How ``lamarck mcp`` talks to its client."""

    STDIO = "stdio"
    HTTP = "http"


def _project(path: Path | None) -> str:
    return project_digest(path if path is not None else Path.cwd())


def _shown(lesson: Lesson) -> dict[str, Any]:
    """A lesson as ``recall`` and ``check`` print it: text, confidence and evidence."""
    return {
        "id": lesson.id,
        "content": lesson.content,
        "confidence": lesson.confidence,
        "evidence": lesson.evidence.evidence_class,
        "independent_principals": lesson.evidence.independent_principals,
        "label": lesson.evidence.label,
    }


def _conflict(conflict: Conflict) -> dict[str, Any]:
    return {
        "operation": conflict.operation,
        "sides": [_shown(x) for x in conflict.sides],
        "holds": conflict.holds or None,
    }


def recall(
    task: Annotated[str, typer.Argument(help="The task, in words.", show_default=False)],
    project: ProjectOption = None,
    session: SessionOption = "",
    domain: Annotated[str, typer.Option(help="The task's domain, e.g. python-testing.")] = "",
    limit: Annotated[int, typer.Option(min=1, max=5, help="At most this many lessons.")] = 5,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the "Lessons:" section for a task (empty when nothing is on file)."""
    digest = _project(project)
    with client_for(resolve_home(home)) as client:
        result = client.recall(
            task,
            {"domain": domain} if domain else None,
            session_id=session,
            project_digest=digest,
            limit=limit,
        )
    if as_json:
        emit_json(
            {
                "section": result.section,
                "lessons": [_shown(x) for x in result.lessons],
                "unverified_hints": [_shown(x) for x in result.hints],
                "conflicts": [_conflict(c) for c in result.conflicts],
            }
        )
    elif result.section:
        typer.echo(result.section)


def check(
    operation: Annotated[str, typer.Argument(help="The operation key.", show_default=False)],
    tool: Annotated[str, typer.Option(help="The tool (for remembered blockers).")] = "",
    subject: Annotated[str, typer.Option(help="What the tool acts on.")] = "",
    project: ProjectOption = None,
    session: SessionOption = "",
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print what is on file for an operation about to run (nothing when nothing is)."""
    digest = _project(project)
    with client_for(resolve_home(home)) as client:
        result = client.check_operation(
            operation, session_id=session, project_digest=digest, tool=tool, subject=subject
        )
    if as_json:
        emit_json(
            {
                "preamble": result.preamble,
                "probe": result.probe,
                "unblock": result.unblock,
                "lesson_ids": list(result.lesson_ids),
                "lessons": [_shown(x) for x in result.lessons],
                "conflicts": [_conflict(c) for c in result.conflicts],
            }
        )
    elif result.preamble:
        typer.echo(result.preamble)


def _read(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as e:
        raise CliError(f"cannot read {source}: {e}", reason="unreadable_file") from e


def record_outcome(
    source: Annotated[str, typer.Argument(help="A run JSON file, or - for stdin.")],
    project: ProjectOption = None,
    home: HomeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record a run (or an outcome record) and print what the node learned from it."""
    raw = _read(source)
    home_dir = resolve_home(home)
    outcome, derived = outcome_from_document(
        raw,
        now=SystemClock().now(),
        rng=random.Random(),
        project=_project(project),
        params=RunParams(),
    )
    with client_for(home_dir) as client:
        result = client.record_outcome(outcome)
    # The node's own reason (lamarck.learning.why); "" when a lesson moved.
    why = result.nothing_learned
    report: dict[str, Any] = {
        "outcome_id": result.outcome_id,
        "passed": outcome.passed,
        "duplicate": result.duplicate,
        "changes": [{"lesson_id": c.lesson_id, "kind": c.kind} for c in result.changes],
    }
    if why:
        report["nothing_learned"] = why
    if derived is not None and derived.prediction_correct is not None:
        report["prediction_correct"] = derived.prediction_correct
    if as_json:
        emit_json(report)
        return
    typer.echo(f"outcome {result.outcome_id}: {'passed' if outcome.passed else 'not passed'}")
    for change in result.changes:
        typer.echo(f"  {change.kind} {change.lesson_id}")
    if why:
        typer.echo(f"  no lesson learned: {why}")


def mcp(
    transport: Annotated[
        Transport, typer.Option(help="stdio (launched by the agent) or http.")
    ] = Transport.STDIO,
    host: Annotated[str, typer.Option(help="HTTP: the address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int | None, typer.Option(help="HTTP: the port [default: 7702; 0 picks one].")
    ] = None,
    project: ProjectOption = None,
    session: Annotated[
        str, typer.Option("--session", help="The agent session [default: a new one].")
    ] = "",
    home: HomeOption = None,
) -> None:
    """Serve the Model Context Protocol against the node of a home."""
    # Imported here: the MCP SDK (starlette, uvicorn) is not needed by any other command.
    import anyio

    from lamarck.mcp.server import McpParams, build_server, serve_http
    from lamarck.mcp.tools import LamarckTools, NodeLink
    from lamarck.net import is_loopback_host
    from lamarck.token import ensure_agent_token

    home_dir = resolve_home(home)
    params = McpParams()
    tools = LamarckTools(
        NodeLink(lambda: AsyncClient.from_home(home_dir)),
        project=_project(project),
        session_id=session or f"mcp-{uuid.uuid4()}",
        clock=SystemClock(),
        rng=random.Random(),
        params=RunParams(),
    )
    server = build_server(tools)

    async def stdio() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await tools.link.close()

    async def http() -> None:
        token = None if is_loopback_host(host) else ensure_agent_token(home_dir)
        try:
            await serve_http(
                server,
                host=host,
                port=params.http_port if port is None else port,
                token=token,
                params=params,
                # stdout is free in HTTP mode: one line a wrapper (or a test) can read.
                on_ready=lambda url: typer.echo(f"lamarck mcp: serving {url}"),
            )
        finally:
            await tools.link.close()

    anyio.run(stdio if transport is Transport.STDIO else http)


def register(app: typer.Typer) -> None:
    """Add ``recall``, ``check``, ``record-outcome`` and ``mcp`` to the root app."""
    app.command("recall")(recall)
    app.command("check")(check)
    app.command("record-outcome")(record_outcome)
    app.command("mcp")(mcp)
