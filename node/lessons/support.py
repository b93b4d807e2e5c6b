"""Where a node reads the independent support behind the lessons it holds.

``SupportReader`` is the port recall, the decision-time check and every surface ask for each
lesson's ``Support`` (confirming / contradicting principals from verified outcome attestations,
and whether a verified quorum certificate accepted it). Answers are keyed by lesson id; a lesson
missing from the answer has no support. ``NoSupportReader`` is the reader of a node that holds
no attestations and no certificates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from lamarck.consensus.corroboration import Support
from lamarck.domain.rows import LessonRow

__all__ = ["NoSupportReader", "SupportReader"]


class SupportReader(Protocol):
    """Reads the independent support behind lessons, counted by principal by this node."""

    async def support_for(self, lessons: Sequence[LessonRow]) -> Mapping[str, Support]:
        """Each lesson's support by lesson id (absent: no support)."""
        ...


class NoSupportReader:
    """A reader for a node with no attestations and no certificates: nothing is supported."""

    async def support_for(self, lessons: Sequence[LessonRow]) -> Mapping[str, Support]:
        """No lesson has support."""
        return {}
