"""Anti-poisoning filters: small objects with ``check(record, view) -> Verdict``, composed.

Two families:

* **Hard rejects** — one hit and the record is refused: ``injected_instruction`` (text aimed at
  the agent rather than about the world) and ``autonomy_claim`` (a lesson may only make an
  agent *more* careful), both given by ``lamarck.policy.autonomy.AutonomyFilter``;
  ``secret_detected`` and ``undeclared_situation`` (a blocker's unblock/probe must come from
  tool code, adaptive recovery). ``lamarck.policy.chain.build_filters`` builds the chain.
* **Red flags** (seed ``is_likely_poisoned``) — each is a suspicion, two or more quarantine the
  record for an operator: unverified high confidence, high contradiction rate, conflict with
  established local knowledge, statistical outlier against the source's history.

Self-reported numbers are claims, not evidence. ``validation_count``, ``validated_by`` and
``consensus_level`` are never read. ``contradiction_count`` / ``contradicted_by`` are read in one
place only: a source that says its own lesson was contradicted can only make that lesson look
worse, so the claim may *add* to the contradiction side of a red flag, but a self-reported
validation never sits on the support side (that would let a source cancel the flag by
inflating a number it writes itself).

The ``ImportView`` protocol is everything the filters and the import decision may know about
the local world; the node implements it over the store, registry and reputation.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, cast, runtime_checkable

from lamarck.errors import ConfigError
from lamarck.learning.knowledge_params import NEGATION_MARKERS
from lamarck.proto.memory import MemoryV2
from lamarck.reputation.transfer import TrackRecord

__all__ = [
    "AllOf",
    "ConflictsWithEstablished",
    "Corroboration",
    "DeclaredSituationFilter",
    "DeclaredTool",
    "EstablishedLesson",
    "Filter",
    "FilterParams",
    "FilterReason",
    "HighContradictionRate",
    "ImportView",
    "KnownVersion",
    "ReadsEstablished",
    "ReadsEstablishedWhen",
    "RedFlag",
    "RedFlags",
    "SecretFilter",
    "SourceStats",
    "StatisticalOutlier",
    "TextsToEmbed",
    "UnsafeNoOpFilter",
    "UnverifiedHighConfidence",
    "Verdict",
    "VerdictKind",
    "conforms",
    "established_floor",
    "needs_established",
    "reads_meaning",
    "record_texts",
    "texts_to_embed",
    "texts_with_content",
]


# --------------------------------------------------------------------------------------------
# What the local world looks like to a filter.


@dataclass(frozen=True, slots=True)
class Corroboration:
    """Evidence about a record that this node can check itself.

    ``supporting_votes`` / ``contradicting_votes`` count signed votes from distinct admitted
    identities (the trust issue's quorum); ``quorum_certified`` says a valid certificate exists;
    ``local_confirmations`` / ``local_contradictions`` count this node's own outcomes.
    """

    supporting_votes: int = 0
    contradicting_votes: int = 0
    quorum_certified: bool = False
    local_confirmations: int = 0
    local_contradictions: int = 0


@dataclass(frozen=True, slots=True)
class EstablishedLesson:
    """A local lesson on the same operation and context, with this node's confidence in it."""

    lesson_id: str
    content: str
    confidence: float


@dataclass(frozen=True, slots=True)
class SourceStats:
    """What this node has seen a source publish (an empty history is all zeros)."""

    records_seen: int = 0
    mean_daily_rate: float = 0.0
    recent_daily_rate: float = 0.0
    mean_confidence: float = 0.0
    confidence_std: float = 0.0


@dataclass(frozen=True, slots=True)
class DeclaredTool:
    """A tool's own declaration of its remedies: the only legal unblock/probe strings.

    These come from tool code (the tool registry), never from a record, so a poisoned record
    cannot teach an agent a new command: its unblock/probe must equal one of these exactly
    (after whitespace normalisation).
    """

    name: str
    unblock_commands: frozenset[str] = frozenset()
    probe_commands: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """A declaration names its tool and only non-empty commands (``ConfigError``)."""
        if not self.name or any(c.isspace() for c in self.name):
            raise ConfigError(f"invalid declared tool name {self.name!r}: must be a bare name")
        for field_name in ("unblock_commands", "probe_commands"):
            if any(not c.strip() for c in getattr(self, field_name)):
                raise ConfigError(
                    f"invalid {field_name} of declared tool {self.name!r}: empty command"
                )


@dataclass(frozen=True, slots=True)
class KnownVersion:
    """A version of a record id this node already holds: version, content hash, signer id."""

    version: int
    content_hash: str
    source_id: str


class ImportView(Protocol):
    """Read-only local knowledge the pure import stages need; no method may do I/O lazily.

    The node builds one over its store, registry and reputation (pre-fetched per record).
    """

    @property
    def self_node_id(self) -> str:
        """This node's id."""
        ...

    def reputation(self, node_id: str) -> float:
        """The source's reputation score in [0, 1]."""
        ...

    def track_record(self, node_id: str) -> TrackRecord:
        """The source's lessons this node's own outcomes judged (probation, claim ceiling)."""
        ...

    def corroboration(self, record: MemoryV2) -> Corroboration:
        """Verified votes and local outcomes about exactly this record's content."""
        ...

    def established_lessons(
        self, operation: str, domain: str, environment: str
    ) -> Sequence[EstablishedLesson]:
        """Local active lessons on this operation and context."""
        ...

    def source_history(self, node_id: str) -> SourceStats:
        """What this node has seen ``node_id`` publish."""
        ...

    def declared_tool(self, tool: str) -> DeclaredTool | None:
        """The tool registry's declaration for ``tool``, or None if it declares nothing."""
        ...

    def known_versions(self, record_id: str) -> Sequence[KnownVersion]:
        """Versions of ``record_id`` already held (stored or quarantined)."""
        ...

    def previously_rejected(self, content_hash: str) -> str | None:
        """The policy reason this exact record was rejected for before, if it was."""
        ...


# --------------------------------------------------------------------------------------------
# Verdicts.


class VerdictKind(StrEnum):
    """What a filter concluded."""

    ACCEPT = "accept"
    QUARANTINE = "quarantine"
    REJECT = "reject"


@dataclass(frozen=True, slots=True)
class Verdict:
    """accept | quarantine(reasons) | reject(reason)."""

    kind: VerdictKind
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind is VerdictKind.ACCEPT and self.reasons:
            raise ValueError("an accept verdict carries no reasons")
        if self.kind is not VerdictKind.ACCEPT and not self.reasons:
            raise ValueError(f"a {self.kind} verdict needs a reason")
        if self.kind is VerdictKind.REJECT and len(self.reasons) != 1:
            raise ValueError("a reject verdict carries exactly one reason")

    @classmethod
    def accept(cls) -> Verdict:
        """Nothing wrong found."""
        return cls(VerdictKind.ACCEPT)

    @classmethod
    def quarantine(cls, *reasons: str) -> Verdict:
        """Hold for an operator, for these reasons."""
        return cls(VerdictKind.QUARANTINE, tuple(reasons))

    @classmethod
    def reject(cls, reason: str) -> Verdict:
        """Refuse, for this reason."""
        return cls(VerdictKind.REJECT, (reason,))

    @property
    def reason(self) -> str:
        """The first reason ("" for accept)."""
        return self.reasons[0] if self.reasons else ""


class FilterReason(StrEnum):
    """Reasons the filters give: hard rejects, then red flags."""

    INJECTED_INSTRUCTION = "injected_instruction"
    SECRET_DETECTED = "secret_detected"
    AUTONOMY_CLAIM = "autonomy_claim"
    UNDECLARED_SITUATION = "undeclared_situation"
    # A declared situation about a tool this node's agents do not use: nothing here could run
    # its remedy, and the sender may use the tool honestly (not charged as poison).
    UNUSED_TOOL = "unused_tool"
    HIGH_CONFIDENCE_UNVERIFIED = "high_confidence_unverified"
    CONTRADICTION_RATE = "contradiction_rate"
    CONFLICTS_WITH_ESTABLISHED = "conflicts_with_established"
    STATISTICAL_OUTLIER = "statistical_outlier"


# --------------------------------------------------------------------------------------------
# Parameters.

# One negation list for the import filter and the conflict rule (learning/conflicts.py).
_CONFLICT_MARKERS: tuple[str, ...] = NEGATION_MARKERS


def _unit(name: str, value: float) -> None:
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"invalid {name}: must be between 0 and 1, got {value!r}")


