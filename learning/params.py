"""Every number of the learning rules, as frozen, validated parameter objects.

Modelled on libp2p gossipsub's ``score_params.go``: each field says its sign and range in a
comment, and validation names the field and the rule it breaks ("invalid confirm_step: must be
in (0, 1]"). Validation runs when the object is built, so an invalid configuration cannot
exist; NaN and infinities are refused everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lamarck.learning.influence import InfluenceParams
from lamarck.learning.knowledge_params import KnowledgeParams
from lamarck.learning.notes import NoteKeyParams
from lamarck.learning.write_behind import WriteBehindParams
from lamarck.params_checks import check_finite, check_positive_int, check_range, check_rule

__all__ = [
    "ConfidenceParams",
    "ContextParams",
    "EvidenceParams",
    "LearningParams",
    "LessonParams",
    "SecretParams",
]


# The shared field checks (lamarck/params_checks.py), under the names this module's classes
# and knowledge_params.py use.
_finite = check_finite
_in_range = check_range
_positive_int = check_positive_int
_rule = check_rule


@dataclass(frozen=True, slots=True)
class ConfidenceParams:
    """How a lesson's confidence is born, moves on attributed outcomes, decays and retires.

    Adaptive memory (docs/design-sources.md) gives the attributed steps; Lamarckian memory
    (confidence evolution) gives
    their shape across context-similarity bands. See ``LearningParams`` for how they combine.
    """

    # Confidence of a lesson born from a real outcome (design sources: adaptive memory). Range
    # [floor, ceiling].
    birth: float = 0.5
    # Confidence of a model's claim without evidence (adaptive memory "claimed"). Range
    # (retire_below, birth]: a claim starts below any proven lesson but is not retired on arrival.
    claimed: float = 0.3
    # Success in a very similar context (similarity > very_similar): adaptive memory's +0.15, which
    # is Lamarckian memory's SAME_CONTEXT_SUCCESS on adaptive memory's scale. Positive, in (0, 1].
    confirm_step: float = 0.15
    # Success in a somewhat similar context moves by confirm_step × this
    # (Lamarckian memory: 0.7). [0, 1].
    similar_success_factor: float = 0.7
    # Success in a different context (similarity <= somewhat_similar) proves the lesson
    # generalises (Lamarckian memory NEW_CONTEXT_SUCCESS is larger than the same-context step).
    # Positive, in [confirm_step, 2 × confirm_step]: Lamarckian memory's 2×
    # ratio is the upper bound,
    # because on adaptive memory's scale 2 × 0.15 would carry a new lesson most
    # of the clamp span at once.
    generalisation_step: float = 0.20
    # Magnitude of a failure in a very similar context: adaptive memory's −0.25 (Lamarckian memory's
    # SAME_CONTEXT_FAILURE on adaptive memory's scale). Positive magnitude, in (0, 1].
    contradict_step: float = 0.25
    # Failure in a somewhat similar context moves by contradict_step × this
    # (Lamarckian memory: 0.5). [0, 1].
    similar_failure_factor: float = 0.5
    # Failure in a different context moves by contradict_step × this: 0.2 × 0.25 = 0.05, which is
    # Lamarckian memory's NEW_CONTEXT_FAILURE (a mismatch is information, not invalidation).
    # Range [0, similar_failure_factor]: the more different the context, the less a failure says.
    different_failure_factor: float = 0.2
    # Clamp bounds (design sources: adaptive memory): confidence never reaches certainty either way.
    # 0 <= floor < ceiling <= 1.
    floor: float = 0.05
    ceiling: float = 0.95
    # Decay of a lesson unused during a reconcile pass (adaptive memory; the
    # mirror of a use). [0, 1].
    unused_decay: float = 0.02
    # Additional decay per idle day since the lesson was last used or touched (Lamarckian memory
    # STALENESS_DECAY_PER_DAY). Non-negative, at most 1.
    staleness_per_day: float = 0.001
    # Below this the lesson is retired: kept, out of every active query (adaptive memory and
    # Lamarckian memory's staleness floor). Range (floor, claimed).
    retire_below: float = 0.2
    # Similarity above this is "the same context" (Lamarckian memory: 0.9).
    # Range (somewhat_similar, 1).
    very_similar: float = 0.9
    # Similarity above this (and not above very_similar) is "somewhat similar" (Lamarckian memory:
    # 0.7). Range (0, very_similar).
    somewhat_similar: float = 0.7
    # Before a process has seen a reconcile pass, a lesson not used within this many days counts
    # as unused in the first pass. Positive.
    unused_window_days: float = 1.0

    def __post_init__(self) -> None:
        """Validate every field and the order between them."""
        _in_range("floor", self.floor, 0.0, 1.0)
        _in_range("ceiling", self.ceiling, 0.0, 1.0)
        _rule(self.floor < self.ceiling, "floor", "must be below ceiling")
        _in_range("birth", self.birth, self.floor, self.ceiling)
        _in_range("retire_below", self.retire_below, self.floor, 1.0, lo_open=True)
        _in_range("claimed", self.claimed, self.retire_below, self.birth, lo_open=True)
        _in_range("confirm_step", self.confirm_step, 0.0, 1.0, lo_open=True)
        _in_range("similar_success_factor", self.similar_success_factor, 0.0, 1.0)
        _in_range(
            "generalisation_step",
            self.generalisation_step,
            self.confirm_step,
            2.0 * self.confirm_step,
        )
        _in_range("contradict_step", self.contradict_step, 0.0, 1.0, lo_open=True)
        _in_range("similar_failure_factor", self.similar_failure_factor, 0.0, 1.0)
        _in_range(
            "different_failure_factor",
            self.different_failure_factor,
            0.0,
            self.similar_failure_factor,
        )
        _in_range("unused_decay", self.unused_decay, 0.0, 1.0)
        _in_range("staleness_per_day", self.staleness_per_day, 0.0, 1.0)
        _in_range("somewhat_similar", self.somewhat_similar, 0.0, 1.0, lo_open=True, hi_open=True)
        _in_range(
            "very_similar",
            self.very_similar,
            self.somewhat_similar,
            1.0,
            lo_open=True,
            hi_open=True,
        )
        _finite("unused_window_days", self.unused_window_days)
        _rule(self.unused_window_days > 0, "unused_window_days", "must be positive")


@dataclass(frozen=True, slots=True)
class EvidenceParams:
    """How this node's own evidence on an imported lesson meets a newer version from its source.

    See ``lamarck.learning.evidence.confidence_on_new_version`` for the rule.
    """

    # Share of the local evidence (how far this node's outcomes and time moved the copy from
    # the confidence it was transferred at) carried onto a newer version, in [0, 1]: 1 keeps
    # all of it, 0 lets the source's newer claim replace it.
    carry_local: float = 1.0
    # The clamp the carried result obeys; wire the same instance the lesson service uses.
    confidence: ConfidenceParams = field(default_factory=ConfidenceParams)

    def __post_init__(self) -> None:
        """Validate every field."""
        _in_range("carry_local", self.carry_local, 0.0, 1.0)
        _rule(isinstance(self.confidence, ConfidenceParams), "confidence", "must be params")


@dataclass(frozen=True, slots=True)
class LessonParams:
    """Caps and sizes: how many lessons, how many in a prompt, how recall ranks them."""

    # Active lessons of this node's own per scope; beyond it the lowest confidence are
    # superseded at reconcile (design sources: adaptive memory). Imported copies are not counted:
    # they are the network's signed records, kept to verify, deduplicate and offer. Integer >= 1.
    max_active_per_scope: int = 200
    # Lessons returned by plan-time recall and shown in the prompt (design sources: adaptive
    # memory). Integer >= 1.
    recall_limit: int = 5
    # Upper bound on the "Lessons:" section, in tokens of a conservative estimate (design sources:
    # adaptive memory). Integer >= 1.
    prompt_token_budget: int = 300
    # Distinct projects whose confirmations promote a project lesson to global (design sources:
    # adaptive memory). Integer >= 2: one project cannot make a lesson global.
    promotion_projects: int = 2
    # Nearest neighbours fetched by vector search before the re-rank. Integer >= recall_limit.
    candidate_pool: int = 50
    # The relevance floor: a lesson whose cosine to the task is below this is not about the
    # task and is never recalled, however trusted (a query unrelated to every lesson gets an
    # empty section). Range [-1, 1]. Measured on all-MiniLM-L6-v2 over lesson/task pairs
    # (tests/unit/store/test_recall_relevance.py): unrelated tasks score at most ~0.12 against
    # any lesson, a related task's own lesson 0.27-0.9; the hashing embedder's lexical cosines
    # for shared words fall in the same range, so one floor serves both.
    min_similarity: float = 0.2
    # A lesson is shown only if its cosine is at least this share of the best hit's: the
    # section holds the lessons about this task, not their neighbours in the same domain
    # (measured: section precision 0.26 without it, 0.75 with it, same 9/9 hit rate). [0, 1];
    # 0 keeps every hit above the floor.
    relative_similarity: float = 0.7
    # Recency factor halves every this many days since last use (or creation). Positive.
    recency_half_life_days: float = 30.0
    # Outcome ids kept on a lesson; the oldest confirmations beyond it are dropped
    # (adaptive memory: the evidence list must not grow without bound; RecordLimits allows 64).
    max_evidence: int = 64
    # Longest lesson content, UTF-8 bytes (RecordLimits.content). Integer >= 1.
    max_content_bytes: int = 4096
    # Lesson texts whose prompt token count is remembered: the same lessons are counted for
    # recall after recall, and the tokenizer was a seventh of Recall's time. Integer >= 1.
    token_count_cache: int = 4096

    def __post_init__(self) -> None:
        """Validate every field and the order between them."""
        _positive_int("max_active_per_scope", self.max_active_per_scope)
        _positive_int("recall_limit", self.recall_limit)
        _positive_int("prompt_token_budget", self.prompt_token_budget)
        _positive_int("promotion_projects", self.promotion_projects)
        _rule(self.promotion_projects >= 2, "promotion_projects", "must be at least 2")
        _positive_int("candidate_pool", self.candidate_pool)
        _positive_int("token_count_cache", self.token_count_cache)
        _rule(
            self.candidate_pool >= self.recall_limit,
            "candidate_pool",
            "must be at least recall_limit",
        )
        _in_range("min_similarity", self.min_similarity, -1.0, 1.0)
        _in_range("relative_similarity", self.relative_similarity, 0.0, 1.0)
        _finite("recency_half_life_days", self.recency_half_life_days)
        _rule(self.recency_half_life_days > 0, "recency_half_life_days", "must be positive")
        _positive_int("max_evidence", self.max_evidence)
        _positive_int("max_content_bytes", self.max_content_bytes)


@dataclass(frozen=True, slots=True)
class ContextParams:
    """Context similarity (Lamarckian memory "Context-Aware Transfer"): dimensions, weights, the
    cap.

    Dimensions are domain, environment, tools, scale, timing, users (plus authentication, a
    critical variable of Lamarckian memory). A differing critical dimension caps similarity at
    ``critical_cap``; the others contribute by weight.
    """

    # Dimensions that must match exactly; any difference caps similarity (design
    # sources: Lamarckian memory).
    critical_dims: tuple[str, ...] = ("domain", "environment", "authentication")
    # Similarity ceiling when a critical dimension differs (Lamarckian memory: 0.3). Range [0, 1).
    critical_cap: float = 0.3
    # Weight of a critical dimension in the weighted match (Lamarckian memory
    # CRITICAL_WEIGHT). (0, 1].
    critical_weight: float = 1.0
    # Weight of tools, compared as sets (Jaccard) (Lamarckian memory IMPORTANT_WEIGHT). [0, 1].
    tools_weight: float = 0.6
    # Weight of scale (Lamarckian memory IMPORTANT_WEIGHT). [0, 1].
    scale_weight: float = 0.6
    # Weight of users (Lamarckian memory MINOR_WEIGHT). [0, 1].
    users_weight: float = 0.3
    # Weight of timing (Lamarckian memory MINOR_WEIGHT). [0, 1].
    timing_weight: float = 0.3

    def __post_init__(self) -> None:
        """Validate every field."""
        _rule(len(self.critical_dims) > 0, "critical_dims", "must name at least one dimension")
        _rule(
            all(isinstance(d, str) and d for d in self.critical_dims),
            "critical_dims",
            "must be non-empty strings",
        )
        _in_range("critical_cap", self.critical_cap, 0.0, 1.0, hi_open=True)
        _in_range("critical_weight", self.critical_weight, 0.0, 1.0, lo_open=True)
        _in_range("tools_weight", self.tools_weight, 0.0, 1.0)
        _in_range("scale_weight", self.scale_weight, 0.0, 1.0)
        _in_range("users_weight", self.users_weight, 0.0, 1.0)
        _in_range("timing_weight", self.timing_weight, 0.0, 1.0)

    def weights(self) -> dict[str, float]:
        """Weight of every known dimension, critical ones included."""
        out = {dim: self.critical_weight for dim in self.critical_dims}
        out.update(
            tools=self.tools_weight,
            scale=self.scale_weight,
            users=self.users_weight,
            timing=self.timing_weight,
        )
        return out


@dataclass(frozen=True, slots=True)
class SecretParams:
    """Thresholds of the credential scanner's generic rules (the vendor patterns need none)."""

    # Shortest value of a ``password=``/``api_key=`` assignment or bearer token that can be a
    # credential; shorter ones are prose ("password: none"). Integer >= 1.
    min_value_len: int = 8
    # Shannon entropy, bits per character, a value needs to look random. Range (0, 8].
    min_entropy_bits: float = 3.0
    # Character classes (lower, upper, digit, symbol) a value needs, so that an ordinary word
    # ("configured") after "api_key:" in prose is not a key. Integer in [1, 4].
    min_char_classes: int = 2

    def __post_init__(self) -> None:
        """Validate every field."""
        _positive_int("min_value_len", self.min_value_len)
        _in_range("min_entropy_bits", self.min_entropy_bits, 0.0, 8.0, lo_open=True)
        _positive_int("min_char_classes", self.min_char_classes)
        _rule(self.min_char_classes <= 4, "min_char_classes", "must be at most 4")


