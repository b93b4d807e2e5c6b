"""Server interceptors: metrics, error mapping, agent auth, per-peer limits, default deadlines.

Each interceptor is a :class:`GuardInterceptor`: it wraps every handler of the server in one
async context manager (its ``guard``), for all four call shapes alike. In a
``grpc.aio.server(interceptors=[a, b, c])`` the first is the outermost wrapper, so the order
the node uses is::

    MetricsInterceptor      sees the final status of every call, refusals included
    ErrorInterceptor        turns a LamarckError from anything inside into a status
    AuthInterceptor         (agent server) the agent token, and the operator token for
                            OperatorService calls
    PeerLimitInterceptor    (peer server) per-peer concurrency and token-bucket rate
    DeadlineInterceptor     a server-side deadline when the client set none

A refusal by an inner guard is raised as a typed error (``PolicyRejected(reason=...)``), so
it reaches the client like any other error: the status from ``lamarck.node.api.status``, the
``google.rpc.Status`` (with ``ErrorInfo``) in ``grpc-status-details-bin``, and the reason in
``lamarck-reason``.
"""

from __future__ import annotations

import abc
import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
from google.protobuf.message import DecodeError

from lamarck.domain.lru import Lru
from lamarck.errors import InvalidRecord, LamarckError, PolicyRejected, Unauthenticated
from lamarck.node import metrics
from lamarck.node.api.status import REASON_METADATA_KEY, status_for, to_rich_status
from lamarck.token import presented_token, token_matches

__all__ = [
    "GRPC_DETAILS_METADATA_KEY",
    "NODE_ID_METADATA_KEY",
    "OPERATOR_CREDENTIAL_REASON",
    "OPERATOR_SERVICE_PREFIX",
    "PEER_SERVICE_PREFIX",
    "UNDECODABLE_REASON",
    "AuthInterceptor",
    "DeadlineInterceptor",
    "ErrorInterceptor",
    "GuardInterceptor",
    "MetricsInterceptor",
    "PeerIdentifier",
    "PeerLimitInterceptor",
    "TokenBucket",
    "Undecodable",
    "abort_with_error",
    "peer_key",
]

_log = logging.getLogger(__name__)

#: Where gRPC carries a serialized ``google.rpc.Status`` (the "rich" status).
GRPC_DETAILS_METADATA_KEY = "grpc-status-details-bin"
#: Optional call metadata naming the calling node: a hint for logs, never proof (limits
#: ignore it).
NODE_ID_METADATA_KEY = "lamarck-node-id"
#: Full method names of PeerService start with this; only they get per-peer limits.
PEER_SERVICE_PREFIX = "/lamarck.v1.PeerService/"

# grpc's classes are generic only in the type stubs (grpc-stubs), not at run time.
if TYPE_CHECKING:
    from lamarck.node.api.limits import PeerLimits

    Handler = grpc.RpcMethodHandler[Any, Any]
    Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[Handler]]
    Guard = Callable[[str, grpc.aio.ServicerContext[Any, Any]], AbstractAsyncContextManager[None]]
    _ServerInterceptor = grpc.aio.ServerInterceptor[Any, Any]
else:
    _ServerInterceptor = grpc.aio.ServerInterceptor


async def abort_with_error(
    context: grpc.aio.ServicerContext[Any, Any], error: LamarckError
) -> None:
    """End the call with ``error``'s status, rich details and reason (always raises)."""
    rich = to_rich_status(error)
    await context.abort(
        status_for(error),
        str(error),
        trailing_metadata=(
            (GRPC_DETAILS_METADATA_KEY, rich.SerializeToString()),
            (REASON_METADATA_KEY, error.reason),
        ),
    )


async def _call(result: Any) -> Any:
    # A handler may be sync (the generated base classes are); await only what is awaitable.
    if inspect.isawaitable(result):
        return await result
    return result


