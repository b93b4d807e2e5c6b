"""The driver's settle: a quiet fleet with empty outboxes ends it at once; a handle the
driver cannot read the outbox of for lack of the operator token is the caller's mistake and
fails the settle, rather than making every round wait out ``settle_timeout_s``."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lamarck.errors import DeliveryFailed, Unauthenticated
from lamarck.fleet.driver import DriverParams, FleetDriver, NodeHandle
from lamarck.fleet.workloads import WorkloadParams, make_workload

PARAMS = DriverParams(gossip_interval_s=0.001, quiet_s=0.003, settle_timeout_s=30.0)


class _Operator:
    def __init__(self, answer: dict[str, Any] | Exception) -> None:
        self.answer = answer
        self.calls = 0

    def status(self) -> dict[str, Any]:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _driver(*operators: _Operator) -> FleetDriver:
    work = make_workload("pitfalls", 0, WorkloadParams(nodes=len(operators), agents=1, rounds=1))
    handles = [NodeHandle(f"node{i}", "unused", "") for i in range(len(operators))]
    driver = FleetDriver(handles, work, PARAMS, random.Random(0))
    driver._operators = list(operators)  # type: ignore[arg-type]
    return driver


def test_a_settle_with_empty_outboxes_ends_long_before_its_bound() -> None:
    op = _Operator({"network": {"outbox": {"depth": 0}}})
    driver = _driver(op, op)
    driver.settle()
    assert op.calls >= 1


def test_a_node_without_an_operator_token_fails_the_settle() -> None:
    missing = Unauthenticated("operator token", reason="operator_credential_required")
    with pytest.raises(Unauthenticated):
        _driver(_Operator(missing)).settle()


def test_a_node_that_does_not_answer_keeps_the_settle_waiting() -> None:
    down = _Operator(DeliveryFailed("down"))
    driver = _driver(down)
    driver.params = DriverParams(gossip_interval_s=0.001, quiet_s=0.003, settle_timeout_s=0.05)
    driver.settle()  # bounded: returns at its deadline
    assert down.calls >= 2