def _positive(name: str, value: float) -> None:
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"invalid {name}: must be a positive finite number, got {value!r}")


@dataclass(frozen=True, slots=True)
class FilterParams:
    """Every filter constant and pattern; validated (and every pattern compiled) on build."""

    # Red flags needed to quarantine (seed: two or more). Integer >= 1.
    red_flag_threshold: int = 2
    # Claimed confidence above which a record with no verified support is a red flag, [0, 1].
    high_confidence: float = 0.9
    # Contradicted share of checkable evidence above which it is a red flag, [0, 1].
    contradiction_rate: float = 0.5
    # Local confidence from which a lesson counts as "established", [0, 1].
    established_min_confidence: float = 0.8
    # Word overlap (Jaccard, negation markers removed) from which two lessons are "about the
    # same claim"; with opposite negation parity they conflict. [0, 1].
    conflict_similarity: float = 0.5
    # History a source needs before its own averages are a baseline. Integer >= 1.
    outlier_min_history: int = 5
    # Recent publishing rate above this multiple of the source's mean is an outlier. > 1.
    outlier_rate_factor: float = 3.0
    # Standard deviations above the source's mean confidence that make an outlier. > 0.
    outlier_confidence_z: float = 2.0
    # Smallest standard deviation assumed (a source that always says 0.8 is not an oracle). > 0.
    outlier_confidence_std_floor: float = 0.05
    # Daily rate that is an outlier for a source with too little history. > 0.
    new_source_max_daily_rate: float = 20.0
    conflict_markers: tuple[str, ...] = _CONFLICT_MARKERS
    # The tools this node's agents use, each with the remedies its code declares (the node
    # setting ``declared_tools``): a situation lesson about any other tool, or with any other
    # unblock/probe, is refused (``DeclaredSituationFilter``). One declaration per name.
    declared_tools: tuple[DeclaredTool, ...] = ()

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        for name in (
            "high_confidence",
            "contradiction_rate",
            "established_min_confidence",
            "conflict_similarity",
        ):
            _unit(name, getattr(self, name))
        for name in (
            "outlier_rate_factor",
            "outlier_confidence_z",
            "outlier_confidence_std_floor",
            "new_source_max_daily_rate",
        ):
            _positive(name, getattr(self, name))
        if self.outlier_rate_factor <= 1.0:
            raise ConfigError("invalid outlier_rate_factor: must exceed 1")
        if self.red_flag_threshold < 1:
            raise ConfigError("invalid red_flag_threshold: must be at least 1")
        if self.outlier_min_history < 1:
            raise ConfigError("invalid outlier_min_history: must be at least 1")
        names = [t.name for t in self.declared_tools]
        if len(set(names)) != len(names):
            raise ConfigError("invalid declared_tools: a tool is declared twice")


