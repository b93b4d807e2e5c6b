"""The pure reputation scorer: ``apply(state, event, params) -> state``, ``score(state, now)``.

No clock, no storage: the caller passes events (each carrying its time) and an explicit
``now``. A state is a value; applying an event returns a new one.

The score is ``neutral_score + sum(parts)``, where each labelled part (P0..P8, as gossipsub
labels its score parts) is the accumulated, decayed contribution of one kind of event, so an
operator can see *why* a node scores what it does. Every part decays by the same factor per
day, which is the same as the whole score decaying toward neutral.

Steps are computed from the current score so the sum never leaves [0, 1]:

* up (reality only: ``lesson_confirmed``, ``vote_right``, ``attestation_right``):
  ``gain * weight * (1 - score)`` — slow, saturating;
* down (everything else): ``min(score, penalty * weight * level)`` — fixed, fast, where
  ``level`` is the validation-hierarchy weight of who established the contradiction
  (reality 1 > operator > other agent > documentation > internal consistency 0).

A graylisted node (score below ``graylist_threshold``) does not decay back toward neutral and
no non-reality event lifts it: its score recovers only through reality (``peer_band``), or an
operator's ``operator_reset``, which is no step: it puts every part back to an admitted
newcomer's (``new_state``), keeping the event counts and per-domain expertise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType

from lamarck.reputation.events import EventKind, ReputationEvent, ValidationSource
from lamarck.reputation.params import ReputationParams

__all__ = [
    "PART_OF",
    "PeerBand",
    "ReputationState",
    "ScoreBreakdown",
    "ScorePart",
    "TrustBand",
    "apply",
    "decay",
    "expert_domains",
    "expertise",
    "explain",
    "hierarchy_weight",
    "is_expert",
    "new_state",
    "peer_band",
    "score",
    "trust_band",
]

_SECONDS_PER_DAY = 86_400.0


class ScorePart(StrEnum):
    """The labelled parts of a score; the label says where a node's score came from."""

    P0_ADMISSION = "p0_admission"
    P1_REALITY_CONFIRMED = "p1_reality_confirmed"
    P2_REALITY_CONTRADICTED = "p2_reality_contradicted"
    P3_VOTES_WRONG = "p3_votes_wrong"
    P4_BAD_SIGNATURE = "p4_bad_signature"
    P5_POISONED = "p5_poisoned"
    P6_REJECTED = "p6_rejected"
    P7_REPLAY = "p7_replay"
    P8_EQUIVOCATION = "p8_equivocation"
    P9_VOTES_RIGHT = "p9_votes_right"
    P10_OPERATOR_CONTRADICTED = "p10_operator_contradicted"
    P11_PEERS_CONTRADICTED = "p11_peers_contradicted"
    P12_DOCS_CONTRADICTED = "p12_docs_contradicted"
    # Always 0: shown so an operator sees that memory agreeing with memory counted for nothing.
    P13_INTERNAL_CONSISTENCY = "p13_internal_consistency"


PART_OF: Mapping[EventKind, ScorePart] = MappingProxyType(
    {
        EventKind.LESSON_CONFIRMED: ScorePart.P1_REALITY_CONFIRMED,
        EventKind.LESSON_CONTRADICTED: ScorePart.P2_REALITY_CONTRADICTED,
        EventKind.VOTE_WRONG: ScorePart.P3_VOTES_WRONG,
        EventKind.BAD_SIGNATURE: ScorePart.P4_BAD_SIGNATURE,
        EventKind.POISONED: ScorePart.P5_POISONED,
        EventKind.REJECTED: ScorePart.P6_REJECTED,
        EventKind.REPLAY: ScorePart.P7_REPLAY,
        EventKind.EQUIVOCATION: ScorePart.P8_EQUIVOCATION,
        EventKind.VOTE_RIGHT: ScorePart.P9_VOTES_RIGHT,
        # An outcome attestation is a vote from reality: judged and scored as one.
        EventKind.ATTESTATION_RIGHT: ScorePart.P9_VOTES_RIGHT,
        EventKind.ATTESTATION_WRONG: ScorePart.P3_VOTES_WRONG,
        EventKind.ATTESTATION_EQUIVOCATION: ScorePart.P8_EQUIVOCATION,
        EventKind.OPERATOR_CONTRADICTED: ScorePart.P10_OPERATOR_CONTRADICTED,
        EventKind.PEER_CONTRADICTED: ScorePart.P11_PEERS_CONTRADICTED,
        EventKind.DOC_CONTRADICTED: ScorePart.P12_DOCS_CONTRADICTED,
        EventKind.INTERNAL_AGREEMENT: ScorePart.P13_INTERNAL_CONSISTENCY,
    }
)
"""Which part each event kind feeds."""


