"""Outcome learning: an outcome confirms or contradicts the lessons in play and proves new ones.

``record_outcome`` stores the outcome derived from the run's tool record and checks, attributes
it to the in-play lessons (confirm / contradict by operation key, weighted by context
similarity), promotes or demotes scopes, and writes mechanical lessons. Every rule is a pure
function in ``learning``; here they meet the store.
"""

from __future__ import annotations

import builtins
import dataclasses
import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from lamarck.domain.rows import Category, LessonFilter, LessonRow, LessonStatus, OutcomeRow
from lamarck.errors import ConfigError, InvalidRecord
from lamarck.learning import confidence as conf
from lamarck.learning.attribution import Effect, attribute
from lamarck.learning.conflicts import settle, trials_from_attributions
from lamarck.learning.evidence import confirmed_confidence
from lamarck.learning.mechanical import (
    TARGET_TAG,
    MechanicalLesson,
    mechanical_lessons,
    restates,
    reverses,
)
from lamarck.learning.outcomes import (
    CheckRun,
    StepResult,
    ToolStep,
    Verdict,
    derive_verdict,
)
from lamarck.learning.reality import reality_events
from lamarck.learning.scopes import (
    after_confirmation,
    after_contradiction,
    is_project_scope,
    project_scope,
    recall_scopes,
)
from lamarck.learning.why import NothingLearned, why_nothing_learned
from lamarck.node.crashpoint import crash_point
from lamarck.node.lessons.core import (
    LIVE,
    LOOP_ACTOR,
    LessonChange,
    LessonCore,
    OutcomeResult,
    Session,
    context_texts,
)
from lamarck.node.lessons.knowledge import Knowledge
from lamarck.proto.outcome import Outcome
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S
from lamarck.proto.timefmt import parse_ts
from lamarck.reputation.events import ReputationEvent

__all__ = ["OutcomeLearning", "outcome_checks", "outcome_steps", "outcome_verdict"]

# The changes that count as something learned (promotions and retirements follow from these).
_LEARNED = frozenset({"created", "confirmed", "contradicted"})


def outcome_steps(outcome: Outcome) -> list[ToolStep]:
    """The tool record of a proto outcome as pure steps."""
    return [
        ToolStep(
            operation=s.operation_key,
            result=StepResult(s.outcome),
            target=s.target or "",
        )
        for s in outcome.approach
    ]


def outcome_checks(outcome: Outcome) -> list[CheckRun]:
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


def outcome_verdict(outcome: Outcome) -> Verdict:
    """What an outcome teaches: its checks folded (``derive_verdict``), never more optimistic
    than either the loop's own verdict or the checks."""
    verdict = derive_verdict(
        outcome_checks(outcome),
        claim_ok=outcome.claim_ok,
        injected_instruction=outcome.injected_instruction,
    )
    return dataclasses.replace(verdict, passed=verdict.passed and outcome.passed)


def _outcome_texts(outcome: Outcome) -> list[str]:
    """Every free-text field of an outcome, for the secret scan."""
    texts = [outcome.session_id, outcome.goal_digest, outcome.memory_context or ""]
    for step in outcome.approach:
        texts.extend((step.operation_key, step.target or ""))
    for check in outcome.checks:
        texts.extend((check.label, check.target))
    return texts