# --------------------------------------------------------------------------------------------
# The filter protocol and its combinators.


class Filter(Protocol):
    """One anti-poisoning check: a pure function of the record and the local view."""

    def check(self, record: MemoryV2, view: ImportView) -> Verdict:
        """Judge ``record``."""
        ...


@runtime_checkable
class TextsToEmbed(Protocol):
    """A filter that reads vectors of texts drawn from a record's content (computed by the
    pipeline, a chunk ahead in a catch-up, from the content alone: the record need not be
    parsed twice)."""

    def texts_to_embed(self, content: str) -> tuple[str, ...]:
        """The texts whose vectors the filter will look up for a record with ``content``;
        cheap to call."""
        ...


@functools.cache
def _conforms(kind: type, protocol: type) -> bool:
    return issubclass(kind, protocol)


def conforms(obj: object, protocol: type) -> bool:
    """Whether ``obj`` meets the runtime-checkable ``protocol``. Asked per record (is this
    filter a ``TextsToEmbed``, is this view ``TextVectors``): the protocol's own ``isinstance``
    walks its members each time (~25 us, a tenth of a catch-up's filter stage), so the answer
    is kept per type."""
    kind: type = type(obj)  # type[Any]: mypy takes type[object] for unhashable
    return _conforms(kind, protocol)


