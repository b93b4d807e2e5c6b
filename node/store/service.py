"""``LessonService``: the rules of ``lamarck.node.learning`` applied over a ``LessonStore``.

The service is the only writer of lessons and outcomes. Every rule it applies is a pure function
in ``node/learning``; here they meet the store, the embedder and the clock:

* ``record_outcome`` stores the outcome derived from the run's tool record and checks, then
  attributes it to the in-play lessons (confirm / contradict by operation key, weighted by
  context similarity), promotes or demotes scopes, and writes mechanical lessons;
* ``remember`` stores a model's claim at the claimed level, never shown in a prompt;
* ``write_lesson`` refuses evidence that is not a stored outcome (``EvidenceError``), or that a
  lesson the user retired cites;
* ``recall`` returns at most five active lessons and the formatted "Lessons:" section, and
  remembers them as in play for the session, so the outcome can be attributed;
* ``edit`` / ``retire`` supersede, never delete; ``hard_delete`` is an explicit user action;
* ``reconcile`` decays unused lessons, retires those below the floor, enforces the cap.

Every write is scanned for credentials (``SecretDetected``); an incognito call records nothing.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from lamarck.errors import (
    ConflictError,
    EvidenceError,
    InvalidRecord,
    PolicyRejected,
    SecretDetected,
)
from lamarck.node.importing.reality import reality_events
from lamarck.node.learning import confidence as conf
from lamarck.node.learning.attribution import Attribution, Effect, attribute
from lamarck.node.learning.context_match import context_similarity
from lamarck.node.learning.mechanical import (
    MechanicalLesson,
    avoided_operation,
    lesson_target,
    mechanical_lessons,
)
from lamarck.node.learning.outcomes import (
    CheckRun,
    StepResult,
    ToolStep,
    derive_verdict,
)
from lamarck.node.learning.params import LearningParams
from lamarck.node.learning.prompt import (
    PromptSection,
    TokenCounter,
    build_lessons_section,
    conservative_token_bound,
)
from lamarck.node.learning.ranking import Candidate, idle_days, rank
from lamarck.node.learning.scopes import (
    after_confirmation,
    after_contradiction,
    project_scope,
    recall_scopes,
    validate_scope,
)
from lamarck.node.learning.secrets import scan_for_secrets
from lamarck.node.learning.situations import (
    Escalate,
    Note,
    Probe,
    Proceed,
    Situation,
    SituationCall,
    SituationLesson,
    SituationSource,
    decide_before_dispatch,
    situation_signature,
    validate_for_learning,
)
from lamarck.node.store.port import (
    Category,
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
    LessonStore,
    OutcomeRow,
)
from lamarck.proto.clock import Clock
from lamarck.proto.identity import is_node_id
from lamarck.proto.limits import DEFAULT_LIMITS
from lamarck.proto.outcome import Outcome
from lamarck.proto.timefmt import parse_ts
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.transfer import TransferParams, reality_tested_confidence

__all__ = [
    "AGENT_ACTOR",
    "LOOP_ACTOR",
    "RETIRED_PREFIX",
    "EmbedderLike",
    "LessonChange",
    "LessonService",
    "OutcomeResult",
    "RecallResult",
    "ReconcileResult",
]

#: ``superseded_by`` of a lesson a user (or tool) retired: ``retired:<who>``.
RETIRED_PREFIX = "retired:"
#: Who the event log names for the learning loop's own changes, and for the local agent's.
LOOP_ACTOR = "loop"
AGENT_ACTOR = "agent"
_SECONDS_PER_DAY = 86_400.0
# Statuses attribution may move: a claim gains evidence by its first confirmation.
_LIVE = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)
#: Who a lesson may be shared with (the memory record's ``access_level``).
ACCESS_LEVELS = ("public", "trusted", "private")


class EmbedderLike(Protocol):
    """What the service needs from an embedder (``lamarck.node.embedding.Embedder`` fits)."""

    @property
    def dim(self) -> int:
        """Number of dimensions of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` as a float32 array of shape ``(len(texts), dim)``."""
        ...


@dataclass(frozen=True, slots=True)
class LessonChange:
    """One change a service call made to one lesson."""

    lesson_id: str
    change: str  # confirmed | contradicted | retired | promoted | demoted | created | superseded
    confidence_before: float | None = None
    confidence_after: float | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class OutcomeResult:
    """What ``record_outcome`` did: whether it stored the outcome, and every lesson change."""

    outcome_id: str
    recorded: bool
    passed: bool = False
    teaches: bool = False
    attributions: tuple[Attribution, ...] = ()
    changes: tuple[LessonChange, ...] = ()
    #: Reputation events for the sources of the imported lessons this outcome tested
    #: (``lamarck.node.importing.reality``); the node emits them to its reputation book.
    reality: tuple[ReputationEvent, ...] = ()

    def ids(self, change: str) -> list[str]:
        """Lesson ids with the given change, in order."""
        return [c.lesson_id for c in self.changes if c.change == change]


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Plan-time recall: the lessons for the prompt and the formatted section.

    ``claimed`` holds claimed lessons the model asked for explicitly: returned (and in play, so
    a confirmation can give them evidence), never part of ``section``.
    """

    lessons: tuple[LessonRow, ...]
    section: PromptSection
    claimed: tuple[LessonRow, ...] = ()


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """What a reconcile pass changed."""

    decayed: tuple[str, ...] = ()
    retired: tuple[str, ...] = ()
    capped: tuple[str, ...] = ()


@dataclass
class _Session:
    """Lessons in play for a session's current turn, and the context recall was asked in."""

    in_play: dict[str, None] = field(default_factory=dict)  # ordered set
    context: dict[str, Any] = field(default_factory=dict)


def _outcome_steps(outcome: Outcome) -> list[ToolStep]:
    """The tool record of a proto outcome as pure steps."""
    return [
        ToolStep(
            operation=s.operation_key,
            result=StepResult(s.outcome),
            target=s.target or "",
        )
        for s in outcome.approach
    ]


def _outcome_checks(outcome: Outcome) -> list[CheckRun]:
    """The check runs of a proto outcome as pure check runs."""
    return [
        CheckRun(
            label=c.label,
            kind=c.kind,
            order=c.order,
            ran=c.ran,
            failed=c.failed,
            target=c.target,
            mutated_after=c.mutated_after,
        )
        for c in outcome.checks
    ]


def _outcome_texts(outcome: Outcome) -> list[str]:
    """Every free-text field of an outcome, for the secret scan."""
    texts = [outcome.session_id, outcome.goal_digest, outcome.memory_context or ""]
    for step in outcome.approach:
        texts.extend((step.operation_key, step.target or ""))
    for check in outcome.checks:
        texts.extend((check.label, check.target))
    return texts


def _context_texts(context: Mapping[str, Any] | None) -> list[str]:
    """String leaves of a context mapping, for the secret scan."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                out.append(str(k))
                walk(v)
        elif isinstance(value, list | tuple | set | frozenset):
            for v in value:
                walk(v)

    walk(context or {})
    return out


class LessonService:
    """Applies the learning rules over a ``LessonStore``; see the module docstring."""

    def __init__(
        self,
        store: LessonStore,
        embedder: EmbedderLike,
        clock: Clock,
        params: LearningParams | None = None,
        *,
        rng: random.Random | None = None,
        token_counter: TokenCounter = conservative_token_bound,
        transfer: TransferParams | None = None,
    ) -> None:
        self._store = store
        self._transfer = transfer or TransferParams()
        self._embedder = embedder
        self._clock = clock
        self._params = params or LearningParams()
        self._rng = rng or random.Random()
        self._count_tokens = token_counter
        self._sessions: dict[str, _Session] = {}
        self._last_reconcile: datetime | None = None

    @property
    def params(self) -> LearningParams:
        """The parameters this service applies."""
        return self._params

    # -- helpers ---------------------------------------------------------------------------
    def _new_id(self) -> str:
        """A uuid4 from the injected random source."""
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _scan(self, texts: Iterable[str], what: str) -> None:
        """Refuse a write that carries anything that looks like a credential."""
        kinds: builtins.list[str] = []
        for text in texts:
            for kind in scan_for_secrets(text, self._params.secrets):
                if kind not in kinds:
                    kinds.append(kind)
        if kinds:
            raise SecretDetected(
                f"{what} looks like it carries a credential ({', '.join(kinds)})", kinds=kinds
            )

    def _check_content(self, content: str, operation: str) -> str:
        """Content must be non-empty and within the record limit; operation non-empty."""
        text = content.strip()
        if not text:
            raise InvalidRecord("a lesson needs content", reason="empty_content")
        if len(text.encode("utf-8")) > self._params.lesson.max_content_bytes:
            raise InvalidRecord("lesson content is too long", reason="content_too_long")
        if not operation.strip():
            raise InvalidRecord("a lesson needs an operation key", reason="empty_operation")
        return text

    async def _embed(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one text off the event loop (a real model is CPU-bound and blocking)."""
        vectors = await asyncio.to_thread(self._embedder.embed, [text])
        return np.asarray(vectors, dtype=np.float32).reshape(-1)

    def _session(self, session_id: str) -> _Session:
        """The in-play record of a session, created on first use."""
        return self._sessions.setdefault(session_id, _Session())

    def _cap_evidence(self, evidence: Iterable[str]) -> tuple[str, ...]:
        """Unique outcome ids, the newest kept when over the cap."""
        unique = tuple(dict.fromkeys(evidence))
        return unique[-self._params.lesson.max_evidence :]

    async def _log(
        self, changes: Sequence[LessonChange], actor: str, *, outcome_id: str = "", reason: str = ""
    ) -> None:
        """Append ``changes`` to the lesson event log (``lessons history`` reads it)."""
        now = self._clock.now()
        await self._store.append_events(
            [
                LessonEvent(
                    lesson_id=c.lesson_id,
                    at=now,
                    kind=c.change,
                    actor=actor,
                    confidence_before=c.confidence_before,
                    confidence_after=c.confidence_after,
                    reason=reason or c.detail,
                    outcome_id=outcome_id,
                )
                for c in changes
            ]
        )

    async def _insert_new(
        self,
        *,
        content: str,
        operation: str,
        scope: str,
        evidence: tuple[str, ...],
        context: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        category: Category = Category.LESSON,
        situation: dict[str, Any] | None = None,
        confirmed_projects: tuple[str, ...] = (),
        supersedes: str | None = None,
    ) -> LessonRow:
        """Build, embed and store a new lesson (claimed if it has no evidence)."""
        now = self._clock.now()
        has_evidence = bool(evidence)
        row = LessonRow(
            id=self._new_id(),
            content=content,
            operation=operation.strip(),
            scope=scope,
            status=LessonStatus.ACTIVE if has_evidence else LessonStatus.CLAIMED,
            confidence=conf.initial_confidence(has_evidence, self._params.confidence),
            created_at=now,
            updated_at=now,
            category=category,
            evidence=self._cap_evidence(evidence),
            confirmed_projects=confirmed_projects,
            context=dict(context or {}),
            situation=situation,
            tags=tuple(tags),
            supersedes=supersedes,
            embedding=await self._embed(content),
        )
        if supersedes is None:
            await self._store.insert_lesson(row)
        else:
            await self._store.supersede(supersedes, row)
        return row

    # -- outcomes --------------------------------------------------------------------------
    async def record_outcome(
        self,
        outcome: Outcome,
        *,
        incognito: bool = False,
        context: Mapping[str, Any] | None = None,
    ) -> OutcomeResult:
        """Store the outcome, attribute it to in-play lessons, and learn what it proves.

        ``context`` is the run's context (domain, environment, tools, ...); without it the
        context recall was asked in for this session is used. Incognito records nothing.
        """
        if incognito:
            self._sessions.pop(outcome.session_id, None)
            return OutcomeResult(outcome.id, recorded=False)
        self._scan([*_outcome_texts(outcome), *_context_texts(context)], "outcome")
        verdict = derive_verdict(
            _outcome_checks(outcome),
            claim_ok=outcome.claim_ok,
            injected_instruction=outcome.injected_instruction,
        )
        # Never more optimistic than either the loop's own verdict or the checks.
        verdict = dataclasses.replace(verdict, passed=verdict.passed and outcome.passed)
        await self._store.insert_outcome(
            OutcomeRow(
                id=outcome.id,
                session_id=outcome.session_id,
                turn_index=outcome.turn_index,
                project=outcome.project,
                passed=verdict.passed,
                claim_ok=outcome.claim_ok,
                created_at=parse_ts(outcome.created_at),
                record=outcome.to_obj(),
            )
        )
        session = self._sessions.pop(outcome.session_id, _Session())
        if not verdict.teaches:
            return OutcomeResult(outcome.id, recorded=True, passed=verdict.passed)
        run_context = dict(context) if context is not None else session.context
        steps = _outcome_steps(outcome)
        in_play_ids = list(dict.fromkeys([*session.in_play, *outcome.in_play]))
        lessons = [
            row
            for row in await self._store.get_lessons(in_play_ids)
            if row.status in _LIVE and row.category is Category.LESSON
        ]
        attributions = attribute([(r.id, r.operation) for r in lessons], steps, verdict)
        changes: builtins.list[LessonChange] = []
        confirmed_now: set[str] = set()
        by_id = {r.id: r for r in lessons}
        for att in attributions:
            row = by_id[att.lesson_id]
            if att.effect is Effect.CONFIRMED:
                changes.extend(await self._confirm(row, outcome, run_context))
                confirmed_now.add(row.id)
            elif att.effect is Effect.CONTRADICTED:
                changes.extend(await self._contradict(row, outcome, run_context))
        for lesson in mechanical_lessons(steps, verdict):
            changes.extend(
                await self._learn_mechanical(lesson, outcome, run_context, confirmed_now)
            )
        await self._log(changes, LOOP_ACTOR, outcome_id=outcome.id)
        return OutcomeResult(
            outcome.id,
            recorded=True,
            passed=verdict.passed,
            teaches=True,
            attributions=tuple(attributions),
            changes=tuple(changes),
            reality=reality_events(
                lessons, attributions, outcome_id=outcome.id, at=self._clock.now()
            ),
        )

    async def _confirm(
        self, row: LessonRow, outcome: Outcome, run_context: Mapping[str, Any]
    ) -> builtins.list[LessonChange]:
        """An attributed success: step up by context band, gain evidence, maybe promote."""
        similarity = context_similarity(row.context, run_context, self._params.context)
        after = conf.confirm(row.confidence, similarity, self._params.confidence)
        if row.imported_from is not None and row.confirmations == 0:
            # First local proof of an imported lesson: the transfer table's "reality-tested
            # after import" row; whichever rule moves it further applies.
            original = row.original_confidence
            tested = reality_tested_confidence(
                row.confidence, row.confidence if original is None else original, self._transfer
            )
            after = max(after, tested)
        scope = after_confirmation(
            row.scope, row.confirmed_projects, outcome.project, self._params.lesson
        )
        now = self._clock.now()
        updated = dataclasses.replace(
            row,
            confidence=after,
            status=LessonStatus.ACTIVE,
            evidence=self._cap_evidence((*row.evidence, outcome.id)),
            confirmations=row.confirmations + 1,
            confirmed_projects=scope.confirmed_projects,
            scope=scope.scope,
            last_used=now,
            updated_at=now,
            embedding=None,
        )
        await self._store.update_lesson(updated)
        changes = [
            LessonChange(row.id, "confirmed", row.confidence, after, f"similarity={similarity:.2f}")
        ]
        if scope.changed:
            changes.append(LessonChange(row.id, "promoted", after, after, scope.scope))
        return changes

    async def _contradict(
        self, row: LessonRow, outcome: Outcome, run_context: Mapping[str, Any]
    ) -> builtins.list[LessonChange]:
        """An attributed failure: step down by context band, maybe demote, maybe retire."""
        similarity = context_similarity(row.context, run_context, self._params.context)
        after = conf.contradict(row.confidence, similarity, self._params.confidence)
        scope = after_contradiction(row.scope, row.confirmed_projects, outcome.project)
        retire = conf.should_retire(after, self._params.confidence)
        now = self._clock.now()
        updated = dataclasses.replace(
            row,
            confidence=after,
            contradictions=row.contradictions + 1,
            scope=scope.scope,
            confirmed_projects=scope.confirmed_projects,
            status=LessonStatus.RETIRED if retire else row.status,
            last_used=now,
            updated_at=now,
            embedding=None,
        )
        await self._store.update_lesson(updated)
        changes = [
            LessonChange(
                row.id, "contradicted", row.confidence, after, f"similarity={similarity:.2f}"
            )
        ]
        if scope.changed:
            changes.append(LessonChange(row.id, "demoted", after, after, scope.scope))
        if retire:
            changes.append(LessonChange(row.id, "retired", after, after, "below_retire_level"))
        return changes

    async def _learn_mechanical(
        self,
        lesson: MechanicalLesson,
        outcome: Outcome,
        run_context: Mapping[str, Any],
        confirmed_now: set[str],
    ) -> builtins.list[LessonChange]:
        """Write "prefer B over A for T"; re-proving an existing one confirms it instead.

        A stored lesson saying the opposite for the same target is superseded by the new one,
        so the history holds both lessons and both outcomes.
        """
        scope = project_scope(outcome.project)
        rows = await self._store.list_lessons(
            LessonFilter(
                statuses=None,
                scopes=recall_scopes(scope),
                category=Category.LESSON,
                limit=self._params.lesson.max_active_per_scope * 2,
            )
        )
        live = [r for r in rows if r.status in _LIVE]
        same = [
            r
            for r in live
            if r.operation == lesson.prefer
            and avoided_operation(r.tags) == lesson.avoid
            and lesson_target(r.tags) == lesson.target
        ]
        if same:
            if same[0].id in confirmed_now:
                return []
            return await self._confirm(same[0], outcome, run_context)
        retired_evidence = await self._store.retired_evidence_ids()
        if outcome.id in retired_evidence:
            return []
        opposite = [
            r
            for r in live
            if r.operation == lesson.avoid
            and avoided_operation(r.tags) == lesson.prefer
            and lesson_target(r.tags) == lesson.target
        ]
        supersedes = opposite[0].id if opposite else None
        new = await self._insert_new(
            content=lesson.content,
            operation=lesson.prefer,
            scope=scope,
            evidence=(outcome.id,),
            context=run_context,
            tags=lesson.tags,
            confirmed_projects=(outcome.project,),
            supersedes=supersedes,
        )
        changes = [LessonChange(new.id, "created", None, new.confidence, lesson.content)]
        if supersedes is not None:
            changes.append(LessonChange(supersedes, "superseded", None, None, new.id))
        return changes

    # -- writing lessons -------------------------------------------------------------------
    async def remember(
        self,
        content: str,
        operation: str,
        scope: str,
        *,
        context: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        incognito: bool = False,
    ) -> LessonRow | None:
        """A model's claim: stored claimed at the claimed level, never shown in a prompt.

        Returns ``None`` in incognito (nothing is recorded).
        """
        return await self.write_lesson(
            content, operation, scope, evidence=(), context=context, tags=tags, incognito=incognito
        )

    async def write_lesson(
        self,
        content: str,
        operation: str,
        scope: str,
        *,
        evidence: Sequence[str] = (),
        context: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        incognito: bool = False,
    ) -> LessonRow | None:
        """Store a lesson. With evidence it is born active; without it is only a claim.

        Refuses with ``EvidenceError`` evidence naming no stored outcome (``unknown_evidence``),
        an outcome that teaches nothing (``evidence_teaches_nothing``), or an outcome a lesson
        retired by the user cites (``retired_evidence``).
        """
        if incognito:
            return None
        text = self._check_content(content, operation)
        validate_scope(scope)
        self._scan([text, operation, *tags, *_context_texts(context)], "lesson")
        ids = tuple(dict.fromkeys(e.strip() for e in evidence))
        projects = await self._check_evidence(ids) if ids else ()
        row = await self._insert_new(
            content=text,
            operation=operation,
            scope=scope,
            evidence=ids,
            context=context,
            tags=tags,
            # The projects whose outcomes proved it count toward promotion like confirmations.
            confirmed_projects=projects,
        )
        await self._log([LessonChange(row.id, "created", None, row.confidence)], AGENT_ACTOR)
        return row

    async def _check_evidence(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        """Evidence must be stored outcomes that teach, none cited by a user-retired lesson.

        Returns the distinct projects of those outcomes, in evidence order.
        """
        existing = await self._store.existing_outcome_ids(ids)
        missing = [i for i in ids if i not in existing]
        if missing:
            raise EvidenceError(
                f"evidence names outcomes that do not exist: {', '.join(missing)}",
                reason="unknown_evidence",
                ids=missing,
            )
        retired = await self._store.retired_evidence_ids()
        reused = [i for i in ids if i in retired]
        if reused:
            raise EvidenceError(
                "evidence was cited by a lesson the user retired; it is not re-learned",
                reason="retired_evidence",
                ids=reused,
            )
        projects: dict[str, None] = {}
        for outcome_id in ids:
            row = await self._store.get_outcome(outcome_id)
            if not row.claim_ok or row.record.get("injected_instruction", False):
                raise EvidenceError(
                    f"outcome {outcome_id} teaches nothing",
                    reason="evidence_teaches_nothing",
                    ids=[outcome_id],
                )
            projects[row.project] = None
        return tuple(projects)

    # -- recall ----------------------------------------------------------------------------
    async def recall(
        self,
        task: str,
        context: Mapping[str, Any] | None,
        scope: str,
        session_id: str,
        *,
        include_claimed: bool = False,
        incognito: bool = False,
    ) -> RecallResult:
        """Plan-time recall: the best active lessons for ``task`` and the "Lessons:" section.

        Returned lessons are recorded as in play for ``session_id`` (and as used), so the next
        ``record_outcome`` of that session can attribute them. In incognito nothing is recorded.
        """
        lp = self._params.lesson
        query = await self._embed(task)
        statuses = (LessonStatus.ACTIVE, LessonStatus.CLAIMED) if include_claimed else None
        hits = await self._store.search(
            query,
            lp.candidate_pool,
            LessonFilter(
                statuses=statuses or (LessonStatus.ACTIVE,),
                scopes=recall_scopes(scope),
                category=Category.LESSON,
            ),
        )
        now = self._clock.now()
        hits = [h for h in hits if h.similarity >= lp.min_similarity]
        rows = {h.lesson.id: h.lesson for h in hits}
        ranked = rank(
            [
                Candidate(
                    key=h.lesson.id,
                    cosine=h.similarity,
                    context_match=context_similarity(
                        h.lesson.context, context, self._params.context
                    ),
                    confidence=h.lesson.confidence,
                    idle_days=idle_days(now, h.lesson.last_used, h.lesson.created_at),
                )
                for h in hits
            ],
            lp,
        )
        active = [rows[r.key] for r in ranked if rows[r.key].status is LessonStatus.ACTIVE]
        claimed = [rows[r.key] for r in ranked if rows[r.key].status is LessonStatus.CLAIMED]
        section = build_lessons_section([(r.id, r.content) for r in active], lp, self._count_tokens)
        chosen = [rows[i] for i in section.included]
        claimed = claimed[: lp.recall_limit]
        if not incognito:
            session = self._session(session_id)
            session.context = dict(context or {})
            for row in [*chosen, *claimed]:
                session.in_play[row.id] = None
                await self._mark_used(row, now)
        return RecallResult(tuple(chosen), section, tuple(claimed))

    async def _mark_used(self, row: LessonRow, now: datetime) -> None:
        """Record a use: the lesson is not idle in the next reconcile pass."""
        await self._store.update_lesson(
            dataclasses.replace(
                row, last_used=now, use_count=row.use_count + 1, updated_at=now, embedding=None
            )
        )

    async def report_use(self, lesson_id: str, session_id: str | None = None) -> LessonRow:
        """The agent used a lesson (e.g. returned by its own recall tool): in play and used."""
        row = await self._store.get_lesson(lesson_id)
        if session_id is not None:
            self._session(session_id).in_play[row.id] = None
        await self._mark_used(row, self._clock.now())
        return await self._store.get_lesson(lesson_id)

    async def check_operation(self, op_key: str, scope: str) -> str | None:
        """Decision-time check: the lesson on file for a risky operation, as one line, or None.

        Never blocks: the model keeps the decision, the evidence is put in front of it.
        """
        key = op_key.strip()
        rows = await self._store.list_lessons(
            LessonFilter(
                scopes=recall_scopes(scope),
                limit=self._params.lesson.max_active_per_scope * 2,
            )
        )
        hits = [
            r
            for r in rows
            if r.operation == key
            or avoided_operation(r.tags) == key
            or (r.situation is not None and r.situation.get("tool") == key)
        ]
        if not hits:
            return None
        best = hits[0]  # list order: highest confidence first
        line = " ".join(best.content.split())
        return f"A lesson on file for `{key}` (confidence {best.confidence:.2f}): {line}"

    # -- maintenance -----------------------------------------------------------------------
    async def edit(self, lesson_id: str, new_content: str, who: str, reason: str = "") -> LessonRow:
        """Supersede a lesson with edited content; the new row inherits evidence and confidence.

        ``reason`` (free text) is kept in the event log with ``who``.
        """
        old = await self._store.get_lesson(lesson_id)
        if old.status not in _LIVE:
            raise ConflictError(
                f"lesson {lesson_id} is {old.status.value}", reason="not_live", id=lesson_id
            )
        text = self._check_content(new_content, old.operation)
        self._scan([text, who], "lesson edit")
        now = self._clock.now()
        new = dataclasses.replace(
            old,
            id=self._new_id(),
            content=text,
            created_at=now,
            updated_at=now,
            superseded_by=None,
            supersedes=old.id,
            tags=tuple(dict.fromkeys((*old.tags, f"edited-by:{who}"))),
            embedding=await self._embed(text),
        )
        await self._store.supersede(old.id, new)
        await self._log(
            [
                LessonChange(old.id, "superseded", old.confidence, old.confidence, new.id),
                LessonChange(new.id, "edited", old.confidence, new.confidence, reason),
            ],
            who,
        )
        return await self._store.get_lesson(new.id)

    async def set_access(
        self,
        lesson_id: str,
        access_level: str,
        recipients: Sequence[str] = (),
        *,
        who: str = AGENT_ACTOR,
    ) -> LessonRow:
        """Say who an own lesson may be shared with; the row changes in place.

        ``public``: every peer; ``trusted``: peers at or above the trusted threshold;
        ``private``: only ``recipients`` (node ids, at least one). Moving ``updated_at`` makes
        the next publication a newer version of the same record, so peers replace their copy;
        a copy a peer already holds cannot be called back.
        """
        if access_level not in ACCESS_LEVELS:
            raise InvalidRecord(
                f"access level must be one of {', '.join(ACCESS_LEVELS)}",
                reason="bad_access_level",
            )
        named = tuple(dict.fromkeys(r.strip() for r in recipients))
        if access_level == "private":
            if not named:
                raise InvalidRecord(
                    "a private lesson must name its recipients", reason="no_recipients"
                )
            bad = [r for r in named if not is_node_id(r)]
            if bad:
                raise InvalidRecord(
                    f"not node ids: {', '.join(bad)}", reason="bad_recipient", ids=bad
                )
            if len(named) > DEFAULT_LIMITS.max_list_items:
                raise InvalidRecord(
                    f"at most {DEFAULT_LIMITS.max_list_items} recipients", reason="too_large"
                )
        elif named:
            raise InvalidRecord(
                "recipients are only meaningful for a private lesson",
                reason="recipients_need_private",
            )
        row = await self._store.get_lesson(lesson_id)
        if row.imported_from is not None:
            # Who may see an imported lesson is its source's decision, signed into the record.
            raise PolicyRejected(
                f"lesson {lesson_id} was imported from {row.imported_from}",
                reason="imported_lesson",
            )
        if row.status not in _LIVE:
            raise ConflictError(
                f"lesson {lesson_id} is {row.status.value}", reason="not_live", id=lesson_id
            )
        await self._store.update_lesson(
            dataclasses.replace(
                row,
                access_level=access_level,
                recipients=named,
                updated_at=self._clock.now(),
                embedding=None,
            )
        )
        detail = f"access {access_level}" + (f" to {', '.join(named)}" if named else "")
        await self._log(
            [LessonChange(row.id, "edited", row.confidence, row.confidence, detail)], who
        )
        return await self._store.get_lesson(lesson_id)

    async def retire(self, lesson_id: str, who: str, reason: str = "") -> LessonRow:
        """Retire a lesson (``superseded_by = 'retired:<who>'``): kept, never re-learned.

        ``reason`` (free text) is kept in the event log with ``who``.
        """
        who = who.strip()
        if not who or any(c.isspace() for c in who):
            raise InvalidRecord("retire needs a single-word actor", reason="bad_actor")
        row = await self._store.get_lesson(lesson_id)
        if row.superseded_by is not None:
            raise ConflictError(
                f"lesson {lesson_id} is already superseded or retired",
                reason="already_superseded",
                id=lesson_id,
            )
        now = self._clock.now()
        await self._store.update_lesson(
            dataclasses.replace(
                row,
                status=LessonStatus.RETIRED,
                superseded_by=f"{RETIRED_PREFIX}{who}",
                updated_at=now,
                embedding=None,
            )
        )
        await self._log(
            [LessonChange(row.id, "retired", row.confidence, row.confidence)], who, reason=reason
        )
        return await self._store.get_lesson(lesson_id)

    async def history(self, lesson_id: str) -> builtins.list[LessonRow]:
        """Every version of a lesson, oldest first (the supersede chain)."""
        return await self._store.history(lesson_id)

    async def list(
        self,
        *,
        scope: str | None = None,
        statuses: tuple[LessonStatus, ...] | None = (LessonStatus.ACTIVE,),
        category: Category | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[LessonRow]:
        """Lessons for the user to see, highest confidence first."""
        scopes = (validate_scope(scope),) if scope is not None else None
        return await self._store.list_lessons(
            LessonFilter(
                statuses=statuses, scopes=scopes, category=category, limit=limit, offset=offset
            )
        )

    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson for good. Only for an explicit user action; rules never call it."""
        await self._store.hard_delete(lesson_id)

    async def _all(self, statuses: tuple[LessonStatus, ...]) -> builtins.list[LessonRow]:
        """Every lesson with one of ``statuses``, paged through the store."""
        page = self._params.lesson.max_active_per_scope
        out: builtins.list[LessonRow] = []
        offset = 0
        while True:
            rows = await self._store.list_lessons(
                LessonFilter(statuses=statuses, limit=page, offset=offset)
            )
            out.extend(rows)
            if len(rows) < page:
                return out
            offset += page

    async def reconcile(self) -> ReconcileResult:
        """Decay unused lessons, retire those below the level, enforce the per-scope cap.

        A lesson counts as unused if it was not used since the previous pass (or, in a first
        pass, within ``unused_window_days``). Retired and capped rows are kept, out of every
        active query; their evidence stays learnable (only a user's retirement blocks it).
        """
        cp = self._params.confidence
        now = self._clock.now()
        since = self._last_reconcile
        if since is None:
            since = now - timedelta(days=cp.unused_window_days)
        decayed: builtins.list[str] = []
        retired: builtins.list[str] = []
        changes: builtins.list[LessonChange] = []
        for row in await self._all(_LIVE):
            if row.last_used is not None and row.last_used > since:
                continue
            touched = max(t for t in (row.last_used, row.updated_at, row.created_at) if t)
            idle = max(0.0, (now - touched).total_seconds() / _SECONDS_PER_DAY)
            after = conf.decay_unused(row.confidence, idle, cp)
            retire = conf.should_retire(after, cp)
            await self._store.update_lesson(
                dataclasses.replace(
                    row,
                    confidence=after,
                    status=LessonStatus.RETIRED if retire else row.status,
                    updated_at=now,
                    embedding=None,
                )
            )
            decayed.append(row.id)
            changes.append(LessonChange(row.id, "decayed", row.confidence, after, "unused"))
            if retire:
                retired.append(row.id)
                changes.append(LessonChange(row.id, "retired", after, after, "below_retire_level"))
        capped = await self._enforce_cap(now)
        changes.extend(LessonChange(c, "superseded", None, None, "cap") for c in capped)
        await self._log(changes, LOOP_ACTOR)
        self._last_reconcile = now
        return ReconcileResult(tuple(decayed), tuple(retired), tuple(capped))

    async def _enforce_cap(self, now: datetime) -> builtins.list[str]:
        """Supersede (by nothing) the lowest-confidence active lessons beyond each scope's cap."""
        cap = self._params.lesson.max_active_per_scope
        by_scope: dict[str, builtins.list[LessonRow]] = {}
        for row in await self._all((LessonStatus.ACTIVE,)):
            if row.category is Category.LESSON:
                by_scope.setdefault(row.scope, []).append(row)
        capped: builtins.list[str] = []
        for rows in by_scope.values():
            # Store order is confidence desc, newest first: the tail is what goes.
            for row in rows[cap:]:
                await self._store.update_lesson(
                    dataclasses.replace(
                        row, status=LessonStatus.SUPERSEDED, updated_at=now, embedding=None
                    )
                )
                capped.append(row.id)
        return capped

    # -- situations ------------------------------------------------------------------------
    async def record_situation(
        self,
        situation: Situation,
        scope: str,
        *,
        evidence: Sequence[str] = (),
        incognito: bool = False,
    ) -> LessonRow | None:
        """Remember a declared blocker after the turn escalated or the user answered.

        Inferred situations, injected instructions and transient kinds are refused
        (``InvalidRecord``); the same signature already on file is refreshed, not duplicated.
        """
        if incognito:
            return None
        validate_for_learning(situation)
        validate_scope(scope)
        self._scan(
            [situation.tool, situation.subject, situation.unblock or "", situation.probe or ""],
            "situation",
        )
        ids = tuple(dict.fromkeys(evidence))
        if ids:
            await self._check_evidence(ids)
        signature = situation_signature(situation)
        current = await self._store.list_lessons(
            LessonFilter(scopes=(scope,), category=Category.SITUATION, operation=signature)
        )
        if current:
            await self._mark_used(current[0], self._clock.now())
            return await self._store.get_lesson(current[0].id)
        lesson = SituationLesson("", situation)
        now = self._clock.now()
        row = LessonRow(
            id=self._new_id(),
            content=lesson.content,
            operation=signature,
            scope=scope,
            status=LessonStatus.ACTIVE,
            # A declared blocker is a fact the tool itself reported: born like a proven lesson.
            confidence=self._params.confidence.birth,
            created_at=now,
            updated_at=now,
            category=Category.SITUATION,
            evidence=ids,
            situation={
                "tool": situation.tool,
                "subject": situation.subject,
                "kind": situation.kind,
                "interactive": situation.interactive,
                "env_fingerprint": situation.env_fingerprint,
                "unblock": situation.unblock,
                "probe": situation.probe,
                "source": situation.source.value,
            },
            embedding=await self._embed(lesson.content),
        )
        await self._store.insert_lesson(row)
        return row

    async def situation_lessons(self, scope: str) -> builtins.list[SituationLesson]:
        """Active situation lessons visible from ``scope``."""
        rows = await self._store.list_lessons(
            LessonFilter(
                scopes=recall_scopes(scope),
                category=Category.SITUATION,
                limit=self._params.lesson.max_active_per_scope,
            )
        )
        out: builtins.list[SituationLesson] = []
        for row in rows:
            s = row.situation or {}
            out.append(
                SituationLesson(
                    row.id,
                    Situation(
                        tool=str(s.get("tool", "")),
                        subject=str(s.get("subject", "")),
                        kind=str(s.get("kind", "")),
                        source=SituationSource(str(s.get("source", "declared"))),
                        interactive=bool(s.get("interactive", False)),
                        env_fingerprint=str(s.get("env_fingerprint", "")),
                        unblock=s.get("unblock"),
                        probe=s.get("probe"),
                    ),
                )
            )
        return out

    async def before_dispatch(
        self,
        call: SituationCall,
        scope: str,
        *,
        probe_blocked: dict[str, bool] | None = None,
    ) -> Probe | Escalate | Note | Proceed:
        """Probe-first decision for a call; a clear probe invalidates the lesson it checked."""
        decision = decide_before_dispatch(
            call, await self.situation_lessons(scope), probe_blocked=probe_blocked
        )
        if isinstance(decision, Proceed | Note):
            now = self._clock.now()
            for lesson_id in decision.invalidate:
                row = await self._store.get_lesson(lesson_id)
                await self._store.update_lesson(
                    dataclasses.replace(
                        row, status=LessonStatus.RETIRED, updated_at=now, embedding=None
                    )
                )
        return decision
