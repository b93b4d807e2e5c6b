"""Every quorum constant in frozen, validated objects (one per concern), built once at start-up.

``HighStakesParams`` says which lessons need a quorum; ``QuorumParams`` how many voters are
asked, how long a round stays open, and what a voter needs before it takes a side. Each field's
comment gives its meaning and range; ``validate()`` names the field and the rule and rejects
NaN and infinities.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from lamarck.errors import ConfigError

__all__ = ["DESTRUCTIVE_PATTERNS", "HighStakesParams", "QuorumParams", "TaintParams"]

DESTRUCTIVE_PATTERNS: tuple[str, ...] = (
    r"\brm\s+(-[a-z]*r[a-z]*f|-[a-z]*f[a-z]*r|-r\s+-f|-f\s+-r|--recursive\s+--force)",
    r"--no-preserve-root\b",
    r"\bdrop\s+(table|database|schema|index)\b",
    r"\btruncate\s+(table\s+)?[a-z_\"`]",
    r"\bdelete\s+from\s+[a-z0-9_.\"`]+\s*(;|$)",
    r"\bgit\s+push\b[^\n]*(--force|--force-with-lease|\s-f\b|\s\+[a-z0-9_/-]+)",
    r"\bgit\s+(reset\s+--hard|clean\s+-[a-z]*f)",
    r"\bmkfs(\.[a-z0-9]+)?\b",
    r"\bdd\s+[^\n]*\bof=/dev/",
    r"\bterraform\s+destroy\b",
    r"\bkubectl\s+delete\b",
    r"\bchmod\s+-r\s+777\b",
)
"""Content naming an operation that destroys data or history (case-insensitive regexes)."""


def _finite(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"invalid {name}: must be a finite number, got {value!r}")


def _whole(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"invalid {name}: must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True, slots=True)
class HighStakesParams:
    """What makes a lesson high-stakes: any one of these holds.

    A claimed confidence above ``confidence_threshold``; a domain in ``critical_domains``; a tag
    in ``critical_tags``; content matching ``destructive_patterns`` (a lesson that names
    ``rm -rf`` is irreversible whatever it is tagged). Names compare case-insensitively.
    """

    # Claimed confidence strictly above which a lesson needs a quorum, in [0, 1).
    confidence_threshold: float = 0.8
    # Domains where a wrong lesson is costly; non-empty lower-case names.
    critical_domains: frozenset[str] = frozenset({"security", "safety", "compliance"})
    # Tags that mark a lesson as dangerous; non-empty lower-case names.
    critical_tags: frozenset[str] = frozenset({"irreversible", "destructive"})
    # Regexes over the content (case-insensitive); each must compile. Empty disables the check.
    destructive_patterns: tuple[str, ...] = DESTRUCTIVE_PATTERNS

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        _finite("confidence_threshold", self.confidence_threshold)
        if not 0.0 <= self.confidence_threshold < 1.0:
            raise ConfigError("invalid confidence_threshold: must be in [0, 1)")
        for name in ("critical_domains", "critical_tags"):
            values = getattr(self, name)
            if not isinstance(values, frozenset):
                raise ConfigError(f"invalid {name}: must be a frozenset of names")
            for value in values:
                if not isinstance(value, str) or not value or value != value.strip().lower():
                    raise ConfigError(f"invalid {name}: {value!r} is not a lower-case name")
        for pattern in self.destructive_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"invalid destructive_patterns: {pattern!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class QuorumParams:
    """How a quorum is formed and counted.

    ``voters`` are asked per round; they tolerate ``f = (n - 1) // 3`` faulty ones. A quorum
    needs ``min_voters`` independent voters, or where the network holds fewer eligible ones
    (few principals), all of them but never fewer than ``min_independent``; such a small round
    accepts only unanimously, as with three voters f is 0 and one liar would otherwise decide
    (``lamarck.consensus.voters.NetworkView.needed``).
    """

    # Voters asked per round, >= min_voters.
    voters: int = 7
    # Voters a round (or a certificate) needs where the network holds that many eligible
    # ones, >= 4 (so that f >= 1).
    min_voters: int = 4
    # Fewest independent voters (principals, or identities in a one-principal network) other
    # than the source's a quorum may have where fewer than min_voters exist; such a round
    # accepts only unanimously. In [2, min_voters]: a certificate is never one voter's word.
    min_independent: int = 2
    # A round is open this long from its start; a vote created later is late, seconds > 0.
    vote_timeout_s: float = 30.0
    # A pending lesson is asked again after this long, seconds >= vote_timeout_s.
    retry_after_s: float = 600.0
    # A voter takes a side only with at least this many of its own outcomes on that side, >= 1.
    min_outcomes_for_verdict: int = 1
    # A voter reads at most this many of its most recent outcomes for evidence, >= 1.
    evidence_window: int = 1000
    # Seconds between two scans of the quarantine for records awaiting a quorum, > 0.
    collect_interval_s: float = 5.0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        _whole("min_voters", self.min_voters, 4)
        _whole("voters", self.voters, self.min_voters)
        _whole("min_independent", self.min_independent, 2)
        if self.min_independent > self.min_voters:
            raise ConfigError("invalid min_independent: must be at most min_voters")
        _whole("min_outcomes_for_verdict", self.min_outcomes_for_verdict, 1)
        _whole("evidence_window", self.evidence_window, 1)
        _finite("vote_timeout_s", self.vote_timeout_s)
        _finite("retry_after_s", self.retry_after_s)
        _finite("collect_interval_s", self.collect_interval_s)
        if self.collect_interval_s <= 0:
            raise ConfigError("invalid collect_interval_s: must be > 0")
        if self.vote_timeout_s <= 0:
            raise ConfigError("invalid vote_timeout_s: must be > 0")
        if self.retry_after_s < self.vote_timeout_s:
            raise ConfigError("invalid retry_after_s: must be at least vote_timeout_s")


@dataclass(frozen=True, slots=True)
class TaintParams:
    """How lessons from a revoked or graylisted source are taken out."""

    # Seconds between two sweeps for lessons whose source became tainted, > 0.
    sweep_interval_s: float = 5.0
    # Most live lessons read per sweep page, >= 1.
    page: int = 500

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first field that breaks its rule."""
        _finite("sweep_interval_s", self.sweep_interval_s)
        if self.sweep_interval_s <= 0:
            raise ConfigError("invalid sweep_interval_s: must be > 0")
        _whole("page", self.page, 1)