def reads_meaning(policy: Filter) -> bool:
    """Whether ``policy`` is a ``TextsToEmbed`` (``conforms``)."""
    return conforms(policy, TextsToEmbed)


def texts_to_embed(policy: Filter, content: str) -> tuple[str, ...]:
    """Every text ``policy`` (or any filter inside it) wants a vector of for a record with
    ``content``, in order, once."""
    if not reads_meaning(policy):
        return ()
    wants = cast(TextsToEmbed, policy)  # answered by its type above
    return tuple(dict.fromkeys(wants.texts_to_embed(content)))


def texts_with_content(policy: Filter, content: str) -> list[str]:
    """What a record with ``content`` is embedded from: the content, then every other text
    ``policy`` reads by meaning (``texts_to_embed``), each once."""
    return [content, *(t for t in texts_to_embed(policy, content) if t != content)]


@runtime_checkable
class ReadsEstablished(Protocol):
    """A filter or red flag that reads the established local lessons on a record's
    operation (``ImportView.established_lessons``), only those at or above a confidence."""

    def established_floor(self) -> float | None:
        """The least confidence of an established lesson it reads; None: it reads none."""
        ...


@runtime_checkable
class ReadsEstablishedWhen(Protocol):
    """A ``ReadsEstablished`` policy that can tell, before they are read, whether the
    established lessons could change what it says of a record."""

    def needs_established(self, record: MemoryV2, view: ImportView) -> bool:
        """Whether they could, judged over ``view`` read without them."""
        ...


def established_floor(policy: object) -> float | None:
    """The least confidence of an established lesson ``policy`` (or anything inside it)
    reads, or None when nothing in it reads them: the import view fetches no lesson below
    it, and none at all on None."""
    if not conforms(policy, ReadsEstablished):
        return None
    return cast(ReadsEstablished, policy).established_floor()  # answered by its type above


def needs_established(policy: object, record: MemoryV2, view: ImportView) -> bool:
    """Whether ``policy``'s verdict on ``record`` could depend on the established lessons,
    judged over ``view`` read without them: the pipeline reads them only then (a round trip
    a record, and most records of a catch-up raise no red flag they could add to). A policy
    that reads them but cannot tell (no ``needs_established``) always gets them."""
    if not conforms(policy, ReadsEstablishedWhen):
        return established_floor(policy) is not None
    return cast(ReadsEstablishedWhen, policy).needs_established(record, view)


def _lowest_floor(parts: Sequence[object]) -> float | None:
    floors = [f for f in (established_floor(p) for p in parts) if f is not None]
    return min(floors) if floors else None


