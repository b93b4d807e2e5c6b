"""``lamarck.client``: the Python SDK for a node's AgentService, with typed results.

An agent loop writes::

    from lamarck.client import Client

    with Client.from_home("~/.lamarck") as client:
        recalled = client.recall("fix the failing test", context={"domain": "python"},
                                 session_id=session)
        prompt = recalled.section + "\\n\\n" + task
        ...
        client.record_outcome(outcome)            # a lamarck.proto.outcome.Outcome or a dict

``AsyncClient`` is the same API for asyncio (``await client.recall(...)``). Each call is written
once, in ``AsyncClient``; ``Client`` runs that same code over a blocking channel, needs no event
loop and blocks only its caller's thread. Results are frozen dataclasses, never protobufs; enums
are lower-case strings (``"active"``, ``"confirmed"``).

Failures are lamarck's typed errors, rebuilt on this side from the ``google.rpc.ErrorInfo``
the node attaches (falling back to the ``lamarck-reason`` trailer and the status code), so
``except SecretDetected`` works here as it does inside the node. A call that never reached a
node (nothing listening, deadline) raises ``LamarckError`` with reason ``unavailable`` or
``deadline_exceeded``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import (
    Any,
    ClassVar,
    Concatenate,
    Generic,
    ParamSpec,
    Self,
    TypeVar,
    cast,
)

from lamarck.errors import LamarckError
from lamarck.proto.outcome import Outcome
from lamarck.proto.v1 import agent_pb2, agent_pb2_grpc, lessons_pb2
from lamarck.results import (
    DEFAULT_PACING,
    EVIDENCE_CLASSES,
    CheckResult,
    Conflict,
    Evidence,
    HistoryEntry,
    ImportAck,
    ImportPacing,
    ImportResult,
    Lesson,
    LessonChange,
    LessonPage,
    OutcomeResult,
    RecallResult,
    RememberResult,
    Situation,
    SituationFields,
)
from lamarck.translate import (
    conflict_from_wire,
    edit_request,
    enum_value,
    error_from_rpc,
    history_from_wire,
    import_requests,
    import_result_from_wire,
    lesson_filter,
    lesson_from_wire,
    memory_context,
    outcome_bytes,
    outcome_result_from_wire,
)
from lamarck.transport import (
    DEFAULT_TIMEOUT_S,
    TOKEN_FILE,
    AioTransport,
    BlockingTransport,
    Transport,
    call_metadata,
    dial_address,
    node_address,
    token_for,
)

__all__ = [
    "DEFAULT_PACING",
    "DEFAULT_TIMEOUT_S",
    "EVIDENCE_CLASSES",
    "AsyncClient",
    "AsyncServiceClient",
    "CheckResult",
    "Client",
    "Conflict",
    "Evidence",
    "HistoryEntry",
    "ImportAck",
    "ImportPacing",
    "ImportResult",
    "Lesson",
    "LessonChange",
    "LessonPage",
    "OutcomeResult",
    "RecallResult",
    "RememberResult",
    "ServiceClient",
    "Situation",
    "SituationFields",
    "blocking",
    "dial_address",
    "error_from_rpc",
    "node_address",
]

_A = TypeVar("_A", bound="AsyncServiceClient")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _run_blocking(call: Coroutine[Any, Any, _R]) -> _R:
    """Run a coroutine of an async client over the blocking transport to its end, here.

    It never suspends, so one ``send`` runs it whole on the caller's thread: no event loop is
    needed, created or touched, and a running loop in this thread is only blocked for the call.
    A coroutine that does suspend (it awaited something else than its transport) is closed
    and refused with ``LamarckError(reason="blocking_call_suspended")``.
    """
    try:
        call.send(None)
    except StopIteration as done:
        value: _R = done.value
        return value
    call.close()
    raise LamarckError(
        "a blocking client call awaited something other than its transport",
        reason="blocking_call_suspended",
    )


def blocking(
    method: Callable[Concatenate[_A, _P], Coroutine[Any, Any, _R]],
) -> Callable[Concatenate[ServiceClient[_A], _P], _R]:
    """The blocking twin of an async client's ``method``: same name, signature and docstring.

    In a :class:`ServiceClient` subclass body, ``recall = blocking(AsyncClient.recall)`` makes
    ``client.recall(...)`` run ``AsyncClient.recall``'s own code over a blocking channel.
    """

    @functools.wraps(method)
    def call(self: ServiceClient[_A], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return _run_blocking(method(self._async, *args, **kwargs))

    return call


# -- the clients ------------------------------------------------------------------------------


class AsyncServiceClient:
    """The asyncio connection every lamarck SDK client shares: channel, token, typed errors.

    Subclasses name their generated stub class in ``stub_type`` and write each call once, as
    a coroutine over ``_unary`` / ``_unary_stream`` / ``_stream_unary``; the blocking client
    (:class:`ServiceClient`) runs those same coroutines.
    """

    stub_type: ClassVar[type[Any]]
    #: The token file in a node's home this client presents (the operator's client its own).
    token_file: ClassVar[str] = TOKEN_FILE
    #: The ``node.json`` entry naming that file.
    token_field: ClassVar[str] = "agent_token_file"

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        home: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Connect to ``address`` (``host:port`` or ``unix:path``).

        ``token`` is the bearer token; without one, ``<home>/agent.token`` (the operator
        client: ``<home>/operator.token``) is used if ``home`` is given and the file exists.
        """
        token = token_for(token, home, self.token_file)
        self._attach(address, token, timeout, AioTransport, options)

    def _attach(
        self,
        address: str,
        token: str | None,
        timeout: float,
        transport: type[AioTransport] | type[BlockingTransport],
        options: Sequence[tuple[str, Any]],
    ) -> None:
        self.address = address
        self.timeout = timeout
        self._metadata = call_metadata(token)
        self._transport: Transport = transport(address, options, self.stub_type)

    @classmethod
    def _blocking(
        cls,
        address: str,
        token: str | None,
        timeout: float,
        options: Sequence[tuple[str, Any]],
    ) -> Self:
        """The same client over a blocking channel (the engine of a :class:`ServiceClient`)."""
        client = cls.__new__(cls)
        client._attach(address, token, timeout, BlockingTransport, options)
        return client

    @classmethod
    def from_home(cls, home: str | Path, **kwargs: Any) -> Self:
        """A client for the node running on ``home`` (its ``node.json``)."""
        address, token = node_address(home, cls.token_field)
        return cls(address, token=token, **kwargs)

    async def close(self) -> None:
        """Close the channel."""
        await self._transport.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _unary(self, rpc: str, request: Any) -> Any:
        return await self._transport.unary(rpc, request, self.timeout, self._metadata)

    async def _unary_stream(self, rpc: str, request: Any) -> list[Any]:
        return await self._transport.unary_stream(rpc, request, self.timeout, self._metadata)

    async def _stream_unary(self, rpc: str, requests: Sequence[Any]) -> Any:
        return await self._transport.stream_unary(rpc, requests, self.timeout, self._metadata)