class TrustBand(StrEnum):
    """A score cut by ``ReputationParams`` thresholds; the transfer table reads it."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class PeerBand(StrEnum):
    """Where a peer stands, by the one threshold set; read by transfer, gossip and voter choice.

    ``TRUSTED`` is exactly the transfer table's ``HIGH``; ``NEUTRAL`` covers its ``MEDIUM`` and
    ``LOW`` rows; ``GRAYLISTED`` peers' records are not imported, they are not chosen as voters
    or gossip targets, and only reality lifts them out.
    """

    TRUSTED = "trusted"
    NEUTRAL = "neutral"
    GRAYLISTED = "graylisted"


@dataclass(frozen=True, slots=True)
class ReputationState:
    """What this node knows about one other node, as of ``as_of``; an immutable value."""

    node_id: str
    as_of: datetime
    parts: Mapping[ScorePart, float]
    counts: Mapping[EventKind, int] = field(default_factory=dict)
    # Per-domain expertise level (seed AgentSpecialization), absent = expertise_initial.
    domains: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """A score with its labelled parts and event counts: the answer to "why this score"."""

    node_id: str
    score: float
    band: TrustBand
    neutral: float
    parts: Mapping[ScorePart, float]
    counts: Mapping[EventKind, int]


def new_state(node_id: str, since: datetime, params: ReputationParams) -> ReputationState:
    """The state of a freshly admitted node: ``initial_score``, no events."""
    if since.tzinfo is None:
        raise ValueError("new_state needs a timezone-aware time")
    parts = dict.fromkeys(ScorePart, 0.0)
    parts[ScorePart.P0_ADMISSION] = params.initial_score - params.neutral_score
    return ReputationState(node_id=node_id, as_of=since, parts=MappingProxyType(parts))


def _decay_factor(since: datetime, now: datetime, params: ReputationParams) -> float:
    days = (now - since).total_seconds() / _SECONDS_PER_DAY
    # Time never runs backwards for a score: a late event is applied at ``as_of``.
    return 1.0 if days <= 0 else params.decay_per_day**days


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def _raw(parts: Mapping[ScorePart, float], params: ReputationParams) -> float:
    return _clamp(params.neutral_score + math.fsum(parts.values()))


def decay(state: ReputationState, now: datetime, params: ReputationParams) -> ReputationState:
    """The state moved forward to ``now``: every part (and expertise) shrinks toward neutral.

    A graylisted state is only moved in time: waiting must not lift it (only reality does).
    """
    factor = _decay_factor(state.as_of, now, params)
    if factor == 1.0:
        return state
    if _raw(state.parts, params) < params.graylist_threshold:
        return ReputationState(
            node_id=state.node_id,
            as_of=now,
            parts=state.parts,
            counts=state.counts,
            domains=state.domains,
        )
    parts = {part: value * factor for part, value in state.parts.items()}
    domains = {
        d: params.expertise_initial + (level - params.expertise_initial) * factor
        for d, level in state.domains.items()
    }
    return ReputationState(
        node_id=state.node_id,
        as_of=now,
        parts=MappingProxyType(parts),
        counts=state.counts,
        domains=MappingProxyType(domains),
    )


def hierarchy_weight(kind: EventKind, params: ReputationParams) -> float:
    """The validation-hierarchy factor on ``kind``'s step (1 for protocol proofs)."""
    source = kind.source
    if source is None:
        return 1.0
    return {
        ValidationSource.REALITY: params.weight_reality,
        ValidationSource.OPERATOR: params.weight_operator,
        ValidationSource.OTHER_AGENT: params.weight_other_agent,
        ValidationSource.DOCUMENTATION: params.weight_documentation,
        # Internal consistency never moves anyone; deliberately not configurable.
        ValidationSource.INTERNAL: 0.0,
    }[source]


def _penalty(kind: EventKind, params: ReputationParams) -> float:
    return {
        EventKind.LESSON_CONTRADICTED: params.contradict_loss,
        EventKind.OPERATOR_CONTRADICTED: params.contradict_loss,
        EventKind.PEER_CONTRADICTED: params.contradict_loss,
        EventKind.DOC_CONTRADICTED: params.contradict_loss,
        EventKind.INTERNAL_AGREEMENT: 0.0,
        EventKind.VOTE_WRONG: params.vote_wrong_penalty,
        EventKind.ATTESTATION_WRONG: params.vote_wrong_penalty,
        EventKind.ATTESTATION_EQUIVOCATION: params.equivocation_penalty,
        EventKind.BAD_SIGNATURE: params.bad_signature_penalty,
        EventKind.EQUIVOCATION: params.equivocation_penalty,
        EventKind.REPLAY: params.replay_penalty,
        EventKind.POISONED: params.poisoned_penalty,
        EventKind.REJECTED: params.rejected_penalty,
    }[kind]


