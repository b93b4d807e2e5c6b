"""Pairwise trust: this node's direct trust in one peer (seed "Trust Evolution").

A value per peer, moved by interactions this node had with it: ``+positive_step`` for a
positive one, ``-negative_step`` for a negative one (trust increases slowly, decreases
quickly), ``* neutral_decay`` for a neutral one, always within [0, 1]. It is this node's row
of local trust for global trust (``lamarck.reputation.global_trust``) and a column of the
reputation table; it never replaces the event-fed score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum

from lamarck.reputation.events import EventKind
from lamarck.reputation.params import PairwiseParams

__all__ = ["Interaction", "interaction_of", "pairwise_trust", "update_pairwise"]


class Interaction(StrEnum):
    """How one interaction with a peer went, from this node's point of view."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    NEUTRAL = "neutral"


def update_pairwise(trust: float, interaction: Interaction, params: PairwiseParams) -> float:
    """Trust after one interaction, in [0, 1]; a non-finite input fails closed to 0."""
    if not math.isfinite(trust):
        trust = 0.0
    trust = min(1.0, max(0.0, trust))
    if interaction is Interaction.POSITIVE:
        return min(1.0, trust + params.positive_step)
    if interaction is Interaction.NEGATIVE:
        return max(0.0, trust - params.negative_step)
    return trust * params.neutral_decay


def pairwise_trust(interactions: Iterable[Interaction], params: PairwiseParams) -> float:
    """Trust in a peer after ``interactions`` in order, from ``params.initial``."""
    trust = params.initial
    for interaction in interactions:
        trust = update_pairwise(trust, interaction, params)
    return trust


def interaction_of(kind: EventKind) -> Interaction:
    """The interaction a reputation event stands for.

    Events that raise a score are positive; events that lower it negative; internal
    consistency (memory agreeing with memory) is neutral: it proves nothing about the peer,
    and so is an operator's reset (a decision about this node's view, not an interaction).
    """
    if kind.raises:
        return Interaction.POSITIVE
    if kind in (EventKind.INTERNAL_AGREEMENT, EventKind.OPERATOR_RESET):
        return Interaction.NEUTRAL
    return Interaction.NEGATIVE
