"""``AgentService``: the local agent's hands on its node's memory, as gRPC.

The servicer only translates: protobuf requests become ``LessonService`` calls (every write,
every rule) and store reads (List, History, Export), and rows become ``LessonView`` messages.
A ``LamarckError`` raised here is left to escape: the server's ``ErrorInterceptor`` maps it to
the status of ``lamarck.node.api.status`` with the reason in ``lamarck-reason``.

Bundles (Export / Import) are JSON Lines: one signed memory record per line, each line the
record's RFC 8785 canonical bytes, so a bundle is human-readable, diffs line by line, and
every line re-verifies on its own. Local lessons are signed with the node identity at export
time; imported lessons are carried as the exact bytes their source signed. Import hands
each line to the node's one import pipeline (``lamarck.node.importing.pipeline``, source
``bundle``): every stage a gossiped record passes, key pinning included (a signer no registry
of this node knows is held for an operator as ``unknown_signer``). Each line gets its own
ack; a bad line is refused with its reason and changes nothing already stored.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from lamarck.consensus.accountability import voter_events_for_reality
from lamarck.domain.embedder import Embedder
from lamarck.domain.rows import (
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
)
from lamarck.errors import (
    ConflictError,
    InvalidRecord,
    LamarckError,
    NotFound,
    StoreError,
    StoreUnavailable,
)
from lamarck.gossip.publisher import lesson_record, sign_lesson
from lamarck.gossip.share_reason import SharingState
from lamarck.learning.influence import LessonEvidence
from lamarck.learning.notes import note_operation
from lamarck.learning.scopes import GLOBAL, project_scope, validate_scope
from lamarck.learning.situations import Situation, SituationSource
from lamarck.learning.why import NothingLearned
from lamarck.node.api.agent_views import (
    ACCESS_FROM_PB,
    ACTOR,
    CHANGE_TO_PB,
    IMPORT_TO_ACK,
    SITUATION_SOURCE_FROM_PB,
    STATUS_TO_PB,
    compact_json,
    context_from_proto,
    described_history,
    history_entry,
    lesson_filter,
    lesson_view,
)
from lamarck.node.api.network_side import NetworkSide, serving_pipeline
from lamarck.node.api.ready import Provider, Ready, provider_of
from lamarck.node.importing.batch import Prefetch, PrimedEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.lessons.core import RecalledLesson
from lamarck.node.lessons.recall import ShownConflict
from lamarck.node.lessons.service import LessonService
from lamarck.node.store.port import LessonStore
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import DEFAULT_LIMITS
from lamarck.proto.outcome import Outcome
from lamarck.proto.v1 import agent_pb2, agent_pb2_grpc, lessons_pb2, records_pb2
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.port import ReputationSink

__all__ = [
    "CLAIM_NOTE",
    "DEFAULT_PAGE_SIZE",
    "EXPORT_CHUNK_BYTES",
    "MAX_PAGE_SIZE",
    "AgentServicer",
    "make_agent_servicer",
]

_log = logging.getLogger(__name__)

#: List page size when the request gives none, and the most the server ever returns.
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
#: Export chunks are about this big (whole lines; one line may exceed it).
EXPORT_CHUNK_BYTES = 64 * 1024
#: What Remember's reply tells a caller about the claim it stored.
CLAIM_NOTE = (
    "Stored as a claim: it is kept out of recall and sharing until an outcome confirms it. "
    "To record what just happened (what ran, what passed), call RecordOutcome instead: "
    "lessons are learned from outcomes."
)

#: The voters' reputation events for an outcome's reality events.
VoterJudge = Callable[[Sequence[ReputationEvent]], Sequence[ReputationEvent]]
#: This node's attestations on the imported lessons an outcome judged (signed, kept, queued to
#: travel), returning the other attesters' events for that outcome's reality events.
Attester = Callable[[Outcome, Sequence[ReputationEvent]], Awaitable[Sequence[ReputationEvent]]]


# -- the servicer ---------------------------------------------------------------------------


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    """Every AgentService RPC, as translations to ``LessonService`` calls and store reads.

    ``service`` and ``store`` may be given as zero-argument callables, read on each call: the
    daemon's are only ready once the store is migrated (before that they raise
    ``StoreUnavailable``, answered UNAVAILABLE).
    """

    def __init__(
        self,
        service: LessonService | Provider[LessonService],
        identity: NodeIdentity,
        clock: Clock,
        *,
        store: LessonStore | Provider[LessonStore],
        pipeline: ImportPipeline | Provider[ImportPipeline],
        sink: Callable[[], ReputationSink | None] | None = None,
        sharing: Callable[[], SharingState | None] | None = None,
        voters: VoterJudge | None = None,
        primed: PrimedEmbedder | None = None,
        attester: Attester | None = None,
    ) -> None:
        self._service = provider_of(service, LessonService)
        self._store = provider_of(store, LessonStore)
        # Import hands every bundle line to the node's one import pipeline (source bundle).
        self._pipeline = provider_of(pipeline, ImportPipeline)
        self._identity = identity
        self._clock = clock
        # Where the reality signal goes (the sharing side's book; None before it starts).
        self._sink = sink or (lambda: None)
        # The sharing side's rule inputs, for "is this lesson shared" (None: not running).
        self._sharing = sharing or (lambda: None)
        # The voters' events for an outcome's reality events (none before sharing starts).
        self._voters: VoterJudge = voters or (lambda _: ())
        # This node's attestations and the attesters' events (none before sharing starts).
        self._attester = attester
        # The pipeline's own embedder, when it primes: a bundle's lines are embedded a chunk
        # at a time ahead of the pipeline.
        self._primed = primed

    # -- helpers ---------------------------------------------------------------------------
    @property
    def node_id(self) -> str:
        """This node's id."""
        return self._identity.node_id

    async def _version(self, row: LessonRow) -> int:
        """The lesson's version: its place in the supersede chain (an edit makes a new row)."""
        if row.supersedes is None:
            return 1
        chain = await self._store().history(row.id)
        ids = [r.id for r in chain]
        return ids.index(row.id) + 1 if row.id in ids else 1

    async def _view(
        self, row: LessonRow, evidence: LessonEvidence | None = None
    ) -> lessons_pb2.LessonView:
        """A stored lesson as the agent sees it, with its evidence for this node."""
        version = await self._version(row)
        if evidence is None:
            evidence = (await self._service().evidence([row]))[row.id]
        return self._view_at(row, version, evidence)

    async def _views(self, rows: Sequence[LessonRow]) -> list[lessons_pb2.LessonView]:
        """Several lessons, their evidence read at once."""
        evidence = await self._service().evidence(rows)
        return [await self._view(r, evidence[r.id]) for r in rows]

    async def _conflict(
        self, conflict: ShownConflict, evidence: Mapping[str, LessonEvidence]
    ) -> agent_pb2.LessonConflict:
        """A conflict on the wire: its sides in order, each with its evidence."""
        return agent_pb2.LessonConflict(
            operation=conflict.operation,
            sides=[await self._view(s, evidence.get(s.id)) for s in conflict.sides],
            holds=conflict.leader or "",
        )

    def _view_at(
        self, row: LessonRow, version: int, evidence: LessonEvidence | None = None
    ) -> lessons_pb2.LessonView:
        return lesson_view(
            row,
            version,
            evidence,
            node_id=self.node_id,
            lifecycle=self._service().params.knowledge.lifecycle,
            sharing=self._sharing(),
        )

    async def _check_version(self, row: LessonRow, expected: int) -> None:
        """Refuse a write made against a version the lesson has moved on from."""
        if not expected:
            return
        version = await self._version(row)
        if version != expected or row.superseded_by is not None:
            raise ConflictError(
                f"lesson {row.id} is at version {version}"
                + (" and no longer live" if row.superseded_by else "")
                + f", not {expected}",
                reason="version_conflict",
                id=row.id,
                version=version,
            )

    @staticmethod
    def _scope(project_digest: str) -> str:
        return project_scope(project_digest) if project_digest else GLOBAL

    # -- RecordOutcome -----------------------------------------------------------------------
    async def _attest(
        self, outcome: Outcome, reality: Sequence[ReputationEvent]
    ) -> Sequence[ReputationEvent]:
        """Attest what the outcome judged; the attesters' events. The outcome is stored
        already, so a store failure here is logged, never the call's failure (the agent
        would resend an outcome held already)."""
        if self._attester is None or not reality:
            return ()
        try:
            return await self._attester(outcome, reality)
        except StoreError as e:
            _log.warning(
                "outcome %s judged imported lessons but was not attested: %s", outcome.id, e
            )
            return ()

    async def RecordOutcome(
        self, request: agent_pb2.RecordOutcomeRequest, context: Any
    ) -> agent_pb2.RecordOutcomeResponse:
        """Store the outcome and report every lesson it created, confirmed or contradicted."""
        outcome = Outcome.from_json(request.outcome_json)
        store, service = self._store(), self._service()
        try:
            result = await service.record_outcome(outcome)
        except ConflictError as e:
            # A retried call must be safe: storing the outcome is the service's first write, so
            # an id already held fails there with nothing changed. Checked, not assumed.
            if e.reason == "duplicate_id" and await store.existing_outcome_ids([outcome.id]):
                return agent_pb2.RecordOutcomeResponse(
                    outcome_id=outcome.id,
                    duplicate=True,
                    nothing_learned=NothingLearned.DUPLICATE,
                )
            raise
        sink = self._sink()
        if sink is not None:
            # The sources of the lessons reality judged, then the voters of any a quorum
            # accepted.
            attesters = await self._attest(outcome, result.reality)
            for event in (*result.reality, *self._voters(result.reality), *attesters):
                sink.emit(event)
        ids = list(dict.fromkeys(c.lesson_id for c in result.changes))
        # The rows the outcome wrote whole come with it; only the others are read.
        rows = {i: result.rows[i] for i in ids if i in result.rows}
        if missing := [i for i in ids if i not in rows]:
            rows.update((r.id, r) for r in await store.get_lessons(missing))
        versions = {i: await self._version(r) for i, r in rows.items()}
        changes = []
        for change in result.changes:
            kind = CHANGE_TO_PB.get(change.change)
            row = rows.get(change.lesson_id)
            if kind is None or row is None:
                continue
            after = change.confidence_after
            changes.append(
                lessons_pb2.LessonChange(
                    lesson_id=change.lesson_id,
                    kind=kind,
                    version=versions[row.id],
                    confidence_before=change.confidence_before or 0.0,
                    confidence_after=row.confidence if after is None else after,
                    status=STATUS_TO_PB[row.status],
                )
            )
        return agent_pb2.RecordOutcomeResponse(
            outcome_id=outcome.id, changes=changes, nothing_learned=result.nothing_learned
        )

    # -- Recall ----------------------------------------------------------------------------
    async def Recall(
        self, request: agent_pb2.RecallRequest, context: Any
    ) -> agent_pb2.RecallResponse:
        """The best active lessons for the task and the "Lessons:" section; marks them in play."""
        if not request.task.strip():
            raise InvalidRecord("recall needs a task", reason="empty_task")
        service = self._service()
        ctx = context_from_proto(request.context) if request.HasField("context") else None
        # Without a session there is no outcome to attribute them to: record nothing.
        result = await service.recall(
            request.task,
            ctx,
            self._scope(request.project_digest),
            request.session_id,
            incognito=not request.session_id,
            limit=request.limit or None,
        )
        evidence = result.evidence

        async def recalled(hits: Sequence[RecalledLesson]) -> list[agent_pb2.RecalledLesson]:
            return [
                agent_pb2.RecalledLesson(
                    lesson=await self._view(hit.lesson, evidence.get(hit.lesson.id)),
                    score=hit.score,
                    similarity=hit.similarity,
                )
                for hit in hits
            ]

        section = result.section
        return agent_pb2.RecallResponse(
            lessons=await recalled(result.scored),
            prompt_section=section.text,
            omitted_lesson_ids=list(section.omitted),
            hints=await recalled(result.hints),
            conflicts=[await self._conflict(c, evidence) for c in result.conflicts],
            indexing=result.indexing,
        )

    # -- CheckOperation ----------------------------------------------------------------------
    async def CheckOperation(
        self, request: agent_pb2.CheckOperationRequest, context: Any
    ) -> agent_pb2.CheckOperationResponse:
        """What is on file for an operation (and the tool's situation) about to run."""
        service = self._service()
        scope = self._scope(request.project_digest)
        found = await service.check(request.operation, scope)
        preamble = None if found is None else found.preamble
        lesson_ids = [] if found is None else list(found.lesson_ids)
        probe = unblock = ""
        if request.tool and request.subject:
            for lesson in await service.situation_lessons(scope):
                s = lesson.situation
                if s.tool == request.tool and s.subject == request.subject:
                    probe, unblock = s.probe or "", s.unblock or ""
                    if preamble is None:
                        preamble = f"Note: last time {lesson.content} (lesson {lesson.lesson_id})."
                    if lesson.lesson_id not in lesson_ids:
                        lesson_ids.append(lesson.lesson_id)
                    break
        if request.session_id:
            for lesson_id in lesson_ids:
                await service.report_use(lesson_id, request.session_id)
        advice: list[lessons_pb2.LessonView] = []
        conflicts: list[agent_pb2.LessonConflict] = []
        if found is not None:
            advice = [await self._view(r, found.evidence.get(r.id)) for r in found.lessons]
            conflicts = [await self._conflict(c, found.evidence) for c in found.conflicts]
        return agent_pb2.CheckOperationResponse(
            preamble=preamble or "",
            probe=probe,
            unblock=unblock,
            lesson_ids=lesson_ids,
            lessons=advice,
            conflicts=conflicts,
        )

    # -- Remember --------------------------------------------------------------------------
    async def Remember(
        self, request: agent_pb2.RememberRequest, context: Any
    ) -> agent_pb2.RememberResponse:
        """Store a model's claim as a claimed lesson (or return the same claim already held).

        Without an operation the claim is keyed ``note:<slug of its first words>``
        (``lamarck.learning.notes``), so the same sentence finds the same claim.
        """
        if request.memory_type == lessons_pb2.MEMORY_TYPE_UC:
            # The lesson service stores agent-capability lessons only; refusing is honest,
            # storing it as AC would make user context shareable.
            raise InvalidRecord(
                "this node stores claims as AC lessons only", reason="unsupported_memory_type"
            )
        scope = (
            validate_scope(request.scope) if request.scope else self._scope(request.project_digest)
        )
        ctx = context_from_proto(request.context) if request.HasField("context") else None
        content, operation = request.content.strip(), request.operation.strip()
        store, service = self._store(), self._service()
        if content and not operation:
            operation = note_operation(content, service.params.notes)
        if content:
            # One indexed lookup (operation, then the exact content), never a scope's rows.
            held = await store.list_lessons(
                LessonFilter(
                    statuses=(LessonStatus.CLAIMED, LessonStatus.ACTIVE),
                    scopes=(scope,),
                    operation=operation,
                    content=content,
                    limit=1,
                )
            )
            if held:
                return agent_pb2.RememberResponse(
                    lesson=await self._view(held[0]), created=False, note=CLAIM_NOTE
                )
        row = await service.remember(
            request.content, operation, scope, context=ctx, tags=list(request.tags)
        )
        if row is None:  # pragma: no cover - only in incognito, which this API never asks for
            raise InvalidRecord("nothing was stored", reason="incognito")
        return agent_pb2.RememberResponse(
            lesson=await self._view(row), created=True, note=CLAIM_NOTE
        )

    # -- RecordSituation -------------------------------------------------------------------
    async def RecordSituation(
        self, request: agent_pb2.RecordSituationRequest, context: Any
    ) -> agent_pb2.RecordSituationResponse:
        """Remember a declared blocker as a situation lesson (the same one is refreshed)."""
        if not request.HasField("situation"):
            raise InvalidRecord("a situation is required", reason="bad_situation")
        s = request.situation
        source = SITUATION_SOURCE_FROM_PB.get(s.source, SituationSource.DECLARED)
        # The Situation checks the tool, subject, kind and source; the service refuses the
        # inferred and transient ones (adaptive recovery: only declared facts about the machine).
        situation = Situation(
            tool=s.tool,
            subject=s.subject,
            kind=s.kind,
            source=source,
            interactive=s.interactive,
            env_fingerprint=s.env_fingerprint,
            unblock=s.unblock or None,
            probe=s.probe or None,
        )
        scope = (
            validate_scope(request.scope) if request.scope else self._scope(request.project_digest)
        )
        row = await self._service().record_situation(
            situation, scope, evidence=list(request.evidence_outcome_ids)
        )
        if row is None:  # pragma: no cover - only in incognito, which this API never asks for
            raise InvalidRecord("nothing was stored", reason="incognito")
        return agent_pb2.RecordSituationResponse(lesson=await self._view(row))

    # -- GetLesson -------------------------------------------------------------------------
    async def GetLesson(
        self, request: agent_pb2.GetLessonRequest, context: Any
    ) -> agent_pb2.GetLessonResponse:
        """One lesson as it stands now; NOT_FOUND for an unknown id."""
        if not request.lesson_id:
            raise InvalidRecord("a lesson id is required", reason="no_lesson_id")
        row = await self._store().get_lesson(request.lesson_id)
        return agent_pb2.GetLessonResponse(lesson=await self._view(row))

    # -- ReportUse -------------------------------------------------------------------------
    async def ReportUse(
        self, request: agent_pb2.ReportUseRequest, context: Any
    ) -> agent_pb2.ReportUseResponse:
        """Record which recalled lessons the agent applied (in play) or dismissed."""
        if request.use == agent_pb2.USE_KIND_UNSPECIFIED:
            raise InvalidRecord(
                "say whether the lessons were applied or dismissed", reason="no_use"
            )
        if not request.session_id:
            raise InvalidRecord("a use report needs its session", reason="no_session")
        ids = list(dict.fromkeys(request.lesson_ids))
        found = {r.id for r in await self._store().get_lessons(ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            # All or nothing: no lesson is marked when one id is wrong.
            raise NotFound(f"unknown lessons: {', '.join(missing)}", ids=missing)
        if request.use == agent_pb2.USE_KIND_APPLIED:
            service = self._service()
            for lesson_id in ids:
                await service.report_use(lesson_id, request.session_id)
        return agent_pb2.ReportUseResponse(recorded=len(ids))

    # -- Edit / Retire ---------------------------------------------------------------------
    async def Edit(self, request: agent_pb2.EditRequest, context: Any) -> agent_pb2.EditResponse:
        """Supersede a lesson with edited content, and/or change who it may be shared with."""
        unsupported = [
            name
            for name, given in (
                ("operation", request.HasField("operation")),
                ("scope", request.HasField("scope")),
                ("tags", request.HasField("tags")),
            )
            if given
        ]
        if unsupported:
            # Content and sharing are the user's; the rest comes from outcomes and rules.
            raise InvalidRecord(
                f"a lesson's {', '.join(unsupported)} cannot be edited (only content and access)",
                reason="field_not_editable",
                fields=unsupported,
            )
        access = request.access_level != lessons_pb2.ACCESS_LEVEL_UNSPECIFIED
        if request.recipients and not access:
            raise InvalidRecord(
                "recipients come with access_level PRIVATE", reason="recipients_need_private"
            )
        if not request.HasField("content") and not access:
            raise InvalidRecord("an edit needs new content or access", reason="empty_content")
        row = await self._store().get_lesson(request.lesson_id)
        await self._check_version(row, request.expected_version)
        service = self._service()
        if request.HasField("content"):
            row = await service.edit(row.id, request.content, ACTOR, request.reason)
        if access:
            level = ACCESS_FROM_PB.get(request.access_level)
            if level is None:
                raise InvalidRecord("unknown access level", reason="bad_access_level")
            row = await service.set_access(row.id, level, tuple(request.recipients), who=ACTOR)
        return agent_pb2.EditResponse(lesson=await self._view(row))

    async def Retire(
        self, request: agent_pb2.RetireRequest, context: Any
    ) -> agent_pb2.RetireResponse:
        """Withdraw a lesson; it stays queryable as history."""
        row = await self._store().get_lesson(request.lesson_id)
        await self._check_version(row, request.expected_version)
        retired = await self._service().retire(row.id, ACTOR, request.reason)
        return agent_pb2.RetireResponse(lesson=await self._view(retired))

    # -- History ---------------------------------------------------------------------------
    async def History(
        self, request: agent_pb2.HistoryRequest, context: Any
    ) -> agent_pb2.HistoryResponse:
        """The lesson's event log over its whole supersede chain, oldest first.

        Every version, confirmation, contradiction, import, retirement and operator decision,
        each with its time, actor, confidence before and after, and reason. A row with no
        logged event (stored before the log existed) is described from its own state.
        """
        chain = await self._service().history(request.lesson_id)
        if not chain:
            raise NotFound(f"lesson {request.lesson_id} does not exist", id=request.lesson_id)
        logged = await self._store().lesson_events([r.id for r in chain])
        by_lesson: dict[str, list[LessonEvent]] = {}
        for event in logged:
            by_lesson.setdefault(event.lesson_id, []).append(event)
        entries: list[lessons_pb2.HistoryEntry] = []
        for i, row in enumerate(chain):
            events = by_lesson.get(row.id)
            if events is None:
                entries.extend(described_history(chain, i, self.node_id))
                continue
            record = row.signed_record or compact_json(lesson_record(row, self.node_id))
            for j, event in enumerate(events):
                entries.append(history_entry(event, row, i + 1, record if j == 0 else b""))
        return agent_pb2.HistoryResponse(entries=entries)

    # -- List ------------------------------------------------------------------------------

    async def List(self, request: agent_pb2.ListRequest, context: Any) -> agent_pb2.ListResponse:
        """Lessons matching the filter, confidence first, one page at a time."""
        size = min(request.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        try:
            offset = int(request.page_token) if request.page_token else 0
        except ValueError:
            offset = -1
        if offset < 0:
            raise InvalidRecord("page_token is not one this server issued", reason="bad_page_token")
        # One more than the page tells whether another page follows.
        rows = await self._store().list_lessons(
            lesson_filter(request.filter, limit=size + 1, offset=offset)
        )
        more = len(rows) > size
        views = await self._views(rows[:size])
        return agent_pb2.ListResponse(
            lessons=views, next_page_token=str(offset + size) if more else ""
        )

    # -- Export ----------------------------------------------------------------------------
    def _signed_line(self, row: LessonRow) -> bytes | None:
        """One bundle line for ``row``: its signed bytes, or ``None`` if it cannot be a record.

        A local lesson is signed by the one encoder Publish and Sync use (``sign_lesson``), so
        an exported line and a gossiped record of the same row state are the same bytes.
        """
        if row.signed_record is not None:
            return row.signed_record + b"\n"
        try:
            signed = sign_lesson(row, self._identity)
        except LamarckError as e:
            # A row the record schema cannot express (e.g. an active situation without an
            # outcome behind it) is left out rather than exported as something it is not.
            _log.warning(
                "lesson left out of the export",
                extra={"lesson_id": row.id, "reason": e.reason, "error": str(e)},
            )
            return None
        return signed.raw + b"\n"

    async def Export(
        self, request: agent_pb2.ExportRequest, context: Any
    ) -> AsyncIterator[agent_pb2.ExportResponse]:
        """Stream the bundle of the lessons matching the filter, in whole-line chunks."""
        store = self._store()
        offset, buffer = 0, bytearray()
        while True:
            rows = await store.list_lessons(
                lesson_filter(request.filter, limit=MAX_PAGE_SIZE, offset=offset)
            )
            for row in rows:
                line = self._signed_line(row)
                if line is None:
                    continue
                buffer += line
                if len(buffer) >= EXPORT_CHUNK_BYTES:
                    yield agent_pb2.ExportResponse(jsonl=bytes(buffer))
                    buffer.clear()
            if len(rows) < MAX_PAGE_SIZE:
                break
            offset += MAX_PAGE_SIZE
        if buffer:
            yield agent_pb2.ExportResponse(jsonl=bytes(buffer))

    # -- Import ----------------------------------------------------------------------------
    async def Import(
        self, request_iterator: AsyncIterator[agent_pb2.ImportRequest], context: Any
    ) -> agent_pb2.ImportResponse:
        """Check and store each line of a bundle; one ack per non-blank line."""
        pipeline = self._pipeline()
        dry_run, label = False, ""
        acks: list[records_pb2.RecordAck] = []
        buffer = bytearray()
        index = 0
        # While a line has outgrown the record limit its rest is skipped up to the next "\n".
        oversized = False
        limit = DEFAULT_LIMITS.max_record_bytes
        first = True
        ahead: Prefetch | None = None
        try:
            async for part in request_iterator:
                which = part.WhichOneof("part")
                if which == "options":
                    if not first:
                        raise InvalidRecord(
                            "import options must come first, once", reason="options_not_first"
                        )
                    dry_run, label = part.options.dry_run, part.options.source_label
                    first = False
                    continue
                first = False
                if which != "jsonl":
                    continue
                if ahead is None:
                    # A dry run embeds nothing: nothing to embed ahead.
                    primed = None if dry_run else self._primed
                    params = primed.params if primed is not None else None
                    ahead = Prefetch.ahead_of(pipeline, primed, params)
                buffer += part.jsonl
                # This part's complete lines, embedded a chunk ahead of their imports.
                lines: list[tuple[int, bytes]] = []
                while True:
                    cut = buffer.find(b"\n")
                    if cut < 0:
                        break
                    line = bytes(buffer[:cut])
                    del buffer[: cut + 1]
                    if oversized:
                        oversized = False
                    else:
                        lines.append((index, line.rstrip(b"\r")))
                    index += 1
                ahead.add([line for _, line in lines if line.strip()])
                for at, line in lines:
                    await ahead.ready(line)
                    ack = await self._import_line(pipeline, at, line, dry_run, label)
                    if ack is not None:
                        acks.append(ack)
                if len(buffer) > limit and not oversized:
                    acks.append(self._too_large(index, bytes(buffer)))
                    oversized = True
                    buffer.clear()
                elif oversized:
                    buffer.clear()
            if buffer and not oversized:
                ack = await self._import_line(pipeline, index, bytes(buffer), dry_run, label)
                if ack is not None:
                    acks.append(ack)
        finally:
            if ahead is not None:
                await ahead.close()
        return agent_pb2.ImportResponse(acks=acks)

    @staticmethod
    def _too_large(index: int, head: bytes) -> records_pb2.RecordAck:
        return records_pb2.RecordAck(
            index=index,
            record_hash=sha256_hex(head),
            status=records_pb2.ACK_STATUS_REJECTED,
            reason="too_large",
        )

    async def _import_line(
        self, pipeline: ImportPipeline, index: int, line: bytes, dry_run: bool, label: str
    ) -> records_pb2.RecordAck | None:
        """Hand one bundle line to the import pipeline (source ``bundle``); its ack."""
        raw = line.rstrip(b"\r")
        if not raw.strip():
            return None
        record_hash = sha256_hex(raw)
        try:
            result = await pipeline.import_record(
                raw, source=ImportSource.BUNDLE, label=label, dry_run=dry_run
            )
        except StoreUnavailable as e:
            # Nothing was decided for this line: import the bundle again later.
            return records_pb2.RecordAck(
                index=index,
                record_hash=record_hash,
                status=records_pb2.ACK_STATUS_DEFERRED,
                reason=e.reason,
            )
        return records_pb2.RecordAck(
            index=index,
            record_hash=record_hash,
            status=IMPORT_TO_ACK[result.outcome],
            reason=result.reason,
        )


def make_agent_servicer(
    identity: NodeIdentity,
    clock: Clock,
    embedder: Embedder,
    *,
    store: Ready[LessonStore],
    lessons: Ready[LessonService],
    network: Ready[NetworkSide],
    book: Ready[ReputationSink],
) -> AgentServicer:
    """The daemon's AgentService over the parts it publishes once started.

    The store, the lesson service and the import pipeline refuse ``starting`` until the node
    serves (the pipeline also until the network side has built it); the reputation ``book``
    and the ``network`` side are read as they are (``None`` while there is none).
    """

    def sharing() -> SharingState | None:
        side = network.peek()
        return None if side is None else SharingState(side.params, incognito=side.incognito)

    def voters(reality: Sequence[ReputationEvent]) -> Sequence[ReputationEvent]:
        side = network.peek()
        return () if side is None else voter_events_for_reality(reality, side.quorum.certificate)

    async def attester(
        outcome: Outcome, reality: Sequence[ReputationEvent]
    ) -> Sequence[ReputationEvent]:
        # The network side's attestations, once sharing started (else nothing).
        side = network.peek()
        return () if side is None else await side.attestations.on_outcome(outcome, reality)

    return AgentServicer(
        lessons.get,
        identity,
        clock,
        store=store.get,
        pipeline=serving_pipeline(store, network),
        sink=book.peek,
        sharing=sharing,
        voters=voters,
        attester=attester,
        primed=embedder if isinstance(embedder, PrimedEmbedder) else None,
    )
