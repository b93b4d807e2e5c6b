"""Evidence classes: what proved a lesson, for the node that holds it.

Influence follows evidence, never text. For each node, every lesson it holds is one of:

* **proven here**: learned here, or confirmed by this node's own outcomes;
* **corroborated**: signed outcome attestations that confirm it from at least
  ``min_principals`` independent principals other than the source's (counted by principal in
  the verifier's own view of the network), or a verified quorum certificate;
* **unverified**: anything else (an imported lesson nobody independent has vouched for).

Pure: values in, a class out. ``Support`` is what the node gathered about one lesson from its
store (attestations it verified, counted by principal) and from its quorum ledger.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from lamarck.params_checks import check_positive_int

__all__ = ["NO_SUPPORT", "CorroborationParams", "EvidenceClass", "Support", "evidence_class"]


class EvidenceClass(enum.Enum):
    """How far a lesson is proven for this node, strongest first."""

    PROVEN_HERE = "proven_here"
    CORROBORATED = "corroborated"
    UNVERIFIED = "unverified"

    @property
    def rank(self) -> int:
        """0 for the strongest class; conflicts and ties are ordered by this first."""
        return _RANK[self]


_RANK = {EvidenceClass.PROVEN_HERE: 0, EvidenceClass.CORROBORATED: 1, EvidenceClass.UNVERIFIED: 2}


@dataclass(frozen=True, slots=True)
class Support:
    """Independent support for one lesson, counted by principal from this node's own view.

    ``confirming`` and ``contradicting`` hold principals (never keys), the source's principal
    excluded; a principal that attested both verdicts is in neither. ``certified`` says a quorum
    certificate this node verified accepted the lesson's record.
    """

    confirming: frozenset[str] = frozenset()
    contradicting: frozenset[str] = frozenset()
    certified: bool = False
    #: The source is of this node's own principal (a node of its own operator's fleet):
    #: no independent support, but no stranger either (see ``learning/influence.py``).
    own_principal: bool = False

    @property
    def independent(self) -> int:
        """How many independent principals confirm the lesson."""
        return len(self.confirming)


NO_SUPPORT = Support()


@dataclass(frozen=True, slots=True)
class CorroborationParams:
    """When independent support makes a lesson corroborated."""

    # Independent principals (not the source's) whose confirming attestations corroborate a
    # lesson; >= 1.
    min_principals: int = 2

    def __post_init__(self) -> None:
        """Validate every field."""
        check_positive_int("min_principals", self.min_principals)


def evidence_class(
    *,
    imported: bool,
    local_confirmations: int,
    support: Support,
    params: CorroborationParams,
) -> EvidenceClass:
    """The class of one lesson for this node.

    A local lesson is proven here by construction; an imported one once an outcome of this node
    confirmed it. Otherwise a verified certificate or ``min_principals`` independent confirming
    principals corroborate it; anything else is unverified.
    """
    if not imported or local_confirmations > 0:
        return EvidenceClass.PROVEN_HERE
    if support.certified or support.independent >= params.min_principals:
        return EvidenceClass.CORROBORATED
    return EvidenceClass.UNVERIFIED