def _step(kind: EventKind, weight: float, current: float, params: ReputationParams) -> float:
    weight *= hierarchy_weight(kind, params)
    if kind is EventKind.LESSON_CONFIRMED:
        # Saturating: the closer to 1, the less one more success adds.
        return params.confirm_gain * weight * (1.0 - current)
    if kind in (EventKind.VOTE_RIGHT, EventKind.ATTESTATION_RIGHT):
        return params.vote_right_gain * weight * (1.0 - current)
    # A fixed step down, but never below zero.
    return -min(current, _penalty(kind, params) * weight)


def _expertise_step(level: float, confirmed: bool, params: ReputationParams) -> float:
    if confirmed:
        return min(1.0, level + params.expertise_gain)
    return max(params.expertise_floor, level - params.expertise_loss)


def apply(
    state: ReputationState, event: ReputationEvent, params: ReputationParams
) -> ReputationState:
    """The state after ``event``: decay to the event's time, then step its part."""
    if event.node_id != state.node_id:
        raise ValueError(f"event about {event.node_id!r} applied to {state.node_id!r}")
    state = decay(state, max(state.as_of, event.at), params)
    counts = dict(state.counts)
    counts[event.kind] = counts.get(event.kind, 0) + 1
    if event.kind is EventKind.OPERATOR_RESET:
        return ReputationState(
            node_id=state.node_id,
            as_of=state.as_of,
            parts=new_state(state.node_id, state.as_of, params).parts,
            counts=MappingProxyType(counts),
            domains=state.domains,
        )
    current = _raw(state.parts, params)
    part = PART_OF[event.kind]
    parts = dict(state.parts)
    parts[part] = parts.get(part, 0.0) + _step(event.kind, event.weight, current, params)
    domains = dict(state.domains)
    if event.kind.is_reality and event.domain:
        level = domains.get(event.domain, params.expertise_initial)
        domains[event.domain] = _expertise_step(
            level, event.kind is EventKind.LESSON_CONFIRMED, params
        )
    return ReputationState(
        node_id=state.node_id,
        as_of=state.as_of,
        parts=MappingProxyType(parts),
        counts=MappingProxyType(counts),
        domains=MappingProxyType(domains),
    )


def score(state: ReputationState, now: datetime, params: ReputationParams) -> float:
    """The node's score at ``now``, in [0, 1]."""
    return _raw(decay(state, now, params).parts, params)


def peer_band(value: float, params: ReputationParams) -> PeerBand:
    """Which band a score falls in: trusted, neutral or graylisted (the one threshold set)."""
    if not math.isfinite(value) or value < params.graylist_threshold:
        return PeerBand.GRAYLISTED  # a broken adapter fails closed
    if value >= params.high_threshold:
        return PeerBand.TRUSTED
    return PeerBand.NEUTRAL


def is_expert(level: float, params: ReputationParams) -> bool:
    """True if an expertise level makes its holder an expert (seed: >= 0.7).

    Eight steps of 0.05 from 0.3 land on 0.6999... in floating point; that is 0.7.
    """
    t = params.expert_threshold
    return level >= t or math.isclose(level, t)


def expert_domains(
    state: ReputationState, now: datetime, params: ReputationParams
) -> tuple[str, ...]:
    """The domains the node is an expert in at ``now``, sorted."""
    levels = decay(state, now, params).domains
    return tuple(sorted(d for d, level in levels.items() if is_expert(level, params)))


def trust_band(value: float, params: ReputationParams) -> TrustBand:
    """Which transfer-table band a score falls in."""
    if value >= params.high_threshold:
        return TrustBand.HIGH
    if value >= params.medium_threshold:
        return TrustBand.MEDIUM
    return TrustBand.LOW


def explain(state: ReputationState, now: datetime, params: ReputationParams) -> ScoreBreakdown:
    """The score at ``now`` with its labelled parts, for operators and logs."""
    decayed = decay(state, now, params)
    value = _raw(decayed.parts, params)
    return ScoreBreakdown(
        node_id=state.node_id,
        score=value,
        band=trust_band(value, params),
        neutral=params.neutral_score,
        parts=MappingProxyType(dict(decayed.parts)),
        counts=MappingProxyType(dict(decayed.counts)),
    )


def expertise(
    state: ReputationState, domain: str, now: datetime, params: ReputationParams
) -> float:
    """The node's expertise in ``domain`` at ``now``, from reality events tagged with it."""
    return decay(state, now, params).domains.get(domain, params.expertise_initial)
