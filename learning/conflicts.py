"""Contradicting lessons: found narrowly, settled by the next outcome that tests one of them.

Lamarckian memory "ConflictDetector" and "ConflictResolver". Pure: rows and vectors in,
conflicts and plans out; the caller stores exactly what a plan says and nothing else.

**Detection.** Two active lessons conflict when all of these hold:

1. their scopes meet: the same scope, or one of them global (two projects' lessons are never
   recalled together, so they cannot contradict each other in front of an agent);
2. their contexts are alike: ``context_similarity >= min_context_similarity`` (0.7). Lessons in
   different contexts never conflict: a context mismatch is information, not invalidation;
3. their claims contradict, found
   * by structure when both are mechanical ("prefer B over A for T" against "prefer A over B
     for T": the same target and the same pair of operations, reversed —
     ``MechanicalLesson.reversed_by``). Their ``operation`` fields differ (each names the
     operation it prefers), so "the same operation" means the same pair here;
   * by meaning otherwise: the same operation, texts whose embeddings (this node's own) are at
     least ``min_claim_similarity`` apart and whose words, negation markers aside, overlap by
     at least ``min_claim_overlap``, and opposite polarity (an odd against an even count of
     negation markers: "X works with Y" / "X does not work with Y").

**Settlement.** Both are marked contested (``contest``) — or, for two imports no outcome here
backs, left uncontested until an outcome proves one of them (``settle_proven``). Uncontested
is not hidden: recall and the decision-time check find every conflicting pair among the
lessons at hand with ``conflict_between`` and show both sides together, ordered by evidence
(``learning/influence.py``, ``node/lessons/recall.py``). The next
attributed outcome that tests one of them decides (``trials_from_attributions``,
``winner_of``): a lesson *held* when the outcome confirmed it — or, for the negated side of a
meaning conflict, when the outcome contradicted the operation it warns against. The winner
gains ``win_step`` capped at ``win_cap`` (never lowered by the cap) and is verified against
the loser — unless the outcome is already its evidence (a reversal born of the outcome that
disproved the loser): one outcome is one observation, counted at birth, so that win adds no
step. The loser loses ``lose_step`` floored at ``lose_floor`` (never raised by the floor) and
is superseded by the winner, with the outcome as evidence. An imported party's source gets the
reality event the outcome amounts to (``lesson_confirmed`` when its lesson won,
``lesson_contradicted`` when it lost), built by ``reality_events`` so it has the same key as
the outcome path's own event. Nothing else changes: a ``Settlement`` names exactly two lessons.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.domain.rows import Category, LessonRow, LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.learning.attribution import Attribution, Effect, normalise_operation
from lamarck.learning.context_match import context_similarity
from lamarck.learning.knowledge_params import ConflictParams
from lamarck.learning.mechanical import mechanical_claim
from lamarck.learning.params import ContextParams
from lamarck.learning.reality import reality_events
from lamarck.learning.scopes import GLOBAL
from lamarck.reputation.events import ReputationEvent

__all__ = [
    "Conflict",
    "ConflictKind",
    "LessonUpdate",
    "Settlement",
    "SimilarityFn",
    "Trial",
    "apply_update",
    "claim_overlap",
    "conflict_between",
    "contest",
    "cosine",
    "detect_conflicts",
    "has_local_evidence",
    "is_negated",
    "scopes_meet",
    "settle",
    "settle_outcome",
    "settle_proven",
    "trials_from_attributions",
    "winner_of",
]

#: ``(lesson context, other context) -> similarity in [0, 1]``; ``context_similarity`` with
#: fixed params by default, or ``variables.learned_similarity`` bound to the learned classes.
SimilarityFn = Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], float]

_WORD = re.compile(r"[a-z0-9_'-]+")


class ConflictKind(StrEnum):
    """How the contradiction was found."""

    STRUCTURAL = "structural"  # two mechanical lessons, reversed
    SEMANTIC = "semantic"  # same operation, same claim, opposite polarity


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two active lessons that contradict; ``first < second`` so a pair has one spelling.

    ``negated`` names the lesson whose claim is the negation (meaning conflicts only).
    ``settled_by`` are the operations whose next attributed run settles it; ``target`` the
    mechanical target ("" for meaning conflicts).
    """

    first: str
    second: str
    kind: ConflictKind
    context_similarity: float
    settled_by: tuple[str, ...]
    target: str = ""
    negated: str | None = None

    @property
    def pair(self) -> tuple[str, str]:
        """The two lesson ids, ordered."""
        return (self.first, self.second)

    def other(self, lesson_id: str) -> str:
        """The lesson in conflict with ``lesson_id``."""
        if lesson_id == self.first:
            return self.second
        if lesson_id == self.second:
            return self.first
        raise InvalidRecord(f"lesson {lesson_id} is not in this conflict", reason="not_in_conflict")


