"""Recall re-rank: similarity × context match × confidence × recency. Pure.

The vector search returns a candidate pool by cosine similarity; this module orders it. Cosine
is mapped from [-1, 1] to [0, 1] so that an orthogonal hit still ranks by its confidence
instead of collapsing every product to zero. Recency halves every ``recency_half_life_days``
since the lesson was last used (or created, if never used).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lamarck.learning.params import LessonParams

__all__ = ["Candidate", "Ranked", "idle_days", "rank", "recency", "score"]

_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """One search hit with the factors the re-rank needs."""

    key: str
    cosine: float
    context_match: float
    confidence: float
    idle_days: float


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate's key and its re-rank score in [0, 1]."""

    key: str
    score: float


def idle_days(now: datetime, last_used: datetime | None, created_at: datetime) -> float:
    """Days since the lesson was last used, or since it was created if never used."""
    since = last_used or created_at
    return max(0.0, (now - since).total_seconds() / _SECONDS_PER_DAY)


def recency(days: float, p: LessonParams) -> float:
    """Exponential recency factor in (0, 1]: 1 when just used, ½ after one half-life."""
    return float(0.5 ** (max(0.0, days) / p.recency_half_life_days))


def score(c: Candidate, p: LessonParams) -> float:
    """The re-rank score of one candidate."""
    similarity = (1.0 + max(-1.0, min(1.0, c.cosine))) / 2.0
    context = max(0.0, min(1.0, c.context_match))
    return similarity * context * c.confidence * recency(c.idle_days, p)


def rank(candidates: Sequence[Candidate], p: LessonParams) -> list[Ranked]:
    """Candidates by score, highest first; ties by higher confidence, then key, so it is stable."""
    scored = [(score(c, p), c) for c in candidates]
    scored.sort(key=lambda sc: (-sc[0], -sc[1].confidence, sc[1].key))
    return [Ranked(c.key, s) for s, c in scored]
