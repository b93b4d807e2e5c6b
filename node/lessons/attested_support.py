"""The ``SupportReader`` of a sharing node: attestations it verified and certificates it holds.

For each imported lesson asked about, the support is counted by ``count_support`` over the
attestations kept for the lesson's current version (its content hash), in this node's own
registry view at the time of reading (so an attester revoked since counts for nothing), the
source's principal excluded; ``certified`` when this node holds a verified quorum certificate
for that version. Local lessons are proven here and need none; they are left out.

``SharingSupportReader`` is the reader a daemon builds before its sharing side runs: it asks
the sharing side's reader at each call, and answers no support while there is none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence

from lamarck.consensus.attestation import count_support
from lamarck.consensus.corroboration import NO_SUPPORT, Support
from lamarck.domain.rows import LessonRow
from lamarck.node.lessons.support import SupportReader
from lamarck.node.store.attestations import AttestationStore
from lamarck.proto.clock import Clock

__all__ = ["AttestedSupportReader", "PrincipalLookup", "SharingSupportReader"]

PrincipalLookup = Callable[[Sequence[str]], Awaitable[Mapping[str, str]]]
"""This node's registry view: the principal of each admitted, unrevoked id among those asked."""


class AttestedSupportReader:
    """Reads each imported lesson's independent support from the attestation store."""

    def __init__(
        self,
        store: AttestationStore,
        *,
        principals: PrincipalLookup,
        certified: Callable[[str], bool],
        clock: Clock,
        own_id: str = "",
    ) -> None:
        """``principals`` is this node's registry view; ``certified(content_hash)`` says
        whether it holds a verified quorum certificate for that record; ``own_id`` is this
        node's id (a source of its own principal is marked ``Support.own_principal``)."""
        self._store = store
        self._own_id = own_id
        self._principals = principals
        self._certified = certified
        self._clock = clock

    async def support_for(self, lessons: Sequence[LessonRow]) -> Mapping[str, Support]:
        """Each imported lesson's support by lesson id (absent: none). A copy of this node's
        own record is its own lesson: it needs none, and costs no lookup."""
        imported = [
            r for r in lessons if r.imported_from and r.content_hash and r.from_peer(self._own_id)
        ]
        if not imported:
            return {}
        held = await self._store.for_memories([r.content_hash or "" for r in imported])
        ids = {r.attestation.attester_id for rows in held.values() for r in rows}
        ids.update(r.imported_from or "" for r in imported)
        ids.add(self._own_id)
        principals = await self._principals(sorted(ids - {""}))
        own = principals.get(self._own_id, "")
        now = self._clock.now()
        out: dict[str, Support] = {}
        for row in imported:
            content_hash = row.content_hash or ""
            source = principals.get(row.imported_from or "", "")
            support = count_support(
                (r.attestation for r in held.get(content_hash, ())),
                memory_hash=content_hash,
                principals=principals,
                source_principal=source,
                now=now,
                params=self._store.params,
                certified=self._certified(content_hash),
            )
            if own and source == own:
                support = dataclasses.replace(support, own_principal=True)
            if support != NO_SUPPORT:
                out[row.id] = support
        return out


class SharingSupportReader:
    """The support reader of whatever sharing side runs now (none: no lesson has support)."""

    def __init__(self, current: Callable[[], SupportReader | None]) -> None:
        """``current`` returns the running sharing side's reader, or None."""
        self._current = current

    async def support_for(self, lessons: Sequence[LessonRow]) -> Mapping[str, Support]:
        """The running reader's answer, or no support."""
        reader = self._current()
        return {} if reader is None else await reader.support_for(lessons)
