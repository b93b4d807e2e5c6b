"""``LessonService``: the rules of ``lamarck.learning`` applied over a ``LessonStore``.

The service is the only writer of lessons and outcomes. It is split by concern, each part in
``node/lessons/`` over one shared ``LessonCore`` (store, embedder, clock, random source and
parameters, built once):

* ``OutcomeLearning.record_outcome`` stores the outcome derived from the run's tool record and
  checks, then attributes it to the in-play lessons (confirm / contradict by operation key,
  weighted by context similarity), promotes or demotes scopes, and writes mechanical lessons;
* ``LessonEditing``: ``remember`` stores a model's claim at the claimed level, never shown in a
  prompt; ``write_lesson`` refuses evidence that is not a stored outcome (``EvidenceError``) or
  that a lesson the user retired cites; ``edit`` / ``retire`` supersede, never delete;
  ``hard_delete`` is an explicit user action;
* ``Recall.recall`` returns at most five relevant active lessons and the "Lessons:" section, and
  remembers them as in play for the session, so the outcome can be attributed;
* ``Maintenance.reconcile`` decays unused lessons, retires those below the floor, enforces the
  per-scope cap (the node runs it on a schedule);
* ``Situations``: declared blockers and the probe-first decision before a call.

Every write is scanned for credentials (``SecretDetected``); an incognito call records nothing.
This class only composes the parts and keeps one public API for the node and the tests.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Mapping, Sequence
from typing import Any

from lamarck.domain.rows import (
    Category,
    LessonRow,
    LessonStatus,
)
from lamarck.learning.influence import AuthorityPrototypes, LessonEvidence
from lamarck.learning.params import LearningParams
from lamarck.learning.prompt import TokenCounter, estimate_tokens
from lamarck.learning.situations import (
    Escalate,
    Note,
    Probe,
    Proceed,
    Situation,
    SituationCall,
    SituationLesson,
)
from lamarck.node.lessons.core import (
    AGENT_ACTOR,
    LOOP_ACTOR,
    RETIRED_PREFIX,
    EmbedderLike,
    LessonChange,
    LessonCore,
    OutcomeResult,
    RecalledLesson,
    RecallResult,
    ReconcileResult,
)
from lamarck.node.lessons.editing import LessonEditing
from lamarck.node.lessons.knowledge import Knowledge
from lamarck.node.lessons.maintenance import Maintenance
from lamarck.node.lessons.outcomes import OutcomeLearning
from lamarck.node.lessons.recall import OperationCheck, Recall
from lamarck.node.lessons.situations import Situations
from lamarck.node.lessons.support import SupportReader
from lamarck.node.store.port import LessonStore
from lamarck.proto.clock import Clock
from lamarck.proto.outcome import Outcome
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S
from lamarck.reputation.transfer import TransferParams

__all__ = [
    "AGENT_ACTOR",
    "LOOP_ACTOR",
    "RETIRED_PREFIX",
    "EmbedderLike",
    "LessonChange",
    "LessonService",
    "OperationCheck",
    "OutcomeResult",
    "RecallResult",
    "RecalledLesson",
    "ReconcileResult",
]


class LessonService:
    """Applies the learning rules over a ``LessonStore``; see the module docstring."""

    def __init__(
        self,
        store: LessonStore,
        embedder: EmbedderLike,
        clock: Clock,
        params: LearningParams,
        *,
        rng: random.Random | None = None,
        token_counter: TokenCounter = estimate_tokens,
        transfer: TransferParams,
        max_future_skew_s: float = DEFAULT_MAX_FUTURE_SKEW_S,
        support: SupportReader | None = None,
        topics: AuthorityPrototypes | None = None,
        own_id: str = "",
    ) -> None:
        """``support`` reads each lesson's independent support (none: ``NoSupportReader``);
        ``topics`` is the authority topic in the embedder's space (None: the lexicon alone);
        ``own_id`` is this node's id (a copy of a record it signed is its own lesson)."""
        self._core = LessonCore(
            store,
            embedder,
            clock,
            params,
            rng=rng if rng is not None else random.Random(),
            token_counter=token_counter,
            transfer=transfer,
        )
        # An outcome dated beyond the skew is refused: its lesson's evidence would be
        # future-dated, and every peer would refuse the record and blame this node.
        self._outcomes = OutcomeLearning(self._core, max_future_skew_s=max_future_skew_s)
        self._recall = Recall(self._core, support, topics, own_id=own_id)
        self._editing = LessonEditing(self._core)
        self._maintenance = Maintenance(self._core)
        self._situations = Situations(self._core)
        self._knowledge = Knowledge(self._core)

    @property
    def params(self) -> LearningParams:
        """The parameters this service applies."""
        return self._core.params

    # -- outcomes --------------------------------------------------------------------------
    async def record_outcome(
        self,
        outcome: Outcome,
        *,
        incognito: bool = False,
        context: Mapping[str, Any] | None = None,
    ) -> OutcomeResult:
        """Store the outcome, attribute it to in-play lessons, and learn what it proves."""
        # Confirmations write whole rows: the use marks queued before must be in first (the
        # vectors the outcome reads are settled where they are read).
        await self._core.behind.settle_marks()
        self._knowledge.forget_expected()  # it may prove a lesson an import's copy contradicts
        return await self._outcomes.record_outcome(outcome, incognito=incognito, context=context)

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
        """A model's claim: stored at the claimed level, never shown in a prompt."""
        self._knowledge.forget_expected()
        return await self._editing.remember(
            content, operation, scope, context=context, tags=tags, incognito=incognito
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
        """Store a lesson: born active with evidence, only a claim without."""
        self._knowledge.forget_expected()
        return await self._editing.write_lesson(
            content,
            operation,
            scope,
            evidence=evidence,
            context=context,
            tags=tags,
            incognito=incognito,
        )

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
        limit: int | None = None,
    ) -> RecallResult:
        """Plan-time recall: the best relevant active lessons and the "Lessons:" section."""
        return await self._recall.recall(
            task,
            context,
            scope,
            session_id,
            include_claimed=include_claimed,
            incognito=incognito,
            limit=limit,
        )

    async def evidence(self, rows: Sequence[LessonRow]) -> dict[str, LessonEvidence]:
        """Each lesson's evidence class, support and the influence gate's reading, by id."""
        return await self._recall.evidence(rows)

    async def report_use(self, lesson_id: str, session_id: str | None = None) -> LessonRow:
        """The agent used a lesson: in play for the session and counted as used."""
        return await self._recall.report_use(lesson_id, session_id)

    async def check(self, op_key: str, scope: str) -> OperationCheck | None:
        """Decision-time check: the lesson on file for an operation and its one line."""
        return await self._recall.check(op_key, scope)

    async def check_operation(self, op_key: str, scope: str) -> str | None:
        """Decision-time check: the one line on file for an operation, or None."""
        return await self._recall.check_operation(op_key, scope)

    # -- editing ---------------------------------------------------------------------------
    async def edit(self, lesson_id: str, new_content: str, who: str, reason: str = "") -> LessonRow:
        """Supersede a lesson with edited content (``reason`` is logged with ``who``)."""
        self._knowledge.forget_expected()
        return await self._editing.edit(lesson_id, new_content, who, reason)

    async def set_access(
        self,
        lesson_id: str,
        access_level: str,
        recipients: Sequence[str] = (),
        *,
        who: str = AGENT_ACTOR,
    ) -> LessonRow:
        """Say who an own lesson may be shared with; the row changes in place."""
        return await self._editing.set_access(lesson_id, access_level, recipients, who=who)

    async def retire(self, lesson_id: str, who: str, reason: str = "") -> LessonRow:
        """Retire a lesson: kept, never re-learned (``reason`` is logged with ``who``)."""
        return await self._editing.retire(lesson_id, who, reason)

    async def history(self, lesson_id: str) -> builtins.list[LessonRow]:
        """Every version of a lesson, oldest first (the supersede chain)."""
        return await self._editing.history(lesson_id)

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
        return await self._editing.list(
            scope=scope, statuses=statuses, category=category, limit=limit, offset=offset
        )

    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson for good. Only for an explicit user action; rules never call it."""
        await self._editing.hard_delete(lesson_id)

    # -- write-behind ----------------------------------------------------------------------
    async def settle(self) -> None:
        """Wait for the writes made behind earlier replies (claim vectors, use marks)."""
        await self._core.behind.settle()

    async def recover_write_behind(self) -> int:
        """Queue the vectors a crash left unwritten; returns how many (the node's start)."""
        return await self._core.behind.recover()

    async def close(self) -> None:
        """Flush the writes made behind earlier replies (the node's stop, before the store
        closes)."""
        await self._core.behind.close()

    # -- maintenance -----------------------------------------------------------------------
    async def reconcile(self) -> ReconcileResult:
        """Decay unused lessons, retire those below the level, enforce the per-scope cap."""
        # Decay reads the use marks; consolidation reads the vectors.
        await self.settle()
        self._knowledge.forget_expected()  # merges move evidence between lessons
        return await self._maintenance.reconcile()

    async def expect_imports(self, operations: Sequence[str]) -> None:
        """The operations of the copies an import is about to store (empty: it ended): the
        contest of each reads the lessons it could contradict only where one proven here is
        about its operation (``Knowledge.expect``)."""
        await self._knowledge.expect(operations)

    async def contest_new(self, row: LessonRow) -> None:
        """Contest the lessons this node's own outcomes back that ``row`` (an imported copy
        just stored) contradicts: the copy leaves the prompt's advice, the proven lesson stays
        (``conflicts.contest``); the changes go to the event log."""
        await self.settle()
        changes = await self._knowledge.contest_new(row, only_proven_here=True)
        await self._core.log(changes, LOOP_ACTOR)

    async def enforce_cap(self) -> builtins.list[str]:
        """Supersede the lessons beyond each scope's active cap now; returns their ids."""
        return await self._maintenance.enforce_cap()

    # -- situations ------------------------------------------------------------------------
    async def record_situation(
        self,
        situation: Situation,
        scope: str,
        *,
        evidence: Sequence[str] = (),
        incognito: bool = False,
    ) -> LessonRow | None:
        """Remember a declared blocker after the turn escalated or the user answered."""
        return await self._situations.record_situation(
            situation, scope, evidence=evidence, incognito=incognito
        )

    async def situation_lessons(self, scope: str) -> builtins.list[SituationLesson]:
        """Active situation lessons visible from ``scope``."""
        return await self._situations.situation_lessons(scope)

    async def before_dispatch(
        self,
        call: SituationCall,
        scope: str,
        *,
        probe_blocked: dict[str, bool] | None = None,
    ) -> Probe | Escalate | Note | Proceed:
        """Probe-first decision for a call; a clear probe invalidates the lesson it checked."""
        return await self._situations.before_dispatch(call, scope, probe_blocked=probe_blocked)
