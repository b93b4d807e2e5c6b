"""The taint rule: lessons of revoked or graylisted sources, lessons whose record the operator
retracted, and local lessons learned only under them."""

from __future__ import annotations

from lamarck.consensus.taint import (
    RETRACTED_RECORD,
    TAINTED_SOURCE,
    LessonFacts,
    Taken,
    taint_plan,
    tainted_sources,
)
from lamarck.reputation.scores import PeerBand

BAD, GOOD = "lmk1bad", "lmk1good"
H1, H2, H3 = "11" * 32, "22" * 32, "33" * 32


def test_revoked_and_graylisted_sources_are_tainted_others_are_not() -> None:
    bands = {BAD: PeerBand.GRAYLISTED, GOOD: PeerBand.NEUTRAL, "lmk1gone": PeerBand.TRUSTED}
    got = tainted_sources([BAD, GOOD, "lmk1gone"], revoked=["lmk1gone"], band_of=bands)
    assert got == frozenset({BAD, "lmk1gone"})


def test_every_live_lesson_a_tainted_source_signed_is_tainted() -> None:
    plan = taint_plan(
        [LessonFacts("a", BAD), LessonFacts("b", GOOD), LessonFacts("c", BAD)],
        {},
        frozenset({BAD}),
    )
    assert plan.direct == (Taken("a", BAD, TAINTED_SOURCE), Taken("c", BAD, TAINTED_SOURCE))
    assert plan.local == ()


def test_a_local_lesson_learned_only_under_tainted_lessons_is_tainted() -> None:
    lessons = [
        LessonFacts("imp", BAD),
        LessonFacts("only", None, ("o1", "o2")),
        LessonFacts("mixed", None, ("o1", "o3")),
        LessonFacts("bare", None, ()),
    ]
    in_play = {"o1": ("imp",), "o2": ("imp", "x"), "o3": ()}
    plan = taint_plan(lessons, in_play, frozenset({BAD}))
    assert plan.local == (Taken("only", BAD, TAINTED_SOURCE),)
    assert plan.lesson_ids == ("imp", "only")


def test_taint_follows_a_chain_of_local_lessons() -> None:
    lessons = [
        LessonFacts("second", None, ("o2",)),
        LessonFacts("first", None, ("o1",)),
        LessonFacts("imp", BAD),
    ]
    plan = taint_plan(lessons, {"o1": ("imp",), "o2": ("first",)}, frozenset({BAD}))
    assert set(plan.local) == {Taken("first", BAD), Taken("second", BAD)}


def test_nothing_is_tainted_without_a_tainted_source() -> None:
    plan = taint_plan([LessonFacts("a", GOOD), LessonFacts("l", None, ("o",))], {}, frozenset())
    assert plan.lesson_ids == ()


# -- retracted records -----------------------------------------------------------------------


def test_a_retracted_record_is_taken_out_and_its_sources_other_lessons_stay() -> None:
    lessons = [
        LessonFacts("one", GOOD, content_hash=H1),
        LessonFacts("two", GOOD, content_hash=H2),
        LessonFacts("other", BAD, content_hash=H3),
    ]
    plan = taint_plan(lessons, {}, frozenset(), frozenset({H1}))
    assert plan.direct == (Taken("one", GOOD, RETRACTED_RECORD),)
    assert plan.local == ()


def test_a_retracted_hash_this_node_does_not_hold_takes_nothing_out() -> None:
    lessons = [LessonFacts("one", GOOD, content_hash=H1), LessonFacts("bare", GOOD)]
    assert taint_plan(lessons, {}, frozenset(), frozenset({H3})).lesson_ids == ()


def test_this_nodes_own_retracted_record_is_charged_to_nobody_else() -> None:
    plan = taint_plan([LessonFacts("mine", None, ("o",), H1)], {}, frozenset(), frozenset({H1}))
    assert plan.direct == (Taken("mine", "", RETRACTED_RECORD),)


def test_a_local_lesson_learned_only_under_a_retracted_record_follows_it() -> None:
    lessons = [
        LessonFacts("retracted", GOOD, content_hash=H1),
        LessonFacts("kept", GOOD, content_hash=H2),
        LessonFacts("under", None, ("o1", "o2")),
        LessonFacts("also_kept", None, ("o1", "o3")),
        LessonFacts("chained", None, ("o4",)),
    ]
    in_play = {"o1": ("retracted",), "o2": ("retracted", "kept"), "o3": ("kept",), "o4": ("under",)}
    plan = taint_plan(lessons, in_play, frozenset(), frozenset({H1}))
    assert plan.local == (
        Taken("under", GOOD, RETRACTED_RECORD),
        Taken("chained", GOOD, RETRACTED_RECORD),
    )
    assert plan.lesson_ids == ("retracted", "under", "chained")


def test_a_local_lesson_under_a_retracted_and_a_tainted_lesson_is_taken_out() -> None:
    lessons = [
        LessonFacts("retracted", GOOD, content_hash=H1),
        LessonFacts("tainted", BAD, content_hash=H2),
        LessonFacts("under_both", None, ("o1", "o2")),
    ]
    in_play = {"o1": ("retracted",), "o2": ("tainted",)}
    plan = taint_plan(lessons, in_play, frozenset({BAD}), frozenset({H1}))
    assert plan.direct == (
        Taken("retracted", GOOD, RETRACTED_RECORD),
        Taken("tainted", BAD, TAINTED_SOURCE),
    )
    # The reason of the first lesson taken out under its first outcome.
    assert plan.local == (Taken("under_both", GOOD, RETRACTED_RECORD),)


def test_a_retracted_record_of_a_tainted_source_is_charged_as_retracted() -> None:
    plan = taint_plan(
        [LessonFacts("x", BAD, content_hash=H1), LessonFacts("y", BAD, content_hash=H2)],
        {},
        frozenset({BAD}),
        frozenset({H1}),
    )
    assert plan.direct == (Taken("x", BAD, RETRACTED_RECORD), Taken("y", BAD, TAINTED_SOURCE))


def test_a_lesson_is_not_taken_out_for_in_play_lessons_it_was_not_learned_under() -> None:
    # "fix" was learned from outcomes that had the liar's lessons in play: one it refuted and
    # one about another target. Neither taught it; only "follower" was learned under "imp".
    lessons = [
        LessonFacts("imp", BAD),
        LessonFacts("other", BAD),
        LessonFacts("fix", None, ("o1", "o2"), unrelated=frozenset({"imp", "other"})),
        LessonFacts("follower", None, ("o3",), unrelated=frozenset({"other"})),
    ]
    in_play = {"o1": ("imp", "other"), "o2": ("fix", "other"), "o3": ("imp", "other")}
    plan = taint_plan(lessons, in_play, frozenset({BAD}))
    assert plan.local == (Taken("follower", BAD, TAINTED_SOURCE),)
