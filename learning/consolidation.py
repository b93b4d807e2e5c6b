"""Near-duplicate lessons become one, with bounded evidence (adaptive memory). Pure.

"Ten project lessons about pytest invocation want to become one": at maintenance, active
lessons that say the same thing merge into the best-supported of them (the *survivor*, which
keeps its id, text and confidence) and the others are superseded by it, so every predecessor
stays in the history. The survivor carries the sum of the group's success and failure counts
and a bounded evidence list: the ``evidence_kept`` most recent outcome ids, with the number of
distinct outcomes behind them as a count.

Two lessons are near-duplicates when they share

* category, scope and access level (and recipients): a merge never crosses scopes or audiences;
* the recommendation: the same operation and polarity, for mechanical lessons the same
  "prefer B over A for T", and the same *specifics*: the commands, paths, flags, versions and
  quoted messages the text names (``specifics``). Two lessons that differ only in "not from
  e2e/" against "not from notebooks/" are two pieces of advice, however close their vectors;
* the context: ``context_similarity >= min_context_similarity`` (a lesson learned on Fedora and
  one learned on WSL2 are kept apart even when their words agree);
* the meaning: this node's embeddings are at least ``min_similarity`` apart.

Only local lessons merge. An imported lesson is its source's signed claim and is never folded
into a lesson this node would re-sign: near-duplicates that include imported lessons form a
``RecallGroup``, and recall shows only the best-ranked member of a group (``collapse_groups``).
Contested lessons (``skip``) wait until their conflict is settled.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.learning.attribution import normalise_operation
from lamarck.learning.conflicts import SimilarityFn, cosine, is_negated
from lamarck.learning.context_match import context_similarity
from lamarck.learning.knowledge_params import ConsolidationParams
from lamarck.learning.mechanical import mechanical_claim
from lamarck.learning.params import ContextParams

__all__ = [
    "ConsolidationPlan",
    "Merge",
    "RecallGroup",
    "apply_merge",
    "collapse_groups",
    "plan_consolidation",
    "recommendation_key",
    "specifics",
]

_QUOTED = re.compile(r"`([^`]+)`|\"([^\"]+)\"")
_EDGE_PUNCT = "\"'`.,;:!?()[]{}<>"
_SPECIFIC_CHARS = frozenset("/._-=@~+%$") | frozenset("0123456789")


@dataclass(frozen=True, slots=True)
class Merge:
    """Fold ``predecessors`` into ``survivor``: the new counts and the bounded evidence.

    ``evidence`` is the most recent outcome ids, oldest first; ``evidence_total`` counts every
    distinct outcome id the group held (the ones dropped survive as this count).
    """

    survivor: str
    predecessors: tuple[str, ...]
    confirmations: int
    contradictions: int
    use_count: int
    evidence: tuple[str, ...]
    evidence_total: int
    confirmed_projects: tuple[str, ...]
    last_used: datetime | None


@dataclass(frozen=True, slots=True)
class RecallGroup:
    """Near-duplicates kept apart (imported claims): recall shows one of them, the best-ranked.

    ``members`` starts with the best-supported one.
    """

    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConsolidationPlan:
    """What a maintenance pass changes: merges to store, groups to use at recall."""

    merges: tuple[Merge, ...]
    groups: tuple[RecallGroup, ...]

    @property
    def changed_ids(self) -> frozenset[str]:
        """Every lesson a merge writes (survivors and predecessors); groups write nothing."""
        return frozenset(i for m in self.merges for i in (m.survivor, *m.predecessors))


# Texts whose specifics are kept: every recall asks for those of each of its hits (up to the
# candidate pool, 50 by default) to group near-duplicates, ~8 us a text, and the same lessons
# come back recall after recall. With ``conflicts``' memo of polarity, about 1.5 KB a text
# (3 MB full, measured with tracemalloc).
_SPECIFICS_MEMO = 2048


@functools.lru_cache(maxsize=_SPECIFICS_MEMO)
def specifics(text: str) -> frozenset[str]:
    """What makes a lesson's advice concrete: backticked and quoted spans, and every word with
    a path, flag, version or identifier character in it (lowercase, edge punctuation off).
    Memoised (a pure function of the text)."""
    out = {m.group(1) or m.group(2) for m in _QUOTED.finditer(text)}
    for raw in text.split():
        word = raw.strip(_EDGE_PUNCT)
        if any(ch in _SPECIFIC_CHARS for ch in word):
            out.add(word)
    return frozenset(w.strip().lower() for w in out if w.strip())


def recommendation_key(row: LessonRow, markers: Collection[str]) -> tuple[Any, ...]:
    """What must be equal for two lessons to be near-duplicates, except their meaning."""
    claim = mechanical_claim(row)
    structure = (claim.prefer, claim.avoid, claim.target) if claim is not None else None
    return (
        row.category.value,
        row.scope,
        row.access_level,
        tuple(sorted(row.recipients)),
        normalise_operation(row.operation),
        structure,
        is_negated(row.content, markers),
        tuple(sorted(specifics(row.content))),
    )


def _successes(row: LessonRow) -> int:
    """Successes behind a lesson: its birth outcome and confirmations (evidence is capped)."""
    return max(len(row.evidence), row.confirmations)


def _priority(row: LessonRow) -> tuple[Any, ...]:
    """Best-supported first: confidence, successes, age, then id for a stable order."""
    return (-row.confidence, -_successes(row), row.created_at, row.id)


def _clusters(
    rows: Sequence[LessonRow],
    embeddings: Mapping[str, npt.NDArray[np.floating[Any]]],
    p: ConsolidationParams,
    similarity: SimilarityFn,
) -> list[list[LessonRow]]:
    """Leader clustering: each row joins the first leader it is near enough to, in meaning and
    in context.

    Comparing with the leader only (not with any member) stops chains of small steps from
    merging lessons that are far apart.
    """
    clusters: list[list[LessonRow]] = []
    for row in sorted(rows, key=_priority):
        vec = embeddings.get(row.id)
        home = None
        if vec is not None:
            for cluster in clusters:
                lead = embeddings.get(cluster[0].id)
                if (
                    lead is not None
                    and cosine(vec, lead) >= p.min_similarity
                    and similarity(cluster[0].context, row.context) >= p.min_context_similarity
                ):
                    home = cluster
                    break
        if home is None:
            clusters.append([row])
        else:
            home.append(row)
    return clusters


def _merge(
    rows: Sequence[LessonRow], p: ConsolidationParams, times: Mapping[str, datetime]
) -> Merge:
    """Merge rows (best-supported first) into the first."""
    dated: list[tuple[datetime, int, int, str]] = []
    for r_index, row in enumerate(rows):
        for e_index, oid in enumerate(row.evidence):
            dated.append((times.get(oid, row.updated_at), r_index, e_index, oid))
    dated.sort()
    # The latest sighting of an id decides its place; the list keeps the most recent ones.
    ordered = list(dict.fromkeys(oid for *_, oid in reversed(dated)))
    ordered.reverse()
    projects = tuple(dict.fromkeys(pr for row in rows for pr in row.confirmed_projects))
    used = [row.last_used for row in rows if row.last_used is not None]
    return Merge(
        survivor=rows[0].id,
        predecessors=tuple(row.id for row in rows[1:]),
        confirmations=sum(row.confirmations for row in rows),
        contradictions=sum(row.contradictions for row in rows),
        use_count=sum(row.use_count for row in rows),
        evidence=tuple(ordered[-p.evidence_kept :]),
        evidence_total=len(ordered),
        confirmed_projects=projects,
        last_used=max(used) if used else None,
    )


def plan_consolidation(
    lessons: Sequence[LessonRow],
    embeddings: Mapping[str, npt.NDArray[np.floating[Any]]],
    p: ConsolidationParams,
    context: ContextParams,
    *,
    negation_markers: Collection[str],
    skip: Collection[str] = (),
    outcome_times: Mapping[str, datetime] | None = None,
    similarity: SimilarityFn | None = None,
) -> ConsolidationPlan:
    """The merges and recall groups among ``lessons`` (see the module docstring).

    ``negation_markers`` are ``ConflictParams.negation_markers`` (one polarity rule for both
    passes); ``outcome_times`` orders evidence across lessons (an id without a time takes its
    lesson's ``updated_at``); ``similarity`` defaults to ``context_similarity`` with
    ``context`` (pass the learned one to weigh variables by what outcomes taught).
    """
    times = outcome_times or {}
    sim: SimilarityFn = similarity or (lambda x, y: context_similarity(x, y, context))
    buckets: dict[tuple[Any, ...], list[LessonRow]] = {}
    for row in lessons:
        if row.status is LessonStatus.ACTIVE and row.id not in skip:
            buckets.setdefault(recommendation_key(row, negation_markers), []).append(row)
    merges: list[Merge] = []
    groups: list[RecallGroup] = []
    for key in sorted(buckets, key=repr):
        for cluster in _clusters(buckets[key], embeddings, p, sim):
            local = [r for r in cluster if r.imported_from is None]
            imported = [r for r in cluster if r.imported_from is not None]
            if len(local) >= 2:
                merges.append(_merge(local, p, times))
            if imported and len(cluster) >= 2:
                heads = [local[0]] if local else []
                members = sorted((*heads, *imported), key=_priority)
                if len(members) >= 2:
                    groups.append(RecallGroup(tuple(r.id for r in members)))
    return ConsolidationPlan(tuple(merges), tuple(groups))


def apply_merge(
    rows: Mapping[str, LessonRow], merge: Merge, *, now: datetime
) -> tuple[LessonRow, ...]:
    """The survivor and its predecessors after ``merge`` (survivor first)."""
    missing = [i for i in (merge.survivor, *merge.predecessors) if i not in rows]
    if missing:
        raise InvalidRecord(f"merge names unknown lessons: {missing}", reason="unknown_lesson")
    survivor = replace(
        rows[merge.survivor],
        evidence=merge.evidence,
        confirmations=merge.confirmations,
        contradictions=merge.contradictions,
        use_count=merge.use_count,
        confirmed_projects=merge.confirmed_projects,
        last_used=merge.last_used,
        updated_at=now,
    )
    gone = tuple(
        replace(
            rows[i], status=LessonStatus.SUPERSEDED, superseded_by=merge.survivor, updated_at=now
        )
        for i in merge.predecessors
    )
    return (survivor, *gone)


def collapse_groups(ranked: Sequence[str], groups: Sequence[RecallGroup]) -> list[str]:
    """Ranked lesson ids with every group shown once, by its best-ranked member."""
    group_of = {m: g for g, group in enumerate(groups) for m in group.members}
    seen: set[int] = set()
    out: list[str] = []
    for lid in ranked:
        g = group_of.get(lid)
        if g is not None:
            if g in seen:
                continue
            seen.add(g)
        out.append(lid)
    return out