@dataclass(frozen=True, slots=True)
class Trial:
    """What one outcome says about one side of a conflict: whether its claim held."""

    lesson_id: str
    held: bool


@dataclass(frozen=True, slots=True)
class LessonUpdate:
    """One lesson's change in a plan; the caller writes exactly this and nothing else.

    ``kind`` is the lesson-event kind to log (``contested``, ``confirmed``, ``superseded``).
    ``contested_with`` is the other side while contested and ``None`` once settled;
    ``verified_against`` the loser a winner beat. ``outcome_id`` ("" for none) joins the
    lesson's evidence; the counts move by the deltas.
    """

    lesson_id: str
    kind: str
    confidence_before: float
    confidence_after: float
    status: LessonStatus
    superseded_by: str | None = None
    contested_with: str | None = None
    verified_against: str | None = None
    outcome_id: str = ""
    confirmations_delta: int = 0
    contradictions_delta: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Settlement:
    """The plan that settles one conflict: two lesson updates and the reputation events."""

    conflict: Conflict
    winner: str
    loser: str
    outcome_id: str
    updates: tuple[LessonUpdate, LessonUpdate]
    reputation: tuple[ReputationEvent, ...]

    @property
    def lesson_ids(self) -> frozenset[str]:
        """The only lessons this plan changes."""
        return frozenset({self.winner, self.loser})


# -- detection ------------------------------------------------------------------------------


def cosine(u: npt.NDArray[np.floating[Any]], v: npt.NDArray[np.floating[Any]]) -> float:
    """Cosine similarity of two vectors in [-1, 1] (0 when either is all zeros)."""
    nu, nv = float(np.linalg.norm(u)), float(np.linalg.norm(v))
    if nu == 0.0 or nv == 0.0:
        return 0.0
    value = float(np.dot(u, v)) / (nu * nv)
    return max(-1.0, min(1.0, value)) if math.isfinite(value) else 0.0


def is_negated(text: str, markers: Iterable[str]) -> bool:
    """Whether a claim is a negation: an odd number of negation markers among its words."""
    return _negated(text, frozenset(markers))


# Texts whose polarity is kept: every recall asks for that of each of its hits (to group
# near-duplicates), and the same lessons come back recall after recall.
_NEGATED_MEMO = 2048


@functools.lru_cache(maxsize=_NEGATED_MEMO)
def _negated(text: str, markers: frozenset[str]) -> bool:
    return sum(w in markers for w in _WORD.findall(text.lower())) % 2 == 1


def claim_overlap(a: str, b: str, markers: Iterable[str]) -> float:
    """Jaccard overlap of two texts' words with the negation markers removed."""
    words = frozenset(markers)
    wa = {w for w in _WORD.findall(a.lower()) if w not in words}
    wb = {w for w in _WORD.findall(b.lower()) if w not in words}
    union = wa | wb
    return len(wa & wb) / len(union) if union else 0.0