class OutcomeLearning:
    """Learns from outcomes: attribution, confirmation, contradiction, mechanical lessons."""

    def __init__(
        self, core: LessonCore, *, max_future_skew_s: float = DEFAULT_MAX_FUTURE_SKEW_S
    ) -> None:
        if not math.isfinite(max_future_skew_s) or max_future_skew_s < 0:
            raise ConfigError(
                f"invalid max_future_skew_s={max_future_skew_s!r}: must be finite and >= 0",
                field="max_future_skew_s",
            )
        self._core = core
        self._knowledge = Knowledge(core)
        # The node's one clock-skew tolerance (ImportParams.max_future_skew_s): an outcome
        # this node would date beyond it becomes evidence every peer refuses.
        self._max_future_skew_s = max_future_skew_s

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
        core = self._core
        if incognito:
            core.sessions.pop(outcome.session_id, None)
            return OutcomeResult(
                outcome.id, recorded=False, nothing_learned=NothingLearned.INCOGNITO
            )
        core.scan([*_outcome_texts(outcome), *context_texts(context)], "outcome")
        self._refuse_future(outcome)
        verdict = outcome_verdict(outcome)
        # The in-play lessons' conflicts are checked by meaning: their vectors must be in.
        session = core.sessions.get(outcome.session_id, Session())
        await core.behind.settle_vectors([*session.in_play, *outcome.in_play])
        # The outcome and everything it teaches commit together: a crash in between leaves
        # neither, so the caller's retry learns it all (a half-applied outcome would answer
        # the retry "duplicate" and its lessons would never be learned). A taught lesson's
        # vector is written behind the reply, once the unit has committed.
        with core.behind.until_commit():
            async with core.store.atomic():
                return await self._store_and_learn(outcome, verdict, context)

    def _refuse_future(self, outcome: Outcome) -> None:
        """Refuse an outcome dated beyond the skew: what it teaches would be refused by peers."""
        created = parse_ts(outcome.created_at)
        limit = self._core.clock.now() + timedelta(seconds=self._max_future_skew_s)
        if created > limit:
            raise InvalidRecord(
                f"outcome created_at {outcome.created_at} is more than "
                f"{self._max_future_skew_s:g} s in the future",
                reason="future_timestamp",
            )

    async def _store_and_learn(
        self, outcome: Outcome, verdict: Verdict, context: Mapping[str, Any] | None
    ) -> OutcomeResult:
        """Store the outcome and apply what it teaches (inside the caller's unit of work)."""
        core = self._core
        await core.store.insert_outcome(
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
        crash_point("outcome_stored")
        session = core.sessions.pop(outcome.session_id, Session())
        if not verdict.teaches:
            return OutcomeResult(
                outcome.id,
                recorded=True,
                passed=verdict.passed,
                nothing_learned=why_nothing_learned(
                    verdict,
                    claim_ok=outcome.claim_ok,
                    injected_instruction=outcome.injected_instruction,
                    learned=False,
                ),
            )
        run_context = dict(context) if context is not None else session.context
        steps = outcome_steps(outcome)
        in_play_ids = list(dict.fromkeys([*session.in_play, *outcome.in_play]))
        lessons = [
            row
            for row in await core.store.get_lessons(in_play_ids)
            if row.status in LIVE and row.category is Category.LESSON
        ]
        attributions = attribute([(r.id, r.operation) for r in lessons], steps, verdict)
        learner = await core.load_learner()
        # Open conflicts first: a settlement moves exactly its two lessons by its own rule,
        # so attribution leaves them alone.
        settled = await self._knowledge.settle_in_play(lessons, attributions, outcome.id)
        changes: builtins.list[LessonChange] = list(settled.changes)
        # The rows this outcome wrote whole (a confirmation, a contradiction, a new lesson),
        # as written: the reply shows them without reading them again. A row a settlement or
        # a supersede changes afterwards is dropped from it, and the reply reads that one.
        written: dict[str, LessonRow] = {}
        reality: builtins.list[ReputationEvent] = list(settled.reality)
        confirmed_now: set[str] = set(settled.settled)
        contradicted_now: set[str] = set()
        by_id = {r.id: r for r in lessons}
        held = {
            t.lesson_id: t.held
            for plan in settled.settlements
            for t in trials_from_attributions(plan.conflict, attributions)
        }
        for att in attributions:
            row = by_id[att.lesson_id]
            if att.effect is Effect.NOT_ATTRIBUTED:
                continue
            # Each tested lesson predicted it would hold in this run's context: what came
            # true teaches which differing context variables matter.
            learner = learner.observe(
                row.context,
                run_context,
                held=held.get(row.id, att.effect is Effect.CONFIRMED),
                context=core.params.context,
            )
            if row.id in settled.settled:
                continue
            if att.effect is Effect.CONFIRMED:
                changes.extend(await self._confirm(row, outcome, run_context, written))
                confirmed_now.add(row.id)
            elif att.effect is Effect.CONTRADICTED:
                changes.extend(await self._contradict(row, outcome, run_context, written))
                contradicted_now.add(row.id)
        await core.save_learner(learner)
        for lesson in mechanical_lessons(steps, verdict):
            changes.extend(
                await self._learn_mechanical(
                    lesson,
                    outcome,
                    run_context,
                    confirmed_now,
                    before={i: by_id[i] for i in contradicted_now},
                    reality=reality,
                    written=written,
                )
            )
        crash_point("outcome_learned")
        await core.log([c for c in changes if not c.logged], LOOP_ACTOR, outcome_id=outcome.id)
        # The settled lessons' sources get the settlement's events instead of attribution's.
        attributed = [r for r in lessons if r.id not in settled.settled]
        return OutcomeResult(
            outcome.id,
            recorded=True,
            passed=verdict.passed,
            teaches=True,
            attributions=tuple(attributions),
            changes=tuple(changes),
            reality=(
                *reality_events(
                    attributed, attributions, outcome_id=outcome.id, at=core.clock.now()
                ),
                *reality,
            ),
            nothing_learned=why_nothing_learned(
                verdict,
                claim_ok=outcome.claim_ok,
                injected_instruction=outcome.injected_instruction,
                learned=any(c.change in _LEARNED for c in changes),
                in_play=len(lessons),
            ),
            rows=written,
        )

    async def _confirm(
        self,
        row: LessonRow,
        outcome: Outcome,
        run_context: Mapping[str, Any],
        written: dict[str, LessonRow],
    ) -> builtins.list[LessonChange]:
        """An attributed success: step up by context band, gain evidence, maybe promote (the
        row as written goes into ``written``)."""
        core = self._core
        p = core.params
        similarity = core.similarity(row.context, run_context)
        after = confirmed_confidence(
            conf.confirm(row.confidence, similarity, p.confidence),
            current=row.confidence,
            imported=row.imported_from is not None,
            confirmations=row.confirmations,
            original=row.original_confidence,
            transfer=core.transfer,
        )
        scope = after_confirmation(row.scope, row.confirmed_projects, outcome.project, p.lesson)
        now = core.clock.now()
        updated = dataclasses.replace(
            row,
            confidence=after,
            status=LessonStatus.ACTIVE,
            evidence=core.cap_evidence((*row.evidence, outcome.id)),
            confirmations=row.confirmations + 1,
            confirmed_projects=scope.confirmed_projects,
            scope=scope.scope,
            last_used=now,
            updated_at=now,
            embedding=None,
        )
        await core.store.update_lesson(updated)
        written[row.id] = updated
        changes = [
            LessonChange(row.id, "confirmed", row.confidence, after, f"similarity={similarity:.2f}")
        ]
        if scope.changed:
            changes.append(LessonChange(row.id, "promoted", after, after, scope.scope))
        return changes

    async def _contradict(
        self,
        row: LessonRow,
        outcome: Outcome,
        run_context: Mapping[str, Any],
        written: dict[str, LessonRow],
    ) -> builtins.list[LessonChange]:
        """An attributed failure: step down by context band, maybe demote, maybe retire (the
        row as written goes into ``written``)."""
        core = self._core
        p = core.params
        similarity = core.similarity(row.context, run_context)
        after = conf.contradict(row.confidence, similarity, p.confidence)
        scope = after_contradiction(row.scope, row.confirmed_projects, outcome.project)
        retire = conf.should_retire(after, p.confidence)
        now = core.clock.now()
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
        await core.store.update_lesson(updated)
        written[row.id] = updated
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

    async def _proven_in_another_project(
        self, lesson: MechanicalLesson, scope: str
    ) -> builtins.list[LessonRow]:
        """This node's own active lessons in other projects that say the same as ``lesson``.

        The same run proving the same lesson in a second project is that lesson's second
        project: it is confirmed there (and so promoted to global), never learned twice.
        Only restating counts across projects: a lesson saying the opposite in another
        project is that project's business, never settled from here.
        """
        found = await self._core.store.list_lessons(
            LessonFilter(
                statuses=(LessonStatus.ACTIVE,),
                category=Category.LESSON,
                about=lesson.prefer,
                tags=(f"{TARGET_TAG}{lesson.target}",),
                imported=False,
                limit=self._core.params.lesson.max_active_per_scope,
            )
        )
        return [
            r
            for r in found
            if r.scope != scope
            and is_project_scope(r.scope)
            and restates(lesson, r.operation, r.tags)
        ]

    async def _learn_mechanical(
        self,
        lesson: MechanicalLesson,
        outcome: Outcome,
        run_context: Mapping[str, Any],
        confirmed_now: set[str],
        *,
        before: Mapping[str, LessonRow],
        reality: builtins.list[ReputationEvent],
        written: dict[str, LessonRow],
    ) -> builtins.list[LessonChange]:
        """Write "prefer B over A for T"; re-proving an existing one confirms it instead.

        A stored lesson saying the opposite for the same target, in a context alike enough to
        conflict, loses the conflict this outcome just tested (``conflicts.settle``): the new
        lesson supersedes it, so the history holds both lessons and both outcomes, and the
        numbers follow the settlement rule. ``before`` holds the in-play rows this outcome
        contradicted as they were before it: the settlement's step replaces attribution's,
        never adds to it. Reputation events for an imported loser's source go to ``reality``;
        the rows written whole go to ``written`` (``record_outcome``'s). The lookup is one
        indexed query for the lessons about B (those recommending B, and those saying to avoid
        B), so a lesson is found again however old or unconfident it is among a scope's rows.
        """
        core = self._core
        scope = project_scope(outcome.project)
        found = await core.store.list_lessons(
            LessonFilter(
                statuses=(*LIVE, LessonStatus.RETIRED),
                scopes=recall_scopes(scope),
                category=Category.LESSON,
                about=lesson.prefer,
                # Restating and reversing both need the same target: its tag narrows the
                # indexed lookup to the lessons about it.
                tags=(f"{TARGET_TAG}{lesson.target}",),
                limit=core.params.lesson.max_active_per_scope,
            )
        )
        # Live lessons, and the ones this very outcome just contradicted into retirement: the
        # reversed lesson it disproved is the one the new lesson must settle with (and link
        # to in history), even though attribution retired it a moment ago.
        live = [r for r in found if r.status in LIVE or r.id in before]
        same = [r for r in live if restates(lesson, r.operation, r.tags)]
        if not same:
            same = await self._proven_in_another_project(lesson, scope)
        if same:
            if same[0].id in confirmed_now:
                return []
            return await self._confirm(same[0], outcome, run_context, written)
        # No retired lesson can cite this outcome (the rule that evidence a user retired is
        # never re-learned): it was stored a moment ago, in this unit, under a new id.
        opposite = [r for r in live if reverses(lesson, r.operation, r.tags)]
        loser = before.get(opposite[0].id, opposite[0]) if opposite else None
        # A claim saying the opposite is superseded outright (it has no numbers to settle);
        # an active lesson is settled below, if the two conflict at all.
        claim = loser is not None and loser.status is not LessonStatus.ACTIVE
        new = await core.insert_new(
            content=lesson.content,
            operation=lesson.prefer,
            scope=scope,
            evidence=(outcome.id,),
            context=run_context,
            tags=lesson.tags,
            confirmed_projects=(outcome.project,),
            supersedes=loser.id if claim and loser is not None else None,
            # Its "created" event is written with the row (one round trip fewer); the
            # outcome's other changes are logged together at its end.
            log_as=LOOP_ACTOR,
            taught_by=outcome.id,
            detail=lesson.content,
            # An agent asking about the same task in its own words finds the lesson, whatever
            # the embedder: the run's goal is the task the lesson is about.
            found_by=outcome.goal_digest,
        )
        written[new.id] = new
        changes = [
            LessonChange(new.id, "created", None, new.confidence, lesson.content, logged=True)
        ]
        if loser is None:
            return changes
        if claim:
            written.pop(loser.id, None)  # the store set its supersede: read it for the reply
            changes.append(LessonChange(loser.id, "superseded", None, None, new.id))
            return changes
        conflict = self._knowledge.conflict(new, loser)
        if conflict is None:  # learned in another context: information, not invalidation
            return changes
        plan = settle(
            conflict,
            new,
            loser,
            outcome_id=outcome.id,
            at=core.clock.now(),
            p=core.params.knowledge.conflicts,
        )
        # The winner is the loser's next version: the history holds both and both outcomes.
        for lesson_id in plan.lesson_ids:
            written.pop(lesson_id, None)  # settled after it was written: read for the reply
        changes.extend(
            await self._knowledge.apply_settlement(
                plan, {new.id: dataclasses.replace(new, supersedes=loser.id), loser.id: loser}
            )
        )
        reality.extend(plan.reputation)
        return changes
