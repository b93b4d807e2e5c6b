"""Which context variables matter, learned from predictions made across a difference. Pure.

Lamarckian memory "VariableImportanceLearner". When a lesson is put to the test in a run
whose context differs from the lesson's in some variables, the lesson made a prediction ("this
holds here too") across those differences; the outcome says whether it came true. Per variable
the learner counts right and wrong predictions. After ``min_observations`` a variable is
classified by its error rate: critical (> 0.7), important (> 0.4), minor (> 0.2), else
negligible. Until then the fixed list holds: ``ContextParams`` (domain, environment and
authentication critical, tools and scale important, users and timing minor).

``learned_similarity`` is ``context_similarity`` with each variable weighted by its class:
with nothing learned it equals ``context_similarity`` exactly, so it can replace it wherever a
context is compared (confidence bands, recall's context match, conflict detection).

Variables are the dimensions ``normalise_context`` knows, plus every other key of the context's
``constraints`` as ``constraints.<key>`` (compared only once learned: unknown keys are absence
of information until outcomes say otherwise).

The learner is a value: ``observe`` returns a new one; ``to_json`` / ``from_json`` persist it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lamarck.errors import InvalidRecord
from lamarck.learning.context_match import normalise_context
from lamarck.learning.knowledge_params import VariableParams
from lamarck.learning.params import ContextParams

__all__ = [
    "CONSTRAINT_PREFIX",
    "Importance",
    "VariableImportanceLearner",
    "VariableStats",
    "context_variables",
    "differing_variables",
]

CONSTRAINT_PREFIX = "constraints."
_STATE_VERSION = 1
_NO_SHARED_VARIABLES = 1.0  # as context_similarity: nothing comparable is the same context


class Importance(StrEnum):
    """A variable's class (design sources: Lamarckian memory)."""

    CRITICAL = "critical"
    IMPORTANT = "important"
    MINOR = "minor"
    NEGLIGIBLE = "negligible"


@dataclass(frozen=True, slots=True)
class VariableStats:
    """Predictions made across a difference in one variable: how many came true, how many not."""

    correct: int = 0
    incorrect: int = 0

    @property
    def total(self) -> int:
        """Observations so far."""
        return self.correct + self.incorrect

    @property
    def error_rate(self) -> float:
        """Share of predictions that did not come true (0 with no observations)."""
        return self.incorrect / self.total if self.total else 0.0


def _norm_scalar(value: Any) -> str:
    return str(value).strip().lower()


def _norm_value(value: Any) -> Any:
    """A constraint value as ``normalise_context`` would hold it: a set for lists."""
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(_norm_scalar(v) for v in value if str(v).strip())
    return _norm_scalar(value)


def context_variables(context: Mapping[str, Any] | None, p: ContextParams) -> dict[str, Any]:
    """Every variable a context states: the known dimensions and the other constraints."""
    out: dict[str, Any] = normalise_context(context, p)
    constraints = (context or {}).get("constraints")
    if isinstance(constraints, Mapping):
        for key, value in constraints.items():
            if key in p.critical_dims or value is None:
                continue  # lifted to the top level by normalise_context
            norm = _norm_value(value)
            if norm:
                out[f"{CONSTRAINT_PREFIX}{key}"] = norm
    return out


def differing_variables(
    a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, p: ContextParams
) -> tuple[str, ...]:
    """Variables both contexts state, with different values, in name order."""
    va, vb = context_variables(a, p), context_variables(b, p)
    return tuple(sorted(k for k in va.keys() & vb.keys() if va[k] != vb[k]))


def _agreement(x: Any, y: Any) -> float:
    """Per-variable agreement in [0, 1]: Jaccard for sets, equality otherwise."""
    if isinstance(x, frozenset) and isinstance(y, frozenset):
        union = x | y
        return len(x & y) / len(union) if union else 1.0
    return 1.0 if x == y else 0.0


def _class_weight(importance: Importance, p: VariableParams) -> float:
    return {
        Importance.CRITICAL: p.critical_weight,
        Importance.IMPORTANT: p.important_weight,
        Importance.MINOR: p.minor_weight,
        Importance.NEGLIGIBLE: p.negligible_weight,
    }[importance]


