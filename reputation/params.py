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
* ``high_threshold`` / ``medium_threshold`` cut a score into the bands the confidence-transfer
  table reads ("different agent, high / medium reputation").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from lamarck.errors import ConfigError

__all__ = ["ReputationParams"]


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
    rejected_penalty: float = 0.03
    replay_penalty: float = 0.01

    # Bands for the confidence-transfer table: high >= high_threshold, medium >= medium_threshold.
    high_threshold: float = 0.7
    medium_threshold: float = 0.4

    # Per-domain expertise (seed AgentSpecialization): start, step up, step down, floor.
    expertise_initial: float = 0.3
    expertise_gain: float = 0.05
    expertise_loss: float = 0.1
    expertise_floor: float = 0.1

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
        if self.expertise_loss <= self.expertise_gain:
            raise ConfigError("invalid expertise_loss: must exceed expertise_gain")
        if self.expertise_floor > self.expertise_initial:
            raise ConfigError("invalid expertise_floor: must not exceed expertise_initial")
