"""Conflicts: found narrowly (same topic, alike contexts, opposite claims), settled by a test."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from lamarck.domain.rows import LessonRow, LessonStatus
from lamarck.errors import InvalidRecord
from lamarck.learning.attribution import Attribution, Effect
from lamarck.learning.conflicts import (
    ConflictKind,
    Trial,
    apply_update,
    contest,
    detect_conflicts,
    is_negated,
    settle,
    settle_outcome,
    settle_proven,
    trials_from_attributions,
    winner_of,
)
from lamarck.learning.knowledge_params import ConflictParams
from lamarck.learning.mechanical import MechanicalLesson
from lamarck.learning.params import ContextParams
from lamarck.learning.prompt import conflict_line
from lamarck.reputation.events import EventKind
from tests.factories import lesson_row

NOW = datetime(2026, 3, 1, tzinfo=UTC)
P = ConflictParams()
CTX = ContextParams()
SCOPE = "project:" + "ab" * 16
OTHER_SCOPE = "project:" + "cd" * 16
PROD = {"domain": "ci", "environment": "linux"}
A, B, T = "shell:pytest tests/", "shell:pytest", "the test suite"
DIM = 32


def row(lid: str, **over: Any) -> LessonRow:
    """A stored active lesson with sensible defaults."""
    base: dict[str, Any] = dict(
        content="pytest works with the xdist plugin",
        operation="shell:pytest -n auto",
        scope=SCOPE,
        at=NOW,
        evidence=("o-birth-" + lid,),
        context=dict(PROD),
    )
    return lesson_row(lid, **{**base, **over})


def mech(lid: str, prefer: str, avoid: str, target: str = T, **over: Any) -> LessonRow:
    """A mechanical lesson "prefer ``prefer`` over ``avoid`` for ``target``"."""
    m = MechanicalLesson(prefer=prefer, avoid=avoid, target=target)
    return row(lid, content=m.content, operation=prefer, tags=m.tags, **over)


def unit(seed: int, near: np.ndarray | None = None, noise: float = 0.05) -> np.ndarray:
    """A deterministic unit vector, optionally close to ``near``."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=DIM)
    if near is not None:
        v = near + noise * v
    return (v / np.linalg.norm(v)).astype(np.float32)


def test_reversed_mechanical_lessons_in_alike_contexts_conflict_by_structure() -> None:
    old, new = mech("m1", B, A), mech("m2", A, B)
    [c] = detect_conflicts([old, new], {}, P, CTX)
    assert c.kind is ConflictKind.STRUCTURAL and c.pair == ("m1", "m2")
    assert c.settled_by == tuple(sorted((A, B))) and c.target == T


def test_mechanical_lessons_about_another_target_or_pair_do_not_conflict() -> None:
    lessons = [mech("m1", B, A), mech("m2", A, B, target="docs"), mech("m3", B, "shell:tox")]
    assert detect_conflicts(lessons, {}, P, CTX) == []


def test_lessons_in_different_contexts_never_conflict() -> None:
    elsewhere = {"domain": "ci", "environment": "windows"}  # a critical dimension differs
    assert (
        detect_conflicts([mech("m1", B, A), mech("m2", A, B, context=elsewhere)], {}, P, CTX) == []
    )


def test_two_projects_lessons_never_conflict_but_a_global_one_meets_both() -> None:
    lessons = [mech("m1", B, A), mech("m2", A, B, scope=OTHER_SCOPE)]
    assert detect_conflicts(lessons, {}, P, CTX) == []
    lessons[1] = dataclasses.replace(lessons[1], scope="global")
    assert len(detect_conflicts(lessons, {}, P, CTX)) == 1


def test_opposite_claims_on_the_same_operation_conflict_by_meaning() -> None:
    base = unit(1)
    pos = row("s1")
    neg = row("s2", content="pytest does not work with the xdist plugin")
    [c] = detect_conflicts([pos, neg], {"s1": base, "s2": unit(2, base)}, P, CTX)
    assert c.kind is ConflictKind.SEMANTIC and c.negated == "s2"
    assert c.settled_by == ("shell:pytest -n auto",)


