"""The taint rule: lessons of revoked or graylisted sources, and local lessons learned only
under them."""

from __future__ import annotations

from lamarck.consensus.taint import LessonFacts, taint_plan, tainted_sources
from lamarck.reputation.scores import PeerBand

BAD, GOOD = "lmk1bad", "lmk1good"


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
    assert plan.imported == (("a", BAD), ("c", BAD))
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
    assert plan.local == (("only", BAD),)
    assert plan.lesson_ids == ("imp", "only")


def test_taint_follows_a_chain_of_local_lessons() -> None:
    lessons = [
        LessonFacts("second", None, ("o2",)),
        LessonFacts("first", None, ("o1",)),
        LessonFacts("imp", BAD),
    ]
    plan = taint_plan(lessons, {"o1": ("imp",), "o2": ("first",)}, frozenset({BAD}))
    assert set(plan.local) == {("first", BAD), ("second", BAD)}


def test_nothing_is_tainted_without_a_tainted_source() -> None:
    plan = taint_plan([LessonFacts("a", GOOD), LessonFacts("l", None, ("o",))], {}, frozenset())
    assert plan.lesson_ids == ()
