"""The SDK's results: frozen dataclasses, never protobufs; enums are lower-case strings."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from lamarck.errors import ConfigError

__all__ = [
    "DEFAULT_PACING",
    "EVIDENCE_CLASSES",
    "UNKNOWN_EVIDENCE",
    "CheckResult",
    "Conflict",
    "Evidence",
    "HistoryEntry",
    "ImportAck",
    "ImportPacing",
    "ImportResult",
    "Lesson",
    "LessonChange",
    "LessonPage",
    "OutcomeResult",
    "RecallResult",
    "RememberResult",
    "Situation",
    "SituationFields",
]

# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Situation:
    """A remembered blocker: which tool on what, and what cleared it last time."""

    tool: str
    subject: str
    kind: str
    interactive: bool
    env_fingerprint: str
    unblock: str
    probe: str
    source: str


#: What each evidence class means (the node's words; ``Evidence.evidence_class``).
EVIDENCE_CLASSES = {
    "proven_here": "learned here, or confirmed by this node's own outcomes: may drive decisions",
    "corroborated": (
        "confirmed by signed outcome attestations of enough independent principals (the "
        "source's excluded), or accepted by a quorum certificate: may drive decisions"
    ),
    "unverified": ("from peers and confirmed by nobody independent: a hint at most, never advice"),
}


@dataclass(frozen=True, slots=True)
class Evidence:
    """How far a lesson is proven for the node that shows it, counted by principal."""

    evidence_class: str  # proven_here | corroborated | unverified | unspecified (older node)
    independent_principals: int = 0  # independent principals whose attestations confirm it
    contradicting_principals: int = 0
    certified: bool = False  # a quorum certificate the node verified accepted it
    peers: int = 0  # principals behind an import: its source and those confirming it
    authority: bool = False  # a peer lesson about the agent's authority
    approved: bool = False  # an operator approved the record on this node
    label: str = ""  # e.g. "unverified, from 1 peer, confidence 0.29"
    # An unverified import from a node of the node's own principal (its operator's fleet):
    # the only hint an agent may try first; other principals' hints are fallbacks.
    own_principal: bool = False

    @property
    def decides(self) -> bool:
        """Whether the lesson may drive a decision (proven here or corroborated)."""
        return self.evidence_class in ("proven_here", "corroborated")

    @property
    def rank(self) -> int:
        """0 for the strongest class; what conflicts are ordered by first."""
        return {"proven_here": 0, "corroborated": 1}.get(self.evidence_class, 2)


UNKNOWN_EVIDENCE = Evidence("unspecified")


@dataclass(frozen=True, slots=True)
class Lesson:
    """A lesson as the node shows it (see ``LessonView`` in lessons.proto)."""

    id: str
    version: int
    content: str
    confidence: float
    status: str  # claimed | active | superseded | retired
    scope: str
    operation: str
    category: str  # operation | situation
    memory_type: str  # uc | ac
    access_level: str  # public | trusted | private
    origin: str  # local | imported
    source_node_id: str
    tags: tuple[str, ...]
    evidence_outcome_ids: tuple[str, ...]
    success_count: int
    failure_count: int
    created_at: datetime
    updated_at: datetime
    superseded_by: str
    situation: Situation | None
    context: dict[str, Any]
    imported_from: tuple[str, ...]
    original_confidence: float | None
    record_json: bytes = field(repr=False)
    recipients: tuple[str, ...] = ()
    #: Whether the node publishes it to its peers, by the publisher's own rule.
    shared: bool = False
    #: When not shared, why: claimed, no_evidence, below_publish_threshold, scope_not_shared,
    #: incognito, sharing_off, imported_copy, ... ("" when shared).
    not_shared_reason: str = ""
    #: Where it stands: hypothesis | tested | verified | established | deprecated.
    state: str = ""
    #: Lessons it contradicts while the conflict is open (then it is not advice).
    contested_with: tuple[str, ...] = ()
    #: Lessons it beat in a settled conflict.
    verified_against: tuple[str, ...] = ()
    #: Its evidence class, independent support and label for the node that showed it.
    evidence: Evidence = UNKNOWN_EVIDENCE

    @property
    def contested(self) -> bool:
        """Whether the lesson is in an open conflict."""
        return bool(self.contested_with)

    @property
    def record(self) -> dict[str, Any]:
        """The full memory record (for a signed record: the object its signed bytes hold)."""
        value: dict[str, Any] = json.loads(self.record_json)
        return value


@dataclass(frozen=True, slots=True)
class Conflict:
    """Lessons that disagree about an operation, strongest evidence first; ``holds`` is the
    id of the side that holds (a strictly stronger class), "" while unresolved."""

    operation: str
    sides: tuple[Lesson, ...]
    holds: str = ""


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Plan-time recall: the advice best first (with their scores) and the "Lessons:" section.

    ``lessons`` are proven here or corroborated; ``hints`` unverified peer lessons the section
    shows under their own label (never advice); ``conflicts`` the disagreements it shows.
    ``indexing`` counts lessons just written that this recall could not search yet (their
    vectors are being written behind earlier replies; 0: it saw every write).
    """

    lessons: tuple[Lesson, ...]
    section: str
    scores: tuple[float, ...] = ()
    hints: tuple[Lesson, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    indexing: int = 0


@dataclass(frozen=True, slots=True)
class LessonChange:
    """How an outcome moved one lesson."""

    lesson_id: str
    kind: str  # created | confirmed | contradicted | promoted | demoted | retired | ...
    version: int
    confidence_before: float
    confidence_after: float
    status: str


@dataclass(frozen=True, slots=True)
class OutcomeResult:
    """What recording an outcome did."""

    outcome_id: str
    duplicate: bool
    changes: tuple[LessonChange, ...]
    #: Why no lesson was created, confirmed or contradicted ("" when one was): the node's
    #: reason (``lamarck.learning.why``), e.g. ``no_failed_then_ok_pair``.
    nothing_learned: str = ""

    def ids(self, kind: str) -> list[str]:
        """Lesson ids with the given change kind, in order."""
        return [c.lesson_id for c in self.changes if c.kind == kind]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What is on file for an operation about to run (advice only).

    ``lessons`` are the advice (proven here or corroborated), strongest first; an unverified
    lesson is never among them. ``conflicts`` are the disagreements on file about it.
    """

    preamble: str
    probe: str
    unblock: str
    lesson_ids: tuple[str, ...]
    lessons: tuple[Lesson, ...] = ()
    conflicts: tuple[Conflict, ...] = ()


@dataclass(frozen=True, slots=True)
class RememberResult:
    """A stored claim, and whether it is new."""

    lesson: Lesson
    created: bool
    #: What a claim is: kept out of recall and sharing until an outcome confirms it; to
    #: record what just happened, call ``record_outcome`` instead.
    note: str = ""


class SituationFields(Protocol):
    """A declared situation to remember (``lamarck.agent.Situation`` fits)."""

    @property
    def tool(self) -> str:
        """The tool that hit the blocker."""
        ...

    @property
    def subject(self) -> str:
        """What it was called on."""
        ...

    @property
    def kind(self) -> str:
        """The blocker kind (auth, permission, not_installed, ...)."""
        ...

    @property
    def interactive(self) -> bool:
        """Whether clearing it needs a human."""
        ...

    @property
    def env_fingerprint(self) -> str:
        """What the situation depends on (hashed)."""
        ...

    @property
    def unblock(self) -> str | None:
        """What the user had to do (tool code only)."""
        ...

    @property
    def probe(self) -> str | None:
        """The command that checks whether it still holds (tool code only)."""
        ...

    @property
    def source(self) -> str:
        """``declared`` (only declared situations are remembered)."""
        ...


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One event in a lesson's history."""

    at: datetime
    kind: str
    version: int
    status: str
    confidence: float
    outcome_id: str
    actor: str
    reason: str
    record_json: bytes = field(repr=False)
    # Confidence before the event (0.0 when there was none, e.g. created or imported).
    confidence_before: float = 0.0


@dataclass(frozen=True, slots=True)
class LessonPage:
    """One page of ``list_lessons``; pass ``next_page_token`` for the next ("" at the end)."""

    lessons: tuple[Lesson, ...]
    next_page_token: str


@dataclass(frozen=True, slots=True)
class ImportAck:
    """What the node did with one line of a bundle."""

    index: int
    record_hash: str
    status: str  # accepted | duplicate | quarantined | rejected | deferred
    reason: str


@dataclass(frozen=True, slots=True)
class ImportPacing:
    """How ``import_bundle`` cuts a long bundle into calls that each end within the deadline."""

    #: Lines in the first call (before any rate is measured).
    first_lines: int = 50
    #: Bounds on the lines of any later call.
    min_lines: int = 10
    max_lines: int = 2000
    #: Share of the client's deadline one call is sized to take at the measured rate.
    budget_share: float = 0.3

    def __post_init__(self) -> None:
        """Refuse values no import could use (``ConfigError`` naming the field)."""
        for name in ("first_lines", "min_lines", "max_lines"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"ImportPacing.{name} must be an int >= 1, got {value!r}")
        if self.min_lines > self.max_lines:
            raise ConfigError("ImportPacing.min_lines must be <= max_lines")
        share = self.budget_share
        if not isinstance(share, float | int) or not math.isfinite(share) or not 0 < share <= 1:
            raise ConfigError(f"ImportPacing.budget_share must be in (0, 1], got {share!r}")


DEFAULT_PACING = ImportPacing()


@dataclass(frozen=True, slots=True)
class ImportResult:
    """The acks of an import, one per record line in bundle order."""

    acks: tuple[ImportAck, ...]

    def count(self, status: str) -> int:
        """How many lines got ``status``."""
        return sum(1 for a in self.acks if a.status == status)

    @property
    def accepted(self) -> int:
        """How many lines were stored."""
        return self.count("accepted")

    @property
    def rejected(self) -> tuple[ImportAck, ...]:
        """The refused lines."""
        return tuple(a for a in self.acks if a.status == "rejected")
