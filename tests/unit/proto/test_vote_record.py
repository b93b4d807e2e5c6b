"""The vote record: a peer's verdict on one exact memory, backed by the voter's outcomes."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import InvalidRecord, UnsupportedVersion
from lamarck.proto.vote import Vote

VOTER = "lmk1" + "c" * 32


def uid(n: int) -> str:
    """A deterministic uuid4 string."""
    return str(uuid.UUID(int=n, version=4))


def vote(**over: Any) -> dict[str, Any]:
    """A valid confirm vote with top-level overrides."""
    obj: dict[str, Any] = {
        "schema_version": "1.0",
        "kind": "vote",
        "id": uid(1),
        "memory_id": uid(2),
        "memory_hash": "ab" * 32,
        "voter_id": VOTER,
        "verdict": "confirm",
        "confidence": 0.8,
        "outcome_ids": [uid(3), uid(4)],
        "created_at": "2024-03-01T12:00:00.000001Z",
    }
    obj.update(over)
    return obj


def test_valid_vote_round_trips_faithfully() -> None:
    v = Vote.from_obj(vote())
    assert v.to_obj() == vote()
    assert Vote.from_json(v.to_json()) == v
    assert v.signable_obj() == vote()


def test_signed_vote_keeps_its_signature_out_of_the_signable_part() -> None:
    sig = {"algorithm": "ed25519", "hash": "0" * 64, "signed_by": "key", "value": "sig"}
    v = Vote.from_obj(vote()).with_signature(sig)
    assert v.to_obj()["signature"] == sig
    assert "signature" not in v.signable_obj()


def test_confirm_or_contradict_without_the_voters_outcomes_is_a_claim() -> None:
    for verdict in ("confirm", "contradict"):
        with pytest.raises(InvalidRecord) as info:
            Vote.from_obj(vote(verdict=verdict, outcome_ids=[]))
        assert info.value.reason == "missing_evidence"
    assert Vote.from_obj(vote(verdict="abstain", outcome_ids=[])).verdict == "abstain"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kind", "memory"),
        ("memory_hash", "AB" * 32),
        ("memory_hash", "ab" * 31),
        ("memory_id", "m-1"),
        ("voter_id", "voter"),
        ("verdict", "maybe"),
        ("confidence", 1.01),
        ("confidence", "high"),
        ("outcome_ids", ["o-1"]),
        ("created_at", "2024-03-01"),
        ("signature", {"algorithm": "ed25519"}),
        ("weight", 1),
    ],
)
def test_malformed_votes_are_rejected(field: str, value: Any) -> None:
    with pytest.raises(InvalidRecord):
        Vote.from_obj(vote(**{field: value}))


def test_unknown_major_is_unsupported_and_kind_is_always_written() -> None:
    with pytest.raises(UnsupportedVersion):
        Vote.from_obj(vote(schema_version="2.0"))
    obj = vote()
    del obj["kind"]
    assert Vote.from_obj(obj).to_obj()["kind"] == "vote"


def test_garbage_bytes_are_invalid_record() -> None:
    for raw in (b"", b"{", b"null", json.dumps([vote()]).encode()):
        with pytest.raises(InvalidRecord):
            Vote.from_json(raw)


@settings(max_examples=100, deadline=None)
@given(
    verdict=st.sampled_from(["confirm", "contradict", "abstain"]),
    confidence=st.floats(0, 1),
    n_outcomes=st.integers(1, 5),
)
def test_dump_of_parse_is_stable(verdict: str, confidence: float, n_outcomes: int) -> None:
    obj = vote(
        verdict=verdict, confidence=confidence, outcome_ids=[uid(i) for i in range(n_outcomes)]
    )
    first = Vote.from_obj(obj)
    assert first.to_obj() == obj
    assert Vote.from_json(first.to_json()).to_obj() == first.to_obj()
