"""The vote record: a peer's signed verdict on one memory, for the quorum.

A vote names the exact memory it judges by ``memory_hash`` (sha256 of that memory's signing
input), so a vote for one version can never be counted for another. Voters vote from their
own outcomes: a ``confirm`` or ``contradict`` that names no outcome is a claim, not a vote,
and is rejected on parse.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from lamarck.errors import InvalidRecord
from lamarck.proto.memory import (
    NodeId,
    Probability,
    RecordModel,
    Sha256Hex,
    Signature,
    Timestamp,
    Uuid4,
    max_items,
)

__all__ = ["Verdict", "Vote"]

#: What a voter says about a memory.
Verdict = Literal["confirm", "contradict", "abstain"]


class Vote(RecordModel):
    """A peer's verdict on a memory (schema 1.x); signed by ``voter_id``'s key."""

    _majors: ClassVar[tuple[int, ...]] = (1,)
    _always_written: ClassVar[tuple[str, ...]] = ("schema_version", "kind")

    schema_version: Annotated[str, StringConstraints(pattern=r"^1\.(0|[1-9][0-9]{0,3})$")] = "1.0"
    kind: Literal["vote"] = "vote"
    id: Uuid4
    memory_id: Uuid4
    memory_hash: Sha256Hex = Field(description="sha256 hex of the memory's signing input")
    voter_id: NodeId = Field(description="must equal node_id_for(signature.signed_by)")
    verdict: Verdict
    confidence: Probability
    outcome_ids: Annotated[tuple[Uuid4, ...], AfterValidator(max_items("max_list_items"))] = Field(
        default=(), description="the voter's own outcomes behind the verdict"
    )
    created_at: Timestamp
    signature: Signature | None = None

    @model_validator(mode="after")
    def _verdict_needs_outcomes(self) -> Self:
        if self.verdict != "abstain" and not self.outcome_ids:
            raise InvalidRecord(
                f"a {self.verdict} vote must name the voter's outcomes",
                reason="missing_evidence",
            )
        return self
