"""Node labels: the rule, how one is shown beside an id, and how one names a peer."""

from __future__ import annotations

import pytest

from lamarck.errors import ConfigError, InvalidRecord, NotFound
from lamarck.node.config import NodeSettings
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.labels import (
    MAX_LABEL_CHARS,
    check_label,
    peer_label,
    resolve_peer,
    with_label,
)
from lamarck.registry.directory import PeerInfo
from lamarck.registry.params import AdmissionMode
from lamarck.registry.records import Admission, Registration, sign_registration

ID_A = "lmk1" + "a" * 32
ID_B = "lmk1" + "b" * 32


@pytest.mark.parametrize("good", ["node1", "build box", "ü-7", "x" * MAX_LABEL_CHARS])
def test_a_short_printable_label_passes(good: str) -> None:
    assert check_label(good) == good


@pytest.mark.parametrize(
    "bad",
    ["", " lead", "trail ", "two\nlines", "tab\there", "\x1b[2J", "x" * (MAX_LABEL_CHARS + 1)],
)
def test_a_bad_label_is_a_typed_error(bad: str) -> None:
    with pytest.raises(InvalidRecord) as e:
        check_label(bad)
    assert e.value.reason == "invalid_label"


def test_the_label_is_shown_beside_the_id_never_instead() -> None:
    assert with_label(ID_A, "node1") == f"node1 {ID_A}"
    assert with_label(ID_A, "node1", width=12) == f"node1 {ID_A[:12]}…"
    assert with_label(ID_A, "") == ID_A
    assert with_label("lmk1short", "", width=12) == "lmk1short"


def test_an_operator_signed_label_wins_over_the_nodes_own() -> None:
    assert peer_label("mine", "operators") == "operators"
    assert peer_label("mine", None) == "mine"
    assert peer_label(None, None) == ""


def test_a_label_names_the_one_node_carrying_it_and_a_shared_one_names_none() -> None:
    labels = {ID_A: "node1", ID_B: "node2"}
    assert resolve_peer("node2", labels) == ID_B
    assert resolve_peer(ID_A, labels) == ID_A
    # An id is an id even when some node claims it as its label.
    assert resolve_peer(ID_B, {ID_A: ID_B}) == ID_B
    assert resolve_peer("unknown", labels) == "unknown"
    with pytest.raises(NotFound) as e:
        resolve_peer("twin", {ID_A: "twin", ID_B: "twin"})
    assert e.value.reason == "ambiguous_label" and ID_A in str(e.value)


def test_a_registration_with_a_bad_label_is_malformed_and_a_good_one_reaches_peers() -> None:
    node = NodeIdentity.generate()
    now = FixedClock().now()
    reg = sign_registration(
        node,
        address="127.0.0.1:7000",
        domains=(),
        version="1",
        nonce="bm9uY2Utbm9uY2Utbm9uY2U",
        admission=Admission(mode=AdmissionMode.OPEN),
        created_at=now,
        label="edge-7",
    )
    assert PeerInfo.from_registration(reg, now).label == "edge-7"
    wire = reg.wire()
    wire["label"] = "edge\n7"
    with pytest.raises(InvalidRecord) as e:
        Registration.from_wire(wire)
    assert e.value.reason == "malformed"
    # No label: the wire form carries none (older nodes' signatures stay valid).
    bare = sign_registration(
        node,
        address="127.0.0.1:7000",
        domains=(),
        version="1",
        nonce="bm9uY2Utbm9uY2Utbm9uY2U",
        admission=Admission(mode=AdmissionMode.OPEN),
        created_at=now,
    )
    assert "label" not in bare.wire()
    assert PeerInfo.from_registration(bare, now).label == ""


def test_the_label_setting_is_validated_at_load() -> None:
    assert NodeSettings(label="node4").label == "node4"
    with pytest.raises((ConfigError, ValueError), match="invalid_label"):
        NodeSettings(label="a\x00b")
