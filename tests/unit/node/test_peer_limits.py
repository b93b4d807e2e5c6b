"""Per-peer limits: validated params, the record budget, and who a call is budgeted as."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from lamarck.errors import ConfigError, PolicyRejected
from lamarck.node.api.interceptors import caller_host, peer_key
from lamarck.node.api.limits import PeerLimits, RecordBudget, check_batch


@dataclass
class _Context:
    peer_str: str
    metadata: tuple[tuple[str, str], ...] = ()

    def peer(self) -> str:
        return self.peer_str

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata


@dataclass
class _Clock:
    now: float = 0.0
    calls: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max_concurrent", 0),
        ("burst", 0),
        ("publish_max_records", 0),
        ("rate_per_s", math.nan),
        ("records_per_s", math.inf),
        ("records_per_s", 0.0),
        ("records_burst", 10),  # below publish_max_records: a full batch could never pass
    ],
)
def test_limits_refuse_a_bad_field_naming_it(name: str, value: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        PeerLimits(**{name: value})
    assert name in str(caught.value)


def test_a_claimed_node_id_does_not_change_the_budget_key() -> None:
    a = _Context("ipv4:10.0.0.1:5000", (("lamarck-node-id", "lmk1" + "a" * 32),))
    b = _Context("ipv4:10.0.0.1:5000", (("lamarck-node-id", "lmk1" + "b" * 32),))
    assert peer_key(a) == peer_key(b)  # type: ignore[arg-type]


def test_an_authenticated_peer_keeps_its_budget_across_connections() -> None:
    def identify(metadata: Any) -> str | None:
        return (dict(metadata).get("lamarck-peer-token") == "known" and "lmk1node") or None

    one = _Context("ipv4:10.0.0.1:5000", (("lamarck-peer-token", "known"),))
    two = _Context("ipv4:10.0.0.2:6000", (("lamarck-peer-token", "known"),))
    stranger = _Context("ipv4:10.0.0.1:5000", (("lamarck-peer-token", "forged"),))
    assert peer_key(one, identify) == peer_key(two, identify) == "node|lmk1node"  # type: ignore[arg-type]
    assert peer_key(stranger, identify) == "host|ipv4:10.0.0.1"  # type: ignore[arg-type]


def test_a_stranger_opening_a_new_connection_per_call_keeps_one_budget() -> None:
    first = _Context("ipv4:10.0.0.1:5000", ())
    second = _Context("ipv4:10.0.0.1:5001", ())
    other_host = _Context("ipv4:10.0.0.9:5000", ())
    assert peer_key(first) == peer_key(second)  # type: ignore[arg-type]
    assert peer_key(first) != peer_key(other_host)  # type: ignore[arg-type]
    assert caller_host("ipv6:[::1]:7700") == "ipv6:[::1]"
    assert caller_host("unix:/tmp/sock") == "unix:/tmp/sock"


def test_a_batch_above_the_cap_is_refused_with_its_reason() -> None:
    limits = PeerLimits(publish_max_records=4, records_burst=4)
    check_batch(4, limits)
    with pytest.raises(PolicyRejected) as caught:
        check_batch(5, limits)
    assert caught.value.reason == "batch_too_large"


def test_the_record_budget_refills_with_time_and_refuses_a_call_whole() -> None:
    clock = _Clock()
    budget = RecordBudget(
        PeerLimits(publish_max_records=10, records_per_s=5.0, records_burst=10), clock
    )
    budget.spend("p", 8)
    with pytest.raises(PolicyRejected) as caught:
        budget.spend("p", 3)  # only 2 left: nothing is spent
    assert caught.value.reason == "records_rate_limited"
    budget.spend("p", 2)
    budget.spend("q", 10)  # another peer has its own bucket
    clock.now = 1.0  # five records a second
    budget.spend("p", 5)
    with pytest.raises(PolicyRejected):
        budget.spend("p", 1)