@dataclass(frozen=True, slots=True)
class VariableImportanceLearner:
    """The learned state: per variable, predictions across a difference that held or failed."""

    stats: Mapping[str, VariableStats] = field(default_factory=dict)

    # -- learning ---------------------------------------------------------------------------
    def observe(
        self,
        lesson_context: Mapping[str, Any] | None,
        run_context: Mapping[str, Any] | None,
        *,
        held: bool,
        context: ContextParams,
    ) -> VariableImportanceLearner:
        """Record one tested prediction: every variable that differed gains an observation."""
        diffs = differing_variables(lesson_context, run_context, context)
        if not diffs:
            return self
        stats = dict(self.stats)
        for var in diffs:
            s = stats.get(var, VariableStats())
            stats[var] = (
                VariableStats(s.correct + 1, s.incorrect)
                if held
                else VariableStats(s.correct, s.incorrect + 1)
            )
        return VariableImportanceLearner(stats)

    def learned(self, variable: str, p: VariableParams) -> Importance | None:
        """The class outcomes give ``variable``, or ``None`` before ``min_observations``."""
        s = self.stats.get(variable)
        if s is None or s.total < p.min_observations:
            return None
        rate = s.error_rate
        if rate > p.critical_error_rate:
            return Importance.CRITICAL
        if rate > p.important_error_rate:
            return Importance.IMPORTANT
        if rate > p.minor_error_rate:
            return Importance.MINOR
        return Importance.NEGLIGIBLE

    def importance(
        self, variable: str, p: VariableParams, context: ContextParams
    ) -> Importance | None:
        """The class in force: learned, else the fixed list's, else ``None`` (not compared)."""
        learned = self.learned(variable, p)
        if learned is not None:
            return learned
        if variable in context.critical_dims:
            return Importance.CRITICAL
        weight = context.weights().get(variable)
        if weight is None:
            return None
        # The fixed weight's nearest class (tools and scale 0.6: important; users, timing 0.3).
        return min(Importance, key=lambda c: (abs(_class_weight(c, p) - weight), c.value))

    def classes(self, p: VariableParams, context: ContextParams) -> dict[str, Importance]:
        """The class in force of every known or observed variable (for ``lamarck health``)."""
        names = set(context.weights()) | set(self.stats)
        out: dict[str, Importance] = {}
        for name in sorted(names):
            cls = self.importance(name, p, context)
            if cls is not None:
                out[name] = cls
        return out

    # -- use ----------------------------------------------------------------------------------
    def _weight(
        self, variable: str, p: VariableParams, context: ContextParams
    ) -> tuple[float, bool] | None:
        """(weight, critical) of a variable in similarity; ``None`` when it is not compared."""
        learned = self.learned(variable, p)
        if learned is not None:
            return _class_weight(learned, p), learned is Importance.CRITICAL
        weights = context.weights()
        if variable not in weights:
            return None
        # Unlearned: exactly context_similarity's weights, so nothing learned changes nothing.
        return weights[variable], variable in context.critical_dims

    def similarity(
        self,
        lesson_context: Mapping[str, Any] | None,
        run_context: Mapping[str, Any] | None,
        p: VariableParams,
        context: ContextParams,
    ) -> float:
        """``context_similarity`` with learned weights; a differing critical variable caps it."""
        return self.similarity_to(run_context, p, context)(lesson_context)

    def similarity_to(
        self, run_context: Mapping[str, Any] | None, p: VariableParams, context: ContextParams
    ) -> Callable[[Mapping[str, Any] | None], float]:
        """``similarity`` of any lesson context to this one run context, whose variables are
        read once (recall scores every candidate against the same task)."""
        vb = context_variables(run_context, context)

        def to(lesson_context: Mapping[str, Any] | None) -> float:
            if not vb:
                # Nothing stated on the run's side: no variable is shared, whatever the
                # lesson states (often: a recall's task comes without context).
                return _NO_SHARED_VARIABLES
            va = context_variables(lesson_context, context)
            total = score = 0.0
            capped = False
            for var in sorted(va.keys() & vb.keys()):
                wc = self._weight(var, p, context)
                if wc is None or wc[0] <= 0:
                    continue
                weight, critical = wc
                match = _agreement(va[var], vb[var])
                total += weight
                score += weight * match
                capped = capped or (critical and va[var] != vb[var])
            if total == 0.0:
                return _NO_SHARED_VARIABLES
            result = score / total
            if capped:
                result = min(result, context.critical_cap)
            return max(0.0, min(1.0, result))

        return to

    def adjusted_confidence(
        self,
        confidence: float,
        lesson_context: Mapping[str, Any] | None,
        run_context: Mapping[str, Any] | None,
        p: VariableParams,
        context: ContextParams,
    ) -> float:
        """A lesson's confidence for this run: confidence × learned context similarity."""
        return confidence * self.similarity(lesson_context, run_context, p, context)

    # -- persistence --------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """A JSON-ready value of the state (the node persists it)."""
        return {
            "version": _STATE_VERSION,
            "variables": {
                k: {"correct": s.correct, "incorrect": s.incorrect}
                for k, s in sorted(self.stats.items())
            },
        }

    @classmethod
    def from_json(cls, obj: Any) -> VariableImportanceLearner:
        """Read ``to_json``'s value back; anything else raises ``InvalidRecord``."""
        if not isinstance(obj, Mapping) or obj.get("version") != _STATE_VERSION:
            raise InvalidRecord("unknown variable-importance state", reason="bad_variable_state")
        variables = obj.get("variables")
        if not isinstance(variables, Mapping):
            raise InvalidRecord(
                "variable-importance state without variables", reason="bad_variable_state"
            )
        stats: dict[str, VariableStats] = {}
        for name, counts in variables.items():
            if not isinstance(name, str) or not name or not isinstance(counts, Mapping):
                raise InvalidRecord(f"bad variable entry {name!r}", reason="bad_variable_state")
            values = [counts.get("correct"), counts.get("incorrect")]
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
                raise InvalidRecord(f"bad counts for {name!r}", reason="bad_variable_state")
            stats[name] = VariableStats(int(values[0] or 0), int(values[1] or 0))
        return cls(stats)