@dataclass(frozen=True, slots=True)
class LearningParams:
    """All learning parameters, loaded once and passed to the rules and the service.

    How the two confidence rule sets combine
    ----------------------------------------
    Adaptive memory says *which* outcomes move a lesson: only attributed ones (the lesson was in
    play and the run attempted the lesson's operation), +0.15 on a confirmation, −0.25 on a
    contradiction, clamp [0.05, 0.95], −0.02 per unused reconcile pass, retire below 0.2.
    Lamarckian memory says *how far* an outcome moves it, by how similar the run's context is to the
    lesson's (``ContextParams``; a differing critical variable caps similarity at 0.3).
    Combined, adaptive memory's steps are Lamarckian memory's same-context steps, and Lamarckian
    memory's bands scale them:

    ========================  =========================  ==============================
    similarity s              attributed success          attributed failure
    ========================  =========================  ==============================
    s > 0.9 (same)            +confirm_step = +0.15       −contradict_step = −0.25
    0.7 < s <= 0.9 (similar)  +0.15 × 0.7 = +0.105       −0.25 × 0.5 = −0.125
    s <= 0.7 (different)      +generalisation = +0.20     −0.25 × 0.2 = −0.05
    ========================  =========================  ==============================

    With no comparable context on either side the run counts as the same context, so seed
    000's numbers apply unchanged. Time: an unused pass costs ``unused_decay`` plus
    ``staleness_per_day`` per idle day (Lamarckian memory's staleness), both clamped at the floor
    and
    followed by adaptive memory's retirement rule. Lamarckian memory's "partial staleness recovery"
    on success
    is left out: only an outcome may raise confidence, and elapsed time is not an outcome.
    Lamarckian memory's unbounded [0, 1] range is replaced by adaptive memory's clamp.
    """

    confidence: ConfidenceParams = field(default_factory=ConfidenceParams)
    lesson: LessonParams = field(default_factory=LessonParams)
    context: ContextParams = field(default_factory=ContextParams)
    secrets: SecretParams = field(default_factory=SecretParams)
    # Conflicts, consolidation, learned context variables and the lifecycle.
    knowledge: KnowledgeParams = field(default_factory=KnowledgeParams)
    # The influence gate: which lessons drive decisions, how unverified ones are shown, and
    # which peer lessons are about the agent's authority (``learning/influence``).
    influence: InfluenceParams = field(default_factory=InfluenceParams)
    # Claim vectors and recall use marks written behind the agent's reply; off
    # by default, the node turns both on (``node_params``).
    write_behind: WriteBehindParams = field(default_factory=WriteBehindParams)
    # How a claim stored without an operation gets its key from its text.
    notes: NoteKeyParams = field(default_factory=NoteKeyParams)

    def __post_init__(self) -> None:
        """Check the parts are the right types (each validated itself on construction)."""
        _rule(isinstance(self.confidence, ConfidenceParams), "confidence", "must be params")
        _rule(isinstance(self.knowledge, KnowledgeParams), "knowledge", "must be KnowledgeParams")
        _rule(isinstance(self.lesson, LessonParams), "lesson", "must be LessonParams")
        _rule(isinstance(self.context, ContextParams), "context", "must be ContextParams")
        _rule(isinstance(self.secrets, SecretParams), "secrets", "must be SecretParams")
        _rule(isinstance(self.influence, InfluenceParams), "influence", "must be InfluenceParams")
        _rule(
            isinstance(self.write_behind, WriteBehindParams),
            "write_behind",
            "must be WriteBehindParams",
        )