def test_meaning_conflict_needs_opposite_polarity_close_vectors_and_the_same_operation() -> None:
    base = unit(1)
    vecs = {"s1": base, "s2": unit(2, base), "s3": unit(3), "s4": unit(4, base)}
    pos = row("s1")
    same_polarity = row("s2", content="pytest works fine with xdist")
    far = row("s3", content="pytest does not work without a conftest")  # "not ... without": even
    far_neg = row("s3", content="pytest never collects doctests")
    other_op = row("s4", content="pytest does not work here", operation="shell:pytest -x")
    assert detect_conflicts([pos, same_polarity], vecs, P, CTX) == []
    assert is_negated(far.content, P.negation_markers) is False
    assert detect_conflicts([pos, far_neg], vecs, P, CTX) == []  # vectors far apart
    assert detect_conflicts([pos, other_op], vecs, P, CTX) == []
    assert detect_conflicts([pos, row("s2", content="never")], {}, P, CTX) == []  # no vectors
    other_claim = row("s2", content="pytest -n auto does not speed up doctest collection")
    assert detect_conflicts([pos, other_claim], vecs, P, CTX) == []  # close vectors, other words


def test_only_active_lessons_conflict() -> None:
    for status in (LessonStatus.CLAIMED, LessonStatus.SUPERSEDED, LessonStatus.RETIRED):
        assert (
            detect_conflicts([mech("m1", B, A), mech("m2", A, B, status=status)], {}, P, CTX) == []
        )


def test_contest_marks_both_sides_and_moves_nothing_else() -> None:
    rows = {"m1": mech("m1", B, A, confidence=0.7), "m2": mech("m2", A, B)}
    [c] = detect_conflicts(list(rows.values()), {}, P, CTX)
    marks = contest(c, rows)
    assert {(u.lesson_id, u.contested_with) for u in marks} == {("m1", "m2"), ("m2", "m1")}
    for u in marks:
        after = apply_update(rows[u.lesson_id], u, now=NOW, max_evidence=64)
        assert after == rows[u.lesson_id]


def test_winner_gains_up_to_the_cap_and_loser_is_superseded_with_the_outcome_as_evidence() -> None:
    win, lose = mech("m1", B, A, confidence=0.7), mech("m2", A, B, confidence=0.5)
    [c] = detect_conflicts([win, lose], {}, P, CTX)
    s = settle(c, win, lose, outcome_id="o-9", at=NOW, p=P)
    w, lo = s.updates
    assert (w.lesson_id, w.confidence_after, w.verified_against) == ("m1", 0.8, "m2")
    assert lo.confidence_after == pytest.approx(0.2)
    assert (lo.status, lo.superseded_by) == (LessonStatus.SUPERSEDED, "m1")
    after = apply_update(lose, lo, now=NOW, max_evidence=64)
    assert after.evidence[-1] == "o-9" and after.contradictions == 1
    assert after.superseded_by == "m1" and after.status is LessonStatus.SUPERSEDED
    assert apply_update(win, w, now=NOW, max_evidence=64).confirmations == 1
    assert s.reputation == ()  # both local: nobody's reputation moves


def test_a_winner_born_of_the_settling_outcome_gains_no_second_step() -> None:
    # The reversal a run just learned settles against the lesson that run disproved: one
    # outcome, one observation — counted at birth, so the win names the loser and adds nothing.
    born, stale = mech("m1", B, A, evidence=("o-9",)), mech("m2", A, B, confidence=0.65)
    [c] = detect_conflicts([born, stale], {}, P, CTX)
    w, lo = settle(c, born, stale, outcome_id="o-9", at=NOW, p=P).updates
    assert (w.confidence_after, w.confirmations_delta, w.verified_against) == (0.5, 0, "m2")
    after = apply_update(born, w, now=NOW, max_evidence=64)
    assert after.confidence == 0.5 and after.confirmations == 0 and after.evidence == ("o-9",)
    # The loser moves by the rule as before, and is superseded by the newborn lesson.
    assert lo.confidence_after == pytest.approx(0.35) and lo.superseded_by == "m1"
    # Another outcome than its evidence is a real trial: the step applies.
    w2, _ = settle(c, born, stale, outcome_id="o-10", at=NOW, p=P).updates
    assert w2.confidence_after == pytest.approx(0.7) and w2.confirmations_delta == 1


def test_an_uncontested_conflict_is_settled_only_by_a_side_that_held() -> None:
    a, b = mech("m1", B, A), mech("m2", A, B)
    [c] = detect_conflicts([a, b], {}, P, CTX)
    rows = {"m1": a, "m2": b}

    def proven(*atts: Attribution) -> str | None:
        s = settle_proven(c, rows, atts, outcome_id="o", at=NOW, p=P)
        return None if s is None else s.winner

    assert proven(Attribution("m1", Effect.CONFIRMED, "ran")) == "m1"  # held vs untested
    assert proven(Attribution("m2", Effect.CONFIRMED, "ran")) == "m2"
    held_and_failed = (
        Attribution("m1", Effect.CONFIRMED, "ran"),
        Attribution("m2", Effect.CONTRADICTED, "ran"),
    )
    assert proven(*held_and_failed) == "m1"
    # Only a failure: an open conflict would crown the untested side, an uncontested one not.
    failed = Attribution("m1", Effect.CONTRADICTED, "ran")
    assert settle_outcome(c, rows, [failed], outcome_id="o", at=NOW, p=P) is not None
    assert proven(failed) is None
    assert proven() is None and proven(Attribution("m1", Effect.NOT_ATTRIBUTED, "")) is None