def scopes_meet(a: str, b: str) -> bool:
    """Two lessons can be recalled together: the same scope, or one of them global."""
    return a == b or GLOBAL in (a, b)


def _eligible(row: LessonRow) -> bool:
    """Only active lessons (not situations) can conflict."""
    return row.status is LessonStatus.ACTIVE and row.category is Category.LESSON


def _ordered(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def conflict_between(
    a: LessonRow,
    b: LessonRow,
    embeddings: Mapping[str, npt.NDArray[np.floating[Any]]],
    p: ConflictParams,
    similarity: SimilarityFn,
) -> Conflict | None:
    """The conflict between two lessons, or ``None`` (rules 1–3 of the module docstring)."""
    if a.id == b.id or not (_eligible(a) and _eligible(b)):
        return None
    if not scopes_meet(a.scope, b.scope):  # (1)
        return None
    ma, mb = mechanical_claim(a), mechanical_claim(b)
    structural = ma is not None and mb is not None
    if structural:
        assert ma is not None and mb is not None  # narrowed for mypy
        if not ma.reversed_by(mb):
            return None
    else:
        if normalise_operation(a.operation) != normalise_operation(b.operation):
            return None
        va, vb = embeddings.get(a.id), embeddings.get(b.id)
        if va is None or vb is None:
            return None  # no vector, no meaning check: never guess a contradiction
        na = is_negated(a.content, p.negation_markers)
        if na == is_negated(b.content, p.negation_markers):
            return None
        if cosine(va, vb) < p.min_claim_similarity:
            return None
        if claim_overlap(a.content, b.content, p.negation_markers) < p.min_claim_overlap:
            return None
    ctx = similarity(a.context, b.context)
    if ctx < p.min_context_similarity:  # (2) different contexts never conflict
        return None
    first, second = _ordered(a.id, b.id)
    if structural:
        assert ma is not None
        return Conflict(
            first,
            second,
            ConflictKind.STRUCTURAL,
            ctx,
            settled_by=tuple(sorted({ma.prefer, ma.avoid})),
            target=ma.target,
        )
    return Conflict(
        first,
        second,
        ConflictKind.SEMANTIC,
        ctx,
        settled_by=(normalise_operation(a.operation),),
        negated=a.id if na else b.id,
    )


def _topics(row: LessonRow) -> list[tuple[str, ...]]:
    """Buckets a lesson is compared within: its operation, and its mechanical pair if any."""
    out: list[tuple[str, ...]] = [("op", normalise_operation(row.operation))]
    claim = mechanical_claim(row)
    if claim is not None:
        low, high = sorted((claim.prefer, claim.avoid))
        out.append(("pair", claim.target, low, high))
    return out


def detect_conflicts(
    lessons: Sequence[LessonRow],
    embeddings: Mapping[str, npt.NDArray[np.floating[Any]]],
    p: ConflictParams,
    context: ContextParams,
    *,
    similarity: SimilarityFn | None = None,
) -> list[Conflict]:
    """Every conflicting pair among ``lessons``, ordered by pair; each pair once.

    Compares only lessons that share an operation or a mechanical pair, so the cost is the sum
    of the squares of those buckets, not of the whole store. ``similarity`` defaults to
    ``context_similarity`` with ``context``.
    """
    sim: SimilarityFn = similarity or (lambda x, y: context_similarity(x, y, context))
    buckets: dict[tuple[str, ...], list[LessonRow]] = {}
    for row in lessons:
        if _eligible(row):
            for key in _topics(row):
                buckets.setdefault(key, []).append(row)
    found: dict[tuple[str, str], Conflict] = {}
    for rows in buckets.values():
        for i, a in enumerate(rows):
            for b in rows[i + 1 :]:
                pair = _ordered(a.id, b.id)
                if pair in found:
                    continue
                c = conflict_between(a, b, embeddings, p, sim)
                if c is not None:
                    found[pair] = c
    return [found[k] for k in sorted(found)]


# -- settlement -----------------------------------------------------------------------------


def has_local_evidence(row: LessonRow) -> bool:
    """Whether this node's own outcomes back ``row``: a local lesson born of them, or an
    imported copy an outcome here has confirmed."""
    return (row.imported_from is None and bool(row.evidence)) or row.confirmations > 0


def contest(conflict: Conflict, rows: Mapping[str, LessonRow]) -> tuple[LessonUpdate, ...]:
    """Mark both sides contested: no confidence, status or evidence moves, only the flag."""
    out = []
    for lid in conflict.pair:
        row = rows[lid]
        out.append(
            LessonUpdate(
                lesson_id=lid,
                kind="contested",
                confidence_before=row.confidence,
                confidence_after=row.confidence,
                status=row.status,
                contested_with=conflict.other(lid),
                reason=f"{conflict.kind.value} conflict with {conflict.other(lid)}",
            )
        )
    return tuple(out)


def trials_from_attributions(
    conflict: Conflict, attributions: Sequence[Attribution]
) -> tuple[Trial, ...]:
    """What an outcome's attributions say about each side: a negated claim held when the
    operation it warns against was contradicted, and failed when it was confirmed."""
    out: list[Trial] = []
    for att in attributions:
        if att.lesson_id not in conflict.pair or att.effect is Effect.NOT_ATTRIBUTED:
            continue
        held = att.effect is Effect.CONFIRMED
        if conflict.negated == att.lesson_id:
            held = not held
        out.append(Trial(att.lesson_id, held))
    return tuple(out)


def winner_of(conflict: Conflict, trials: Sequence[Trial]) -> str | None:
    """The side the trials favour, or ``None`` when they do not tell the two apart.

    A side that held beats one that did not hold or was not tested; a side that failed loses
    to an untested one. Both held or both failed: the outcome cannot settle it (both may be
    right in their own contexts), so the conflict stays open.
    """
    verdicts: dict[str, bool] = {}
    for t in trials:
        if t.lesson_id in conflict.pair:
            # Two tests of one side in one outcome that disagree say nothing about it.
            verdicts[t.lesson_id] = verdicts.get(t.lesson_id, t.held) and t.held
    a, b = conflict.pair
    va, vb = verdicts.get(a), verdicts.get(b)
    if va is None and vb is None:
        return None
    if va is True and vb is not True:
        return a
    if vb is True and va is not True:
        return b
    if va is False and vb is None:
        return b
    if vb is False and va is None:
        return a
    return None


def settle(
    conflict: Conflict,
    winner: LessonRow,
    loser: LessonRow,
    *,
    outcome_id: str,
    at: datetime,
    p: ConflictParams,
) -> Settlement:
    """The plan that settles ``conflict`` in ``winner``'s favour by the outcome ``outcome_id``."""
    if {winner.id, loser.id} != set(conflict.pair):
        raise InvalidRecord(
            "winner and loser must be the conflict's two lessons", reason="not_in_conflict"
        )
    # One outcome is one observation: a winner that already holds it as evidence (a lesson
    # born of this very outcome, the reversal it just disproved the loser with) counted it at
    # birth, so the win names the loser but adds no second step. Counting it twice let two
    # runs of one agent claim 0.85 where the lesson it reversed claimed 0.65 from as many —
    # over the high-stakes line, so a reversal waited for a quorum a small fleet cannot form.
    counted = outcome_id in winner.evidence
    won = (
        winner.confidence
        if counted
        else max(winner.confidence, min(p.win_cap, winner.confidence + p.win_step))
    )
    lost = min(loser.confidence, max(p.lose_floor, loser.confidence - p.lose_step))
    updates = (
        LessonUpdate(
            lesson_id=winner.id,
            kind="confirmed",
            confidence_before=winner.confidence,
            confidence_after=won,
            status=LessonStatus.ACTIVE,
            verified_against=loser.id,
            outcome_id=outcome_id,
            confirmations_delta=0 if counted else 1,
            reason=f"won conflict with {loser.id}"
            + (" (on the outcome it was born of: no second step)" if counted else ""),
        ),
        LessonUpdate(
            lesson_id=loser.id,
            kind="superseded",
            confidence_before=loser.confidence,
            confidence_after=lost,
            status=LessonStatus.SUPERSEDED,
            superseded_by=winner.id,
            outcome_id=outcome_id,
            contradictions_delta=1,
            reason=f"lost conflict with {winner.id}",
        ),
    )
    attributions = [
        Attribution(winner.id, Effect.CONFIRMED, "conflict_settled"),
        Attribution(loser.id, Effect.CONTRADICTED, "conflict_settled"),
    ]
    events = reality_events([winner, loser], attributions, outcome_id=outcome_id, at=at)
    return Settlement(conflict, winner.id, loser.id, outcome_id, updates, events)


def settle_outcome(
    conflict: Conflict,
    rows: Mapping[str, LessonRow],
    attributions: Sequence[Attribution],
    *,
    outcome_id: str,
    at: datetime,
    p: ConflictParams,
) -> Settlement | None:
    """Settle ``conflict`` if this outcome's attributions tell its sides apart, else ``None``."""
    winner = winner_of(conflict, trials_from_attributions(conflict, attributions))
    if winner is None:
        return None
    loser = conflict.other(winner)
    return settle(conflict, rows[winner], rows[loser], outcome_id=outcome_id, at=at, p=p)


def settle_proven(
    conflict: Conflict,
    rows: Mapping[str, LessonRow],
    attributions: Sequence[Attribution],
    *,
    outcome_id: str,
    at: datetime,
    p: ConflictParams,
) -> Settlement | None:
    """Settle a conflict nobody contested yet, only when this outcome proves one side.

    Two imports that contradict each other and that no outcome here backs are not contested
    when they meet (``Knowledge.contest_new(only_proven_here=True)``: one peer's reversal must
    not silence a fleet's advice at once); they wait for an outcome. This is that outcome's
    rule: a side whose claim held in this run beats the other (untested, or failed) by the
    settlement rule. A side that merely failed crowns nothing here — unlike an open conflict,
    where both sides were already set against each other, one failed run must not promote an
    opposite claim this node never tried (it could be one peer's fabrication); attribution
    handles the failure as usual.
    """
    trials = trials_from_attributions(conflict, attributions)
    winner = winner_of(conflict, trials)
    if winner is None or not any(t.lesson_id == winner and t.held for t in trials):
        return None
    loser = conflict.other(winner)
    return settle(conflict, rows[winner], rows[loser], outcome_id=outcome_id, at=at, p=p)


def apply_update(
    row: LessonRow, update: LessonUpdate, *, now: datetime, max_evidence: int
) -> LessonRow:
    """The row after ``update`` (the fields ``LessonRow`` holds; the contest flags are the
    caller's to store). Evidence keeps the ``max_evidence`` most recent outcome ids."""
    if row.id != update.lesson_id:
        raise InvalidRecord("update is for another lesson", reason="wrong_lesson")
    evidence = row.evidence
    if update.outcome_id:
        evidence = tuple(dict.fromkeys((*row.evidence, update.outcome_id)))[-max_evidence:]
    moved = update.confidence_after != row.confidence or update.status is not row.status
    return replace(
        row,
        confidence=update.confidence_after,
        status=update.status,
        superseded_by=update.superseded_by or row.superseded_by,
        evidence=evidence,
        confirmations=row.confirmations + update.confirmations_delta,
        contradictions=row.contradictions + update.contradictions_delta,
        last_used=now if update.outcome_id else row.last_used,
        updated_at=now if (moved or update.outcome_id) else row.updated_at,
    )
