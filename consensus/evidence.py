"""A voter's own evidence on a record: its outcomes that ran the lesson's operation.

**A voter votes from its own empirical evidence only**. The evidence is the
voter's stored outcomes whose approach ran the operation the lesson is about; holding the same
lesson, or any other node's word, is not evidence, so a voter without such outcomes abstains.

How one outcome bears on the lesson (``bearing``):

* the lesson recommends ``operation``: an outcome that ran it is a success when the run passed
  and no step on that operation failed or was refused, a failure otherwise;
* the lesson says to avoid ``avoided`` (a mechanical lesson's ``avoid:<key>`` tag): an outcome
  that ran the avoided operation and passed with it working speaks *against* the lesson, and
  one where that operation failed speaks for it.

An outcome that touches neither operation has no bearing. Pure: plain values in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lamarck.consensus.votes import OwnOutcome

__all__ = ["OutcomeFacts", "bearing", "own_evidence"]

#: Step results that mean the operation itself did not work.
_BROKEN = frozenset({"failed", "refused"})


@dataclass(frozen=True, slots=True)
class OutcomeFacts:
    """What a stored outcome says: its id, whether the run passed, its (operation, result)
    steps in order."""

    outcome_id: str
    passed: bool
    steps: tuple[tuple[str, str], ...]


def bearing(facts: OutcomeFacts, operation: str, avoided: str | None) -> bool | None:
    """True if the outcome supports the lesson, False if it speaks against it, None if it has
    no bearing on it (see the module doc)."""
    results = [result for op, result in facts.steps if operation and op == operation]
    if results:
        return facts.passed and not any(r in _BROKEN for r in results)
    if avoided:
        shunned = [result for op, result in facts.steps if op == avoided]
        if shunned:
            worked = facts.passed and not any(r in _BROKEN for r in shunned)
            return not worked
    return None


def own_evidence(
    outcomes: Iterable[OutcomeFacts], *, operation: str, avoided: str | None = None
) -> tuple[OwnOutcome, ...]:
    """The voter's outcomes that bear on a lesson about ``operation`` (and ``avoided``), each
    as an ``OwnOutcome`` (success = supports the lesson), in the given order, once per id."""
    seen: set[str] = set()
    out: list[OwnOutcome] = []
    for facts in outcomes:
        if facts.outcome_id in seen:
            continue
        side = bearing(facts, operation, avoided)
        if side is None:
            continue
        seen.add(facts.outcome_id)
        out.append(OwnOutcome(facts.outcome_id, side))
    return tuple(out)
