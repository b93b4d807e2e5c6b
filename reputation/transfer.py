"""Confidence transfer: how much this node believes a lesson another node signed.

Seed "Knowledge Interchange Standard" gives a formula and seed "Multi-Agent Coordination" a
table of multipliers. Applied naively they would count the same thing twice (the formula
already discounts for "different agent" and for reputation). Here is which rule applies when:

1. **Same agent, next session** (the record's signer is this node itself, e.g. our own lesson
   coming back through Sync after a restore): ``c * same_agent_next_session`` (0.95). No
   cross-agent discount and no reputation: we do not weigh our own word by our own score.
2. **Cross-agent import** (every other record): the formula gives the base,

       base = min(cap, c * cross_agent_factor * (reputation_floor + reputation_weight * r)
                       + verified_validation_ratio * validation_boost)

   = ``min(0.9, c * 0.6 * (0.5 + 0.5 r) + ratio * 0.2)``, where ``ratio`` counts only
   verified votes (signed by distinct admitted identities, from a quorum certificate).
3. **The table's cross-agent rows are ceilings on that base, never extra factors**: exactly one
   row is chosen for the record's situation, most specific first, and the result is
   ``min(base, c * row)``:

   * *contradicted* (0.3): verified contradicting votes make up more than
     ``contradicted_rate`` of the verified votes;
   * *validated by others* (0.8): a verified quorum certificate exists for the record;
   * *high reputation* (0.7) / *medium reputation* (0.5): the source's trust band;
   * *low reputation* (0.3, the seed's "different agent, not validated" rule) otherwise.

   At the band edges the formula already lands inside its row (r = 1 gives 0.6c < 0.7c;
   r = 0 gives exactly 0.3c), so a ceiling only binds when the verified-vote boost would lift a
   record above what its situation allows — in particular above the confidence its own
   source claimed.
4. **Probation and the claim ceiling** (``ProbationParams``, applied to every cross-agent
   import before rules 2 and 3). The source's claim ``c`` is first cut to its ceiling here,
   ``(confirmed + n * new_source_claim) / (judged + n)`` over the lessons of its that this
   node's own outcomes judged (``n`` = ``probation.interactions``): a newcomer may claim at
   most 0.5, and claiming 0.8 gains it nothing over claiming 0.5. Until ``judged`` reaches
   ``n`` the source is on probation: its band is read as low whatever its score (rule
   ``probation``; a verified certificate's or contradiction's row still applies). An
   admitted liar and an honest newcomer thus both start at the low band; reality, not a
   claim or an admission, lifts either.
5. **Reality-tested after import** (+0.2): not an import-time rule. The first time this node's
   own outcome confirms an imported lesson, ``reality_tested_confidence`` adds
   ``reality_tested_boost * original_confidence`` (the multiplier grows by 0.2), within the
   cap; afterwards the lesson's confidence follows local outcomes (``lamarck.learning``).

A record's self-reported ``validation_count``, ``contradiction_count``, ``validated_by`` and
``consensus_level`` are not inputs to any of this: the functions cannot even see them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from enum import StrEnum

from lamarck.errors import ConfigError
from lamarck.reputation.params import ProbationParams
from lamarck.reputation.scores import TrustBand

__all__ = [
    "TrackRecord",
    "TransferInputs",
    "TransferParams",
    "TransferResult",
    "TransferRule",
    "claim_ceiling",
    "imported_confidence",
    "on_probation",
    "reality_tested_confidence",
    "transfer_confidence",
    "verified_validation_ratio",
]


@dataclass(frozen=True, slots=True)
class TransferParams:
    """Every confidence-transfer constant, each in [0, 1]; validated on construction."""

    # Formula (seed Knowledge Interchange Standard).
    cross_agent_factor: float = 0.6
    reputation_floor: float = 0.5
    reputation_weight: float = 0.5
    validation_boost: float = 0.2
    # No imported lesson is believed more than this.
    cap: float = 0.9
    # Table (seed Multi-Agent Coordination), multipliers of the source's claimed confidence.
    same_agent_next_session: float = 0.95
    high_reputation: float = 0.7
    medium_reputation: float = 0.5
    # Seed "Different agent, not validated: Low confidence (0.3x)".
    low_reputation: float = 0.3
    validated_by_others: float = 0.8
    contradicted: float = 0.3
    # Added to the multiplier once, when this node's own outcome first confirms the lesson.
    reality_tested_boost: float = 0.2
    # Share of verified votes that contradict, above which the "contradicted" row applies.
    contradicted_rate: float = 0.5
    # A source's probation and claim ceiling at this node (validated on its own).
    probation: ProbationParams = field(default_factory=ProbationParams)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        for f in fields(self):
            if f.name == "probation":
                continue
            value = getattr(self, f.name)
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise ConfigError(f"invalid {f.name}: must be between 0 and 1, got {value!r}")
        if self.cap <= 0.0:
            raise ConfigError("invalid cap: must be in (0, 1]")
        if not math.isclose(self.reputation_floor + self.reputation_weight, 1.0):
            # Keeps the reputation multiplier in [floor, 1]: reputation can only discount.
            raise ConfigError("invalid reputation_weight: reputation_floor + weight must be 1")
        if not self.low_reputation <= self.medium_reputation <= self.high_reputation:
            # Monotone bands keep transfer monotone in reputation.
            raise ConfigError("invalid medium_reputation: need low <= medium <= high")
        if self.contradicted > self.low_reputation:
            raise ConfigError("invalid contradicted: must not exceed low_reputation")


class TransferRule(StrEnum):
    """Which rule produced an imported confidence (recorded with the import)."""

    SAME_AGENT = "same_agent_next_session"
    CONTRADICTED = "contradicted"
    VALIDATED_BY_OTHERS = "validated_by_others"
    HIGH_REPUTATION = "high_reputation"
    MEDIUM_REPUTATION = "medium_reputation"
    LOW_REPUTATION = "low_reputation"
    # The low row, for a source still on probation here (whatever its score).
    PROBATION = "probation"


@dataclass(frozen=True, slots=True)
class TrackRecord:
    """A source's lessons this node's own outcomes judged: confirmed and contradicted."""

    confirmed: int = 0
    contradicted: int = 0

    def __post_init__(self) -> None:
        if self.confirmed < 0 or self.contradicted < 0:
            raise ValueError("TrackRecord counts must not be negative")

    @property
    def judged(self) -> int:
        """Reality-judged interactions in all."""
        return self.confirmed + self.contradicted


@dataclass(frozen=True, slots=True)
class TransferInputs:
    """What the transfer may look at: the claim, the source's standing and its record here,
    verified votes only. An empty ``track`` (the default) is a newcomer's: on probation."""

    original_confidence: float
    reputation: float
    band: TrustBand
    supporting_votes: int = 0
    contradicting_votes: int = 0
    quorum_certified: bool = False
    same_agent: bool = False
    track: TrackRecord = field(default_factory=TrackRecord)

    def __post_init__(self) -> None:
        for name in ("original_confidence", "reputation"):
            value = getattr(self, name)
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"TransferInputs.{name} must be in [0, 1], got {value!r}")
        if self.supporting_votes < 0 or self.contradicting_votes < 0:
            raise ValueError("TransferInputs vote counts must not be negative")


