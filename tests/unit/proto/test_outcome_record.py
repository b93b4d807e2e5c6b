"""The outcome record: derived from what ran, never more optimistic than its own checks."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import InvalidRecord, UnsupportedVersion
from lamarck.proto.outcome import CheckRun, Outcome, footer_passed

TS = "2024-03-01T12:00:00Z"


def uid(n: int) -> str:
    """A deterministic uuid4 string."""
    return str(uuid.UUID(int=n, version=4))


def check(order: int, **over: Any) -> dict[str, Any]:
    """A passing test-check run at ``order``."""
    base: dict[str, Any] = {
        "label": "pytest",
        "target": "tests/",
        "kind": "test",
        "order": order,
        "ran": True,
        "failed": False,
        "mutated_after": False,
    }
    base.update(over)
    return base


def outcome(**over: Any) -> dict[str, Any]:
    """A valid outcome object with top-level overrides."""
    obj: dict[str, Any] = {
        "schema_version": "1.0",
        "kind": "outcome",
        "id": uid(1),
        "session_id": "sess-42",
        "turn_index": 3,
        "project": "0123456789abcdef" * 4,
        "goal_digest": "Fix the failing test in\nparser.py",
        "approach": [
            {"operation_key": "shell:pytest", "outcome": "failed", "target": "tests/"},
            {"operation_key": "shell:pytest", "outcome": "ok", "target": "."},
            {"operation_key": "web:fetch", "outcome": "refused"},
        ],
        "checks": [check(0, failed=True), check(1)],
        "passed": True,
        "claim_ok": True,
        "steps": 12,
        "tokens": 3400,
        "wall_s": 41.5,
        "in_play": [uid(7)],
        "created_at": TS,
    }
    obj.update(over)
    return obj


def reason_of(obj: dict[str, Any]) -> str:
    """The ``InvalidRecord`` reason ``obj`` is rejected with."""
    with pytest.raises(InvalidRecord) as info:
        Outcome.from_obj(obj)
    return info.value.reason


def test_valid_outcome_round_trips_faithfully() -> None:
    obj = outcome()
    o = Outcome.from_obj(obj)
    assert o.to_obj() == obj
    assert Outcome.from_json(o.to_json()) == o
    assert o.footer_passed()


def test_kind_and_version_are_always_written_and_a_missing_version_defaults_to_1_0() -> None:
    obj = outcome()
    del obj["kind"], obj["schema_version"]
    o = Outcome.from_obj(obj)  # the schema's default, as for every other defaulted field
    assert o.to_obj()["kind"] == "outcome"
    assert o.to_obj()["schema_version"] == "1.0"
    with pytest.raises(UnsupportedVersion):
        Outcome.from_obj({**obj, "schema_version": "2.0"})


def test_a_prediction_is_kept_with_the_outcome_and_checked() -> None:
    o = Outcome.from_obj(outcome(prediction={"expected": "fail", "confidence": 0.7}))
    assert o.to_obj()["prediction"] == {"expected": "fail", "confidence": 0.7}
    with pytest.raises(InvalidRecord):
        Outcome.from_obj(outcome(prediction={"expected": "maybe", "confidence": 0.7}))
    with pytest.raises(InvalidRecord):
        Outcome.from_obj(outcome(prediction={"expected": "pass", "confidence": 1.5}))


def test_passed_cannot_be_more_optimistic_than_the_latest_check_runs() -> None:
    assert reason_of(outcome(checks=[check(0), check(1, failed=True)])) == "optimistic_outcome"
    assert reason_of(outcome(checks=[check(0, mutated_after=True)])) == "optimistic_outcome"
    assert reason_of(outcome(checks=[check(0, ran=False)])) == "optimistic_outcome"
    assert reason_of(outcome(checks=[])) == "optimistic_outcome"
    # The same facts recorded honestly are fine.
    assert Outcome.from_obj(outcome(checks=[check(0), check(1, failed=True)], passed=False))


def test_each_distinct_check_counts_by_its_own_latest_run() -> None:
    lint_failed = check(2, kind="lint", label="ruff", failed=True)
    assert reason_of(outcome(checks=[check(0), lint_failed])) == "optimistic_outcome"
    lint_fixed = check(3, kind="lint", label="ruff")
    assert Outcome.from_obj(outcome(checks=[check(0), lint_failed, lint_fixed]))


def test_check_order_indices_are_unique() -> None:
    assert reason_of(outcome(checks=[check(1), check(1)], passed=False)) == "malformed"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("project", "/home/tom/repo"),
        ("project", "ABCDEF0123456789"),
        ("id", "outcome-1"),
        ("turn_index", -1),
        ("steps", 1.5),
        ("wall_s", -0.1),
        ("wall_s", "fast"),
        ("in_play", ["mem-1"]),
        ("session_id", ""),
        ("session_id", "s" * 129),
        ("goal_digest", "g" * 257),
        ("kind", "vote"),
        ("created_at", "2024-03-01T12:00:00+02:00"),
        ("approach", [{"operation_key": "x", "outcome": "maybe"}]),
        ("checks", [check(0, kind="fmt")]),
        ("injected_instruction", "no"),
        ("recorded_by", "node-7"),
    ],
)
def test_malformed_fields_are_rejected(field: str, value: Any) -> None:
    with pytest.raises(InvalidRecord):
        Outcome.from_obj(outcome(**{field: value}))


def test_unknown_major_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersion):
        Outcome.from_obj(outcome(schema_version="2.0"))


def test_extra_fields_and_oversized_lists_are_rejected() -> None:
    assert reason_of(outcome(project_root="/home/tom")) == "malformed"
    assert reason_of(outcome(in_play=[uid(i) for i in range(257)])) == "too_many_items"
    raw = json.dumps(outcome()).encode()
    assert len(raw) < 65536
    with pytest.raises(InvalidRecord) as info:
        Outcome.from_json(raw[:-1] + b" " * 65536 + b"}")
    assert info.value.reason == "too_large"


def test_injected_instruction_flag_round_trips() -> None:
    o = Outcome.from_obj(outcome(injected_instruction=True))
    assert o.injected_instruction is True
    assert Outcome.from_obj(copy.deepcopy(outcome())).injected_instruction is False


def _naive_footer(runs: list[CheckRun]) -> bool:
    """A second, simpler statement of the footer rule, for comparison."""
    keys = {(r.kind, r.label, r.target) for r in runs}
    if not keys:
        return False
    for key in keys:
        same = [r for r in runs if (r.kind, r.label, r.target) == key]
        last = max(same, key=lambda r: r.order)
        if not last.ran or last.failed or last.mutated_after:
            return False
    return True


_runs = st.lists(
    st.builds(
        lambda label, kind, ran, failed, mutated: (label, kind, ran, failed, mutated),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["test", "lint", "build"]),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    ),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(runs=_runs, order_seed=st.randoms(use_true_random=False))
def test_footer_rule_matches_a_brute_force_statement(runs: list[Any], order_seed: Any) -> None:
    orders = list(range(len(runs)))
    order_seed.shuffle(orders)
    checks = [
        CheckRun(label=label, kind=kind, order=o, ran=ran, failed=failed, mutated_after=mutated)
        for o, (label, kind, ran, failed, mutated) in zip(orders, runs, strict=True)
    ]
    expected = _naive_footer(checks)
    assert footer_passed(checks) == expected
    obj = outcome(checks=[c.model_dump(mode="json") for c in checks], passed=True)
    if expected:
        assert Outcome.from_obj(obj).passed
    else:
        with pytest.raises(InvalidRecord):
            Outcome.from_obj(obj)
