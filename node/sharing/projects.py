"""Which projects each peer works on, as it declared in its own Sync requests.

Team sharing: a node sends a project's lessons to the peers that work on the
same project. A peer says which projects it works on in every Sync request it sends (the
scopes of its own lessons and outcomes); the request is authenticated, so a declaration is the
proven peer's own. Only well-formed project scopes are kept, at most ``limit`` per peer: a peer
cannot make this node remember more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ProjectPeers", "project_declaration"]

_PROJECT_SCOPE = re.compile(r"project:[0-9a-f]{16,64}")


def project_declaration(scopes: Iterable[str], limit: int) -> frozenset[str]:
    """The well-formed project scopes among ``scopes``, at most ``limit`` (first ones kept)."""
    kept: list[str] = []
    for scope in scopes:
        if len(kept) >= limit:
            break
        if _PROJECT_SCOPE.fullmatch(scope) and scope not in kept:
            kept.append(scope)
    return frozenset(kept)


class ProjectPeers:
    """The last project declaration heard from each peer."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._declared: dict[str, frozenset[str]] = {}

    def declare(self, peer: str, scopes: Iterable[str]) -> frozenset[str]:
        """Record ``peer``'s declaration (replacing its last one); returns what was kept."""
        kept = project_declaration(scopes, self._limit)
        self._declared[peer] = kept
        return kept

    def of(self, peer: str) -> frozenset[str]:
        """What ``peer`` last declared (empty when it never did)."""
        return self._declared.get(peer, frozenset())
