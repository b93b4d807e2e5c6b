"""Why a lesson is not shared: the publisher's rule, told as a reason a user can act on.

:func:`why_not_shared` is the same rule as :func:`lamarck.gossip.publisher.may_publish`,
condition for condition and in the same order, returning the first condition that fails
instead of ``False`` (a property test holds the two together on random rows). The node's
own state comes on top in :func:`share_status`: an incognito node shares nothing, and a node
whose network side is not running has nobody to share with.

Reasons (snake_case, shown by ``lamarck lessons show`` and the SDK's ``Lesson``):

* ``imported_copy`` — a copy of another node's lesson: relayed with its source's signature,
  never republished as this node's;
* ``claimed`` — a claim with no outcome behind it (``Remember``): shared once an outcome
  confirms it;
* ``no_evidence`` — no outcome backs it (for a situation lesson: the recorded outcome of the
  turn that met the blocker, given to ``RecordSituation`` as its evidence);
* ``below_publish_threshold`` — an active lesson whose confidence is under the threshold (never
  a situation lesson: see :func:`why_not_shared`);
* ``scope_not_shared`` — a project scope this node does not share;
* ``uc_not_tagged_shareable`` — user context without the shareable tag;
* ``private_without_recipients`` — private, and naming nobody it may reach;
* ``access_level`` — an access level the publisher does not know (fail closed);
* ``incognito`` — this node shares nothing;
* ``sharing_off`` — this node's network side is not running.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lamarck.domain.rows import Category, LessonRow, LessonStatus

__all__ = [
    "SHAREABLE_STATUSES",
    "SharePolicy",
    "ShareReason",
    "SharingState",
    "share_status",
    "why_not_shared",
]


class SharePolicy(Protocol):
    """The gossip params the sharing rule reads (``GossipParams`` is one): named here so that
    ``publisher.py`` imports this module and not the other way round."""

    @property
    def publish_threshold(self) -> float: ...
    @property
    def shared_scopes(self) -> frozenset[str]: ...
    @property
    def team_sharing(self) -> bool: ...
    @property
    def uc_share_tag(self) -> str: ...


#: Every status a local lesson may be published in: active, and the two ends (retired,
#: superseded), whose signed newer version tells every holder to end its copy. Equal to
#: ``publisher.PUBLISHED_STATUSES`` (a test holds them together).
SHAREABLE_STATUSES = (LessonStatus.ACTIVE, LessonStatus.RETIRED, LessonStatus.SUPERSEDED)


class ShareReason:
    """The reason strings (plain constants, so callers compare with ``==``)."""

    IMPORTED_COPY = "imported_copy"
    CLAIMED = "claimed"
    NO_EVIDENCE = "no_evidence"
    BELOW_PUBLISH_THRESHOLD = "below_publish_threshold"
    SCOPE_NOT_SHARED = "scope_not_shared"
    UC_NOT_TAGGED_SHAREABLE = "uc_not_tagged_shareable"
    PRIVATE_WITHOUT_RECIPIENTS = "private_without_recipients"
    ACCESS_LEVEL = "access_level"
    INCOGNITO = "incognito"
    SHARING_OFF = "sharing_off"


def why_not_shared(row: LessonRow, params: SharePolicy) -> str | None:
    """The first condition of ``may_publish`` that ``row`` fails, or ``None`` if it passes.

    Mirrors ``may_publish`` exactly: ``why_not_shared(row, p) is None`` iff
    ``may_publish(row, p)``.
    """
    if row.imported_from is not None:
        return ShareReason.IMPORTED_COPY
    if row.status not in SHAREABLE_STATUSES:
        # CLAIMED is the one status outside SHAREABLE_STATUSES; any new one reads as its name.
        return ShareReason.CLAIMED if row.status is LessonStatus.CLAIMED else row.status.value
    if not row.evidence:
        return ShareReason.NO_EVIDENCE
    # A situation lesson (design sources: adaptive recovery) is a fact a tool's own code reported,
    # backed by the turn
    # that met it, not a tendency that outcomes confirm step by step: its confidence does not
    # grow with use, so the threshold would keep every blocker home. What guards it instead:
    # evidence (above), a receiver that declares the tool and its exact remedies
    # (``DeclaredSituationFilter``), and a probe before it blocks anything anywhere.
    situation = row.category is Category.SITUATION
    if (
        row.status is LessonStatus.ACTIVE
        and not situation
        and row.confidence < params.publish_threshold
    ):
        return ShareReason.BELOW_PUBLISH_THRESHOLD
    if row.scope != "global" and row.scope not in params.shared_scopes and not params.team_sharing:
        # With team sharing a project lesson may leave, to that project's peers only (the
        # audience policy, ``gossip/audience.py``, picks them).
        return ShareReason.SCOPE_NOT_SHARED
    if row.memory_type == "UC" and params.uc_share_tag not in row.tags:
        return ShareReason.UC_NOT_TAGGED_SHAREABLE
    if row.access_level == "private":
        return None if row.recipients else ShareReason.PRIVATE_WITHOUT_RECIPIENTS
    return None if row.access_level in ("public", "trusted") else ShareReason.ACCESS_LEVEL


@dataclass(frozen=True, slots=True)
class SharingState:
    """What of the node decides sharing besides the row: its gossip params and incognito."""

    params: SharePolicy
    incognito: bool = False


def share_status(row: LessonRow, state: SharingState | None) -> str | None:
    """Why this node does not share ``row`` (``None``: it does); ``state`` None: no network."""
    if state is None:
        return ShareReason.SHARING_OFF
    if state.incognito:
        return ShareReason.INCOGNITO
    return why_not_shared(row, state.params)
