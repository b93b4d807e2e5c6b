"""Recall: the plan-time "Lessons:" section and the decision-time check.

``recall`` embeds the task once, asks the store for the nearest in-scope lessons, drops those
below the relevance floor (``LessonParams.min_similarity``: a query unrelated to every lesson
gets nothing, never the least unrelated lesson), re-ranks the rest (``learning/ranking``)
and builds the section within the token budget (``learning/prompt``). What it returns is
recorded as in play for the session and as used, in one store write.

Both recall and the check apply the influence gate (``learning/influence``): each
lesson's evidence class comes from this node's own outcomes and the independent support the
injected ``SupportReader`` reads; only proven and corroborated lessons are advice; an
unverified peer lesson is at most a labelled hint in a bounded share of plan-time prompts and
never in a preamble as advice; a peer lesson about the agent's authority is shown nowhere
until it is corroborated or an operator approved it. Lessons that disagree (stored open
conflicts, and any pair among the lessons at hand that ``conflicts.conflict_between`` finds:
two imports, an import and a local lesson) are shown together, ordered by evidence, never by
recency.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lamarck.consensus.corroboration import NO_SUPPORT, EvidenceClass
from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
)
from lamarck.learning.attribution import normalise_operation
from lamarck.learning.conflicts import Conflict, conflict_between, detect_conflicts
from lamarck.learning.consolidation import RecallGroup, collapse_groups, plan_consolidation
from lamarck.learning.influence import (
    AuthorityPrototypes,
    InfluenceParams,
    LessonEvidence,
    authority_by_lexicon,
    conflict_leader,
    evidence_label,
    evidence_of,
    evidence_order,
    plain_claim,
    plan_hint,
    shown_words,
)
from lamarck.learning.prompt import build_lessons_section, conflict_line
from lamarck.learning.ranking import Candidate, idle_days, rank
from lamarck.learning.scopes import recall_scopes
from lamarck.node.lessons.core import EmbedderLike, LessonCore, RecalledLesson, RecallResult
from lamarck.node.lessons.knowledge import embeddings_of
from lamarck.node.lessons.support import NoSupportReader, SupportReader

__all__ = [
    "OperationCheck",
    "Recall",
    "ShownConflict",
    "authority_prototypes",
]

#: What a class is called in a conflict's verdict ("The proven here side holds.").
_CLASS_WORDS = {
    EvidenceClass.PROVEN_HERE: "proven here",
    EvidenceClass.CORROBORATED: "corroborated",
    EvidenceClass.UNVERIFIED: "unverified",
}


def authority_prototypes(
    embedder: EmbedderLike, name: str, params: InfluenceParams
) -> AuthorityPrototypes | None:
    """The authority topic in the node's embedder's space, or None when that embedder's
    vectors carry no meaning (``params.semantic_embedders``): the lexicon alone reads it."""
    if name not in params.semantic_embedders or not params.authority_prototypes:
        return None
    vectors = embedder.embed(list(params.authority_prototypes))
    return AuthorityPrototypes.of(vectors, params.authority_similarity)


@dataclass(frozen=True, slots=True)
class ShownConflict:
    """Lessons that disagree, shown together: ``sides`` strongest first by evidence;
    ``leader`` the id of the side that holds, or None while unresolved."""

    operation: str
    sides: tuple[LessonRow, ...]
    leader: str | None
    #: The operations whose next attributed run settles it, and its mechanical target.
    settled_by: tuple[str, ...] = ()
    target: str = ""

    @property
    def ids(self) -> tuple[str, ...]:
        """The sides' lesson ids, strongest first."""
        return tuple(r.id for r in self.sides)


@dataclass(frozen=True, slots=True)
class OperationCheck:
    """What is on file for an operation: the advice, the conflicts and the preamble.

    ``lessons`` are the lessons that may drive the decision (proven here or corroborated),
    strongest first; ``lesson`` the first of them (None when only a conflict is on file).
    ``evidence`` holds the evidence of every lesson named here.
    """

    lesson: LessonRow | None
    preamble: str
    lessons: tuple[LessonRow, ...] = ()
    conflicts: tuple[ShownConflict, ...] = ()
    evidence: Mapping[str, LessonEvidence] = field(default_factory=dict)

    @property
    def lesson_ids(self) -> tuple[str, ...]:
        """Every lesson behind the preamble: the advice, then each conflict's sides."""
        ids = [r.id for r in self.lessons]
        ids.extend(i for c in self.conflicts for i in c.ids)
        return tuple(dict.fromkeys(ids))


