"""The attestation record: a node's signed verdict on one exact memory, from its own outcome.

When an outcome of a node confirms or contradicts a lesson it imported, the node signs an
attestation naming the exact memory version by ``memory_hash`` (the content hash of its signed
bytes), the verdict, and the outcome that judged it by ``outcome_digest`` only (a sha256 of the
outcome's canonical bytes: it names the evidence without revealing the run). Receivers count
attestations by principal (``lamarck.consensus.attestation``).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StringConstraints

from lamarck.proto.memory import NodeId, RecordModel, Sha256Hex, Signature, Timestamp, Uuid4

__all__ = ["Attestation", "AttestationVerdict"]

#: What an attester says about a memory.
AttestationVerdict = Literal["confirm", "contradict"]


class Attestation(RecordModel):
    """A node's outcome verdict on a memory (schema 1.x); signed by ``attester_id``'s key."""

    _majors: ClassVar[tuple[int, ...]] = (1,)
    _always_written: ClassVar[tuple[str, ...]] = ("schema_version", "kind")

    schema_version: Annotated[str, StringConstraints(pattern=r"^1\.(0|[1-9][0-9]{0,3})$")] = "1.0"
    kind: Literal["attestation"] = "attestation"
    id: Uuid4
    memory_hash: Sha256Hex = Field(description="content hash of the memory's signed bytes")
    attester_id: NodeId = Field(description="must equal node_id_for(signature.signed_by)")
    verdict: AttestationVerdict
    outcome_digest: Sha256Hex = Field(
        description="sha256 of the attester's outcome's canonical bytes (never its content)"
    )
    created_at: Timestamp
    signature: Signature | None = None
