"""The taint sweep's reading of "learned under": which in-play lessons a local lesson was
not learned under (``lamarck.node.sharing.taint.unrelated_in_play``)."""

from __future__ import annotations

from datetime import UTC, datetime

from lamarck.domain.rows import LessonRow
from lamarck.learning.mechanical import MechanicalLesson
from lamarck.node.sharing.taint import unrelated_in_play
from tests.factories import lesson_row

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LIAR = "lmk1liar"


def _row(
    lesson_id: str, m: MechanicalLesson | None, *, imported: bool = False, **kw: object
) -> LessonRow:
    return lesson_row(
        lesson_id,
        content=m.content if m else "Check the logs first.",
        operation=m.prefer if m else "",
        confidence=0.6,
        at=T0,
        tags=m.tags if m else (),
        imported_from=LIAR if imported else None,
        **kw,
    )


FIX = MechanicalLesson("shell:make -C build wheel", "shell:make wheel", "wheel")
POISON = MechanicalLesson("shell:make wheel", "shell:make -C build wheel", "wheel")
ELSEWHERE = MechanicalLesson("shell:make docs", "shell:make -C build docs", "docs")
SAME = MechanicalLesson("shell:make -C build wheel", "shell:make wheel", "wheel")


def test_a_refuted_lesson_and_one_about_another_target_are_not_parents() -> None:
    rows = {
        "fix": _row("fix", FIX, evidence=("o1", "o2")),
        "poison": _row("poison", POISON, imported=True),
        "elsewhere": _row("elsewhere", ELSEWHERE, imported=True),
        "same": _row("same", SAME, imported=True),
        "prose": _row("prose", None, imported=True),
    }
    in_play = {"o1": ("poison", "elsewhere", "same", "prose"), "o2": ("fix", "elsewhere")}
    # The one saying the same thing, and one the node cannot read, stay possible parents.
    assert unrelated_in_play(rows["fix"], rows, in_play) == frozenset({"poison", "elsewhere"})


def test_nothing_is_ruled_out_for_a_lesson_that_is_not_mechanical_or_is_imported() -> None:
    rows = {
        "prose": _row("prose", None, evidence=("o1",)),
        "copy": _row("copy", FIX, imported=True, evidence=("o1",)),
        "elsewhere": _row("elsewhere", ELSEWHERE, imported=True),
    }
    in_play = {"o1": ("elsewhere",)}
    assert unrelated_in_play(rows["prose"], rows, in_play) == frozenset()
    assert unrelated_in_play(rows["copy"], rows, in_play) == frozenset()
