"""Reading the agent's explicit predictions from the store (for the health report's edge).

``load_recorded_predictions`` pages through the stored outcomes (newest first) and keeps the
ones that carry a prediction (``lamarck.learning.predictions``).
"""

from __future__ import annotations

from lamarck.learning.predictions import RecordedPrediction, recorded_predictions
from lamarck.node.store.port import OutcomeStore

__all__ = ["OUTCOME_PAGE", "load_recorded_predictions"]

#: Outcomes read per ``list_outcomes`` call.
OUTCOME_PAGE = 500


async def load_recorded_predictions(
    store: OutcomeStore, *, limit: int | None = None
) -> list[RecordedPrediction]:
    """Every prediction stored with an outcome, newest outcome first (at most ``limit``)."""
    out: list[RecordedPrediction] = []
    offset = 0
    while limit is None or len(out) < limit:
        page = await store.list_outcomes(limit=OUTCOME_PAGE, offset=offset)
        out.extend(recorded_predictions(page))
        if len(page) < OUTCOME_PAGE:
            break
        offset += OUTCOME_PAGE
    return out if limit is None else out[:limit]