class AllOf:
    """Every filter must pass: the first reject wins; quarantine reasons accumulate."""

    def __init__(self, filters: Sequence[Filter]) -> None:
        if not filters:
            # An empty policy would accept everything: refuse it rather than fail open.
            raise ConfigError("AllOf needs at least one filter")
        self.filters: tuple[Filter, ...] = tuple(filters)
        # The parts that read established lessons, found once (asked for every record).
        self._reading = tuple(f for f in self.filters if established_floor(f) is not None)

    def texts_to_embed(self, content: str) -> tuple[str, ...]:
        """The texts any of the filters wants a vector of (see :class:`TextsToEmbed`)."""
        out: list[str] = []
        for f in self.filters:
            out.extend(texts_to_embed(f, content))
        return tuple(dict.fromkeys(out))

    def established_floor(self) -> float | None:
        """The lowest floor of the filters that read established lessons (see
        :class:`ReadsEstablished`)."""
        return _lowest_floor(self.filters)

    def needs_established(self, record: MemoryV2, view: ImportView) -> bool:
        """Whether any of the filters needs the established lessons for ``record``."""
        return any(needs_established(f, record, view) for f in self._reading)

    def check(self, record: MemoryV2, view: ImportView) -> Verdict:
        """Run the filters in order."""
        held: list[str] = []
        for f in self.filters:
            verdict = f.check(record, view)
            if verdict.kind is VerdictKind.REJECT:
                return verdict
            held.extend(r for r in verdict.reasons if r not in held)
        return Verdict.quarantine(*held) if held else Verdict.accept()


class UnsafeNoOpFilter:
    """Accepts everything. For tests only: never wire it into a node."""

    def check(self, record: MemoryV2, view: ImportView) -> Verdict:
        """Accept without looking."""
        return Verdict.accept()


# --------------------------------------------------------------------------------------------
# Hard rejects.


def record_texts(record: MemoryV2) -> Iterator[str]:
    """Every free-text field of a record that could reach an agent's prompt or shell."""
    yield record.content
    ctx = record.context
    yield ctx.domain
    yield ctx.environment
    yield from ctx.tools
    for key, value in ctx.constraints.items():
        yield key
        yield value
    yield from (t for t in (ctx.scale, ctx.timing, ctx.users) if t)
    for ev in record.evidence:
        yield ev.description
    yield from record.metadata.tags
    if record.lesson is not None:
        yield record.lesson.operation
        if record.lesson.reason:
            yield record.lesson.reason  # shown with the lesson's history, MCP included
    sit = record.situation
    if sit is not None:
        yield from (t for t in (sit.tool, sit.subject, sit.unblock, sit.probe) if t)


class SecretFilter:
    """Rejects a record carrying anything that looks like a credential.

    ``scanner`` is the node's one scanner (``lamarck.learning.secrets.scan_for_secrets`` bound
    to the node's secret params, as the filter chain builds it), the same one every local write
    goes through, so import is never laxer than local learning.
    """

    def __init__(self, scanner: Callable[[str], Sequence[str]]) -> None:
        self._scan = scanner

    def check(self, record: MemoryV2, view: ImportView) -> Verdict:
        """Reject if any text field has a finding."""
        for text in record_texts(record):
            if self._scan(text):
                return Verdict.reject(FilterReason.SECRET_DETECTED)
        return Verdict.accept()


def _normalise_command(command: str) -> str:
    return " ".join(command.split())


class DeclaredSituationFilter:
    """Rejects situation lessons whose remedy did not come from declared tool fields.

    "Declared tool field", concretely: the situation's ``source`` is ``"declared"``, its
    ``tool`` is declared on this node — in ``FilterParams.declared_tools`` (the node setting
    listing the tools its agents use) or else by the local tool registry
    (``view.declared_tool``) — and its ``unblock`` / ``probe``, when present, are each
    *exactly* one of that declaration's ``unblock_commands`` / ``probe_commands``
    (whitespace-normalised). A record can therefore only point at a command this node's own
    tools already know; it can never teach one, nor bring a tool this node does not use.
    Records without a situation block pass. A tool this node does not use is refused as
    ``unused_tool`` (a mismatch, charged lightly), a remedy its declaration lacks or an
    inferred situation as ``undeclared_situation`` (an attempt to teach a command).
    """

    def __init__(self, params: FilterParams | None = None) -> None:
        tools = params.declared_tools if params is not None else ()
        self._declared = {t.name: t for t in tools}

    def check(self, record: MemoryV2, view: ImportView) -> Verdict:
        """Reject an inferred situation or a remedy absent from the tool's declaration."""
        sit = record.situation
        if sit is None:
            return Verdict.accept()
        if sit.source != "declared":
            return Verdict.reject(FilterReason.UNDECLARED_SITUATION)
        declared = self._declared.get(sit.tool) or view.declared_tool(sit.tool)
        if declared is None:
            return Verdict.reject(FilterReason.UNUSED_TOOL)
        pairs = ((sit.unblock, declared.unblock_commands), (sit.probe, declared.probe_commands))
        for given, allowed in pairs:
            if given is None:
                continue
            if _normalise_command(given) not in {_normalise_command(a) for a in allowed}:
                return Verdict.reject(FilterReason.UNDECLARED_SITUATION)
        return Verdict.accept()