def test_settlement_never_lowers_a_winner_above_the_cap_nor_raises_a_loser_below_the_floor() -> (
    None
):
    win, lose = mech("m1", B, A, confidence=0.9), mech("m2", A, B, confidence=0.05)
    [c] = detect_conflicts([win, lose], {}, P, CTX)
    w, lo = settle(c, win, lose, outcome_id="o", at=NOW, p=P).updates
    assert w.confidence_after == 0.9 and lo.confidence_after == 0.05
    low_loser = mech("m2", A, B, confidence=0.3)
    assert settle(c, win, low_loser, outcome_id="o", at=NOW, p=P).updates[1].confidence_after == 0.1


def test_structural_conflict_is_settled_by_attribution_of_either_operation() -> None:
    rows = {"m1": mech("m1", B, A), "m2": mech("m2", A, B)}
    [c] = detect_conflicts(list(rows.values()), {}, P, CTX)
    # The run tried A (m2's recommendation) and it failed: m1 wins.
    atts = [Attribution("m2", Effect.CONTRADICTED, "operation_failed")]
    s = settle_outcome(c, rows, atts, outcome_id="o", at=NOW, p=P)
    assert s is not None and (s.winner, s.loser) == ("m1", "m2")
    # Both held (A and B both worked): the outcome cannot settle it.
    both = [Attribution(i, Effect.CONFIRMED, "ok") for i in rows]
    assert settle_outcome(c, rows, both, outcome_id="o", at=NOW, p=P) is None
    assert settle_outcome(c, rows, [], outcome_id="o", at=NOW, p=P) is None


def test_a_negated_claim_holds_when_the_operation_it_warns_against_fails() -> None:
    base = unit(1)
    rows = {"s1": row("s1"), "s2": row("s2", content="pytest does not work with the xdist plugin")}
    [c] = detect_conflicts(list(rows.values()), {"s1": base, "s2": unit(2, base)}, P, CTX)
    failed = [Attribution(i, Effect.CONTRADICTED, "operation_failed") for i in rows]
    assert set(trials_from_attributions(c, failed)) == {Trial("s1", False), Trial("s2", True)}
    assert winner_of(c, trials_from_attributions(c, failed)) == "s2"
    worked = [Attribution("s2", Effect.CONFIRMED, "operation_ok_run_passed")]
    assert winner_of(c, trials_from_attributions(c, worked)) == "s1"


def test_winner_of_needs_the_tests_to_tell_the_sides_apart() -> None:
    rows = {"m1": mech("m1", B, A), "m2": mech("m2", A, B)}
    [c] = detect_conflicts(list(rows.values()), {}, P, CTX)
    assert winner_of(c, [Trial("m1", True)]) == "m1"
    assert winner_of(c, [Trial("m1", False)]) == "m2"
    assert winner_of(c, [Trial("m1", True), Trial("m2", False)]) == "m1"
    assert winner_of(c, [Trial("m1", False), Trial("m2", False)]) is None
    assert winner_of(c, [Trial("zz", True)]) is None


@pytest.mark.parametrize("imported_wins", [True, False])
def test_imported_against_local_settles_the_same_way_and_moves_the_source_reputation(
    imported_wins: bool,
) -> None:
    local = mech("m1", B, A, confidence=0.6)
    imported = mech(
        "m2",
        A,
        B,
        confidence=0.4,
        imported_from="lmk1source",
        original_confidence=0.7,
        content_hash="h" * 64,
    )
    [c] = detect_conflicts([local, imported], {}, P, CTX)
    win, lose = (imported, local) if imported_wins else (local, imported)
    s = settle(c, win, lose, outcome_id="o-5", at=NOW, p=P)
    [event] = s.reputation
    assert event.node_id == "lmk1source" and event.record_hash == "h" * 64
    expected = EventKind.LESSON_CONFIRMED if imported_wins else EventKind.LESSON_CONTRADICTED
    assert event.kind is expected and event.weight == 0.7
    assert s.updates[0].confidence_after == pytest.approx(win.confidence + 0.2)


