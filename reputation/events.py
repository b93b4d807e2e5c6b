"""Reputation events: the only input the reputation core accepts.

A node never sets a score; it reports what happened (a lesson it used was confirmed by a real
outcome, a peer equivocated, a record was poisoned) and the scorer turns events into a score.
Events are values: frozen, validated, and keyed so that the same fact reported twice (a record
relayed by many peers, a crash-replayed outbox) counts once.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

__all__ = ["RAISING_KINDS", "EventKind", "ReputationEvent", "ValidationSource"]


class ValidationSource(StrEnum):
    """Who established a fact about a lesson, strongest first (Lamarckian memory, principle 5).

    Physical reality > human (operator) > other agent > documentation > internal consistency.
    ``ReputationParams`` gives each level a weight in that order; internal consistency (memory
    agreeing with memory, the same lesson arriving twice) weighs nothing and moves nobody.
    """

    REALITY = "reality"
    OPERATOR = "operator"
    OTHER_AGENT = "other_agent"
    DOCUMENTATION = "documentation"
    INTERNAL = "internal"


class EventKind(StrEnum):
    """What a node observed about another node, reality first.

    Reality events come from this node's own outcomes; every other kind is a protocol
    misbehaviour penalty. Only reality can raise a score.
    """

    # Reality: this node used a lesson from the subject node and the task passed / failed.
    LESSON_CONFIRMED = "lesson_confirmed"
    LESSON_CONTRADICTED = "lesson_contradicted"
    # The subject's signed vote was proved wrong by this node's outcomes (fed by consensus).
    VOTE_WRONG = "vote_wrong"
    # The subject's signed vote was proved right by this node's outcomes (fed by consensus).
    VOTE_RIGHT = "vote_right"
    # The subject's signed outcome attestation on a lesson was proved right / wrong by this
    # node's own later outcome on it (scored as a vote: an attestation is a vote from reality).
    ATTESTATION_RIGHT = "attestation_right"
    ATTESTATION_WRONG = "attestation_wrong"
    # Identities of the subject's principal signed both verdicts on one exact lesson version:
    # a principal speaks with one voice, so it counts for nothing there and is charged.
    ATTESTATION_EQUIVOCATION = "attestation_equivocation"
    # An operator of this node judged a lesson the subject signed to be wrong (rejected it as
    # false or signed a retraction of it): human contradiction, below reality.
    OPERATOR_CONTRADICTED = "operator_contradicted"
    # Independent agents contradicted a lesson the subject signed (a verified quorum of
    # CONTRADICT votes): other-agent contradiction, below the operator.
    PEER_CONTRADICTED = "peer_contradicted"
    # A lesson the subject signed disagrees with documentation this node holds.
    DOC_CONTRADICTED = "doc_contradicted"
    # Memory agreeing with memory (the same lesson arriving twice, a copy matching a copy):
    # recorded for operators, but it weighs nothing and never moves a score.
    INTERNAL_AGREEMENT = "internal_agreement"
    # A delivering peer sent bytes whose signature or hash did not check out.
    BAD_SIGNATURE = "bad_signature"
    # Two different records signed by the subject under the same id and version.
    EQUIVOCATION = "equivocation"
    # A delivering peer sent a stale, rolled-back or already-rejected record.
    REPLAY = "replay"
    # The subject signed content aimed at the agent (injected instruction, autonomy claim...).
    POISONED = "poisoned"
    # Any other policy rejection attributable to the subject.
    REJECTED = "rejected"
    # This node's operator reset the subject's score to an admitted newcomer's (lifting a
    # graylisting), with a note: not a score step but a human decision, kept in history. What
    # reality judged of its lessons (the track record confidence transfer reads) stays.
    OPERATOR_RESET = "operator_reset"

    @property
    def is_reality(self) -> bool:
        """True for events derived from this node's own outcomes."""
        return self in (EventKind.LESSON_CONFIRMED, EventKind.LESSON_CONTRADICTED)

    @property
    def source(self) -> ValidationSource | None:
        """The level of the validation hierarchy this kind comes from (None: protocol proof).

        Protocol misbehaviour (a bad signature, equivocation, a replay, poison) is proved by the
        bytes themselves, so it is not weighed by the hierarchy.
        """
        return _SOURCE_OF.get(self)

    @property
    def raises(self) -> bool:
        """True for the kinds that can raise a score: reality, and only reality."""
        return self in RAISING_KINDS


