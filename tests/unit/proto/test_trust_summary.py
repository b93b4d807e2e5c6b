"""The trust summary record: signed round trip, and every refusal charged to the right party."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import InvalidRecord
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import RecordLimits
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.trust_summary import make_summary, read_summary, summary_fault

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ALICE = NodeIdentity.from_seed(bytes([1]) * 32)
MALLORY = NodeIdentity.from_seed(bytes([2]) * 32)
PEERS = [NodeIdentity.from_seed(bytes([10 + k]) * 32).node_id for k in range(6)]


def signed(identity: NodeIdentity, **over: Any) -> bytes:
    """A summary object with overrides, signed by ``identity`` (content not checked)."""
    obj: dict[str, Any] = {
        "schema_version": "1.0",
        "kind": "trust_summary",
        "signer_id": identity.node_id,
        "issued_at": "2026-03-01T12:00:00Z",
        "trust": [{"peer": PEERS[0], "value": 0.7}],
    }
    obj.update(over)
    return canonical_bytes(sign_object(RecordKind.trust_summary, obj, identity))


class Refusal:
    """A refusal as the tests read it: reason, whose fault, the signer blamed."""

    def __init__(self, error: InvalidRecord) -> None:
        self.reason = error.reason
        self.fault, self.signer = summary_fault(error)


def refusal(raw: bytes, limits: RecordLimits | None = None) -> Refusal:
    with pytest.raises(InvalidRecord) as caught:
        read_summary(raw, limits=limits or RecordLimits())
    return Refusal(caught.value)


def test_a_summary_round_trips_signed_sorted_and_without_its_signer() -> None:
    raw = make_summary(ALICE, {PEERS[2]: 0.9, ALICE.node_id: 1.0, PEERS[1]: 0.25}, T0)
    summary = read_summary(raw)
    assert summary.signer_id == ALICE.node_id
    assert summary.issued == T0
    assert summary.values() == {PEERS[1]: 0.25, PEERS[2]: 0.9}
    assert [e.peer for e in summary.trust] == sorted([PEERS[1], PEERS[2]])
    assert raw == canonical_bytes(json.loads(raw))


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(PEERS),
        st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
        max_size=len(PEERS),
    )
)
def test_any_row_of_values_in_the_unit_interval_round_trips_exactly(row: dict[str, float]) -> None:
    assert read_summary(make_summary(ALICE, row, T0)).values() == row


def test_past_the_entry_cap_the_most_trusted_peers_are_kept() -> None:
    limits = RecordLimits(max_list_items=3)
    row = {p: k / 10 for k, p in enumerate(PEERS)}
    summary = read_summary(make_summary(ALICE, row, T0, limits=limits), limits=limits)
    assert summary.values() == {p: row[p] for p in PEERS[-3:]}


def test_a_value_outside_the_unit_interval_is_never_signed() -> None:
    for bad in (float("nan"), 1.5, -0.1):
        with pytest.raises(ValueError):
            make_summary(ALICE, {PEERS[0]: bad}, T0)


def test_a_tampered_summary_is_the_channels_fault() -> None:
    raw = make_summary(ALICE, {PEERS[0]: 0.6}, T0)
    tampered = raw.replace(b"0.6", b"0.9")
    e = refusal(tampered)
    assert e.fault == "channel" and e.reason == "hash_mismatch" and e.signer == ""


def test_a_summary_in_another_nodes_name_is_the_channels_fault() -> None:
    e = refusal(signed(MALLORY, signer_id=ALICE.node_id))
    assert e.fault == "channel" and e.reason == "key_mismatch"


def test_bytes_not_in_canonical_form_are_the_channels_fault() -> None:
    raw = make_summary(ALICE, {PEERS[0]: 0.6}, T0)
    e = refusal(json.dumps(json.loads(raw), indent=1).encode())
    assert e.fault == "channel" and e.reason == "not_canonical"


@pytest.mark.parametrize(
    "over",
    [
        {"trust": [{"peer": PEERS[0], "value": 1.5}]},
        {"trust": [{"peer": PEERS[0], "value": -0.5}]},
        {"trust": [{"peer": "not-a-node", "value": 0.5}]},
        {
            "trust": sorted(
                [{"peer": p, "value": 0.5} for p in PEERS[:2]], key=lambda e: e["peer"]
            )[::-1]
        },
        {"trust": [{"peer": PEERS[0], "value": 0.5}, {"peer": PEERS[0], "value": 0.6}]},
        {"trust": [{"peer": ALICE.node_id, "value": 1.0}]},
        {"issued_at": "yesterday"},
        {"kind": "vote"},
        {"schema_version": "2.0"},
        {"extra": 1},
    ],
)
def test_malformed_content_under_a_valid_signature_is_the_signers_fault(
    over: dict[str, Any],
) -> None:
    e = refusal(signed(ALICE, **over))
    assert e.fault == "signer" and e.signer == ALICE.node_id


def test_more_entries_than_the_cap_is_the_signers_fault() -> None:
    limits = RecordLimits(max_list_items=2)
    raw = signed(ALICE, trust=[{"peer": p, "value": 0.6} for p in sorted(PEERS[:3])])
    e = refusal(raw, limits)
    assert e.fault == "signer" and e.reason == "too_many_items"
