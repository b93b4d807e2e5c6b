"""Consolidation: near-duplicates merge into one lesson with summed counts and bounded evidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.learning.conflicts import _negated, is_negated
from lamarck.learning.consolidation import (
    Merge,
    RecallGroup,
    apply_merge,
    collapse_groups,
    plan_consolidation,
    specifics,
)
from lamarck.learning.knowledge_params import NEGATION_MARKERS, ConsolidationParams
from lamarck.learning.mechanical import MechanicalLesson
from lamarck.learning.params import ContextParams
from tests.factories import lesson_row

NOW = datetime(2026, 3, 1, tzinfo=UTC)
P = ConsolidationParams()
CTX = ContextParams()
DIM = 32


def row(lid: str, **over: Any) -> LessonRow:
    """An active global lesson about running pytest from the repo root."""
    base: dict[str, Any] = dict(
        content="Run pytest from the repo root",
        operation="shell:pytest",
        confidence=0.6,
        at=NOW,
        evidence=(f"o-{lid}",),
        confirmations=1,
        confirmed_projects=(f"p-{lid}",),
    )
    return lesson_row(lid, **{**base, **over})


def unit(seed: int, near: np.ndarray | None = None, noise: float = 0.05) -> np.ndarray:
    """A deterministic unit vector, optionally close to ``near``."""
    v = np.random.default_rng(seed).normal(size=DIM)
    if near is not None:
        v = near + noise * v
    return (v / np.linalg.norm(v)).astype(np.float32)


def plan(lessons: list[LessonRow], vecs: dict[str, np.ndarray], **kw: Any) -> Any:
    return plan_consolidation(lessons, vecs, P, CTX, negation_markers=NEGATION_MARKERS, **kw)


def test_near_duplicates_merge_into_the_best_supported_with_summed_counts() -> None:
    base = unit(0)
    lessons = [
        row("a", confidence=0.7, confirmations=3, contradictions=1, use_count=4),
        row("b", confidence=0.6, confirmations=2, use_count=1, last_used=NOW),
        row("c", confidence=0.5, confirmations=0, contradictions=2),
    ]
    vecs = {r.id: unit(i + 1, base) for i, r in enumerate(lessons)}
    [m] = plan(lessons, vecs).merges
    assert (m.survivor, m.predecessors) == ("a", ("b", "c"))
    assert (m.confirmations, m.contradictions, m.use_count) == (5, 3, 5)
    assert set(m.evidence) == {"o-a", "o-b", "o-c"} and m.evidence_total == 3
    assert m.confirmed_projects == ("p-a", "p-b", "p-c") and m.last_used == NOW


def test_a_merge_keeps_every_predecessor_in_history_and_the_survivor_s_confidence() -> None:
    base = unit(0)
    lessons = [row("a", confidence=0.7), row("b", confidence=0.9)]
    vecs = {"a": unit(1, base), "b": unit(2, base)}
    [m] = plan(lessons, vecs).merges
    rows = {r.id: r for r in lessons}
    survivor, *gone = apply_merge(rows, m, now=NOW + timedelta(days=1))
    assert survivor.id == "b" and survivor.confidence == 0.9 and survivor.confirmations == 2
    assert [(g.id, g.status, g.superseded_by) for g in gone] == [
        ("a", LessonStatus.SUPERSEDED, "b")
    ]
    assert gone[0].confidence == 0.7 and gone[0].evidence == ("o-a",)  # history is intact


def test_merged_evidence_keeps_the_most_recent_outcomes_and_counts_the_rest() -> None:
    p = ConsolidationParams(evidence_kept=4)
    base = unit(0)
    times = {f"o{i}": NOW + timedelta(hours=i) for i in range(10)}
    a = row("a", evidence=tuple(f"o{i}" for i in range(0, 10, 2)))
    b = row("b", evidence=tuple(f"o{i}" for i in range(1, 10, 2)), confidence=0.5)
    [m] = plan_consolidation(
        [a, b],
        {"a": unit(1, base), "b": unit(2, base)},
        p,
        CTX,
        negation_markers=NEGATION_MARKERS,
        outcome_times=times,
    ).merges
    assert m.evidence == ("o6", "o7", "o8", "o9") and m.evidence_total == 10


@pytest.mark.parametrize(
    "change",
    [
        {"scope": "project:" + "ab" * 16},
        {"access_level": "private", "recipients": ("lmk1x",)},
        {"operation": "shell:pytest -x"},
        {"content": "Do not run pytest from the repo root"},
        {"status": LessonStatus.CLAIMED},
        {"content": "Run pytest from the repo root, not from tests/e2e/"},  # other specifics
        {"context": {"domain": "ci", "environment": "windows"}},  # learned elsewhere
    ],
)
def test_no_merge_across_scope_access_operation_polarity_specifics_context_or_status(
    change: dict[str, Any],
) -> None:
    base = unit(0)
    lessons = [row("a", context={"domain": "ci", "environment": "linux"}), row("b", **change)]
    p = plan(lessons, {"a": unit(1, base), "b": unit(2, base)})
    assert p.merges == () and p.groups == ()


def test_distant_meanings_and_different_mechanical_advice_do_not_merge() -> None:
    base = unit(0)
    far = plan([row("a"), row("b")], {"a": base, "b": unit(9)})
    assert far.merges == ()
    m1 = MechanicalLesson("shell:pytest", "shell:pytest tests/", "suite")
    m2 = MechanicalLesson("shell:pytest", "shell:tox", "suite")
    lessons = [
        row("a", content=m1.content, tags=m1.tags),
        row("b", content=m2.content, tags=m2.tags),
    ]
    assert plan(lessons, {"a": unit(1, base), "b": unit(2, base)}).merges == ()


def test_contested_lessons_and_lessons_without_vectors_are_left_alone() -> None:
    base = unit(0)
    lessons = [row("a"), row("b"), row("c")]
    vecs = {"a": unit(1, base), "b": unit(2, base)}
    assert plan(lessons, vecs, skip={"b"}).merges == ()


def test_imported_lessons_are_grouped_for_recall_never_merged() -> None:
    base = unit(0)
    lessons = [
        row("local1", confidence=0.6),
        row("local2", confidence=0.5),
        row("imp1", confidence=0.7, imported_from="lmk1aaa", evidence=()),
        row("imp2", confidence=0.4, imported_from="lmk1bbb", evidence=()),
    ]
    vecs = {r.id: unit(i + 1, base) for i, r in enumerate(lessons)}
    p = plan(lessons, vecs)
    [m] = p.merges
    assert (m.survivor, m.predecessors) == ("local1", ("local2",))
    assert p.groups == (RecallGroup(("imp1", "local1", "imp2")),)
    assert p.changed_ids == {"local1", "local2"}


def test_recall_shows_each_group_once_by_its_best_ranked_member() -> None:
    groups = [RecallGroup(("x", "y", "z"))]
    assert collapse_groups(["a", "y", "b", "x", "z", "c"], groups) == ["a", "y", "b", "c"]


def test_leader_clustering_does_not_chain_far_apart_lessons() -> None:
    # a ~ b and b ~ c, but a and c are far apart: c must not join a's group through b.
    a = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    b = np.array([0.9, 0.43, 0.0], dtype=np.float32)
    c = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    lessons = [row("a", confidence=0.9), row("b", confidence=0.8), row("c", confidence=0.7)]
    p = plan(lessons, {"a": a / np.linalg.norm(a), "b": b / np.linalg.norm(b), "c": c})
    assert [(m.survivor, m.predecessors) for m in p.merges] == [("a", ("b",))]


def test_applying_a_merge_naming_an_unknown_lesson_is_refused() -> None:
    m = Merge("a", ("zz",), 0, 0, 0, (), 0, (), None)
    with pytest.raises(InvalidRecord):
        apply_merge({"a": row("a")}, m, now=NOW)


def test_specifics_are_the_commands_paths_flags_versions_and_quoted_messages() -> None:
    text = 'Run `pytest -x` from the repo root on Python 3.11, not tests/; it says "no tests ran".'
    assert specifics(text) == {"pytest -x", "-x", "3.11", "tests/", "no tests ran"}
    assert specifics("Note: " + text) == specifics(text + " (seen in CI)")


def test_a_texts_specifics_and_polarity_are_worked_out_once() -> None:
    """Every recall groups its hits by these, and the same lessons come back recall after
    recall: the second time is a lookup, with the same answer."""
    text = "Don't run `npm audit fix --force` on the release branch (v2.3)"
    first, hits = specifics(text), specifics.cache_info().hits
    assert specifics(text) is first and specifics.cache_info().hits == hits + 1
    assert is_negated(text, NEGATION_MARKERS) is True
    hits = _negated.cache_info().hits
    assert is_negated(text, list(NEGATION_MARKERS)) is True  # any collection of markers
    assert _negated.cache_info().hits == hits + 1
    assert is_negated(text, ()) is False  # other markers, other answer
