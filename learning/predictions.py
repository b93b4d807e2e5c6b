"""The agent's explicit predictions, read back from the outcomes they were recorded with.

The run recorder copies the agent's prediction (Lamarckian memory "Hypothesize": expected pass or
fail, and how sure) into the outcome record; the node stores that record whole. Here a stored
outcome becomes one resolved prediction — what was expected, how sure, what happened — the
values the health report's accuracy and calibration figures take. Pure: rows in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lamarck.domain.rows import OutcomeRow

__all__ = ["RecordedPrediction", "recorded_prediction", "recorded_predictions"]


@dataclass(frozen=True, slots=True)
class RecordedPrediction:
    """One explicit prediction and its outcome.

    ``subject`` is the first lesson in play (the prediction rested on it), else the first
    operation of the run, else ``outcome:<id>``. ``confidence`` is the probability the agent
    gave to its prediction coming true; ``actual_success`` whether the run passed.
    """

    outcome_id: str
    subject: str
    predicted_success: bool
    confidence: float
    at: datetime
    actual_success: bool

    @property
    def correct(self) -> bool:
        """Whether the prediction came true."""
        return self.predicted_success == self.actual_success


def _subject(row: OutcomeRow) -> str:
    in_play = row.record.get("in_play") or ()
    if in_play and isinstance(in_play[0], str):
        return in_play[0]
    approach = row.record.get("approach") or ()
    if approach and isinstance(approach[0], dict) and approach[0].get("operation_key"):
        return str(approach[0]["operation_key"])
    return f"outcome:{row.id}"


def recorded_prediction(row: OutcomeRow) -> RecordedPrediction | None:
    """The prediction stored with ``row``, or ``None`` when the run recorded none.

    The record was validated by ``lamarck.proto.outcome.Outcome`` when it was stored; a block
    that is not what that model writes is skipped rather than guessed at.
    """
    block: Any = row.record.get("prediction")
    if not isinstance(block, dict):
        return None
    expected, confidence = block.get("expected"), block.get("confidence")
    if expected not in ("pass", "fail"):
        return None
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return None
    if not 0.0 <= float(confidence) <= 1.0:
        return None
    return RecordedPrediction(
        outcome_id=row.id,
        subject=_subject(row),
        predicted_success=expected == "pass",
        confidence=float(confidence),
        at=row.created_at,
        actual_success=row.passed,
    )


def recorded_predictions(rows: Iterable[OutcomeRow]) -> list[RecordedPrediction]:
    """The predictions among ``rows``, in input order."""
    out = []
    for row in rows:
        found = recorded_prediction(row)
        if found is not None:
            out.append(found)
    return out
