"""Local evidence on an imported lesson, and how it meets a newer version from the source.

An imported copy carries two things: the source's signed claim (content, status, its own
confidence) and this node's evidence about it (outcomes attributed here: confirmations,
contradictions, the reality-tested boost, and unused-time decay). A newer signed version from
the source replaces the claim; it never erases the evidence. The rule:

    local    = current - transferred      (how far this node moved the copy; ``transferred``
                                           is the confidence the copy was stored at when the
                                           source's last version was imported)
    new      = new_transferred + carry_local * local, clamped to [floor, ceiling]

so a copy confirmed here from 0.296 to 0.443 stays at 0.443 when the source re-pushes at the
same claim, and moves with the source's claim by the same local margin otherwise. A copy
nothing happened to (``local == 0``) takes the new transferred confidence exactly. When the
transferred confidence of the old version is not known (a copy stored before it was kept),
a copy with local outcomes keeps its current confidence (its evidence cannot be separated
from the claim) and one without takes the new transferred confidence.

An edit at the source (a record whose ``metadata.supersedes`` names the one the copy holds)
is a newer version of the same lesson: the same rule applies. Evidence carries only while the
lesson is about the same operation (``carries_evidence``): outcomes about the old operation do
not confirm or contradict a new one, so a version about another operation starts from its
new transferred confidence with no local outcomes (the event log keeps what there was).

Pure: values in, a number out; constants in ``EvidenceParams``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lamarck.learning.confidence import clamp
from lamarck.learning.params import EvidenceParams
from lamarck.reputation.transfer import TransferParams, reality_tested_confidence

__all__ = [
    "LocalCopy",
    "carries_evidence",
    "confidence_on_new_version",
    "confirmed_confidence",
    "local_evidence",
]


@dataclass(frozen=True, slots=True)
class LocalCopy:
    """What this node holds of an imported lesson before a newer version arrives."""

    # The copy's confidence now.
    confidence: float
    # The confidence the copy was stored at on its last import (None: not recorded).
    transferred: float | None
    # Outcomes attributed to it here (confirmations + contradictions).
    outcomes: int


def carries_evidence(old_operation: str, new_operation: str) -> bool:
    """Whether local evidence about a lesson on ``old_operation`` still counts once its source
    makes a version (or an edit) of it on ``new_operation``: only for the same operation."""
    return old_operation == new_operation


def local_evidence(copy: LocalCopy, new_transferred: float) -> float:
    """How far this node's own evidence moved the copy (see the module docstring)."""
    if copy.transferred is not None:
        return copy.confidence - copy.transferred
    return copy.confidence - new_transferred if copy.outcomes > 0 else 0.0


def confidence_on_new_version(copy: LocalCopy, new_transferred: float, p: EvidenceParams) -> float:
    """The copy's confidence once a newer version transferred at ``new_transferred`` is stored."""
    local = local_evidence(copy, new_transferred)
    if local == 0.0:
        return new_transferred
    return clamp(new_transferred + p.carry_local * local, p.confidence)


def confirmed_confidence(
    stepped: float,
    *,
    current: float,
    imported: bool,
    confirmations: int,
    original: float | None,
    transfer: TransferParams,
) -> float:
    """A lesson's confidence after a local confirmation that stepped it to ``stepped``.

    The first local proof of an imported lesson also earns the transfer table's
    "reality-tested after import" row (+0.2 × the source's claimed confidence, within the
    cap); whichever rule moves it further applies. Afterwards local outcomes alone move it.
    """
    if not imported or confirmations > 0:
        return stepped
    claimed = current if original is None else original
    return max(stepped, reality_tested_confidence(current, claimed, transfer))
