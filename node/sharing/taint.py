"""Taint on a node: lessons of a revoked or graylisted source leave every prompt at once.

Every ``sweep_interval_s`` the sweep reads the live lessons, asks which of their sources are
tainted (the registry's operator-signed revocations, which every node reads from the shared
registry and keeps in its cache, and this node's graylist) and applies the pure rule of
``lamarck.consensus.taint``: each tainted lesson (imported from such a source, or local and
learned only under such lessons) is **retired** (out of recall and prompts; the event log says
why, actor ``taint``) and **re-quarantined** with reason ``tainted_source``, charged to the
source, the record's bytes kept (history). An operator then releases (the lesson is active
again, and the sweep leaves it alone from then on) or rejects (it stays retired) them, one by
one or in bulk by reason and source (``lamarck quarantine release|reject --reason
tainted_source --source ID``).

A quarantine row is keyed by the record's content hash; where the record already has a row
(it came in through a quorum), the taint row is keyed by ``sha256("tainted_source\\n" +
hash)`` instead, so both stay in history.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime

from lamarck.consensus.params import TaintParams
from lamarck.consensus.taint import TAINTED_SOURCE, LessonFacts, taint_plan, tainted_sources
from lamarck.errors import InvalidRecord, NotFound
from lamarck.node.gossip.publisher import sign_lesson
from lamarck.node.store.port import (
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
    LessonStore,
    QuarantineRow,
)
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.scores import PeerBand

__all__ = ["TAINT_ACTOR", "TAINT_MARK", "TaintSweeper", "is_taint_row"]

_log = logging.getLogger("lamarck.node.sharing.taint")

#: The actor the lesson event log names for a taint.
TAINT_ACTOR = "taint"
#: ``superseded_by`` of a lesson retired by taint (a release makes it active again).
TAINT_MARK = f"retired:{TAINTED_SOURCE}"
_LIVE = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)


def is_taint_row(row: QuarantineRow) -> bool:
    """Whether a quarantine row holds a lesson taken out for its tainted source."""
    return TAINTED_SOURCE in row.reasons


def _record_id(raw: bytes) -> str:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return ""
    value = obj.get("id") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


class TaintSweeper:
    """Finds the lessons of tainted sources, retires and re-quarantines them; releases."""

    def __init__(
        self,
        store: LessonStore,
        identity: NodeIdentity,
        *,
        clock: Clock,
        rng: random.Random,
        params: TaintParams,
        revoked: Callable[[], Awaitable[frozenset[str]]],
        band_of: Callable[[str], PeerBand],
    ) -> None:
        self._store = store
        self._identity = identity
        self._clock = clock
        self._rng = rng
        self.params = params
        self._revoked = revoked
        self._band_of = band_of

    async def _live(self) -> list[LessonRow]:
        rows: list[LessonRow] = []
        offset = 0
        while True:
            page = await self._store.list_lessons(
                LessonFilter(statuses=_LIVE, limit=self.params.page, offset=offset)
            )
            rows.extend(page)
            if len(page) < self.params.page:
                return rows
            offset += self.params.page

    async def once(self) -> int:
        """One sweep; returns how many lessons it took out."""
        rows = await self._live()
        sources = {r.imported_from for r in rows if r.imported_from}
        if not sources:
            return 0
        tainted = tainted_sources(
            sources,
            revoked=await self._revoked(),
            band_of={s: self._band_of(s) for s in sources},
        )
        if not tainted:
            return 0
        held = await self._store.list_quarantine(None)
        released = {
            _record_id(q.signed_record) for q in held if is_taint_row(q) and q.state == "approved"
        } | {
            # An imported copy is released by its record's hash.
            q.content_hash
            for q in held
            if is_taint_row(q) and q.state == "approved"
        }
        in_play: dict[str, tuple[str, ...]] = {}
        for outcome_id in {e for r in rows if r.imported_from is None for e in r.evidence}:
            try:
                outcome = await self._store.get_outcome(outcome_id)
            except NotFound:
                continue
            ids = outcome.record.get("in_play", ()) if isinstance(outcome.record, dict) else ()
            in_play[outcome_id] = tuple(str(i) for i in ids)
        plan = taint_plan(
            (LessonFacts(r.id, r.imported_from, r.evidence) for r in rows), in_play, tainted
        )
        by_id = {r.id: r for r in rows}
        taken = 0
        keys = {q.content_hash for q in held}
        now = self._clock.now()
        for lesson_id, source in (*plan.imported, *plan.local):
            row = by_id[lesson_id]
            if row.id in released or (row.content_hash or "") in released:
                continue  # an operator released it: its word stands
            if await self._take_out(row, source, keys, now):
                taken += 1
        if taken:
            _log.warning(
                "took %d lesson(s) of tainted source(s) %s out of every prompt",
                taken,
                ", ".join(sorted(tainted)),
            )
        return taken

    async def _take_out(self, row: LessonRow, source: str, keys: set[str], now: datetime) -> bool:
        raw, content_hash = row.signed_record, row.content_hash
        if raw is None or content_hash is None:
            try:
                signed = sign_lesson(row, self._identity)
            except InvalidRecord:
                signed = None
            raw = signed.raw if signed is not None else None
            content_hash = signed.content_hash if signed is not None else None
        why = (
            f"{TAINTED_SOURCE}: source {source} is revoked or graylisted"
            if row.imported_from
            else f"{TAINTED_SOURCE}: learned only under lessons of {source}"
        )
        retired = dataclasses.replace(
            row, status=LessonStatus.RETIRED, superseded_by=TAINT_MARK, embedding=None
        )
        event = LessonEvent(
            row.id, now, "retired", TAINT_ACTOR, row.confidence, row.confidence, reason=why
        )
        async with self._store.atomic():
            await self._store.update_lesson(retired, [event])
            if raw is not None and content_hash is not None:
                key = content_hash
                if key in keys:
                    key = sha256_hex(f"{TAINTED_SOURCE}\n{content_hash}".encode())
                keys.add(key)
                await self._store.quarantine(
                    QuarantineRow(
                        id=str(uuid.UUID(int=self._rng.getrandbits(128), version=4)),
                        content_hash=key,
                        source_node_id=source,
                        reasons=(TAINTED_SOURCE,),
                        received_at=now,
                        signed_record=raw,
                        confidence=row.confidence,
                    )
                )
        return True

    async def lesson_of(self, row: QuarantineRow) -> LessonRow | None:
        """The lesson a taint row took out (imported: by its bytes; local: by its id)."""
        found = await self._store.find_by_content_hash(sha256_hex(row.signed_record))
        if found is not None:
            return found
        record_id = _record_id(row.signed_record)
        if not record_id:
            return None
        try:
            return await self._store.get_lesson(record_id)
        except NotFound:
            return None

    async def release(self, row: QuarantineRow, note: str, actor: str) -> str:
        """Make the lesson of a taint row active again (the caller marks the row); its id
        ("" when it is gone)."""
        lesson = await self.lesson_of(row)
        if lesson is None:
            return ""
        if lesson.status is LessonStatus.RETIRED and lesson.superseded_by == TAINT_MARK:
            await self._store.update_lesson(
                dataclasses.replace(
                    lesson, status=LessonStatus.ACTIVE, superseded_by=None, embedding=None
                ),
                [
                    LessonEvent(
                        lesson.id,
                        self._clock.now(),
                        "approved",
                        actor,
                        lesson.confidence,
                        lesson.confidence,
                        reason=note or f"released from {TAINTED_SOURCE}",
                    )
                ],
            )
        return lesson.id


def taint_rows(rows: Iterable[QuarantineRow], *, source: str = "") -> list[QuarantineRow]:
    """The pending taint rows, of ``source`` when given."""
    return [
        r
        for r in rows
        if is_taint_row(r) and r.state == "pending" and (not source or r.source_node_id == source)
    ]