async def _stream(result: Any) -> AsyncIterator[Any]:
    # Response streams come as async generators, sync iterators, or a coroutine that writes
    # through context.write() and returns nothing.
    if inspect.isasyncgen(result):
        async for item in result:
            yield item
    elif inspect.isawaitable(result):
        await result
    elif isinstance(result, Iterable):
        for item in result:
            yield item


def _wrap(handler: Handler, method: str, guard: Guard) -> Handler:
    """The same handler with every call run inside ``guard(method, context)``."""
    h: Any = handler
    kwargs = {
        "request_deserializer": h.request_deserializer,
        "response_serializer": h.response_serializer,
    }
    if h.unary_unary is not None:
        uu = h.unary_unary

        async def unary_unary(request: Any, context: Any) -> Any:
            async with guard(method, context):
                return await _call(uu(request, context))

        return grpc.unary_unary_rpc_method_handler(unary_unary, **kwargs)
    if h.stream_unary is not None:
        su = h.stream_unary

        async def stream_unary(requests: Any, context: Any) -> Any:
            async with guard(method, context):
                return await _call(su(requests, context))

        return grpc.stream_unary_rpc_method_handler(stream_unary, **kwargs)
    if h.unary_stream is not None:
        us = h.unary_stream

        async def unary_stream(request: Any, context: Any) -> AsyncIterator[Any]:
            async with guard(method, context):
                async for item in _stream(us(request, context)):
                    yield item

        return grpc.unary_stream_rpc_method_handler(unary_stream, **kwargs)
    ss = h.stream_stream

    async def stream_stream(requests: Any, context: Any) -> AsyncIterator[Any]:
        async with guard(method, context):
            async for item in _stream(ss(requests, context)):
                yield item

    return grpc.stream_stream_rpc_method_handler(stream_stream, **kwargs)


