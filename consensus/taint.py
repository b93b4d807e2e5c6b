"""Taint: which lessons leave every prompt when their source is revoked or graylisted, or the
operator retracts their record.

A source is tainted when the registry revoked it (an operator-signed revocation), when its
admission runs through a revoked identity (an endorser anywhere on its endorsement chain:
``lamarck.registry.proofs.revoked_through``; revoking a node reaches every identity it
admitted, directly or through others), or when this node's reputation book has it
graylisted. A record is retracted when the registry holds an operator-signed retraction of
its content hash (``lamarck registry retract``). Then:

* every live lesson a tainted source signed (an imported copy whose ``imported_from`` is the
  source) is taken out, reason ``tainted_source``;
* every live lesson whose stored record has a retracted content hash is taken out, reason
  ``retracted_record``, charged to its signer (whichever source it came from: the other
  lessons of that source stay);
* every live local lesson whose evidence came only from lessons taken out is taken out too:
  each of its evidence outcomes had such a lesson in play — one it could have been learned
  under: not one the node knows is about something else, or says the opposite (the outcome
  that taught this lesson refuted it: learned *against* it). It carries the reason of the
  first such lesson of its first outcome. A local lesson with at least one outcome learned without
  one keeps its own ground; one with no evidence at all is not judged here (nothing ties it
  to the source). Applied until nothing changes, so a local lesson learned only under
  another taken-out local lesson follows it.

A lesson both retracted and from a tainted source is charged as retracted: the operator's
statement about that very record is the more specific. The node (``lamarck.node.sharing.taint``)
retires and re-quarantines them with their reason; an operator releases or rejects them.
Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lamarck.reputation.scores import PeerBand

__all__ = [
    "RETRACTED_RECORD",
    "TAINTED_SOURCE",
    "TAINT_REASONS",
    "LessonFacts",
    "TaintPlan",
    "Taken",
    "taint_plan",
    "taint_reason",
    "tainted_sources",
]

#: The quarantine reason and retirement mark of a tainted source's lesson.
TAINTED_SOURCE = "tainted_source"
#: The quarantine reason and retirement mark of a lesson whose record the operator retracted.
RETRACTED_RECORD = "retracted_record"
#: Every reason the taint rule takes a lesson out with.
TAINT_REASONS: tuple[str, ...] = (TAINTED_SOURCE, RETRACTED_RECORD)


def taint_reason(reasons: Iterable[str]) -> str | None:
    """The taint reason among a held record's reasons, in rule order (``None``: the record
    is held for another reason, not by the taint sweep)."""
    held = set(reasons)
    return next((r for r in TAINT_REASONS if r in held), None)


@dataclass(frozen=True, slots=True)
class LessonFacts:
    """What the rule reads of a live lesson: id, signer if imported, evidence outcome ids, the
    content hash of its stored signed record (``None``: it keeps none), and the lessons it is
    known not to have been learned under."""

    lesson_id: str
    imported_from: str | None
    evidence: tuple[str, ...] = ()
    content_hash: str | None = None
    # Lessons this one was not learned under even where its outcomes had them in play: about
    # another target, or saying the opposite (its outcome refuted them). Recall puts every
    # lesson it shows in play, relevant or not; without this an honest lesson learned by
    # refuting a liar's, next to an unrelated one of the liar's, was retired with them.
    unrelated: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Taken:
    """One lesson the plan takes out, why, and the source it is charged to (a tainted
    source; a retracted record's signer, ``""`` for this node's own; for a local lesson the
    source of the lesson it was learned under)."""

    lesson_id: str
    source: str
    reason: str = TAINTED_SOURCE


@dataclass(frozen=True, slots=True)
class TaintPlan:
    """The lessons taken out: ``direct`` for their own source or record, ``local`` for
    having been learned only under those."""

    direct: tuple[Taken, ...]
    local: tuple[Taken, ...]

    @property
    def lesson_ids(self) -> tuple[str, ...]:
        """Every lesson id taken out, direct first."""
        return tuple(t.lesson_id for t in (*self.direct, *self.local))


def tainted_sources(
    sources: Iterable[str], *, revoked: Iterable[str], band_of: Mapping[str, PeerBand]
) -> frozenset[str]:
    """The sources among ``sources`` that are revoked or graylisted; ``revoked`` holds the
    revoked ids and every id admitted through one."""
    gone = set(revoked)
    return frozenset(s for s in sources if s in gone or band_of.get(s) is PeerBand.GRAYLISTED)


def taint_plan(
    lessons: Iterable[LessonFacts],
    in_play: Mapping[str, tuple[str, ...]],
    tainted: frozenset[str],
    retracted: frozenset[str] = frozenset(),
) -> TaintPlan:
    """Which live lessons leave every prompt (see the module doc).

    ``tainted`` holds the tainted sources, ``retracted`` the retracted content hashes.
    ``in_play`` maps an outcome id to the lesson ids it had in play; an evidence outcome
    missing from it counts as learned without a taken-out lesson (fail open for local work:
    only a proven tie takes a local lesson out).
    """
    rows = list(lessons)
    charged: dict[str, Taken] = {}
    direct: list[Taken] = []
    for row in rows:
        if row.content_hash is not None and row.content_hash in retracted:
            taken = Taken(row.lesson_id, row.imported_from or "", RETRACTED_RECORD)
        elif row.imported_from is not None and row.imported_from in tainted:
            taken = Taken(row.lesson_id, row.imported_from, TAINTED_SOURCE)
        else:
            continue
        charged[row.lesson_id] = taken
        direct.append(taken)
    local: list[Taken] = []
    changed = True
    while changed:
        changed = False
        for row in rows:
            if row.imported_from is not None or row.lesson_id in charged or not row.evidence:
                continue
            blame: Taken | None = None
            for outcome_id in row.evidence:
                under = [
                    charged[i]
                    for i in in_play.get(outcome_id, ())
                    if i in charged and i not in row.unrelated
                ]
                if not under:
                    blame = None
                    break
                blame = blame or under[0]
            if blame is not None:
                taken = Taken(row.lesson_id, blame.source, blame.reason)
                charged[row.lesson_id] = taken
                local.append(taken)
                changed = True
    return TaintPlan(direct=tuple(direct), local=tuple(local))