# --------------------------------------------------------------------------------------------
# Red flags.


class RedFlag(Protocol):
    """One suspicion; ``flag`` returns its reason or None."""

    def flag(self, record: MemoryV2, view: ImportView) -> str | None:
        """The red flag's reason if it is raised."""
        ...


class UnverifiedHighConfidence:
    """Red flag: claimed confidence above ``high_confidence`` with no verified support.

    Support means signed votes from admitted identities or this node's own confirmations;
    ``validation_count`` and ``validated_by`` written by the source do not count.
    """

    def __init__(self, params: FilterParams) -> None:
        self._threshold = params.high_confidence

    def flag(self, record: MemoryV2, view: ImportView) -> str | None:
        """Raise when the claim is high and nothing checkable backs it."""
        if record.confidence <= self._threshold:
            return None
        corr = view.corroboration(record)
        if corr.supporting_votes or corr.local_confirmations:
            return None
        return FilterReason.HIGH_CONFIDENCE_UNVERIFIED


class HighContradictionRate:
    """Red flag: contradictions exceed ``contradiction_rate`` of the evidence.

    Contradictions: verified contradicting votes + local contradicting outcomes + the source's
    own admission (``max(contradiction_count, len(contradicted_by))``: a claim against
    interest). Support: verified supporting votes + local confirmations only — never the
    source's self-reported validations.
    """

    def __init__(self, params: FilterParams) -> None:
        self._rate = params.contradiction_rate

    def flag(self, record: MemoryV2, view: ImportView) -> str | None:
        """Raise when the contradicted share is above the limit."""
        corr = view.corroboration(record)
        admitted = max(
            record.provenance.contradiction_count, len(record.validation.contradicted_by)
        )
        against = corr.contradicting_votes + corr.local_contradictions + admitted
        support = corr.supporting_votes + corr.local_confirmations
        total = against + support
        if total and against / total > self._rate:
            return FilterReason.CONTRADICTION_RATE
        return None


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_'-]+", text.lower())


class ConflictsWithEstablished:
    """Red flag: the record contradicts an established local lesson on the same operation.

    Candidates are local lessons on the same ``lesson.operation``, domain and environment with
    confidence >= ``established_min_confidence``. A candidate conflicts when the record names
    it in a ``contradicts`` causal link, or when the two texts are about the same claim (word
    overlap >= ``conflict_similarity`` once negation markers are removed) with opposite
    negation parity ("X works with Y" / "X does not work with Y"). Crude on purpose: it only
    raises one flag of the two needed, and a false alarm costs a quarantine, not a loss.
    """

    def __init__(self, params: FilterParams) -> None:
        self._min_conf = params.established_min_confidence
        self._similarity = params.conflict_similarity
        self._markers = frozenset(params.conflict_markers)

    def established_floor(self) -> float | None:
        """``established_min_confidence``: a lesson below it is never read."""
        return self._min_conf

    def needs_established(self, record: MemoryV2, view: ImportView) -> bool:
        """Whether it reads any for ``record``: a lesson's, on its operation."""
        return record.lesson is not None

    def _opposes(self, a: str, b: str) -> bool:
        wa, wb = _words(a), _words(b)
        pa = sum(w in self._markers for w in wa) % 2
        pb = sum(w in self._markers for w in wb) % 2
        if pa == pb:
            return False
        sa = {w for w in wa if w not in self._markers}
        sb = {w for w in wb if w not in self._markers}
        union = sa | sb
        return bool(union) and len(sa & sb) / len(union) >= self._similarity

    def flag(self, record: MemoryV2, view: ImportView) -> str | None:
        """Raise when an established local lesson is contradicted."""
        if record.lesson is None:
            return None
        established = [
            e
            for e in view.established_lessons(
                record.lesson.operation, record.context.domain, record.context.environment
            )
            if e.confidence >= self._min_conf
        ]
        targets = {link.target for link in record.causal_links if link.relation == "contradicts"}
        for lesson in established:
            if lesson.lesson_id in targets or self._opposes(record.content, lesson.content):
                return FilterReason.CONFLICTS_WITH_ESTABLISHED
        return None