class Recall:
    """Plan-time recall and the decision-time check over one ``LessonCore``."""

    def __init__(
        self,
        core: LessonCore,
        support: SupportReader | None = None,
        topics: AuthorityPrototypes | None = None,
        *,
        own_id: str = "",
    ) -> None:
        """``own_id``: this node's id; a stored copy of a record this node signed (a bundle it
        exported, imported back) is its own lesson, proven here like any local one."""
        self._core = core
        self._own_id = own_id
        self._support: SupportReader = support if support is not None else NoSupportReader()
        self._topics = topics

    def _groups(self, rows: list[LessonRow]) -> tuple[RecallGroup, ...]:
        """Near-duplicates among the hits, shown once each: imported claims kept apart
        (never re-signed into one) and local lessons maintenance has not merged yet."""
        p = self._core.params
        plan = plan_consolidation(
            rows,
            embeddings_of(rows),
            p.knowledge.consolidation,
            p.context,
            negation_markers=p.knowledge.conflicts.negation_markers,
            skip=frozenset(r.id for r in rows if r.contested_with),
            similarity=self._core.similarity,
        )
        merged = (RecallGroup((m.survivor, *m.predecessors)) for m in plan.merges)
        return (*plan.groups, *merged)

    # -- evidence ------------------------------------------------------------------------------
    async def evidence(self, rows: Sequence[LessonRow]) -> dict[str, LessonEvidence]:
        """Each lesson's evidence for this node: its class from this node's outcomes and the
        support the reader counts, and, for a peer lesson, whether it is about the agent's
        authority (lexicon, or the embedder's prototypes where it reads meaning) and whether
        an operator approved it here."""
        if not rows:
            return {}
        core = self._core
        p = core.params.influence
        support = await self._support.support_for(rows)
        vectors = await self._vectors(rows)
        out: dict[str, LessonEvidence] = {}
        for r in rows:
            imported = r.from_peer(self._own_id)
            authority = imported and (
                authority_by_lexicon(r.operation, r.tags, r.content, p)
                or (self._topics is not None and self._topics.about_authority(vectors.get(r.id)))
            )
            out[r.id] = evidence_of(
                imported=imported,
                local_confirmations=r.confirmations,
                support=support.get(r.id, NO_SUPPORT),
                authority=authority,
                approved=False,
                params=p,
                checkable=imported and plain_claim(r, p),
            )
        for r in rows:
            ev = out[r.id]
            if ev.authority and not ev.decides and r.content_hash:
                held = await core.store.quarantine_of(r.content_hash)
                if held is not None and held.state == "approved":
                    out[r.id] = dataclasses.replace(ev, approved=True)
        return out

    async def _vectors(self, rows: Sequence[LessonRow]) -> dict[str, Any]:
        """The vectors the topic check reads: stored ones, and the embedder's for a peer
        lesson stored without one (only when the node's embedder reads meaning)."""
        if self._topics is None:
            return {}
        out: dict[str, Any] = {r.id: r.embedding for r in rows if r.embedding is not None}
        missing = [r for r in rows if r.from_peer(self._own_id) and r.id not in out]
        if missing:
            computed = await self._core.embed_many([r.content for r in missing])
            out.update((r.id, v) for r, v in zip(missing, computed, strict=True))
        return out

    def _ordered(
        self, rows: Sequence[LessonRow], evidence: Mapping[str, LessonEvidence]
    ) -> list[LessonRow]:
        return sorted(rows, key=lambda r: evidence_order(evidence[r.id], r.confidence, r.id))

    async def _conflicts(
        self, rows: Sequence[LessonRow], evidence: dict[str, LessonEvidence]
    ) -> list[ShownConflict]:
        """The conflicts among ``rows`` and their stored opponents, each pair once, sides
        ordered by evidence. ``evidence`` gains the opponents read here. Lessons not shown
        (an unverified peer lesson about authority) are in no conflict."""
        core = self._core
        shown = [r for r in rows if evidence[r.id].shown]
        pairs: dict[tuple[str, str], None] = {}
        for r in shown:
            for other in r.contested_with:
                pairs[(min(r.id, other), max(r.id, other))] = None
        held = {r.id: r for r in shown}
        missing = sorted({i for pair in pairs for i in pair if i not in held})
        if missing:
            opponents = [
                o for o in await core.store.get_lessons(missing) if o.status is LessonStatus.ACTIVE
            ]
            evidence.update(await self.evidence(opponents))
            held.update((o.id, o) for o in opponents if evidence[o.id].shown)
        p = core.params
        active = [r for r in shown if r.status is LessonStatus.ACTIVE]
        found_pairs: dict[tuple[str, str], Conflict] = {}
        for c in detect_conflicts(
            active,
            embeddings_of(active),
            p.knowledge.conflicts,
            p.context,
            similarity=core.similarity,
        ):
            pairs[c.pair] = None
            found_pairs[c.pair] = c
        out: list[ShownConflict] = []
        for a, b in pairs:
            if a not in held or b not in held:
                continue
            sides = tuple(self._ordered([held[a], held[b]], evidence))
            lead = conflict_leader([evidence[s.id] for s in sides], [s.confidence for s in sides])
            found = found_pairs.get((a, b)) or conflict_between(
                held[a],
                held[b],
                embeddings_of((held[a], held[b])),
                p.knowledge.conflicts,
                core.similarity,
            )
            settled_by = found.settled_by if found is not None else ()
            out.append(
                ShownConflict(
                    sides[0].operation,
                    sides,
                    None if lead is None else sides[lead].id,
                    settled_by or (normalise_operation(sides[0].operation),),
                    found.target if found is not None else "",
                )
            )
        return out

    def _conflict_text(
        self, conflict: ShownConflict, evidence: Mapping[str, LessonEvidence]
    ) -> str:
        holds = None
        if conflict.leader is not None:
            holds = _CLASS_WORDS[evidence[conflict.leader].evidence_class]
        return conflict_line(
            conflict.operation,
            [
                (evidence_label(evidence[s.id], s.confidence), shown_words(s, evidence[s.id]))
                for s in conflict.sides
            ],
            holds,
            conflict.settled_by,
            conflict.target,
        )

    # -- plan time -----------------------------------------------------------------------------
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
        """Plan-time recall: the best active lessons for ``task`` and the "Lessons:" section.

        Advice (proven here or corroborated) in rank order; conflicts among the relevant
        lessons, both sides labelled; unverified peer lessons as hints in a bounded share of
        recalls (one draw of the node's RNG per such lesson). Returned lessons are recorded
        as in play for ``session_id`` (and as used), so the next ``record_outcome`` of that
        session can attribute them. In incognito nothing is recorded. ``limit`` (at most
        ``recall_limit``) asks for fewer lessons.
        """
        core = self._core
        lp = core.params.lesson
        influence = core.params.influence
        # Read-your-writes: a lesson stored behind its vector is searchable from here on (a
        # claim's only to a recall that includes claims: no other finds it), the newest
        # ``recall_settles_at_most`` embedded with the task (or, if the drain holds one of them
        # in the batch it is embedding, written by that batch first: one batch, never the
        # queue), the older ones left to the drain and counted in ``indexing`` (no wait for a
        # whole burst); after a burst (more than ``recall_burst_above`` waiting) none are
        # embedded here, and nothing is waited for. The
        # use marks may stay behind: ranking reads idle days, which a mark seconds old does
        # not change, and waiting for the last recall's marks would put them back in this wait.
        behind = core.behind
        queued = behind.queued if include_claimed else behind.queued_beyond_claims
        at_most = core.params.write_behind.recall_settles_at_most
        burst_above = core.params.write_behind.recall_burst_above
        if burst_above is not None and len(queued) > burst_above:
            at_most = 0  # a burst: left to the drain, counted in ``indexing``
        if at_most is None:
            await behind.settle_vectors(queued)
        await core.load_learner()
        async with behind.reading():
            newest = await behind.newest(queued, at_most or 0)
            if newest:
                # The newest queued vectors in the same model call as the task's.
                vectors = await core.embed_many([task, *(content for _, content in newest)])
                query = vectors[0]
                await behind.write_embedded(newest, vectors[1:])
            else:
                query = await core.embed(task)
        indexing = behind.waiting(queued)
        statuses = (LessonStatus.ACTIVE, LessonStatus.CLAIMED) if include_claimed else None
        hits = await core.store.search(
            query,
            lp.candidate_pool,
            LessonFilter(
                statuses=statuses or (LessonStatus.ACTIVE,),
                scopes=recall_scopes(scope),
                category=Category.LESSON,
            ),
            # The relevance floor: below it a lesson is not about this task, however trusted;
            # and near the best hit: a neighbour in the same domain is not about this task
            # either. Applied by the store, so the rows under it are never fetched.
            RelevanceFloor(lp.min_similarity, lp.relative_similarity),
        )
        now = core.clock.now()
        by_id = {h.lesson.id: h for h in hits}
        context_match = core.similarity_to(context)
        ranked = rank(
            [
                Candidate(
                    key=h.lesson.id,
                    cosine=h.similarity,
                    context_match=context_match(h.lesson.context),
                    confidence=h.lesson.confidence,
                    idle_days=idle_days(now, h.lesson.last_used, h.lesson.created_at),
                )
                for h in hits
            ],
            lp,
        )
        scores = {r.key: r.score for r in ranked}
        # Each group of near-duplicates once, by its best-ranked member, before the cut.
        kept = collapse_groups(
            [r.key for r in ranked], self._groups([by_id[r.key].lesson for r in ranked])
        )
        rows = [by_id[i].lesson for i in kept]
        evidence = await self.evidence(rows)
        # Shown at all (an unverified peer lesson about authority is not), and the stronger
        # class first: within a class the re-rank's order stands.
        rows = sorted(
            (r for r in rows if evidence[r.id].shown),
            key=lambda r: evidence[r.id].evidence_class.rank,
        )
        active = [r for r in rows if r.status is LessonStatus.ACTIVE]
        conflicts = await self._conflicts(active, evidence)
        in_conflict = {i for c in conflicts for i in c.ids}
        leaders = {c.leader for c in conflicts if c.leader is not None}
        # Advice: lessons that may drive a decision and are no losing or unresolved side.
        advice = [
            r
            for r in active
            if evidence[r.id].decides and (r.id not in in_conflict or r.id in leaders)
        ]
        # One draw of the node's RNG per unverified lesson per recall (rule 2). Hints:
        # unverified lessons in no conflict whose draw passes; a conflict of unverified
        # sides only is shown when the draw of one of its sides passes.
        drawn = {
            r.id: plan_hint(evidence[r.id], core.rng.random(), influence)
            for r in active
            if not evidence[r.id].decides
        }
        shown_conflicts = [
            c
            for c in conflicts
            if any(evidence[s.id].decides or drawn.get(s.id, False) for s in c.sides)
        ]
        hints = [r for r in active if drawn.get(r.id) and r.id not in in_conflict]
        hints = hints[: influence.max_unverified_hints]
        wanted = lp.recall_limit if limit is None else max(1, min(limit, lp.recall_limit))

        def line(r: LessonRow) -> str:
            label = evidence_label(evidence[r.id], r.confidence)
            return f"[{label}] {shown_words(r, evidence[r.id])}"

        section = build_lessons_section(
            [(r.id, line(r)) for r in advice],
            lp,
            core.count_tokens,
            limit=wanted,
            conflicts=[(c.ids, self._conflict_text(c, evidence)) for c in shown_conflicts],
            hints=[(r.id, line(r)) for r in hints],
        )
        chosen = [by_id[i].lesson for i in section.included]
        hinted = [by_id[i].lesson for i in section.hinted]
        claimed = [r for r in rows if r.status is LessonStatus.CLAIMED][:wanted]
        # Every side of a relevant conflict is returned and in play (not advice), so the next
        # outcome that tests one of them records which side reality favoured.
        held = {r.id: r for r in active}
        for c in conflicts:
            held.update((s.id, s) for s in c.sides)
        contested = [
            held[i] for i in dict.fromkeys(_sides_in_order(conflicts)) if i not in leaders
        ][: 2 * wanted]
        if not incognito:
            session = core.session(session_id)
            session.context = dict(context or {})
            for row in [*chosen, *hinted, *claimed, *contested]:
                session.in_play[row.id] = None
            await core.mark_used([r.id for r in (*chosen, *hinted, *claimed, *contested)], now)
        scored = tuple(
            RecalledLesson(row, by_id[row.id].similarity, scores[row.id]) for row in chosen
        )
        # Every surface shows what the section shows: hints and conflict sides in the words
        # the gate allows (rule 6).
        hint_scores = tuple(
            RecalledLesson(_as_shown(row, evidence), by_id[row.id].similarity, scores[row.id])
            for row in hinted
        )
        return RecallResult(
            tuple(chosen),
            section,
            tuple(_as_shown(r, evidence) for r in claimed),
            scored,
            tuple(_as_shown(r, evidence) for r in contested),
            hints=hint_scores,
            conflicts=tuple(_conflict_as_shown(c, evidence) for c in shown_conflicts),
            indexing=indexing,
            evidence={
                i: evidence[i]
                for i in (
                    *section.included,
                    *section.hinted,
                    *(r.id for r in contested),
                    *in_conflict,
                )
                if i in evidence
            },
        )

    async def report_use(self, lesson_id: str, session_id: str | None = None) -> LessonRow:
        """The agent used a lesson (e.g. returned by its own recall tool): in play and used."""
        core = self._core
        row = await core.store.get_lesson(lesson_id)
        if session_id is not None:
            core.session(session_id).in_play[row.id] = None
        await core.store.mark_used([row.id], core.clock.now())
        return await core.store.get_lesson(lesson_id)

    # -- decision time -------------------------------------------------------------------------
    async def check(self, op_key: str, scope: str) -> OperationCheck | None:
        """Decision-time check: the advice on file for an operation, and its conflicts.

        Never blocks: the model keeps the decision, the evidence is put in front of it. The
        lookup is ``LessonFilter.about``: lessons recommending the operation, saying to avoid
        it, or a situation on that tool (at most ``check_pool`` of them). Only lessons that
        may drive a decision are advice, strongest evidence first (class, independent
        support, confidence: never recency); lessons that disagree about it are named
        together, each with its class and support. An unverified lesson in no conflict is
        not in the preamble at all.
        """
        key = op_key.strip()
        if not key:
            return None
        core = self._core
        rows = await core.store.list_lessons(
            LessonFilter(
                scopes=recall_scopes(scope), about=key, limit=core.params.influence.check_pool
            )
        )
        if not rows:
            return None
        await core.load_learner()
        evidence = await self.evidence(rows)
        conflicts = await self._conflicts(rows, evidence)
        in_conflict = {i for c in conflicts for i in c.ids}
        leaders = {c.leader for c in conflicts if c.leader is not None}
        advice = self._ordered(
            [
                r
                for r in rows
                if evidence[r.id].shown
                and evidence[r.id].decides
                and (r.id not in in_conflict or r.id in leaders)
            ],
            evidence,
        )
        if not advice and not conflicts:
            return None
        parts: list[str] = []
        if advice:
            best = advice[0]
            line = " ".join(shown_words(best, evidence[best.id]).split())
            label = evidence_label(evidence[best.id], best.confidence)
            parts.append(f"A lesson on file for `{key}` ({label}): {line}")
        if conflicts:
            parts.extend(self._conflict_text(c, evidence) for c in conflicts)
        return OperationCheck(
            advice[0] if advice else None,
            " ".join(parts),
            tuple(advice),
            tuple(_conflict_as_shown(c, evidence) for c in conflicts),
            {i: evidence[i] for i in (*(r.id for r in advice), *in_conflict) if i in evidence},
        )

    async def check_operation(self, op_key: str, scope: str) -> str | None:
        """The decision-time preamble for ``op_key``, or None (see ``check``)."""
        found = await self.check(op_key, scope)
        return None if found is None else found.preamble


def _sides_in_order(conflicts: Sequence[ShownConflict]) -> list[str]:
    """The sides of ``conflicts`` in order, each once."""
    return list(dict.fromkeys(i for c in conflicts for i in c.ids))


def _as_shown(row: LessonRow, evidence: Mapping[str, LessonEvidence]) -> LessonRow:
    """``row`` as an agent is shown it: in the words the gate allows (``shown_words``)."""
    ev = evidence.get(row.id)
    if ev is None or ev.words_shown:
        return row
    return dataclasses.replace(row, content=shown_words(row, ev))


def _conflict_as_shown(
    conflict: ShownConflict, evidence: Mapping[str, LessonEvidence]
) -> ShownConflict:
    """``conflict`` with its sides as an agent is shown them."""
    return dataclasses.replace(
        conflict, sides=tuple(_as_shown(s, evidence) for s in conflict.sides)
    )
