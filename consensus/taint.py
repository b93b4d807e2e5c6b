"""Taint: which lessons leave every prompt when their source is revoked or graylisted.

Issue 12 §3.1. A source is tainted when the registry revoked it (an operator-signed
revocation) or this node's reputation book has it graylisted. Then:

* every live lesson it signed (an imported copy whose ``imported_from`` is the source) is
  tainted;
* every live local lesson whose evidence came only from tainted lessons is tainted too: each of
  its evidence outcomes had a tainted lesson in play. A local lesson with at least one outcome
  learned without a tainted lesson in play keeps its own ground; one with no evidence at all
  is not judged here (nothing ties it to the source). Applied until nothing changes, so a
  local lesson learned only under another tainted local lesson follows it.

Tainted lessons are retired and re-quarantined with reason ``tainted_source`` by the node
(``lamarck.node.sharing.taint``); an operator releases or rejects them. Pure: values in,
values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lamarck.reputation.scores import PeerBand

__all__ = ["TAINTED_SOURCE", "LessonFacts", "TaintPlan", "taint_plan", "tainted_sources"]

#: The quarantine reason and retirement mark of a tainted lesson.
TAINTED_SOURCE = "tainted_source"


@dataclass(frozen=True, slots=True)
class LessonFacts:
    """What the rule reads of a live lesson: id, signer if imported, evidence outcome ids."""

    lesson_id: str
    imported_from: str | None
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TaintPlan:
    """The tainted lessons, each with the source it is charged to (imported: its signer;
    local: the source of a tainted lesson it was learned under)."""

    imported: tuple[tuple[str, str], ...]
    local: tuple[tuple[str, str], ...]

    @property
    def lesson_ids(self) -> tuple[str, ...]:
        """Every tainted lesson id, imported first."""
        return tuple(i for i, _ in self.imported) + tuple(i for i, _ in self.local)


def tainted_sources(
    sources: Iterable[str], *, revoked: Iterable[str], band_of: Mapping[str, PeerBand]
) -> frozenset[str]:
    """The sources among ``sources`` that are revoked or graylisted."""
    gone = set(revoked)
    return frozenset(s for s in sources if s in gone or band_of.get(s) is PeerBand.GRAYLISTED)


def taint_plan(
    lessons: Iterable[LessonFacts],
    in_play: Mapping[str, tuple[str, ...]],
    tainted: frozenset[str],
) -> TaintPlan:
    """Which live lessons are tainted (see the module doc).

    ``in_play`` maps an outcome id to the lesson ids it had in play; an evidence outcome
    missing from it counts as learned without a tainted lesson (fail open for local work:
    only a proven tie takes a local lesson out).
    """
    rows = list(lessons)
    charged: dict[str, str] = {}
    imported: list[tuple[str, str]] = []
    for row in rows:
        if row.imported_from is not None and row.imported_from in tainted:
            charged[row.lesson_id] = row.imported_from
            imported.append((row.lesson_id, row.imported_from))
    local: list[tuple[str, str]] = []
    changed = True
    while changed:
        changed = False
        for row in rows:
            if row.imported_from is not None or row.lesson_id in charged or not row.evidence:
                continue
            blame = ""
            for outcome_id in row.evidence:
                under = [charged[i] for i in in_play.get(outcome_id, ()) if i in charged]
                if not under:
                    blame = ""
                    break
                blame = blame or under[0]
            if blame:
                charged[row.lesson_id] = blame
                local.append((row.lesson_id, blame))
                changed = True
    return TaintPlan(imported=tuple(imported), local=tuple(local))
