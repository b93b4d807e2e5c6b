"""What follows an import decision, as values: the one step the pipeline and the simulator share.

``decide_import`` says accept, quarantine, reject or duplicate. What the node then changes is
stated here once, pure:

* **charges**: the decision's reputation events are emitted, except for a refusal that is not
  recorded (a dry run, an approval, a quorum's certification: the record was judged when it
  arrived);
* **judged**: a recorded rejection is remembered by content hash, so a replay is refused
  without a second look;
* **hold**: a quarantined record is indexed as held (no lesson); a signer no registry vouched
  for (``unknown_signer``) turns any decision but a duplicate into a hold, never forwarded;
* **store**: an accepted record is stored as a lesson and indexed with it;
* **counted**: a source's history (the outlier flag's input) counts every record of it kept
  here, held or stored, once; never a record whose signer nobody vouched for, which says
  nothing about the source it names. Held records count: the high-stakes records a quorum
  holds are the surer ones, and leaving them out made every sure record after them a
  "statistical outlier" (a catch-up: a fifth of its records);
* **established**: the lessons the filters read as established on a record's operation are the
  active ones on that operation in the record's domain and environment, at or above the
  filters' floor, the surest first, at most ``ESTABLISHED_LIMIT`` (:func:`select_established`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lamarck.policy.decision import ImportDecision, ImportOutcome
from lamarck.policy.filters import EstablishedLesson
from lamarck.proto.memory import MemoryV2
from lamarck.reputation.events import ReputationEvent

__all__ = [
    "ESTABLISHED_LIMIT",
    "Candidate",
    "Effects",
    "HoldReason",
    "apply_decision",
    "counts_in_history",
    "select_established",
    "with_hold",
]


class HoldReason(StrEnum):
    """Quarantine reasons the pipeline adds itself (the decision's are its own)."""

    #: A bundle signed by a key no registry of this node knows: an operator decides.
    UNKNOWN_SIGNER = "unknown_signer"


def counts_in_history(reasons: Sequence[str]) -> bool:
    """Whether a record held for ``reasons`` counts in its source's history (as every stored
    one does): not when no registry vouched for its signer, since then it says nothing about
    the source it names."""
    return HoldReason.UNKNOWN_SIGNER not in reasons


#: The most established lessons the filters read on one record.
ESTABLISHED_LIMIT = 50


@dataclass(frozen=True, slots=True)
class Effects:
    """What one decision changes at the node (see the module docstring)."""

    #: The decision, with a hold the pipeline added (``unknown_signer``) folded in.
    decision: ImportDecision
    charges: tuple[ReputationEvent, ...] = ()
    #: The rejection reason to remember for the content hash (None: not remembered).
    judged: str | None = None
    hold: bool = False
    store: bool = False
    counted: bool = False

    @property
    def forward(self) -> bool:
        """Whether the record is gossiped on (a stored one its decision says to forward)."""
        return self.store and self.decision.forward


def with_hold(decision: ImportDecision, hold: HoldReason | None) -> ImportDecision:
    """``decision`` with the pipeline's own hold of stage (3) folded in: a signer no registry
    vouched for turns any decision but a duplicate into a hold, never forwarded, keeping the
    decision's confidence and rule for an approval (None: ``decision`` as it is)."""
    if hold is None or decision.outcome is ImportOutcome.DUPLICATE:
        return decision
    return dataclasses.replace(
        decision,
        outcome=ImportOutcome.QUARANTINE,
        reasons=(hold, *decision.reasons),
        forward=False,
    )


def apply_decision(
    decision: ImportDecision,
    *,
    hold: HoldReason | None = None,
    recorded: bool = True,
    counted_before: bool = False,
) -> Effects:
    """The effects of ``decision`` (see the module docstring).

    ``hold`` is the pipeline's own hold of stage (3) (None: the signer is vouched for);
    ``recorded`` says refusals are recorded and charged (False for a dry run, an approval or a
    certification); ``counted_before``: the record was counted in its source's history when it
    was held, and an approval stores it without counting it twice.
    """
    if decision.outcome is ImportOutcome.REJECT:
        if not recorded:
            return Effects(decision)
        return Effects(decision, charges=decision.events, judged=decision.reason)
    decision = with_hold(decision, hold)
    if decision.outcome is ImportOutcome.DUPLICATE:
        return Effects(decision, charges=decision.events)
    if decision.outcome is ImportOutcome.QUARANTINE:
        return Effects(
            decision,
            charges=decision.events,
            hold=True,
            counted=counts_in_history(decision.reasons),
        )
    return Effects(decision, charges=decision.events, store=True, counted=not counted_before)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A lesson held here, as :func:`select_established` reads it."""

    lesson: EstablishedLesson
    operation: str
    domain: str | None
    environment: str | None
    created_at: datetime
    active: bool = True


def select_established(
    record: MemoryV2, held: Iterable[Candidate], floor: float
) -> tuple[EstablishedLesson, ...]:
    """The established lessons the filters read on ``record``: active, on its operation, in its
    domain and environment, at or above ``floor``, the surest first (then the newest, then by
    id), at most
    ``ESTABLISHED_LIMIT``; none for a record that is not a lesson."""
    if record.lesson is None:
        return ()
    operation = record.lesson.operation
    domain, environment = record.context.domain, record.context.environment
    found = [
        c
        for c in held
        if c.active
        and c.operation == operation
        and c.domain == domain
        and c.environment == environment
        and c.lesson.confidence >= floor
    ]
    # ``list_lessons``' order (``lesson_sort_key``): confidence desc, newest, id.
    found.sort(key=lambda c: (-c.lesson.confidence, -c.created_at.timestamp(), c.lesson.lesson_id))
    return tuple(c.lesson for c in found[:ESTABLISHED_LIMIT])
