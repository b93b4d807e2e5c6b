"""``PeerService.GetReputation`` tells a peer nothing: a node's scores are for its operators.

A peer that could read its own standing at every node would learn how close it stands to the
graylist and how to stay just above it; no protocol step needs another node's opinion.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lamarck.errors import PolicyRejected, Unauthenticated
from lamarck.node.api.peer_service import PeerService
from lamarck.proto.v1 import peer_pb2
from tests.factories import peer_service

ASKER = "lmk1" + "a" * 32


class _Sharing:
    """What GetReputation reads of the node's sharing: who the caller is, and a book."""

    def __init__(self, proven: bool) -> None:
        self.proven = proven
        self.asked: list[str] = []
        self.reputation = SimpleNamespace(book=None)

    async def authenticate(self, metadata: Any, claimed: str, fingerprint: Any = None) -> str:
        self.asked.append(claimed)
        if not self.proven:
            raise Unauthenticated("no token", reason="token_missing")
        return claimed


def _service(sharing: _Sharing, home: Path) -> PeerService:
    return peer_service(home, sharing)


class _Context:
    def invocation_metadata(self) -> tuple[()]:
        return ()

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}  # a call without TLS


def _ask(service: PeerService) -> None:
    request = peer_pb2.GetReputationRequest(requester_node_id=ASKER, node_ids=[ASKER])
    asyncio.run(service.GetReputation(request, _Context()))  # type: ignore[arg-type]


def test_an_authenticated_peer_is_refused_its_own_and_everyone_s_standing(tmp_path: Path) -> None:
    sharing = _Sharing(proven=True)
    with pytest.raises(PolicyRejected) as caught:
        _ask(_service(sharing, tmp_path))
    assert caught.value.reason == "reputation_private"
    assert sharing.asked == [ASKER]  # authenticated first, as for Sync


def test_an_anonymous_caller_is_still_unauthenticated(tmp_path: Path) -> None:
    with pytest.raises(Unauthenticated):
        _ask(_service(_Sharing(proven=False), tmp_path))