class ServiceClient(Generic[_A]):
    """The blocking twin of :class:`AsyncServiceClient`: its calls are the async client's.

    Subclasses name the async client in ``async_type`` and list its calls as
    ``name = blocking(AsyncX.name)``. A call blocks the calling thread until the node answers
    (or the deadline passes) and needs no event loop. Called from the thread of a running
    event loop it works too, but that loop is stalled for the call: a node served by that same
    loop cannot answer, and the call ends with ``deadline_exceeded`` (use the async client
    there, or ``asyncio.to_thread``).
    """

    async_type: ClassVar[type[AsyncServiceClient]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A twin made by blocking() carries the async method's qualified name; name it for
        # the class it lives in, so reprs and tracebacks say Client.recall.
        for name, value in vars(cls).items():
            if callable(value) and inspect.iscoroutinefunction(getattr(value, "__wrapped__", None)):
                value.__qualname__ = f"{cls.__qualname__}.{name}"

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        home: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Connect to ``address`` (see :class:`AsyncServiceClient`)."""
        token = token_for(token, home, self.async_type.token_file)
        engine = self.async_type._blocking(address, token, timeout, options)
        # async_type is a ClassVar, which cannot name the type variable.
        self._async: _A = cast(_A, engine)

    @property
    def address(self) -> str:
        """The address dialled."""
        return self._async.address

    @property
    def timeout(self) -> float:
        """The per-call deadline in seconds."""
        return self._async.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._async.timeout = value

    @classmethod
    def from_home(cls, home: str | Path, **kwargs: Any) -> Self:
        """A client for the node running on ``home`` (its ``node.json``)."""
        address, token = node_address(home, cls.async_type.token_field)
        return cls(address, token=token, **kwargs)

    def close(self) -> None:
        """Close the channel."""
        _run_blocking(self._async.close())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient(AsyncServiceClient):
    """AgentService for asyncio; use as ``async with AsyncClient(address) as client``."""

    stub_type = agent_pb2_grpc.AgentServiceStub

    async def record_outcome(
        self, outcome: Outcome | Mapping[str, Any] | bytes | str
    ) -> OutcomeResult:
        """Record one turn's outcome (an ``Outcome``, its dict, or its JSON)."""
        request = agent_pb2.RecordOutcomeRequest(outcome_json=outcome_bytes(outcome))
        return outcome_result_from_wire(await self._unary("RecordOutcome", request))

    async def recall(
        self,
        task: str,
        context: Mapping[str, Any] | None = None,
        *,
        session_id: str = "",
        turn_index: int = 0,
        project_digest: str = "",
        limit: int = 0,
    ) -> RecallResult:
        """The lessons for ``task`` and the "Lessons:" section; in play for ``session_id``."""
        request = agent_pb2.RecallRequest(
            task=task,
            context=memory_context(context),
            session_id=session_id,
            turn_index=turn_index,
            project_digest=project_digest,
            limit=limit,
        )
        r = await self._unary("Recall", request)
        return RecallResult(
            tuple(lesson_from_wire(x.lesson) for x in r.lessons),
            r.prompt_section,
            tuple(x.score for x in r.lessons),
            tuple(lesson_from_wire(x.lesson) for x in r.hints),
            tuple(conflict_from_wire(c) for c in r.conflicts),
            r.indexing,
        )

    async def check_operation(
        self,
        operation: str,
        *,
        session_id: str = "",
        turn_index: int = 0,
        project_digest: str = "",
        tool: str = "",
        subject: str = "",
    ) -> CheckResult:
        """What is on file for ``operation`` (and ``tool`` on ``subject``) before it runs."""
        request = agent_pb2.CheckOperationRequest(
            operation=operation,
            session_id=session_id,
            turn_index=turn_index,
            project_digest=project_digest,
            tool=tool,
            subject=subject,
        )
        r = await self._unary("CheckOperation", request)
        return CheckResult(
            r.preamble,
            r.probe,
            r.unblock,
            tuple(r.lesson_ids),
            tuple(lesson_from_wire(x) for x in r.lessons),
            tuple(conflict_from_wire(c) for c in r.conflicts),
        )

    async def remember(
        self,
        content: str,
        operation: str = "",
        *,
        scope: str = "",
        project_digest: str = "",
        context: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        session_id: str = "",
    ) -> RememberResult:
        """Store a model's claim (status ``claimed``): kept out of recall and sharing until an
        outcome confirms it. ``operation`` may be empty (the node keys it ``note:<first words>``).
        To record what just happened, call :meth:`record_outcome` instead."""
        request = agent_pb2.RememberRequest(
            content=content,
            operation=operation,
            scope=scope,
            project_digest=project_digest,
            context=memory_context(context),
            tags=list(tags),
            session_id=session_id,
        )
        r = await self._unary("Remember", request)
        return RememberResult(lesson_from_wire(r.lesson), r.created, r.note)

    async def record_situation(
        self,
        situation: SituationFields,
        *,
        scope: str = "",
        project_digest: str = "",
        evidence: Sequence[str] = (),
    ) -> Lesson:
        """Remember a declared blocker as a situation lesson (the same one is refreshed).

        Inferred situations and transient kinds are refused (``InvalidRecord``).
        """
        request = agent_pb2.RecordSituationRequest(
            situation=lessons_pb2.Situation(
                tool=situation.tool,
                subject=situation.subject,
                kind=situation.kind,
                interactive=situation.interactive,
                env_fingerprint=situation.env_fingerprint,
                unblock=situation.unblock or "",
                probe=situation.probe or "",
                source=enum_value(
                    lessons_pb2.SituationSource, str(situation.source), "SITUATION_SOURCE_"
                ),
            ),
            scope=scope,
            project_digest=project_digest,
            evidence_outcome_ids=list(evidence),
        )
        return lesson_from_wire((await self._unary("RecordSituation", request)).lesson)

    async def get_lesson(self, lesson_id: str) -> Lesson:
        """One lesson as it stands now (any status); ``NotFound`` for an unknown id."""
        request = agent_pb2.GetLessonRequest(lesson_id=lesson_id)
        return lesson_from_wire((await self._unary("GetLesson", request)).lesson)

    async def report_use(
        self,
        session_id: str,
        lesson_ids: Sequence[str],
        *,
        applied: bool = True,
        turn_index: int = 0,
        note: str = "",
    ) -> int:
        """Say which lessons the agent applied (or dismissed); returns how many were recorded."""
        use = agent_pb2.USE_KIND_APPLIED if applied else agent_pb2.USE_KIND_DISMISSED
        request = agent_pb2.ReportUseRequest(
            session_id=session_id,
            turn_index=turn_index,
            lesson_ids=list(lesson_ids),
            use=use,
            note=note,
        )
        r = await self._unary("ReportUse", request)
        recorded: int = r.recorded
        return recorded

    async def edit(
        self,
        lesson_id: str,
        content: str,
        *,
        expected_version: int = 0,
        reason: str = "",
    ) -> Lesson:
        """Replace a lesson's text; returns the new version."""
        request = edit_request(lesson_id, content, expected_version, reason)
        return lesson_from_wire((await self._unary("Edit", request)).lesson)

    async def set_access(
        self, lesson_id: str, access_level: str, recipients: Sequence[str] = ()
    ) -> Lesson:
        """Say who a lesson may be shared with: public, trusted, or private to ``recipients``."""
        request = edit_request(lesson_id, None, 0, "", access_level, recipients)
        return lesson_from_wire((await self._unary("Edit", request)).lesson)

    async def retire(
        self, lesson_id: str, *, reason: str = "", expected_version: int = 0
    ) -> Lesson:
        """Withdraw a lesson (kept as history)."""
        request = agent_pb2.RetireRequest(
            lesson_id=lesson_id, reason=reason, expected_version=expected_version
        )
        return lesson_from_wire((await self._unary("Retire", request)).lesson)

    async def history(self, lesson_id: str) -> list[HistoryEntry]:
        """Every event of the lesson's chain, oldest first."""
        request = agent_pb2.HistoryRequest(lesson_id=lesson_id)
        return history_from_wire(await self._unary("History", request))

    async def list_lessons(
        self,
        *,
        category: str | None = None,
        scope: str | None = None,
        statuses: Sequence[str] | str | None = None,
        min_confidence: float | None = None,
        origin: str | None = None,
        operation: str | None = None,
        page_size: int = 0,
        page_token: str = "",
    ) -> LessonPage:
        """One page of lessons matching the filter, highest confidence first."""
        request = agent_pb2.ListRequest(
            filter=lesson_filter(
                category=category,
                scope=scope,
                statuses=statuses,
                min_confidence=min_confidence,
                origin=origin,
                operation=operation,
            ),
            page_size=page_size,
            page_token=page_token,
        )
        r = await self._unary("List", request)
        return LessonPage(tuple(lesson_from_wire(v) for v in r.lessons), r.next_page_token)

    async def export_bundle(
        self,
        *,
        category: str | None = None,
        scope: str | None = None,
        statuses: Sequence[str] | str | None = None,
        min_confidence: float | None = None,
        origin: str | None = None,
        operation: str | None = None,
    ) -> bytes:
        """The bundle (JSON Lines of signed records) of the lessons matching the filter."""
        request = agent_pb2.ExportRequest(
            filter=lesson_filter(
                category=category,
                scope=scope,
                statuses=statuses,
                min_confidence=min_confidence,
                origin=origin,
                operation=operation,
            )
        )
        return b"".join(part.jsonl for part in await self._unary_stream("Export", request))

    async def import_bundle(
        self,
        bundle: bytes | str,
        *,
        dry_run: bool = False,
        source_label: str = "",
        pacing: ImportPacing = DEFAULT_PACING,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Feed a bundle to the node's import checks; one ack per record line.

        A long bundle goes as several Import calls of whole lines, each within the client's
        deadline: the first carries ``pacing.first_lines`` lines, the next ones as many as the
        measured rate fits in ``pacing.budget_share`` of the deadline. ``progress(done,
        total)`` is told after each call (lines acknowledged so far, lines in the bundle). A
        call that fails raises; the lines acknowledged before it are stored, and importing
        the bundle again answers them as duplicates.
        """
        data = bundle.encode("utf-8") if isinstance(bundle, str) else bundle
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()  # the bundle's final newline ends the last line, it is not a line
        acks: list[ImportAck] = []
        done, size = 0, pacing.first_lines
        while done < len(lines) or not lines:
            part = lines[done : done + size]
            started = time.monotonic()
            requests = import_requests(b"\n".join(part) + b"\n", dry_run, source_label)
            result = import_result_from_wire(await self._stream_unary("Import", requests))
            elapsed = max(time.monotonic() - started, 1e-3)
            acks.extend(dataclasses.replace(a, index=a.index + done) for a in result.acks)
            done += len(part)
            if progress is not None:
                progress(done, len(lines))
            if not lines:
                break
            fits = int(len(part) / elapsed * self.timeout * pacing.budget_share)
            size = max(pacing.min_lines, min(pacing.max_lines, fits))
        return ImportResult(tuple(acks))


class Client(ServiceClient[AsyncClient]):
    """AgentService, blocking; use as ``with Client(address) as client`` (same API).

    Every call is :class:`AsyncClient`'s, run over a blocking channel (see
    :class:`ServiceClient` for threads and event loops).
    """

    async_type = AsyncClient

    record_outcome = blocking(AsyncClient.record_outcome)
    recall = blocking(AsyncClient.recall)
    check_operation = blocking(AsyncClient.check_operation)
    remember = blocking(AsyncClient.remember)
    record_situation = blocking(AsyncClient.record_situation)
    get_lesson = blocking(AsyncClient.get_lesson)
    report_use = blocking(AsyncClient.report_use)
    edit = blocking(AsyncClient.edit)
    set_access = blocking(AsyncClient.set_access)
    retire = blocking(AsyncClient.retire)
    history = blocking(AsyncClient.history)
    list_lessons = blocking(AsyncClient.list_lessons)
    export_bundle = blocking(AsyncClient.export_bundle)
    import_bundle = blocking(AsyncClient.import_bundle)