_SOURCE_OF: dict[EventKind, ValidationSource] = {
    EventKind.LESSON_CONFIRMED: ValidationSource.REALITY,
    EventKind.LESSON_CONTRADICTED: ValidationSource.REALITY,
    # A vote is judged by this node's own later outcome: reality decides who was right.
    EventKind.VOTE_RIGHT: ValidationSource.REALITY,
    EventKind.VOTE_WRONG: ValidationSource.REALITY,
    # An attestation too: this node's own later outcome decides who was right.
    EventKind.ATTESTATION_RIGHT: ValidationSource.REALITY,
    EventKind.ATTESTATION_WRONG: ValidationSource.REALITY,
    EventKind.OPERATOR_CONTRADICTED: ValidationSource.OPERATOR,
    EventKind.OPERATOR_RESET: ValidationSource.OPERATOR,
    EventKind.PEER_CONTRADICTED: ValidationSource.OTHER_AGENT,
    EventKind.DOC_CONTRADICTED: ValidationSource.DOCUMENTATION,
    EventKind.INTERNAL_AGREEMENT: ValidationSource.INTERNAL,
}

RAISING_KINDS: frozenset[EventKind] = frozenset(
    {EventKind.LESSON_CONFIRMED, EventKind.VOTE_RIGHT, EventKind.ATTESTATION_RIGHT}
)
"""The only kinds that can move a score up: all are judged by this node's own outcomes."""


@dataclass(frozen=True, slots=True)
class ReputationEvent:
    """One observation about ``node_id``, at ``at`` (UTC-aware), with a weight in [0, 1].

    ``weight`` scales the kind's configured step (for reality events, the confidence of the
    lesson that was put to the test: being wrong about a sure claim costs more).
    ``record_hash`` names the record the event is about ("" when none), ``domain`` the lesson's
    domain for per-domain expertise ("" when none), ``detail`` is free text for operators.
    ``cause`` names what established the fact ("" when nothing does): for a reality event the
    outcome that judged the lesson, so the same outcome reported by two paths (attribution and
    a conflict's settlement) is one fact, whenever each path read its clock.
    """

    kind: EventKind
    node_id: str
    at: datetime
    weight: float = 1.0
    record_hash: str = ""
    domain: str = ""
    detail: str = ""
    cause: str = ""

    def __post_init__(self) -> None:
        if not self.node_id:
            raise ValueError("ReputationEvent.node_id must not be empty")
        if self.at.tzinfo is None:
            raise ValueError("ReputationEvent.at must be timezone-aware (UTC)")
        if not isinstance(self.kind, EventKind):
            raise ValueError(f"ReputationEvent.kind must be an EventKind, got {self.kind!r}")
        if not math.isfinite(self.weight) or not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"ReputationEvent.weight must be in [0, 1], got {self.weight!r}")

    @property
    def key(self) -> str:
        """Identity of the fact: a penalty about one record counts once per node and kind.

        Penalties about a record are keyed without their time, so an equivocation relayed by
        ten peers penalises its signer once (otherwise relaying an honest node's rejected
        record would be a way to grind its reputation down). An event with a ``cause`` is keyed
        by it instead of its time when it names a record: one outcome judging one record is one
        fact (record, cause, kind), however many paths report it. Other reality events and
        events with no record are keyed with their time: each is a separate fact.
        """
        timeless = bool(self.record_hash) and not self.kind.is_reality
        if timeless:
            when = ""
        elif self.cause and self.record_hash:
            when = f"cause {self.cause}"
        else:
            when = self.at.isoformat()
        text = "\n".join((self.kind.value, self.node_id, self.record_hash, when, self.domain))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
