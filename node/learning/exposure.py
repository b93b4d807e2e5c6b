"""Exposure before proof: an imported lesson no local outcome has confirmed is shown cautiously.

Issue 12 §3.2 (the canary rollout of shared knowledge in agent fleets). An imported lesson is
*unproven here* until an outcome of this node confirms it (``confirmations`` counts only this
node's outcomes). Until then:

* at decision time (``check``: the preamble for the operation about to run) it is shown as
  usual: the agent is told, the decision stays the agent's;
* at plan time (the "Lessons:" section of ``recall``) it enters at most ``plan_share`` of the
  prompts: each recall draws once per unproven lesson from the node's seeded RNG and keeps it
  when the draw is below ``plan_share``.

Once a local outcome confirms it, it is exposed like any other lesson. Local lessons are
always proven here (they were learned here). Pure: the draw is an input.
"""

from __future__ import annotations

from dataclasses import dataclass

from lamarck.params_checks import check_range

__all__ = ["ExposureParams", "plan_time_exposed", "unproven_here"]


@dataclass(frozen=True, slots=True)
class ExposureParams:
    """How an unproven imported lesson is exposed (issue 12 §3.2)."""

    # Share of plan-time prompts an unproven imported lesson may enter, in [0, 1]; 0 keeps it
    # to decision-time preambles only, 1 turns the rule off. Node setting
    # ``exposure_plan_share``. Measured in the fleet scenarios (``bench/exposure.py``,
    # docs/trust.md "Exposure before proof"): no cost in steps at any share, and 0.25 cuts
    # the honest imports a poisoner's fabricated outcomes reach by 3x; the default is not
    # yet decided on those figures.
    plan_share: float = 1.0

    def __post_init__(self) -> None:
        """Validate every field."""
        check_range("plan_share", self.plan_share, 0.0, 1.0)


def unproven_here(imported_from: str | None, local_confirmations: int) -> bool:
    """Whether a lesson is imported and no outcome of this node has confirmed it yet."""
    return imported_from is not None and local_confirmations <= 0


def plan_time_exposed(unproven: bool, draw: float, params: ExposureParams) -> bool:
    """Whether a lesson enters this plan-time prompt: always when proven; an unproven one
    when ``draw`` (uniform in [0, 1), one per lesson per recall) is below ``plan_share``."""
    return not unproven or draw < params.plan_share
