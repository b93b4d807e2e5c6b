"""The numbers of the rules that keep knowledge true, as frozen, validated params.

Conflicts settled by test (Lamarckian memory "ConflictDetector", "ConflictResolver"),
near-duplicates
consolidated (design sources: adaptive memory), context variables whose weight is learned
(Lamarckian memory
"VariableImportanceLearner") and the visible lifecycle (Lamarckian memory "Memory Lifecycle"). Same
pattern as ``lamarck.learning.params``: every field says its range, validation names the
field and the rule, NaN and infinities are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The shared checks directly, not through ``learning/params.py``: ``LearningParams`` holds a
# ``KnowledgeParams``, so importing that module from here would be circular.
from lamarck.params_checks import check_finite as _finite
from lamarck.params_checks import check_positive_int as _positive_int
from lamarck.params_checks import check_range as _in_range
from lamarck.params_checks import check_rule as _rule

__all__ = [
    "NEGATION_MARKERS",
    "ConflictParams",
    "ConsolidationParams",
    "KnowledgeParams",
    "LifecycleParams",
    "VariableParams",
]

# Words whose odd count turns a claim into its opposite ("X works with Y" / "X does not work
# with Y"). The same list as the import filter's conflict markers.
NEGATION_MARKERS: tuple[str, ...] = (
    "not",
    "never",
    "no",
    "don't",
    "dont",
    "doesn't",
    "isn't",
    "won't",
    "cannot",
    "can't",
    "avoid",
    "without",
)


@dataclass(frozen=True, slots=True)
class ConflictParams:
    """When two lessons contradict, and how the test that settles them moves each one."""

    # Contexts at least this similar can conflict; below it a difference is information, not
    # invalidation (Lamarckian memory: 0.7, the "somewhat similar" band). Range (0, 1].
    min_context_similarity: float = 0.7
    # Cosine from which two texts about the same operation make the same claim (up to its
    # polarity). Checked on the node's own embeddings: "X works with Y" / "X does not work
    # with Y" is 0.70 apart for the hashing embedder and 0.96 for MiniLM, unrelated lessons on
    # one operation 0.26 and 0.53 (``bench/learning.py`` measures both). Range (0, 1].
    min_claim_similarity: float = 0.65
    # Share of words two opposite claims must share once negation markers are removed
    # (Jaccard): the vectors say the texts are about the same thing, the words that they make
    # the same claim. MiniLM puts "`X` does not work with Y" within 0.65 of "`X` is faster
    # with -q"; their words overlap by 0.2. Range [0, 1].
    min_claim_overlap: float = 0.5
    # Winner's confidence step (Lamarckian memory: +0.2). Positive, in (0, 1].
    win_step: float = 0.2
    # Settlement never raises the winner past this (Lamarckian memory: 0.8); a winner already above
    # it keeps its own confidence. Range (0, 1].
    win_cap: float = 0.8
    # Loser's confidence step, a positive magnitude (Lamarckian memory: −0.3). In (0, 1].
    lose_step: float = 0.3
    # Settlement never takes the loser below this (Lamarckian memory: 0.1). Range [0, win_cap).
    lose_floor: float = 0.1
    # Words whose odd count negates a claim; non-empty, lowercase.
    negation_markers: tuple[str, ...] = NEGATION_MARKERS

    def __post_init__(self) -> None:
        """Validate every field and the order between them."""
        _in_range("min_context_similarity", self.min_context_similarity, 0.0, 1.0, lo_open=True)
        _in_range("min_claim_similarity", self.min_claim_similarity, 0.0, 1.0, lo_open=True)
        _in_range("min_claim_overlap", self.min_claim_overlap, 0.0, 1.0)
        _in_range("win_step", self.win_step, 0.0, 1.0, lo_open=True)
        _in_range("win_cap", self.win_cap, 0.0, 1.0, lo_open=True)
        _in_range("lose_step", self.lose_step, 0.0, 1.0, lo_open=True)
        _in_range("lose_floor", self.lose_floor, 0.0, self.win_cap, hi_open=True)
        _rule(len(self.negation_markers) > 0, "negation_markers", "must name at least one word")
        _rule(
            all(isinstance(w, str) and w and w == w.lower() for w in self.negation_markers),
            "negation_markers",
            "must be non-empty lowercase strings",
        )


@dataclass(frozen=True, slots=True)
class ConsolidationParams:
    """When near-duplicate lessons merge, and how much evidence the merged one keeps."""

    # Cosine from which two lessons with the same operation, scope, access and recommendation
    # are the same lesson. Validated by ``bench/learning.py`` (recall@5 must not fall) for the
    # hashing embedder and MiniLM. Range (0, 1].
    min_similarity: float = 0.8
    # Context similarity from which two lessons were learned in the same context (the "same
    # context" band of ``ConfidenceParams.very_similar``). Range (0, 1].
    min_context_similarity: float = 0.9
    # Outcome ids the merged lesson keeps, the most recent; the rest survive as counts (design
    # sources: adaptive memory). Integer in [1, 64] (RecordLimits: at most 64 evidence entries).
    evidence_kept: int = 32

    def __post_init__(self) -> None:
        """Validate every field."""
        _in_range("min_similarity", self.min_similarity, 0.0, 1.0, lo_open=True)
        _in_range("min_context_similarity", self.min_context_similarity, 0.0, 1.0, lo_open=True)
        _positive_int("evidence_kept", self.evidence_kept)
        _rule(self.evidence_kept <= 64, "evidence_kept", "must be at most 64")


@dataclass(frozen=True, slots=True)
class VariableParams:
    """How a context variable's importance is learned from predictions across a difference."""

    # Observations before a variable's class is learned; until then the fixed list holds
    # (Lamarckian memory: 3). Integer >= 1.
    min_observations: int = 3
    # Error rate above which a variable is critical (Lamarckian memory: 0.7). Range (important, 1).
    critical_error_rate: float = 0.7
    # Error rate above which it is important (Lamarckian memory: 0.4). Range (minor, critical).
    important_error_rate: float = 0.4
    # Error rate above which it is minor, else negligible (Lamarckian memory:
    # 0.2). Range [0, important).
    minor_error_rate: float = 0.2
    # Weight of a learned class in context similarity (Lamarckian memory ContextMatcher: 1.0, 0.6,
    # 0.3, 0.0). Each in [0, 1], non-increasing from critical to negligible, critical positive.
    critical_weight: float = 1.0
    important_weight: float = 0.6
    minor_weight: float = 0.3
    negligible_weight: float = 0.0

    def __post_init__(self) -> None:
        """Validate every field and the order between them."""
        _positive_int("min_observations", self.min_observations)
        _in_range("critical_error_rate", self.critical_error_rate, 0.0, 1.0, hi_open=True)
        _in_range(
            "important_error_rate",
            self.important_error_rate,
            0.0,
            self.critical_error_rate,
            hi_open=True,
        )
        _in_range(
            "minor_error_rate",
            self.minor_error_rate,
            0.0,
            self.important_error_rate,
            hi_open=True,
        )
        _in_range("critical_weight", self.critical_weight, 0.0, 1.0, lo_open=True)
        _in_range("important_weight", self.important_weight, 0.0, self.critical_weight)
        _in_range("minor_weight", self.minor_weight, 0.0, self.important_weight)
        _in_range("negligible_weight", self.negligible_weight, 0.0, self.minor_weight)


