"""Taint on a node: lessons of a revoked or graylisted source, and lessons whose record the
operator retracted, leave every prompt at once.

Every ``sweep_interval_s`` the sweep asks which sources live lessons came from, which are
tainted (the registry's operator-signed revocations, which every node reads from the shared
registry and keeps in its cache; the sources admitted through a revoked identity, an endorser
anywhere on their admission chain, ``PeerDirectory.revoked_through``; and this node's
graylist) and which records are retracted (the registry's operator-signed retractions, read
and kept the same way), and applies the pure rule of ``lamarck.consensus.taint``: each
lesson it names (imported from a tainted source, holding a retracted record, or local and
learned only under such lessons) is **retired** (out of recall and prompts; the event log
says why, actor ``taint``) and **re-quarantined** with
reason ``tainted_source`` or ``retracted_record``, charged to the source, the record's bytes
kept (history). An operator then releases (the lesson is active again, and the sweep leaves
it alone for that reason from then on) or rejects (it stays retired) them, one by one or in
bulk by reason and source (``lamarck quarantine release|reject --reason tainted_source
--source ID``, ``--reason retracted_record``).

What a sweep reads does not grow with the store: the sources come from one aggregate, and
lessons are read only when a source is tainted or a record retracted (then that source's or
record's live lessons, and the live local ones, which may have been learned under them).

A retraction names a content hash: it reaches the nodes that hold that record's bytes (every
imported copy). The author's own lesson is a local row without them (its published form is
rebuilt at each publish), so there it is judged by its own outcomes; revoking the source is
how an operator takes it out there too.

A quarantine row is keyed by the record's content hash; where the record already has a row
(it came in through a quorum, or was taken out earlier for the other reason), the row is
keyed by ``sha256("<reason>\\n" + hash)`` instead, so both stay in history.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta

from lamarck.consensus.params import TaintParams
from lamarck.consensus.taint import (
    RETRACTED_RECORD,
    TAINTED_SOURCE,
    LessonFacts,
    Taken,
    taint_plan,
    taint_reason,
    tainted_sources,
)
from lamarck.domain.rows import (
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
    QuarantineRow,
)
from lamarck.errors import InvalidRecord, NotFound
from lamarck.gossip.publisher import sign_lesson
from lamarck.learning.mechanical import (
    MECHANICAL_TAG,
    MechanicalLesson,
    avoided_operation,
    lesson_target,
)
from lamarck.node.store.port import LessonStore
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.directory import PeerDirectory
from lamarck.registry.records import Retraction
from lamarck.reputation.scores import PeerBand

__all__ = ["RETRACT_MARK", "TAINT_ACTOR", "TAINT_MARK", "TaintSweeper"]

_log = logging.getLogger("lamarck.node.sharing.taint")

#: The actor the lesson event log names for a taint.
TAINT_ACTOR = "taint"
#: ``superseded_by`` of a lesson retired by taint (a release makes it active again).
TAINT_MARK = f"retired:{TAINTED_SOURCE}"
#: ``superseded_by`` of a lesson retired for a retracted record (likewise).
RETRACT_MARK = f"retired:{RETRACTED_RECORD}"
_MARKS = {TAINTED_SOURCE: TAINT_MARK, RETRACTED_RECORD: RETRACT_MARK}
_LIVE = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)


def _mechanical(row: LessonRow) -> MechanicalLesson | None:
    """The "prefer B over A for T" a mechanical lesson says (None for any other lesson)."""
    if MECHANICAL_TAG not in row.tags:
        return None
    avoid, target = avoided_operation(row.tags), lesson_target(row.tags)
    if not avoid or not target:
        return None
    return MechanicalLesson(prefer=row.operation, avoid=avoid, target=target)


def unrelated_in_play(
    row: LessonRow, by_id: Mapping[str, LessonRow], in_play: Mapping[str, tuple[str, ...]]
) -> frozenset[str]:
    """The lessons in play at ``row``'s evidence outcomes that ``row`` was not learned under:
    mechanical lessons about another target, or saying the opposite of ``row`` (its outcome
    refuted them). Known of mechanical lessons only; any other stays a possible parent."""
    own = _mechanical(row)
    if own is None or row.imported_from is not None:
        return frozenset()
    out: set[str] = set()
    for outcome_id in row.evidence:
        for lesson_id in in_play.get(outcome_id, ()):
            other = by_id.get(lesson_id)
            theirs = _mechanical(other) if other is not None else None
            if theirs is not None and (theirs.target != own.target or own.reversed_by(theirs)):
                out.add(lesson_id)
    return frozenset(out)


def _taint_reason(row: QuarantineRow) -> str | None:
    return taint_reason(row.reasons)


def _record_id(raw: bytes) -> str:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return ""
    value = obj.get("id") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


class TaintSweeper:
    """Finds the lessons of tainted sources and retracted records, retires and
    re-quarantines them; releases."""

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
        directory: Callable[[], PeerDirectory | None] | None = None,
    ) -> None:
        self._store = store
        self._identity = identity
        self._clock = clock
        self._rng = rng
        self.params = params
        self._revoked = revoked
        self._band_of = band_of
        # The registry whose operator-signed retractions the sweep reads (None: none yet).
        self._directory = directory or (lambda: None)

    async def _live(
        self, tainted: frozenset[str], retractions: Mapping[str, Retraction]
    ) -> list[LessonRow]:
        """The live lessons the sweep needs: those of a tainted source or a retracted record
        and, when there are any, every live local lesson (one may have been learned only
        under them). Nothing else is read: a sweep with neither reads no lesson at all."""
        page = self.params.page
        direct: list[LessonRow] = []
        if tainted:
            by_source = LessonFilter(statuses=_LIVE, sources=tuple(tainted))
            direct += await self._store.scan_all(by_source, page)
        if retractions:
            by_hash = LessonFilter(statuses=_LIVE, content_hashes=tuple(retractions))
            direct += await self._store.scan_all(by_hash, page)
        if not direct:
            return []
        local = await self._store.scan_all(LessonFilter(statuses=_LIVE, imported=False), page)
        return list({r.id: r for r in (*direct, *local)}.values())

    async def _retractions(self) -> dict[str, Retraction]:
        """The registry's verified retractions by content hash (the cache's copy in an
        outage; none without a registry)."""
        directory = self._directory()
        if directory is None:
            return {}
        return {r.content_hash: r for r in await directory.retractions()}

    async def once(self) -> int:
        """One sweep; returns how many lessons it took out."""
        retractions = await self._retractions()
        # Which sources of live lessons are tainted, from one aggregate: the sweep runs every
        # few seconds, and on a node of 100k imported lessons reading them all was the cost.
        sources = await self._store.import_sources(_LIVE)
        tainted: frozenset[str] = frozenset()
        through: dict[str, str] = {}
        if sources:
            revoked = await self._revoked()
            directory = self._directory()
            if directory is not None:
                # Sources admitted through a revoked identity (an endorser on their chain).
                wanted = sorted(s for s in sources if s not in revoked)
                through = await directory.revoked_through(wanted)
            tainted = tainted_sources(
                sources,
                revoked=revoked | frozenset(through),
                band_of={s: self._band_of(s) for s in sources},
            )
        rows = await self._live(tainted, retractions)
        retracted = frozenset(
            r.content_hash for r in rows if r.content_hash and r.content_hash in retractions
        )
        if not rows:
            return 0
        held = await self._store.list_quarantine(None)
        # What an operator released stays released, for the reason it was released from: a
        # release from a source's taint does not answer a later retraction of the record.
        released: set[tuple[str, str]] = set()
        for q in held:
            reason = _taint_reason(q)
            if reason is not None and q.state == "approved":
                # A local lesson is released by its record's id, an imported copy by its hash.
                for key in (_record_id(q.signed_record), q.content_hash):
                    if key:
                        released.add((key, reason))
        in_play: dict[str, tuple[str, ...]] = {}
        for outcome_id in {e for r in rows if r.imported_from is None for e in r.evidence}:
            try:
                outcome = await self._store.get_outcome(outcome_id)
            except NotFound:
                continue
            ids = outcome.record.get("in_play", ()) if isinstance(outcome.record, dict) else ()
            in_play[outcome_id] = tuple(str(i) for i in ids)
        by_id = {r.id: r for r in rows}
        plan = taint_plan(
            (
                LessonFacts(
                    r.id,
                    r.imported_from,
                    r.evidence,
                    r.content_hash,
                    unrelated_in_play(r, by_id, in_play),
                )
                for r in rows
            ),
            in_play,
            tainted,
            retracted,
        )
        taken: dict[str, int] = {}
        keys = {q.content_hash for q in held}
        now = self._clock.now()
        for one in (*plan.direct, *plan.local):
            row = by_id[one.lesson_id]
            if (row.id, one.reason) in released or (row.content_hash or "", one.reason) in released:
                continue  # an operator released it: its word stands
            why = _why(row, one, retractions, through)
            if await self._take_out(row, one, why, keys, now):
                taken[one.reason] = taken.get(one.reason, 0) + 1
        if taken.get(TAINTED_SOURCE):
            _log.warning(
                "took %d lesson(s) of tainted source(s) %s out of every prompt",
                taken[TAINTED_SOURCE],
                ", ".join(sorted(tainted)),
            )
        if taken.get(RETRACTED_RECORD):
            _log.warning(
                "took %d lesson(s) of operator-retracted record(s) out of every prompt",
                taken[RETRACTED_RECORD],
            )
        return sum(taken.values())

    async def _take_out(
        self, row: LessonRow, taken: Taken, why: str, keys: set[str], now: datetime
    ) -> bool:
        raw, content_hash = row.signed_record, row.content_hash
        if raw is None or content_hash is None:
            try:
                signed = sign_lesson(row, self._identity)
            except InvalidRecord:
                signed = None
            raw = signed.raw if signed is not None else None
            content_hash = signed.content_hash if signed is not None else None
        retired = dataclasses.replace(
            row,
            status=LessonStatus.RETIRED,
            superseded_by=_MARKS[taken.reason],
            updated_at=_next_version_time(row, now),
            embedding=None,
        )
        event = LessonEvent(
            row.id, now, "retired", TAINT_ACTOR, row.confidence, row.confidence, reason=why
        )
        async with self._store.atomic():
            await self._store.update_lesson(retired, [event])
            if raw is not None and content_hash is not None:
                key = content_hash
                if key in keys:
                    key = sha256_hex(f"{taken.reason}\n{content_hash}".encode())
                keys.add(key)
                await self._store.quarantine(
                    QuarantineRow(
                        id=str(uuid.UUID(int=self._rng.getrandbits(128), version=4)),
                        content_hash=key,
                        # This node's own lesson is charged to this node.
                        source_node_id=taken.source or self._identity.node_id,
                        reasons=(taken.reason,),
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
        reason = _taint_reason(row) or TAINTED_SOURCE
        if lesson.status is LessonStatus.RETIRED and lesson.superseded_by == _MARKS[reason]:
            await self._store.update_lesson(
                dataclasses.replace(
                    lesson,
                    status=LessonStatus.ACTIVE,
                    superseded_by=None,
                    updated_at=_next_version_time(lesson, self._clock.now()),
                    embedding=None,
                ),
                [
                    LessonEvent(
                        lesson.id,
                        self._clock.now(),
                        "approved",
                        actor,
                        lesson.confidence,
                        lesson.confidence,
                        reason=note or f"released from {reason}",
                    )
                ],
            )
        return lesson.id


def _why(
    row: LessonRow,
    taken: Taken,
    retractions: Mapping[str, Retraction],
    through: Mapping[str, str],
) -> str:
    """The retirement event's reason: the rule, and the source or retraction behind it
    (``through``: the revoked identity a source was admitted through)."""
    if taken.reason == RETRACTED_RECORD:
        retraction = retractions.get(row.content_hash or "")
        if retraction is not None:
            return (
                f"{RETRACTED_RECORD}: the operator retracted record {retraction.content_hash} "
                f"({retraction.reason})"
            )
        return f"{RETRACTED_RECORD}: learned only under lessons whose records were retracted"
    if row.imported_from and taken.source in through:
        return (
            f"{TAINTED_SOURCE}: source {taken.source} was admitted through "
            f"{through[taken.source]}, which is revoked"
        )
    if row.imported_from:
        return f"{TAINTED_SOURCE}: source {taken.source} is revoked or graylisted"
    return f"{TAINTED_SOURCE}: learned only under lessons of {taken.source}"


def _next_version_time(row: LessonRow, now: datetime) -> datetime:
    """``updated_at`` for a status change of ``row``. This node's own lesson is re-signed from
    the row and its record version is ``updated_at`` (``publisher.lesson_version``): a new
    status at the old time would be a second record at the same version, which every peer
    rightly punishes as equivocation. An imported copy keeps its signer's time (its version
    is the signer's)."""
    if row.signed_record is not None:
        return row.updated_at
    return max(now, row.updated_at + timedelta(microseconds=1))
