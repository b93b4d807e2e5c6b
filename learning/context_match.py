"""Context similarity (Lamarckian memory "Context-Aware Transfer"): how alike two contexts are, in
[0, 1].

Dimensions: domain, environment, tools, scale, timing, users, and authentication (a critical
variable; it may sit at the top level or inside ``constraints``). Only dimensions that both
contexts state are compared: a dimension one side does not mention is absence of information,
not evidence of difference (Lamarckian memory counted it as a mismatch, which made every lesson with
a richer context than the run's look "different" and earn the generalisation step for nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lamarck.learning.params import ContextParams

__all__ = ["context_similarity", "critical_differences", "normalise_context"]

# Nothing comparable: treat as the same context (adaptive memory's steps).
_NO_SHARED_DIMENSIONS = 1.0


def _norm_scalar(value: Any) -> str:
    """Compare scalars case- and whitespace-insensitively."""
    return str(value).strip().lower()


def _norm_set(value: Any) -> frozenset[str]:
    """Tools (or any list-valued dimension) as a set of normalised names."""
    if isinstance(value, str):
        return frozenset({_norm_scalar(value)}) if value.strip() else frozenset()
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(_norm_scalar(v) for v in value if str(v).strip())
    return frozenset({_norm_scalar(value)})


def normalise_context(context: Mapping[str, Any] | None, p: ContextParams) -> dict[str, Any]:
    """Keep the known dimensions that carry a value; lift authentication out of constraints."""
    if not context:
        return {}
    raw: dict[str, Any] = dict(context)
    constraints = raw.get("constraints")
    if isinstance(constraints, Mapping):
        for dim in p.critical_dims:
            if dim not in raw and dim in constraints:
                raw[dim] = constraints[dim]
    out: dict[str, Any] = {}
    for dim in p.weights():
        value = raw.get(dim)
        if value is None:
            continue
        if dim == "tools":
            tools = _norm_set(value)
            if tools:
                out[dim] = tools
        else:
            text = _norm_scalar(value)
            if text:
                out[dim] = text
    return out


def critical_differences(
    a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, p: ContextParams
) -> list[str]:
    """Critical dimensions both contexts state with different values."""
    na, nb = normalise_context(a, p), normalise_context(b, p)
    return [d for d in p.critical_dims if d in na and d in nb and na[d] != nb[d]]


def _match(dim: str, x: Any, y: Any) -> float:
    """Per-dimension agreement in [0, 1]: Jaccard for tool sets, equality otherwise."""
    if dim == "tools":
        union = x | y
        return len(x & y) / len(union) if union else 1.0
    return 1.0 if x == y else 0.0


def context_similarity(
    lesson_context: Mapping[str, Any] | None,
    run_context: Mapping[str, Any] | None,
    p: ContextParams,
) -> float:
    """Weighted agreement over shared dimensions; a differing critical one caps it."""
    na, nb = normalise_context(lesson_context, p), normalise_context(run_context, p)
    weights = p.weights()
    shared = [d for d in weights if d in na and d in nb and weights[d] > 0]
    if not shared:
        return _NO_SHARED_DIMENSIONS
    total = sum(weights[d] for d in shared)
    score = sum(weights[d] * _match(d, na[d], nb[d]) for d in shared) / total
    if any(d in p.critical_dims and na[d] != nb[d] for d in shared):
        score = min(score, p.critical_cap)
    return max(0.0, min(1.0, score))
