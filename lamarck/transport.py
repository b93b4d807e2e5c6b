"""Where a node listens and how the SDK reaches it: addresses and homes, tokens, the asyncio and
blocking channels."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from lamarck.errors import ConfigError
from lamarck.translate import error_from_rpc

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "NODE_FILE",
    "TOKEN_FILE",
    "AioTransport",
    "BlockingTransport",
    "Transport",
    "call_metadata",
    "dial_address",
    "node_address",
    "token_for",
]

#: Per-call deadline unless the caller gives another.
DEFAULT_TIMEOUT_S = 30.0
#: A node's own description of where it listens, in its home.
NODE_FILE = "node.json"
#: The agent credential's file in a node's home.
TOKEN_FILE = "agent.token"

# -- addresses and homes --------------------------------------------------------------------


def node_address(home: str | Path, token_field: str = "agent_token_file") -> tuple[str, str | None]:
    """``(agent address, token)`` of the node running on ``home``, from its ``node.json``.

    ``token_field`` names the ``node.json`` entry holding the token file's path
    (``operator_token_file`` for the operator's credential). Raises
    ``ConfigError(reason="node_not_running")`` when there is no ``node.json``.
    """
    root = Path(home).expanduser()
    try:
        info = json.loads((root / NODE_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        raise ConfigError(
            f"no running node on {root} (no readable {NODE_FILE})", reason="node_not_running"
        ) from None
    address = str(info.get("agent_listen") or "")
    if not address:
        raise ConfigError(f"{root / NODE_FILE} names no agent address", reason="node_not_running")
    address = dial_address(address)
    token_file = str(info.get(token_field) or "")
    return address, _read_token(Path(token_file)) if token_file else None


def dial_address(address: str) -> str:
    """The address a local client dials for a node's listen address (wildcards → loopback)."""
    if address.startswith("unix:"):
        return address
    host, _, port = address.rpartition(":")
    if host in ("0.0.0.0", "[::]", "::", ""):
        host = "127.0.0.1"
    return f"{host}:{port}"


def _read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="ascii").strip()
    except OSError as e:
        raise ConfigError(f"cannot read the token {path}: {e}", reason="key_file") from e
    if not token:
        raise ConfigError(f"{path} is empty", reason="key_file")
    return token


def token_for(token: str | None, home: str | Path | None, name: str = TOKEN_FILE) -> str | None:
    if token is not None or home is None:
        return token
    path = Path(home).expanduser() / name
    return _read_token(path) if path.exists() else None


def call_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


# -- transports -------------------------------------------------------------------------------
# A call is written once, as a coroutine of the async client over a transport. The asyncio
# transport awaits grpc.aio; the blocking transport makes the plain (blocking) gRPC call inside
# a coroutine that never suspends, so the blocking client runs the very same coroutine to its
# end with one ``send`` (see ``_run_blocking``): no event loop, no thread, no second copy.


class AioTransport:
    """A ``grpc.aio`` channel: each call suspends on the running event loop."""

    def __init__(self, address: str, options: Sequence[tuple[str, Any]], stub_type: Any) -> None:
        self._channel = grpc.aio.insecure_channel(address, options=list(options))
        self.stub: Any = stub_type(self._channel)

    async def unary(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> Any:
        """One request, one response."""
        try:
            return await getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def unary_stream(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> list[Any]:
        """One request; every message of the response stream, in order."""
        parts: list[Any] = []
        try:
            stream: Any = getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata)
            async for part in stream:
                parts.append(part)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e
        return parts

    async def stream_unary(
        self,
        rpc: str,
        requests: Sequence[Any],
        deadline_s: float,
        metadata: tuple[tuple[str, str], ...],
    ) -> Any:
        """A stream of requests, one response."""

        async def feed() -> AsyncIterator[Any]:
            for request in requests:
                yield request

        try:
            return await getattr(self.stub, rpc)(feed(), timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close(None)


class BlockingTransport:
    """A plain gRPC channel behind coroutines that never suspend.

    Each method blocks its thread until the call has ended and then returns, so a coroutine
    built on this transport completes on its first ``send`` (``_run_blocking``).
    """

    def __init__(self, address: str, options: Sequence[tuple[str, Any]], stub_type: Any) -> None:
        self._channel = grpc.insecure_channel(address, options=list(options))
        self.stub: Any = stub_type(self._channel)

    async def unary(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> Any:
        """One request, one response."""
        try:
            return getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def unary_stream(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> list[Any]:
        """One request; every message of the response stream, in order."""
        try:
            return list(getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata))
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def stream_unary(
        self,
        rpc: str,
        requests: Sequence[Any],
        deadline_s: float,
        metadata: tuple[tuple[str, str], ...],
    ) -> Any:
        """A stream of requests, one response."""
        try:
            return getattr(self.stub, rpc)(iter(requests), timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def close(self) -> None:
        """Close the channel."""
        self._channel.close()


Transport = AioTransport | BlockingTransport