class StatisticalOutlier:
    """Red flag: the source suddenly publishes far more, or far surer, than its history.

    With at least ``outlier_min_history`` records seen: a recent daily rate above
    ``outlier_rate_factor`` x its mean, or a confidence more than ``outlier_confidence_z``
    standard deviations (floored) above its mean confidence. With less history, a burst above
    ``new_source_max_daily_rate`` (a fresh identity flooding the network).
    """

    def __init__(self, params: FilterParams) -> None:
        self._p = params

    def flag(self, record: MemoryV2, view: ImportView) -> str | None:
        """Raise when the record or its source's recent behaviour is out of pattern."""
        p = self._p
        stats = view.source_history(record.provenance.source_agent_id)
        if stats.records_seen < p.outlier_min_history:
            if stats.recent_daily_rate > p.new_source_max_daily_rate:
                return FilterReason.STATISTICAL_OUTLIER
            return None
        if stats.recent_daily_rate > p.outlier_rate_factor * stats.mean_daily_rate:
            return FilterReason.STATISTICAL_OUTLIER
        spread = max(stats.confidence_std, p.outlier_confidence_std_floor)
        if record.confidence > stats.mean_confidence + p.outlier_confidence_z * spread:
            return FilterReason.STATISTICAL_OUTLIER
        return None


class RedFlags:
    """Quarantines when ``threshold`` or more red flags are raised (seed: two)."""

    def __init__(self, flags: Sequence[RedFlag], threshold: int) -> None:
        if not flags:
            raise ConfigError("RedFlags needs at least one red flag")
        if threshold < 1:
            raise ConfigError("invalid red_flag_threshold: must be at least 1")
        self.flags: tuple[RedFlag, ...] = tuple(flags)
        self.threshold = threshold
        # Which flags read established lessons and which do not, found once.
        self._reading = tuple(f for f in self.flags if established_floor(f) is not None)
        self._others = tuple(f for f in self.flags if established_floor(f) is None)

    def established_floor(self) -> float | None:
        """The lowest floor of the flags that read established lessons (see
        :class:`ReadsEstablished`)."""
        return _lowest_floor(self.flags)

    def needs_established(self, record: MemoryV2, view: ImportView) -> bool:
        """Whether the flags that read established lessons could change the verdict or its
        reasons: only when, all raised, they would bring the count to the threshold. Below
        it the record is accepted whatever they say (one flag of the two needed)."""
        reading = sum(1 for f in self._reading if needs_established(f, record, view))
        if not reading:
            return False
        others = sum(1 for f in self._others if f.flag(record, view) is not None)
        return others + reading >= self.threshold

    def raised(self, record: MemoryV2, view: ImportView) -> tuple[str, ...]:
        """Every red flag raised for ``record``."""
        return tuple(r for r in (f.flag(record, view) for f in self.flags) if r is not None)

    def check(self, record: MemoryV2, view: ImportView) -> Verdict:
        """Quarantine with the raised flags as reasons, or accept."""
        raised = self.raised(record, view)
        return Verdict.quarantine(*raised) if len(raised) >= self.threshold else Verdict.accept()
