"""The blocking SDK clients are the async clients' own calls run over a blocking channel.

A small AgentService / OperatorService answers over loopback (a real ``grpc.aio`` server with
the node's ``ErrorInterceptor``), served on its own event loop in its own thread so that a
blocking call can be made from anywhere: a plain thread, the main thread, or the thread of a
running loop. Nothing of gRPC is mocked.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from lamarck.client import (
    AsyncClient,
    AsyncServiceClient,
    Client,
    ImportPacing,
    RecallResult,
    ServiceClient,
    _run_blocking,
)
from lamarck.errors import LamarckError, NotFound
from lamarck.node.api.interceptors import ErrorInterceptor
from lamarck.operator import AsyncOperatorClient, OperatorClient
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    lessons_pb2,
    operator_pb2,
    operator_pb2_grpc,
    records_pb2,
)

WHEN = format_ts(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
QUARANTINE_IDS = [f"q{i}" for i in range(5)]
PAGE = 2
BUNDLE = b"".join(b'{"line": %d, "pad": "%s"}\n' % (i, b"x" * 900) for i in range(150))


class Agent(agent_pb2_grpc.AgentServiceServicer):
    """Answers from canned values and remembers what each call carried."""

    def __init__(self) -> None:
        self.authorization: list[str] = []
        self.time_left: list[float] = []
        self.import_chunks: list[int] = []
        self.import_label = ""

    def _saw(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        metadata = dict(context.invocation_metadata() or ())
        self.authorization.append(str(metadata.get("authorization", "")))
        remaining = context.time_remaining()
        if remaining is not None:
            self.time_left.append(remaining)

    async def Recall(
        self, request: agent_pb2.RecallRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> agent_pb2.RecallResponse:
        self._saw(context)
        view = lessons_pb2.LessonView(
            id="l1",
            version=2,
            content=f"for {request.task}: run the tests first",
            confidence=0.75,
            status=lessons_pb2.LESSON_STATUS_ACTIVE,
            tags=["ci"],
            created_at=WHEN,
            updated_at=WHEN,
            record_json=b'{"id": "l1"}',
        )
        return agent_pb2.RecallResponse(
            lessons=[agent_pb2.RecalledLesson(lesson=view, score=0.5)],
            prompt_section=f"Lessons:\n- limit {request.limit}",
        )

    async def History(
        self, request: agent_pb2.HistoryRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> agent_pb2.HistoryResponse:
        raise NotFound(f"no lesson {request.lesson_id}", reason="lesson_not_found")

    async def Export(
        self, request: agent_pb2.ExportRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[agent_pb2.ExportResponse]:
        for part in (b'{"a": 1}\n', b'{"b": 2}\n', request.filter.scope.encode() + b"\n"):
            yield agent_pb2.ExportResponse(jsonl=part)

    async def Import(
        self,
        requests: AsyncIterator[agent_pb2.ImportRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> agent_pb2.ImportResponse:
        data = b""
        async for request in requests:
            if request.HasField("options"):
                self.import_label = request.options.source_label
            else:
                self.import_chunks.append(len(request.jsonl))
                data += request.jsonl
        lines = data.splitlines()
        return agent_pb2.ImportResponse(
            acks=[
                records_pb2.RecordAck(
                    index=i, record_hash=str(len(line)), status=records_pb2.ACK_STATUS_ACCEPTED
                )
                for i, line in enumerate(lines)
            ]
        )


class Operator(operator_pb2_grpc.OperatorServiceServicer):
    """A quarantine of five pending rows served two to a page."""

    async def ListQuarantine(
        self,
        request: operator_pb2.ListQuarantineRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.ListQuarantineResponse:
        start = int(request.page_token or 0)
        end = start + PAGE
        entries = [
            operator_pb2.QuarantineEntry(
                id=qid, received_at=WHEN, state=operator_pb2.QUARANTINE_STATE_PENDING
            )
            for qid in QUARANTINE_IDS[start:end]
        ]
        more = str(end) if end < len(QUARANTINE_IDS) else ""
        return operator_pb2.ListQuarantineResponse(entries=entries, next_page_token=more)


class Served:
    """The two services on one port, served by an event loop running in its own thread."""

    def __init__(self) -> None:
        self.agent = Agent()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server, port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        self.address = f"127.0.0.1:{port}"

    async def _start(self) -> tuple[grpc.aio.Server, int]:
        server = grpc.aio.server(interceptors=[ErrorInterceptor()])
        agent_pb2_grpc.add_AgentServiceServicer_to_server(self.agent, server)
        operator_pb2_grpc.add_OperatorServiceServicer_to_server(Operator(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(None), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served()
    try:
        yield s
    finally:
        s.stop()


def _public_coroutines(cls: type[AsyncServiceClient]) -> list[str]:
    return sorted(
        name
        for name, value in inspect.getmembers(cls, inspect.iscoroutinefunction)
        if not name.startswith("_") and name != "close"
    )


@pytest.mark.parametrize(
    ("async_type", "blocking_type"),
    [(AsyncClient, Client), (AsyncOperatorClient, OperatorClient)],
)
def test_every_async_call_has_a_blocking_twin_with_its_signature_and_docstring(
    async_type: type[AsyncServiceClient], blocking_type: type[ServiceClient[Any]]
) -> None:
    names = _public_coroutines(async_type)
    assert names  # the comparison below must have something to compare
    for name in names:
        twin = getattr(blocking_type, name)
        original = getattr(async_type, name)
        assert not inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(original), name
        assert twin.__doc__ == original.__doc__ and twin.__doc__, name
        assert twin.__qualname__ == f"{blocking_type.__name__}.{name}"
    assert blocking_type.async_type is async_type


def test_blocking_client_runs_in_a_thread_without_an_event_loop(served: Served) -> None:
    results: list[RecallResult] = []

    def work() -> None:
        # A fresh thread has no event loop; the blocking client must not need one.
        with Client(served.address, timeout=10.0) as client:
            results.append(client.recall("fix the build", session_id="s1", limit=3))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(30)

    [result] = results
    assert result.section == "Lessons:\n- limit 3"
    assert result.lessons[0].content == "for fix the build: run the tests first"
    assert result.lessons[0].status == "active" and result.scores == (0.5,)


# The whole bundle in one Import call, to see its 64 KiB messages (long bundles are paced
# over several calls: tests/unit/node/test_import_pacing.py).
ONE_CALL = ImportPacing(first_lines=10_000, max_lines=10_000)


async def test_blocking_and_async_clients_give_equal_typed_results(served: Served) -> None:
    async with AsyncClient(served.address, timeout=10.0) as client:
        via_async = (
            await client.recall("write docs", limit=2),
            await client.export_bundle(scope="global"),
            await client.import_bundle(BUNDLE, source_label="async", pacing=ONE_CALL),
        )
    with Client(served.address, timeout=10.0) as client:
        # Inside this coroutine: the loop is blocked for each call, the node answers from
        # its own thread.
        via_blocking = (
            client.recall("write docs", limit=2),
            client.export_bundle(scope="global"),
            client.import_bundle(BUNDLE, source_label="blocking", pacing=ONE_CALL),
        )
    assert via_blocking == via_async
    assert via_blocking[1] == b'{"a": 1}\n{"b": 2}\nglobal\n'
    assert via_blocking[2].accepted == 150
    # The bundle went in 64 KiB chunks both times.
    assert len(BUNDLE) > 2 * 65536
    assert served.agent.import_chunks == [65536, 65536, len(BUNDLE) - 2 * 65536] * 2
    assert served.agent.import_label == "blocking"


async def test_blocking_call_in_the_thread_of_the_loop_serving_the_node_hits_its_deadline() -> None:
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    agent_pb2_grpc.add_AgentServiceServicer_to_server(Agent(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        # The loop that would answer is the one this call blocks: the call cannot be
        # answered, and ends at its deadline instead of hanging.
        with (
            Client(f"127.0.0.1:{port}", timeout=0.3) as client,
            pytest.raises(LamarckError) as info,
        ):
            client.recall("anything")
    finally:
        await server.stop(None)
    assert info.value.reason == "deadline_exceeded"


async def test_both_clients_raise_the_same_typed_error(served: Served) -> None:
    async with AsyncClient(served.address, timeout=10.0) as client:
        with pytest.raises(NotFound) as from_async:
            await client.history("l9")
    with Client(served.address, timeout=10.0) as other, pytest.raises(NotFound) as from_blocking:
        other.history("l9")
    assert from_blocking.value.reason == from_async.value.reason == "lesson_not_found"
    assert str(from_blocking.value) == str(from_async.value)


def test_blocking_client_to_nothing_listening_is_a_lamarck_error(served: Served) -> None:
    address = served.address
    served.stop()
    with Client(address, timeout=2.0) as client, pytest.raises(LamarckError) as info:
        client.list_lessons()
    assert info.value.reason in ("unavailable", "deadline_exceeded")
    # The fixture stops it again: make that a no-op.
    served.stop = lambda: None  # type: ignore[method-assign]


def test_blocking_client_from_home_sends_the_agent_token_and_its_deadline(
    served: Served, tmp_path: Path
) -> None:
    token_file = tmp_path / "agent.token"
    token_file.write_text("s3cret\n", encoding="ascii")
    port = served.address.rsplit(":", 1)[1]
    node_json = {"agent_listen": f"0.0.0.0:{port}", "agent_token_file": str(token_file)}
    (tmp_path / "node.json").write_text(json.dumps(node_json), encoding="utf-8")

    with Client.from_home(tmp_path) as client:
        assert client.address == served.address
        client.timeout = 5.0
        client.recall("anything")
    assert served.agent.authorization == ["Bearer s3cret"]
    [left] = served.agent.time_left
    # The new 5 s deadline (the server's reckoning may run a little over), not the 30 s default.
    assert 0.0 < left < 10.0


def test_blocking_operator_client_follows_the_pages(served: Served) -> None:
    with OperatorClient(served.address, timeout=10.0) as op:
        listed = op.list_quarantine()
        iterated = list(op.iter_quarantine())
        first = op.list_page()
    assert [e.id for e in listed] == QUARANTINE_IDS
    assert [e.id for e in iterated] == QUARANTINE_IDS
    assert [e.id for e in first.entries] == QUARANTINE_IDS[:PAGE] and first.next_page_token


def test_a_blocking_call_that_would_suspend_is_refused() -> None:
    async def waits() -> int:
        await asyncio.sleep(0)  # yields to a loop the blocking client does not have
        return 1

    with pytest.raises(LamarckError) as info:
        _run_blocking(waits())
    assert info.value.reason == "blocking_call_suspended"