@dataclass(frozen=True, slots=True)
class TransferResult:
    """The imported confidence, the rule that produced it and the formula's base."""

    confidence: float
    rule: TransferRule
    base: float


def verified_validation_ratio(supporting: int, contradicting: int) -> float:
    """Share of verified votes that support the record; 0 when there are none.

    Callers pass counts of votes from distinct admitted identities only (quorum certificate
    votes). A record's own ``validation_count`` or ``validated_by`` never reaches this.
    """
    if supporting < 0 or contradicting < 0:
        raise ValueError("vote counts must not be negative")
    total = supporting + contradicting
    return supporting / total if total else 0.0


def transfer_confidence(
    c: float, reputation: float, verified_ratio: float, params: TransferParams
) -> float:
    """The seed formula for a cross-agent import, always in [0, cap].

    ``min(cap, c * 0.6 * (0.5 + 0.5 * reputation) + verified_ratio * 0.2)``; inputs outside
    [0, 1] are clamped (a bad reputation adapter must not be able to inflate a transfer).
    """
    c, reputation, verified_ratio = (_unit(x) for x in (c, reputation, verified_ratio))
    multiplier = params.reputation_floor + params.reputation_weight * reputation
    raw = c * params.cross_agent_factor * multiplier + verified_ratio * params.validation_boost
    return max(0.0, min(params.cap, raw))


def _unit(x: float) -> float:
    # A non-finite input (NaN from a broken adapter) fails closed to 0.
    return min(1.0, max(0.0, x)) if math.isfinite(x) else 0.0


def on_probation(track: TrackRecord, params: ProbationParams) -> bool:
    """True while reality has judged fewer than ``params.interactions`` of the source's
    lessons here."""
    return track.judged < params.interactions


def claim_ceiling(track: TrackRecord, params: ProbationParams) -> float:
    """The most confidence the source may claim here: its confirmed share, smoothed toward
    ``new_source_claim`` by ``interactions`` pseudo-judgements (``new_source_claim`` for a
    source never judged)."""
    prior = params.interactions
    if track.judged + prior == 0:
        return params.new_source_claim
    return (track.confirmed + prior * params.new_source_claim) / (track.judged + prior)


def _row(inputs: TransferInputs, params: TransferParams) -> tuple[TransferRule, float]:
    total = inputs.supporting_votes + inputs.contradicting_votes
    if total and inputs.contradicting_votes / total > params.contradicted_rate:
        return TransferRule.CONTRADICTED, params.contradicted
    if inputs.quorum_certified:
        return TransferRule.VALIDATED_BY_OTHERS, params.validated_by_others
    if on_probation(inputs.track, params.probation):
        return TransferRule.PROBATION, params.low_reputation
    if inputs.band is TrustBand.HIGH:
        return TransferRule.HIGH_REPUTATION, params.high_reputation
    if inputs.band is TrustBand.MEDIUM:
        return TransferRule.MEDIUM_REPUTATION, params.medium_reputation
    return TransferRule.LOW_REPUTATION, params.low_reputation


def imported_confidence(inputs: TransferInputs, params: TransferParams) -> TransferResult:
    """The confidence an imported record gets, by the rules in the module docstring."""
    c = inputs.original_confidence
    if inputs.same_agent:
        value = min(params.cap, c * params.same_agent_next_session)
        return TransferResult(confidence=value, rule=TransferRule.SAME_AGENT, base=value)
    # A claim counts for no more than the source's record here backs.
    c = min(c, claim_ceiling(inputs.track, params.probation))
    ratio = verified_validation_ratio(inputs.supporting_votes, inputs.contradicting_votes)
    base = transfer_confidence(c, inputs.reputation, ratio, params)
    rule, row = _row(inputs, params)
    return TransferResult(confidence=min(base, c * row), rule=rule, base=base)


def reality_tested_confidence(current: float, original: float, params: TransferParams) -> float:
    """Confidence after this node's own outcome first confirms an imported lesson.

    The table's "+0.2x": the multiplier over the source's claimed confidence grows by
    ``reality_tested_boost``, within the cap, and never goes down. Apply once; later outcomes
    follow the local learning rules.
    """
    current, original = _unit(current), _unit(original)
    return max(current, min(params.cap, current + params.reality_tested_boost * original))