class GuardInterceptor(_ServerInterceptor, abc.ABC):
    """An interceptor that runs each call of the methods it applies to inside ``guard``."""

    def applies_to(self, method: str) -> bool:
        """Whether calls of ``method`` (``/package.Service/Method``) are guarded."""
        return True

    @abc.abstractmethod
    def guard(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AbstractAsyncContextManager[None]:
        """The context manager one call runs in."""

    async def intercept_service(
        self,
        continuation: Continuation,
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        """Wrap the next handler when this interceptor applies to the method."""
        handler = await continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or not self.applies_to(method):
            return handler
        return _wrap(handler, method, self.guard)


class MetricsInterceptor(GuardInterceptor):
    """Counts every finished call and its wall time by method and final status code."""

    def __init__(self, server: str) -> None:
        self._server = server

    @asynccontextmanager
    async def guard(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[None]:
        """Time the call and record its final code."""
        start = time.perf_counter()
        code = "UNKNOWN"
        try:
            yield
            code = _code_name(context, "OK")
        except grpc.aio.AbortError:
            code = _code_name(context, "UNKNOWN")
            raise
        except (asyncio.CancelledError, GeneratorExit):
            # The client went away (a response stream is closed with GeneratorExit).
            code = "CANCELLED"
            raise
        finally:
            labels = {"server": self._server, "method": method, "code": code}
            metrics.RPC_REQUESTS.labels(**labels).inc()
            metrics.RPC_DURATION.labels(**labels).observe(time.perf_counter() - start)


def _code_name(context: grpc.aio.ServicerContext[Any, Any], default: str) -> str:
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else default


#: The reason every request that cannot be decoded is refused with (INVALID_ARGUMENT).
UNDECODABLE_REASON = "undecodable_request"


@dataclass(frozen=True, slots=True)
class Undecodable:
    """Stands in for a request message whose bytes did not decode (never reaches a handler)."""

    method: str
    error: str

    def refusal(self) -> InvalidRecord:
        """The typed error the call is answered with."""
        return InvalidRecord(
            f"the request to {self.method} is not a valid protobuf message ({self.error})",
            reason=UNDECODABLE_REASON,
        )


def _tolerant(deserializer: Any, method: str) -> Callable[[bytes], Any]:
    """``deserializer`` that answers :class:`Undecodable` instead of raising.

    gRPC runs the deserializer before any handler or interceptor guard; a raise there
    surfaces as UNKNOWN (or INTERNAL in a request stream) with a Python class name. Handing
    the handler a marker instead lets the error mapper answer INVALID_ARGUMENT.
    """

    def decode(raw: bytes) -> Any:
        if deserializer is None:
            return raw
        try:
            return deserializer(raw)
        except (DecodeError, ValueError, UnicodeDecodeError) as e:
            return Undecodable(method, type(e).__name__)

    return decode


async def _checked(requests: Any) -> AsyncIterator[Any]:
    """A request stream whose first message is read and checked before the handler runs.

    Later messages raise the typed refusal when the handler reaches them, so a stream's bad
    message is refused even by a handler that would refuse anything else first.
    """
    iterator = aiter(requests)
    try:
        first = await anext(iterator)
    except StopAsyncIteration:
        return _empty()
    if isinstance(first, Undecodable):
        raise first.refusal()
    return _rest(first, iterator)


async def _empty() -> AsyncIterator[Any]:
    return
    yield  # unreachable: makes this an async generator


async def _rest(first: Any, iterator: AsyncIterator[Any]) -> AsyncIterator[Any]:
    yield first
    async for request in iterator:
        if isinstance(request, Undecodable):
            raise request.refusal()
        yield request


def _refuse_undecodable(handler: Handler, method: str) -> Handler:
    """``handler`` with a tolerant deserializer and a typed refusal of undecodable input."""
    h: Any = handler
    kwargs = {
        "request_deserializer": _tolerant(h.request_deserializer, method),
        "response_serializer": h.response_serializer,
    }

    def check(request: Any) -> Any:
        if isinstance(request, Undecodable):
            raise request.refusal()
        return request

    if h.unary_unary is not None:
        uu = h.unary_unary

        async def unary_unary(request: Any, context: Any) -> Any:
            return await _call(uu(check(request), context))

        return grpc.unary_unary_rpc_method_handler(unary_unary, **kwargs)
    if h.stream_unary is not None:
        su = h.stream_unary

        async def stream_unary(requests: Any, context: Any) -> Any:
            return await _call(su(await _checked(requests), context))

        return grpc.stream_unary_rpc_method_handler(stream_unary, **kwargs)
    if h.unary_stream is not None:
        us = h.unary_stream

        async def unary_stream(request: Any, context: Any) -> AsyncIterator[Any]:
            async for item in _stream(us(check(request), context)):
                yield item

        return grpc.unary_stream_rpc_method_handler(unary_stream, **kwargs)
    ss = h.stream_stream

    async def stream_stream(requests: Any, context: Any) -> AsyncIterator[Any]:
        async for item in _stream(ss(await _checked(requests), context)):
            yield item

    return grpc.stream_stream_rpc_method_handler(stream_stream, **kwargs)


class ErrorInterceptor(GuardInterceptor):
    """Maps what escapes a handler to a status; internals never reach the client.

    ``LamarckError`` → its status with ``ErrorInfo`` details and the ``lamarck-reason``
    trailer; ``NotImplementedError`` → UNIMPLEMENTED; anything else → INTERNAL with only an
    incident id, whose traceback is logged under the same id. A request (or a message of a
    request stream) whose bytes do not decode is INVALID_ARGUMENT with the reason
    ``undecodable_request``, on every method of every service the server holds.
    """

    async def intercept_service(
        self,
        continuation: Continuation,
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        """Decode tolerantly, then guard the call (the refusal raises inside the guard)."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method: str = handler_call_details.method
        return _wrap(_refuse_undecodable(handler, method), method, self.guard)

    @asynccontextmanager
    async def guard(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[None]:
        """Translate exceptions raised inside the call."""
        try:
            yield
        except (grpc.aio.AbortError, asyncio.CancelledError):
            raise  # already a status (or the client left): nothing to translate
        except LamarckError as e:
            _log.info("rpc refused", extra={"method": method, "reason": e.reason, "error": str(e)})
            await abort_with_error(context, e)
        except NotImplementedError:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not implemented")
        except Exception:
            incident = uuid.uuid4().hex[:12]
            _log.exception("rpc failed", extra={"method": method, "incident": incident})
            await context.abort(
                grpc.StatusCode.INTERNAL,
                f"internal error (incident {incident})",
                trailing_metadata=((REASON_METADATA_KEY, "internal"),),
            )


#: Full method names of OperatorService start with this: they need the operator token.
OPERATOR_SERVICE_PREFIX = "/lamarck.v1.OperatorService/"
#: The reason an operator call without the operator's credential is refused with
#: (PERMISSION_DENIED: holding the agent token, or reaching the port, grants no operator power).
OPERATOR_CREDENTIAL_REASON = "operator_credential_required"


class AuthInterceptor(GuardInterceptor):
    """The agent server's two credentials: the agent token and the operator token.

    ``OperatorService`` calls must carry ``authorization: Bearer <operator token>`` wherever
    the server listens, loopback included; anything else (no token, the agent token) is
    refused PERMISSION_DENIED with the reason ``operator_credential_required``. Every other
    call needs the agent token when one is set (``agent_token``: the agent API listens beyond
    loopback), else UNAUTHENTICATED; the operator token is not an agent's credential.
    """

    def __init__(self, *, operator_token: str, agent_token: str | None = None) -> None:
        if not operator_token or agent_token == "":
            raise ValueError("an empty token would let anyone in")
        if agent_token is not None and token_matches(agent_token, operator_token):
            raise ValueError("the operator token must differ from the agent token")
        self._agent = agent_token
        self._operator = operator_token

    @asynccontextmanager
    async def guard(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[None]:
        """Check the credential the method needs before the handler runs."""
        metadata: Any = context.invocation_metadata()
        given = presented_token(metadata)
        if method.startswith(OPERATOR_SERVICE_PREFIX):
            if not token_matches(self._operator, given):
                raise Unauthenticated(
                    f"{method} is an operator action: it needs the operator token "
                    "(<home>/operator.token), never the agent's",
                    reason=OPERATOR_CREDENTIAL_REASON,
                )
        elif self._agent is not None and not token_matches(self._agent, given):
            raise PolicyRejected(
                "this agent API requires a bearer token (see <home>/agent.token)",
                reason="unauthenticated",
            )
        yield


#: Maps a call's metadata to the node id its peer token already proved (a cache lookup, no
#: signature check), or ``None`` when the caller has not proven who it is.
PeerIdentifier = Callable[[Any], "str | None"]


def peer_key(
    context: grpc.aio.ServicerContext[Any, Any], identify: PeerIdentifier | None = None
) -> str:
    """Who a call is from, for limits: the authenticated peer, else the caller's connection.

    The ``lamarck-node-id`` metadata is a claim anyone can vary per call, so it never picks
    a budget (random values would get a fresh burst each). A caller whose peer token this
    node has already verified is limited as that node, whatever connection it uses; anyone
    else by the address it connects from (``context.peer()`` without its port: a caller that
    opens a new connection for every call must not get a fresh burst each time), decided
    before any work.
    """
    if identify is not None:
        node_id = identify(context.invocation_metadata())
        if node_id:
            return f"node|{node_id}"
    return f"host|{caller_host(context.peer() or 'unknown')}"


def caller_host(peer: str) -> str:
    """The address part of a gRPC peer string (``ipv4:1.2.3.4:5678`` → ``ipv4:1.2.3.4``,
    ``ipv6:[::1]:5678`` → ``ipv6:[::1]``); unix sockets and unknown forms are kept whole."""
    kind, sep, rest = peer.partition(":")
    if not sep or kind not in ("ipv4", "ipv6"):
        return peer
    host, colon, port = rest.rpartition(":")
    return f"{kind}:{host}" if colon and port.isdigit() else peer


@dataclass
class TokenBucket:
    """``rate_per_s`` tokens a second up to ``burst``; a call spends ``cost`` (default one)."""

    rate_per_s: float
    burst: float
    tokens: float
    updated: float

    def take(self, now: float, cost: float = 1.0) -> bool:
        """Spend ``cost`` tokens if that many are available at ``now`` (seconds, monotonic)."""
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(self.burst, self.tokens + elapsed * self.rate_per_s)
        self.updated = now
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False


class PeerLimitInterceptor(GuardInterceptor):
    """Per-peer concurrency and token-bucket rate limits on PeerService (RESOURCE_EXHAUSTED)."""

    def __init__(
        self,
        *,
        max_concurrent: int,
        rate_per_s: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_peers: int = 10_000,
        identify: PeerIdentifier | None = None,
    ) -> None:
        self._identify = identify
        self._max_concurrent = max_concurrent
        self._rate = rate_per_s
        self._burst = float(burst)
        self._clock = clock
        # Bounded LRU: a flood of distinct addresses must not grow memory without end.
        self._buckets: Lru[str, TokenBucket] = Lru(max_peers)
        self._in_flight: dict[str, int] = {}

    @classmethod
    def from_params(
        cls,
        limits: PeerLimits,
        *,
        identify: PeerIdentifier | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> PeerLimitInterceptor:
        """The interceptor for ``limits``; ``identify`` names callers already authenticated."""
        return cls(
            max_concurrent=limits.max_concurrent,
            rate_per_s=limits.rate_per_s,
            burst=limits.burst,
            clock=clock,
            max_peers=limits.max_peers,
            identify=identify,
        )

    def applies_to(self, method: str) -> bool:
        """Only PeerService methods; health and reflection stay unlimited for probes."""
        return method.startswith(PEER_SERVICE_PREFIX)

    def _bucket(self, key: str, now: float) -> TokenBucket:
        return self._buckets.get_or_put(
            key, lambda: TokenBucket(self._rate, self._burst, self._burst, now)
        )

    @asynccontextmanager
    async def guard(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[None]:
        """Admit the call or refuse it with ``rate_limited`` / ``too_many_concurrent``."""
        key = peer_key(context, self._identify)
        # Concurrency first: a refused call must not also spend a rate token.
        if self._in_flight.get(key, 0) >= self._max_concurrent:
            metrics.RATE_LIMITED.labels(reason="too_many_concurrent").inc()
            raise PolicyRejected(
                f"more than {self._max_concurrent} concurrent calls from this peer",
                reason="too_many_concurrent",
            )
        now = self._clock()
        if not self._bucket(key, now).take(now):
            metrics.RATE_LIMITED.labels(reason="rate_limited").inc()
            raise PolicyRejected(
                f"rate limit of {self._rate:g}/s (burst {self._burst:g}) exceeded; retry later",
                reason="rate_limited",
            )
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            yield
        finally:
            left = self._in_flight[key] - 1
            if left:
                self._in_flight[key] = left
            else:
                del self._in_flight[key]


class DeadlineInterceptor(GuardInterceptor):
    """Gives unary-response calls without a client deadline a server-side one.

    Response streams (Export, Sync) are left alone: their length is the client's choice, and
    a cancellation landing while the stream waits on the network would not be attributable.
    """

    def __init__(self, default_s: float) -> None:
        self._default_s = default_s

    async def intercept_service(
        self,
        continuation: Continuation,
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        """Wrap unary-response handlers only."""
        handler = await continuation(handler_call_details)
        if handler is None or handler.response_streaming:
            return handler
        method: str = handler_call_details.method
        return _wrap(handler, method, self.guard)

    @asynccontextmanager
    async def guard(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[None]:
        """Bound the call by the default deadline if the client gave none."""
        if context.time_remaining() is not None:
            yield
            return
        bound = asyncio.timeout(self._default_s)
        try:
            async with bound:
                yield
        except TimeoutError:
            if not bound.expired():
                raise  # the handler's own timeout, not ours: the error mapper reports it
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"server deadline of {self._default_s:g}s exceeded",
                trailing_metadata=((REASON_METADATA_KEY, "deadline_exceeded"),),
            )