def test_settling_one_conflict_moves_no_neighbour_in_scope_operation_or_embedding() -> None:
    base = unit(0)
    keep, drop = mech("c-keep", B, A, confidence=0.6), mech("c-drop", A, B, confidence=0.6)
    elsewhere = {"domain": "ci", "environment": "windows"}
    neighbours = []
    for i in range(80):
        kind, lid = i % 4, f"n{i:02}"
        if kind == 0:  # agrees with c-keep, in its words, on its operation
            n = row(lid, content=f"`{B}` collects the suite, run {i}", operation=B)
        elif kind == 1:  # prefers the same operation over something else
            n = mech(lid, B, f"shell:pytest -p plugin-{i}")
        elif kind == 2:  # says the opposite of c-keep, learned where a critical variable differs
            n = row(
                lid, content=f"`{B}` does not collect the suite {i}", operation=B, context=elsewhere
            )
        else:  # repeats c-drop's reversed pair, but in the other environment
            n = mech(lid, A, B, context=elsewhere)
        neighbours.append(n)
    lessons = [keep, drop, *neighbours]
    vecs = {r.id: unit(100 + k, base, noise=0.1) for k, r in enumerate(lessons)}
    conflicts = detect_conflicts(lessons, vecs, P, CTX)
    assert [c.pair for c in conflicts] == [("c-drop", "c-keep")]
    [c] = conflicts
    by_id = {r.id: r for r in lessons}
    # The run tried A (c-drop's advice) and it failed.
    atts = [Attribution("c-drop", Effect.CONTRADICTED, "operation_failed")]
    s = settle_outcome(c, by_id, atts, outcome_id="o-1", at=NOW, p=P)
    assert s is not None and s.lesson_ids == {"c-keep", "c-drop"}
    after = dict(by_id)
    for u in (*contest(c, by_id), *s.updates):
        after[u.lesson_id] = apply_update(after[u.lesson_id], u, now=NOW, max_evidence=64)
    moved = {lid for lid in by_id if after[lid] != by_id[lid]}
    assert moved == {"c-keep", "c-drop"}
    assert after["c-keep"].confidence == pytest.approx(0.8)
    assert after["c-drop"].superseded_by == "c-keep"


def test_every_lesson_that_contradicts_a_claim_in_its_context_is_found() -> None:
    base = unit(0)
    neg = row("neg", content="pytest does not work with the xdist plugin")
    agreeing = [row(f"p{i}", content=f"pytest works with the xdist plugin {i}") for i in range(5)]
    lessons = [neg, *agreeing]
    vecs = {r.id: unit(10 + k, base, noise=0.1) for k, r in enumerate(lessons)}
    pairs = [c.pair for c in detect_conflicts(lessons, vecs, P, CTX)]
    assert pairs == [("neg", f"p{i}") for i in range(5)]


def test_evidence_added_by_a_settlement_stays_bounded() -> None:
    win, lose = mech("m1", B, A), mech("m2", A, B, evidence=tuple(f"o{i}" for i in range(64)))
    [c] = detect_conflicts([win, lose], {}, P, CTX)
    lo = settle(c, win, lose, outcome_id="o-new", at=NOW, p=P).updates[1]
    after = apply_update(lose, lo, now=NOW, max_evidence=64)
    assert (
        len(after.evidence) == 64 and after.evidence[-1] == "o-new" and "o0" not in after.evidence
    )


def test_a_plan_refuses_lessons_outside_its_conflict() -> None:
    win, lose = mech("m1", B, A), mech("m2", A, B)
    [c] = detect_conflicts([win, lose], {}, P, CTX)
    with pytest.raises(InvalidRecord):
        settle(c, win, mech("m3", A, B), outcome_id="o", at=NOW, p=P)
    with pytest.raises(InvalidRecord):
        c.other("m3")


def test_the_preamble_names_the_conflict_and_what_settles_it() -> None:
    a, b = mech("m1", B, A), mech("m2", A, B)
    [c] = detect_conflicts([a, b], {}, P, CTX)
    sides = [("unverified, from 1 peer, confidence 0.29", x.content) for x in (a, b)]
    hint = conflict_line(a.operation, sides, None, c.settled_by, c.target)
    assert a.content in hint and b.content in hint and f"`{A}`" in hint and T in hint
    assert "Unresolved: neither side is advice" in hint
    held = conflict_line(a.operation, sides, "proven here", c.settled_by, c.target)
    assert "The proven here side holds" in held
