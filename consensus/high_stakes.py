"""The high-stakes rule: which lessons must wait for a quorum certificate before they count.

A claimed confidence above 0.8, or a domain in {security, safety, compliance},
or a tag irreversible / destructive (all in ``HighStakesParams``). Content naming a
destructive operation (``rm -rf``, ``DROP TABLE``, a force push) counts as irreversible
whatever its tags say: a lesson about such a command is exactly where a lie costs most.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lamarck.consensus.params import HighStakesParams
from lamarck.proto.memory import MemoryV2

__all__ = ["HighStakesCheck", "HighStakesReason", "HighStakesRule"]

HighStakesCheck = Callable[[MemoryV2], bool]
"""Whether a record must wait for a quorum certificate before it is believed."""


class HighStakesReason:
    """The names of the parts of the rule a record can trip (stored with its quarantine)."""

    HIGH_CONFIDENCE = "high_confidence"
    CRITICAL_DOMAIN = "critical_domain"
    CRITICAL_TAG = "critical_tag"
    DESTRUCTIVE_OPERATION = "destructive_operation"


class HighStakesRule:
    """The rule over ``HighStakesParams``; call it on a record, or ask for its ``reasons``."""

    __slots__ = ("_patterns", "params")

    def __init__(self, params: HighStakesParams) -> None:
        self.params = params
        self._patterns = tuple(re.compile(p, re.IGNORECASE) for p in params.destructive_patterns)

    def reasons(self, record: MemoryV2) -> tuple[str, ...]:
        """Which parts of the rule the record trips, in a fixed order (empty if none)."""
        p = self.params
        out: list[str] = []
        if record.confidence > p.confidence_threshold:
            out.append(HighStakesReason.HIGH_CONFIDENCE)
        if record.context.domain.strip().lower() in p.critical_domains:
            out.append(HighStakesReason.CRITICAL_DOMAIN)
        if {t.strip().lower() for t in record.metadata.tags} & p.critical_tags:
            out.append(HighStakesReason.CRITICAL_TAG)
        if any(pattern.search(record.content) for pattern in self._patterns):
            out.append(HighStakesReason.DESTRUCTIVE_OPERATION)
        return tuple(out)

    def __call__(self, record: MemoryV2) -> bool:
        """True if the record is high-stakes."""
        return bool(self.reasons(record))
