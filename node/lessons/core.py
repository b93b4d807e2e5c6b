"""What every part of the lesson service shares: its dependencies, result values and helpers.

``LessonService`` (``node/lessons/service.py``) is split by concern — outcome learning
(``outcomes.py``), recall (``recall.py``), maintenance (``maintenance.py``) and situations
(``situations.py``) — each a small class over one ``LessonCore``. The core holds the store, the
embedder, the clock, the random source and the parameters, all built once at start-up, plus the
in-play record of each session that recall writes and outcome learning reads.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from lamarck.domain.embedder import Embedder
from lamarck.domain.rows import (
    Category,
    LessonEvent,
    LessonRow,
    LessonStatus,
)
from lamarck.errors import EvidenceError, InvalidRecord, SecretDetected
from lamarck.learning import confidence as conf
from lamarck.learning.attribution import Attribution
from lamarck.learning.params import LearningParams
from lamarck.learning.prompt import PromptSection, TokenCounter
from lamarck.learning.secrets import scan_for_secrets
from lamarck.learning.variables import VariableImportanceLearner
from lamarck.node.heap import release_memory
from lamarck.node.lessons.write_behind import WriteBehind
from lamarck.node.store.port import LessonStore
from lamarck.proto.clock import Clock
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.transfer import TransferParams

__all__ = [
    "AGENT_ACTOR",
    "LEARNER_STATE_KEY",
    "LIVE",
    "LOOP_ACTOR",
    "RETIRED_PREFIX",
    "EmbedderLike",
    "LessonChange",
    "LessonCore",
    "OutcomeResult",
    "RecallResult",
    "RecalledLesson",
    "ReconcileResult",
    "Session",
    "context_texts",
]

#: ``superseded_by`` of a lesson a user (or tool) retired: ``retired:<who>``.
RETIRED_PREFIX = "retired:"
#: Who the event log names for the learning loop's own changes, and for the local agent's.
LOOP_ACTOR = "loop"
AGENT_ACTOR = "agent"
#: Statuses attribution may move: a claim gains evidence by its first confirmation.
LIVE = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)
#: The node-state key of what the context-variable learner has learned.
LEARNER_STATE_KEY = "variable_importance"


class EmbedderLike(Protocol):
    """What the service needs from an embedder (``lamarck.domain.embedder.Embedder`` fits)."""

    @property
    def dim(self) -> int:
        """Number of dimensions of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` as a float32 array of shape ``(len(texts), dim)``."""
        ...


def _nothing_at_hand(texts: list[str]) -> None:
    del texts


def _never_inline(texts: list[str]) -> bool:
    del texts
    return False


@dataclass(frozen=True, slots=True)
class LessonChange:
    """One change a service call made to one lesson."""

    lesson_id: str
    change: str  # confirmed | contradicted | retired | promoted | demoted | created | superseded
    confidence_before: float | None = None
    confidence_after: float | None = None
    detail: str = ""
    #: Already in the event log (written with its row): a caller logging changes skips it.
    logged: bool = field(default=False, compare=False)


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
    #: (``lamarck.learning.reality``); the node emits them to its reputation book.
    reality: tuple[ReputationEvent, ...] = ()
    #: Why no lesson was created, confirmed or contradicted ("" when one was); the reasons of
    #: ``lamarck.learning.why``.
    nothing_learned: str = ""
    #: The rows of changed lessons as this outcome left them, where it knows them: a reply
    #: built from these reads nothing again (a changed lesson missing here is read).
    rows: Mapping[str, LessonRow] = field(default_factory=dict)

    def ids(self, change: str) -> list[str]:
        """Lesson ids with the given change, in order."""
        return [c.lesson_id for c in self.changes if c.change == change]


@dataclass(frozen=True, slots=True)
class RecalledLesson:
    """A lesson recall returned, with what it was chosen by.

    ``similarity`` is the query's cosine to the lesson; ``score`` the re-rank score (similarity,
    context match, confidence and recency combined, in [0, 1]) that ordered the result.
    """

    lesson: LessonRow
    similarity: float
    score: float


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Plan-time recall: the lessons for the prompt and the formatted section.

    ``lessons`` are the advice (proven here or corroborated). ``claimed`` holds claimed lessons
    the model asked for explicitly: returned (and in play, so a confirmation can give them
    evidence), never part of ``section``. ``scored`` gives each of ``lessons`` with its
    similarity and score, in the same order.
    """

    lessons: tuple[LessonRow, ...]
    section: PromptSection
    claimed: tuple[LessonRow, ...] = ()
    scored: tuple[RecalledLesson, ...] = ()
    #: Relevant lessons on a side of a conflict that does not hold (unresolved, or weaker
    #: evidence): returned and in play, so an outcome can settle the conflict; in
    #: ``section`` only as a conflict line, never as advice.
    contested: tuple[LessonRow, ...] = ()
    #: Unverified peer lessons shown as labelled hints in ``section`` (never advice), with
    #: their similarity and score.
    hints: tuple[RecalledLesson, ...] = ()
    #: The conflicts among the relevant lessons shown in ``section`` (``ShownConflict``).
    conflicts: tuple[Any, ...] = ()
    #: The evidence (``LessonEvidence``) of every lesson above, by id.
    evidence: Mapping[str, Any] = field(default_factory=dict)
    #: Lessons written but not yet searchable by this recall (their vectors are still being
    #: written behind earlier replies): a recall right after a burst of writes says so.
    indexing: int = 0


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """What a reconcile pass changed."""

    decayed: tuple[str, ...] = ()
    retired: tuple[str, ...] = ()
    capped: tuple[str, ...] = ()
    #: Lessons newly marked contested (both sides of each conflict found).
    contested: tuple[str, ...] = ()
    #: Lessons merged into a near-duplicate (superseded by the survivor).
    merged: tuple[str, ...] = ()


@dataclass
class Session:
    """Lessons in play for a session's current turn, and the context recall was asked in."""

    in_play: dict[str, None] = field(default_factory=dict)  # ordered set
    context: dict[str, Any] = field(default_factory=dict)


def context_texts(context: Mapping[str, Any] | None) -> list[str]:
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


class LessonCore:
    """The dependencies and helpers every part of the lesson service uses."""

    def __init__(
        self,
        store: LessonStore,
        embedder: EmbedderLike,
        clock: Clock,
        params: LearningParams,
        *,
        rng: random.Random,
        token_counter: TokenCounter,
        transfer: TransferParams,
    ) -> None:
        self.store = store
        self.embedder = embedder
        # Vectors the embedder has at hand (``Embedder.computed``: a task recalled before),
        # taken on the event loop; an embedder without the method has none.
        self._at_hand: Callable[[list[str]], npt.NDArray[np.float32] | None] = (
            embedder.computed if isinstance(embedder, Embedder) else _nothing_at_hand
        )
        # Texts cheaper to embed right here than through a worker thread (``Embedder.inline``:
        # a recall's task on the ONNX model); an embedder without the method has none.
        self._inline: Callable[[list[str]], bool] = (
            embedder.inline if isinstance(embedder, Embedder) else _never_inline
        )
        self.clock = clock
        self.params = params
        self.rng = rng
        self.count_tokens = token_counter
        self.transfer = transfer
        self.sessions: dict[str, Session] = {}
        # What outcomes taught about each context variable; loaded from the store on first
        # use (``load_learner``), written back with the outcome that changed it.
        self.learner = VariableImportanceLearner()
        self.learner_loaded = False
        #: Claim vectors and recall use marks written behind the agent's reply.
        self.behind = WriteBehind(
            store, self.embed_many, params.write_behind, release=release_memory
        )

    async def load_learner(self) -> VariableImportanceLearner:
        """The context-variable learner, read from the store once per service."""
        if not self.learner_loaded:
            stored = await self.store.get_state(LEARNER_STATE_KEY)
            if stored is not None:
                self.learner = VariableImportanceLearner.from_json(stored)
            self.learner_loaded = True
        return self.learner

    async def save_learner(self, learner: VariableImportanceLearner) -> None:
        """Keep ``learner`` (in the caller's unit of work) when it learned something."""
        if learner is not self.learner:
            await self.store.put_state(LEARNER_STATE_KEY, learner.to_json())
            self.learner = learner

    def similarity(self, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> float:
        """Context similarity with each variable weighed by its learned class (with nothing
        learned, exactly ``context_similarity``)."""
        return self.learner.similarity(a, b, self.params.knowledge.variables, self.params.context)

    def similarity_to(
        self, run: Mapping[str, Any] | None
    ) -> Callable[[Mapping[str, Any] | None], float]:
        """``similarity(lesson, run)`` for any lesson context, ``run``'s variables read once."""
        return self.learner.similarity_to(run, self.params.knowledge.variables, self.params.context)

    def new_id(self) -> str:
        """A uuid4 from the injected random source."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def scan(self, texts: Iterable[str], what: str) -> None:
        """Refuse a write that carries anything that looks like a credential."""
        kinds: builtins.list[str] = []
        for text in texts:
            for kind in scan_for_secrets(text, self.params.secrets):
                if kind not in kinds:
                    kinds.append(kind)
        if kinds:
            raise SecretDetected(
                f"{what} looks like it carries a credential ({', '.join(kinds)})", kinds=kinds
            )

    def check_content(self, content: str, operation: str) -> str:
        """Content must be non-empty and within the record limit; operation non-empty."""
        text = content.strip()
        if not text:
            raise InvalidRecord("a lesson needs content", reason="empty_content")
        if len(text.encode("utf-8")) > self.params.lesson.max_content_bytes:
            raise InvalidRecord("lesson content is too large", reason="content_too_large")
        if not operation.strip():
            raise InvalidRecord("a lesson needs an operation key", reason="empty_operation")
        return text

    async def embed(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one text off the event loop (a real model is CPU-bound and blocking)."""
        vector: npt.NDArray[np.float32] = (await self.embed_many([text]))[0]
        return vector

    async def embed_many(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in one model call off the event loop, one row per text; vectors
        the embedder has at hand (a task recalled before) are taken here, with no hop, and so
        are texts it embeds sooner than a worker thread could be handed them (``inline``)."""
        items = list(texts)
        vectors = self._at_hand(items)
        if vectors is None and self._inline(items):
            vectors = self.embedder.embed(items)
        if vectors is None:
            vectors = await asyncio.to_thread(self.embedder.embed, items)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    async def mark_used(self, lesson_ids: Sequence[str], now: datetime) -> None:
        """One use of each lesson: behind the reply when the params say so."""
        if self.params.write_behind.defer_use_marks:
            self.behind.use_later(lesson_ids, now)
        else:
            await self.store.mark_used(lesson_ids, now)

    def session(self, session_id: str) -> Session:
        """The in-play record of a session, created on first use."""
        return self.sessions.setdefault(session_id, Session())

    def cap_evidence(self, evidence: Iterable[str]) -> tuple[str, ...]:
        """Unique outcome ids, the newest kept when over the cap."""
        unique = tuple(dict.fromkeys(evidence))
        return unique[-self.params.lesson.max_evidence :]

    def events(
        self, changes: Sequence[LessonChange], actor: str, *, outcome_id: str = "", reason: str = ""
    ) -> builtins.list[LessonEvent]:
        """``changes`` as event-log entries (``lessons history`` reads them)."""
        now = self.clock.now()
        return [
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

    async def log(
        self, changes: Sequence[LessonChange], actor: str, *, outcome_id: str = "", reason: str = ""
    ) -> None:
        """Append ``changes`` to the lesson event log."""
        if changes:
            await self.store.append_events(
                self.events(changes, actor, outcome_id=outcome_id, reason=reason)
            )

    async def insert_new(
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
        log_as: str | None = None,
        taught_by: str | None = None,
        detail: str = "",
        found_by: str = "",
    ) -> LessonRow:
        """Build, embed and store a new lesson (claimed if it has no evidence).

        ``found_by``: words recall should also find the lesson by (the goal of the run that
        taught it), embedded with its content in this node's vector only, never in its record.

        With ``log_as``, its "created" event (that actor) is written with the row in one
        statement, so a lone write needs no transaction. ``taught_by``: the id of the outcome
        that teaches it (named in the event); inside ``behind.until_commit`` its vector may
        come behind the reply. ``detail`` is the "created" event's reason.
        """
        now = self.clock.now()
        has_evidence = bool(evidence)
        indexed = f"{content}\n{found_by}" if found_by.strip() else content
        wb = self.params.write_behind
        # A claim is in no prompt and in no contest: its vector can come behind the reply. A
        # taught lesson's can too, once its outcome commits: every reader that needs it
        # settles first (``with_vectors``, recall's settle).
        if has_evidence:
            later = taught_by is not None and wb.defer_learned_embedding and self.behind.holding
        else:
            later = wb.defer_claim_embedding
        row = LessonRow(
            id=self.new_id(),
            content=content,
            operation=operation.strip(),
            scope=scope,
            status=LessonStatus.ACTIVE if has_evidence else LessonStatus.CLAIMED,
            confidence=conf.initial_confidence(has_evidence, self.params.confidence),
            created_at=now,
            updated_at=now,
            category=category,
            evidence=self.cap_evidence(evidence),
            confirmed_projects=confirmed_projects,
            context=dict(context or {}),
            situation=situation,
            tags=tuple(tags),
            supersedes=supersedes,
            embedding=None if later else await self.embed(indexed),
        )
        created = [LessonChange(row.id, "created", None, row.confidence, detail)]
        outcome_id = taught_by or ""
        if supersedes is None:
            await self.store.insert_lesson(
                row,
                self.events(created, log_as, outcome_id=outcome_id) if log_as is not None else (),
            )
        else:
            await self.store.supersede(supersedes, row)
            if log_as is not None:
                await self.log(created, log_as, outcome_id=outcome_id)
        if later:
            self.behind.embed_later(row.id, indexed, claim=not has_evidence)
        return row

    async def with_vectors(self, rows: Sequence[LessonRow]) -> builtins.list[LessonRow]:
        """``rows`` with the vectors still queued behind a reply written and filled in (a
        conflict check reads them; without a vector it never finds a contradiction)."""
        waiting = [r.id for r in rows if r.embedding is None and self.behind.waits_for(r.id)]
        if not waiting:
            return list(rows)
        await self.behind.settle_vectors(waiting)
        fresh = {r.id: r.embedding for r in await self.store.get_lessons(waiting)}
        return [dataclasses.replace(r, embedding=fresh[r.id]) if r.id in fresh else r for r in rows]

    async def check_evidence(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        """Evidence must be stored outcomes that teach, none cited by a user-retired lesson.

        Returns the distinct projects of those outcomes, in evidence order.
        """
        existing = await self.store.existing_outcome_ids(ids)
        missing = [i for i in ids if i not in existing]
        if missing:
            raise EvidenceError(
                f"evidence names outcomes that do not exist: {', '.join(missing)}",
                reason="unknown_evidence",
                ids=missing,
            )
        retired = await self.store.retired_evidence_ids(among=ids)
        reused = [i for i in ids if i in retired]
        if reused:
            raise EvidenceError(
                "evidence was cited by a lesson the user retired; it is not re-learned",
                reason="retired_evidence",
                ids=reused,
            )
        projects: dict[str, None] = {}
        for outcome_id in ids:
            row = await self.store.get_outcome(outcome_id)
            if not row.claim_ok or row.record.get("injected_instruction", False):
                raise EvidenceError(
                    f"outcome {outcome_id} teaches nothing",
                    reason="evidence_teaches_nothing",
                    ids=[outcome_id],
                )
            projects[row.project] = None
        return tuple(projects)
