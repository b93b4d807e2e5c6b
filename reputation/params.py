"""Every reputation constant in one frozen, validated object (gossipsub's score params style).

Each field's comment gives its meaning and range. ``validate()`` runs on construction, names
the field and the rule, and rejects NaN and infinities, so a bad configuration fails at start-up
rather than skewing trust silently.

Shape of the rules (seed "Multi-Agent Coordination", TrustEvolution and AgentReputationSystem):

* A score lives in [0, 1]; ``neutral_score`` is where an unknown record of behaviour sits and
  where every contribution decays to (``decay_per_day``). An admitted newcomer starts at
  ``initial_score``.
* Reality events come first: ``lesson_confirmed`` is the only way up, and it is slow and
  saturating (``confirm_gain * weight * (1 - score)``). ``lesson_contradicted`` is the largest
  routine step down: trust increases slowly, decreases quickly (``contradict_loss`` must exceed
  ``confirm_gain``).
* Protocol misbehaviour penalties are fixed steps down. Equivocation is the hardest of all (two
  signed, conflicting records are proof, not suspicion); the others are at most as large as a
  reality contradiction, because a rejected record is usually a policy mismatch, not a lie.
* One threshold set cuts a score into bands, read by transfer, gossip and voter choice alike:
  ``high_threshold`` (trusted; the transfer table's "high reputation" row),
  ``medium_threshold`` (the transfer table's medium / low split inside the neutral band) and
  ``graylist_threshold`` (below it a peer is graylisted: its records are not imported, it is no
  voter and no gossip target, and its score stops decaying back toward neutral, so only a
  reality event can lift it out).
* The validation hierarchy (Lamarckian memory, principle 5) weighs each contradicting event by who
  established it: ``weight_reality`` > ``weight_operator`` > ``weight_other_agent`` >
  ``weight_documentation`` > internal consistency, which weighs nothing (not a parameter: no
  configuration may let memory agreeing with memory move anyone).
* Pairwise trust (seed "Trust Evolution", :class:`PairwiseParams`) and global trust
  (EigenTrust, :class:`GlobalTrustParams`) have their own objects; so has the endorsement cap
  (:class:`PrincipalParams`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, fields

from lamarck.errors import ConfigError

__all__ = [
    "GlobalTrustParams",
    "PairwiseParams",
    "PrincipalParams",
    "ProbationParams",
    "ReputationParams",
    "SummaryParams",
]


@dataclass(frozen=True, slots=True)
class ReputationParams:
    """Validated reputation parameters; construct once at start-up and share."""

    # Score of an admitted node with no history, in [0, 1].
    initial_score: float = 0.5
    # Score every contribution decays toward, in [0, 1] (seed: "start neutral" at 0.5).
    neutral_score: float = 0.5
    # Fraction of each contribution kept per day, in (0, 1]; 1 disables decay (seed: 0.99).
    decay_per_day: float = 0.99

    # Reality (positive, saturating): step = confirm_gain * weight * (1 - score), in (0, 1).
    confirm_gain: float = 0.05
    # Reality (negative, fixed): step = contradict_loss * weight, in (0, 1]; > confirm_gain.
    contradict_loss: float = 0.15

    # Protocol penalties, each a fixed step down in [0, 1], times the event weight.
    equivocation_penalty: float = 0.3
    poisoned_penalty: float = 0.15
    bad_signature_penalty: float = 0.1
    vote_wrong_penalty: float = 0.05
    # Reality judged the subject's vote right: step = vote_right_gain * weight * (1 - score);
    # at most confirm_gain (being right about someone else's lesson is worth less than one's own).
    vote_right_gain: float = 0.02
    rejected_penalty: float = 0.03
    replay_penalty: float = 0.01

    # Bands for the confidence-transfer table: high >= high_threshold, medium >= medium_threshold.
    high_threshold: float = 0.7
    medium_threshold: float = 0.4
    # Below this a peer is graylisted, in [0, medium_threshold] and below neutral_score. From a
    # newcomer's 0.5 it takes three reality contradictions at full weight.
    graylist_threshold: float = 0.2

    # Validation hierarchy: the factor on a contradicting event's step by who established it,
    # strictly decreasing in this order, each in (0, 1]; internal consistency is fixed at 0.
    weight_reality: float = 1.0
    weight_operator: float = 0.8
    weight_other_agent: float = 0.5
    weight_documentation: float = 0.25

    # Per-domain expertise (seed AgentSpecialization): start, step up, step down, floor.
    expertise_initial: float = 0.3
    expertise_gain: float = 0.05
    expertise_loss: float = 0.1
    expertise_floor: float = 0.1
    # A node is an expert in a domain from this level on, in [expertise_initial, 1].
    expert_threshold: float = 0.7

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        for f in fields(self):
            value = getattr(self, f.name)
            if not math.isfinite(value):
                raise ConfigError(f"invalid {f.name}: must be finite, got {value!r}")
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"invalid {f.name}: must be between 0 and 1, got {value!r}")
        if self.decay_per_day <= 0.0:
            raise ConfigError("invalid decay_per_day: must be in (0, 1]")
        if not 0.0 < self.confirm_gain < 1.0:
            raise ConfigError("invalid confirm_gain: must be in (0, 1)")
        if self.contradict_loss <= self.confirm_gain:
            # The whole point of the asymmetry: one failure undoes several successes.
            raise ConfigError(
                "invalid contradict_loss: must exceed confirm_gain "
                "(trust increases slowly, decreases quickly)"
            )
        routine = {
            "poisoned_penalty": self.poisoned_penalty,
            "bad_signature_penalty": self.bad_signature_penalty,
            "vote_wrong_penalty": self.vote_wrong_penalty,
            "rejected_penalty": self.rejected_penalty,
            "replay_penalty": self.replay_penalty,
        }
        for name, value in routine.items():
            if value > self.contradict_loss:
                raise ConfigError(
                    f"invalid {name}: must not exceed contradict_loss (reality comes first)"
                )
            if value > self.equivocation_penalty:
                raise ConfigError(f"invalid {name}: must not exceed equivocation_penalty")
        if self.equivocation_penalty < self.contradict_loss:
            raise ConfigError(
                "invalid equivocation_penalty: must be at least contradict_loss "
                "(a signed contradiction is proof of misbehaviour)"
            )
        if self.medium_threshold > self.high_threshold:
            raise ConfigError("invalid medium_threshold: must not exceed high_threshold")
        if self.graylist_threshold > self.medium_threshold:
            raise ConfigError("invalid graylist_threshold: must not exceed medium_threshold")
        if self.graylist_threshold >= self.neutral_score:
            # Decay moves a score toward neutral; neutral must not be graylisted.
            raise ConfigError("invalid graylist_threshold: must be below neutral_score")
        if self.vote_right_gain > self.confirm_gain:
            raise ConfigError("invalid vote_right_gain: must not exceed confirm_gain")
        ladder = (
            ("weight_reality", self.weight_reality),
            ("weight_operator", self.weight_operator),
            ("weight_other_agent", self.weight_other_agent),
            ("weight_documentation", self.weight_documentation),
        )
        for (_, upper), (name, lower) in itertools.pairwise(ladder):
            if not lower < upper:
                raise ConfigError(
                    f"invalid {name}: must be below the level above it "
                    "(reality > operator > other agent > documentation)"
                )
        if self.weight_documentation <= 0.0:
            raise ConfigError("invalid weight_documentation: must be above 0 (internal is 0)")
        if self.expertise_loss <= self.expertise_gain:
            raise ConfigError("invalid expertise_loss: must exceed expertise_gain")
        if self.expertise_floor > self.expertise_initial:
            raise ConfigError("invalid expertise_floor: must not exceed expertise_initial")
        if self.expert_threshold < self.expertise_initial:
            raise ConfigError("invalid expert_threshold: must not be below expertise_initial")


def _unit_fields(obj: object, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"invalid {name}: must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"invalid {name}: must be finite, got {value!r}")
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"invalid {name}: must be between 0 and 1, got {value!r}")


@dataclass(frozen=True, slots=True)
class PairwiseParams:
    """This node's direct trust in one peer (seed "Trust Evolution"); validated.

    A positive interaction adds ``positive_step``, a negative one subtracts ``negative_step``
    (trust increases slowly, decreases quickly), a neutral one multiplies by ``neutral_decay``;
    the result stays in [0, 1]. A peer never met sits at ``initial``.
    """

    # Trust in a peer never met, in [0, 1] (seed: 0.5, "start neutral").
    initial: float = 0.5
    # Added per positive interaction, in (0, 1).
    positive_step: float = 0.05
    # Subtracted per negative interaction, in (0, 1]; must exceed positive_step.
    negative_step: float = 0.15
    # Factor per neutral interaction, in (0, 1]; 1 disables it.
    neutral_decay: float = 0.99

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        _unit_fields(self, ("initial", "positive_step", "negative_step", "neutral_decay"))
        if not 0.0 < self.positive_step < 1.0:
            raise ConfigError("invalid positive_step: must be in (0, 1)")
        if self.negative_step <= self.positive_step:
            raise ConfigError(
                "invalid negative_step: must exceed positive_step "
                "(trust increases slowly, decreases quickly)"
            )
        if self.neutral_decay <= 0.0:
            raise ConfigError("invalid neutral_decay: must be in (0, 1]")


@dataclass(frozen=True, slots=True)
class GlobalTrustParams:
    """EigenTrust over local trust, anchored in pre-trusted peers; validated.

    ``t = (1 - anchor_weight) * C^T t + anchor_weight * p`` where ``C`` is the row-normalised
    local trust and ``p`` the uniform distribution over the operator's pre-trusted peers (or
    this node alone when there are none: never a uniform vector over everyone).
    """

    # Share of trust returned to the pre-trusted peers each step (EigenTrust's a), in (0, 1).
    # Larger: faster convergence and less trust reachable by a cluster that trusts itself.
    anchor_weight: float = 0.15
    # Stop when the L1 change of the trust vector is at most this, in (0, 1e-3].
    tolerance: float = 1e-10
    # Hard stop, >= 1; reaching it is reported (``converged`` false), never hidden.
    max_iterations: int = 1000
    # Local trust counts only above this floor (EigenTrust's max(s_ij, 0)): a peer this node
    # merely knows, at the pairwise initial 0.5, lends nobody any trust. In [0, 1).
    local_floor: float = 0.5

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        _unit_fields(self, ("anchor_weight", "tolerance", "local_floor"))
        if not 0.0 < self.anchor_weight < 1.0:
            raise ConfigError("invalid anchor_weight: must be in (0, 1)")
        if not 0.0 < self.tolerance <= 1e-3:
            raise ConfigError("invalid tolerance: must be in (0, 1e-3]")
        if self.local_floor >= 1.0:
            raise ConfigError("invalid local_floor: must be below 1")
        if isinstance(self.max_iterations, bool) or not isinstance(self.max_iterations, int):
            raise ConfigError("invalid max_iterations: must be an integer")
        if self.max_iterations < 1:
            raise ConfigError("invalid max_iterations: must be at least 1")


@dataclass(frozen=True, slots=True)
class SummaryParams:
    """Which peers' signed local-trust summaries count, and for how long; validated.

    A summary is fresh from its ``issued_at`` until ``max_age_s`` later; one dated more than
    ``max_future_s`` ahead of this node's clock is refused. Per signer the newest wins.
    """

    # A summary older than this (seconds after its issued_at) no longer counts, > 0. Signers
    # re-sign on every global-trust recomputation (60 s by default), so an hour is many rounds.
    max_age_s: float = 3600.0
    # Clock skew tolerated on issued_at, seconds, >= 0 (the same bound as records' dates).
    max_future_s: float = 300.0
    # Other signers' summaries a Sync answer relays besides this node's own, >= 0.
    served: int = 64
    # Signers whose newest summary is held at once, >= 1; past it the oldest summary goes.
    max_signers: int = 10_000

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        for name in ("max_age_s", "max_future_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"invalid {name}: must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"invalid {name}: must be finite and >= 0, got {value!r}")
        if self.max_age_s <= 0:
            raise ConfigError("invalid max_age_s: must be above 0")
        for name, least in (("served", 0), ("max_signers", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"invalid {name}: must be an integer >= {least}, got {value!r}")


@dataclass(frozen=True, slots=True)
class ProbationParams:
    """How far this node believes a source before reality has judged it here (confidence
    transfer's probation and claim ceiling, ``lamarck.reputation.transfer``); validated.

    A source is *on probation* until this node's own outcomes have judged ``interactions`` of
    its lessons (confirmed or contradicted): meanwhile its lessons transfer at the low band,
    whatever its score. The confidence it may claim is capped by its record here: its
    confirmed share smoothed toward ``new_source_claim`` with ``interactions`` pseudo-judgements,
    ``(confirmed + interactions * new_source_claim) / (judged + interactions)``, so a newcomer
    may claim at most ``new_source_claim`` and claiming more gains nothing.
    """

    # Reality-judged interactions that end probation, integer >= 0 (0: no probation, and the
    # ceiling is the bare confirmed share once judged). 5: a contradiction costs 0.15 x the
    # claimed confidence, so a source claiming 0.5 and always wrong is graylisted on its fifth
    # contradicted lesson (0.5 -> 0.125), one claiming more sooner: nobody leaves probation
    # sooner than reality could have caught it lying every time. An honest source leaves it
    # claiming up to 0.75 (5 of 5 confirmed).
    interactions: int = 5
    # The most a source with no record here may claim, in (0, 1]: a lesson born of one real
    # outcome starts at 0.5 (ConfidenceParams.birth), and a stranger's word is worth no more.
    new_source_claim: float = 0.5

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        n = self.interactions
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(f"invalid interactions: must be an integer >= 0, got {n!r}")
        _unit_fields(self, ("new_source_claim",))
        if self.new_source_claim <= 0.0:
            raise ConfigError("invalid new_source_claim: must be in (0, 1]")


@dataclass(frozen=True, slots=True)
class PrincipalParams:
    """How identities are counted by principal, and how many one endorser may admit."""

    # Most identities one endorser may admit in ``endorsed`` mode, >= 1 (0 is not "unlimited":
    # an operator who wants no endorsements uses token admission).
    max_identities_per_endorser: int = 8

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        cap = self.max_identities_per_endorser
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigError(
                f"invalid max_identities_per_endorser: must be an integer >= 1, got {cap!r}"
            )