@dataclass(frozen=True, slots=True)
class LifecycleParams:
    """Where a lesson stands on Lamarckian memory's ladder: hypothesis, tested, verified,
    established."""

    # Verified: at least this confidence (Lamarckian memory ladder: 0.6) ... Range (0, 1).
    verified_min_confidence: float = 0.6
    # ... and at least this many successes ("multiple successes"). Integer >= 2.
    verified_min_successes: int = 2
    # Established: at least this confidence (Lamarckian memory ladder: 0.8) ... Range
    # (verified_min_confidence, 1].
    established_min_confidence: float = 0.8
    # ... and at least this many successes. Integer >= verified_min_successes.
    established_min_successes: int = 3

    def __post_init__(self) -> None:
        """Validate every field and the order between them."""
        _in_range(
            "verified_min_confidence",
            self.verified_min_confidence,
            0.0,
            1.0,
            lo_open=True,
            hi_open=True,
        )
        _positive_int("verified_min_successes", self.verified_min_successes)
        _rule(self.verified_min_successes >= 2, "verified_min_successes", "must be at least 2")
        _finite("established_min_confidence", self.established_min_confidence)
        _in_range(
            "established_min_confidence",
            self.established_min_confidence,
            self.verified_min_confidence,
            1.0,
            lo_open=True,
        )
        _positive_int("established_min_successes", self.established_min_successes)
        _rule(
            self.established_min_successes >= self.verified_min_successes,
            "established_min_successes",
            "must be at least verified_min_successes",
        )


@dataclass(frozen=True, slots=True)
class KnowledgeParams:
    """All issue-18 parameters, loaded once with ``LearningParams`` and passed to the rules."""

    conflicts: ConflictParams = field(default_factory=ConflictParams)
    consolidation: ConsolidationParams = field(default_factory=ConsolidationParams)
    variables: VariableParams = field(default_factory=VariableParams)
    lifecycle: LifecycleParams = field(default_factory=LifecycleParams)

    def __post_init__(self) -> None:
        """Check the parts are the right types (each validated itself on construction)."""
        _rule(isinstance(self.conflicts, ConflictParams), "conflicts", "must be ConflictParams")
        _rule(
            isinstance(self.consolidation, ConsolidationParams),
            "consolidation",
            "must be ConsolidationParams",
        )
        _rule(isinstance(self.variables, VariableParams), "variables", "must be VariableParams")
        _rule(isinstance(self.lifecycle, LifecycleParams), "lifecycle", "must be LifecycleParams")
