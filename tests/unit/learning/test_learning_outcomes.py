"""An outcome's verdict comes from what ran, the way the footer computes it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lamarck.learning.outcomes import CheckRun, derive_verdict
from lamarck.proto.outcome import CheckRun as ProtoCheckRun
from lamarck.proto.outcome import footer_passed


def run(
    order: int,
    *,
    failed: bool = False,
    ran: bool = True,
    stale: bool = False,
    label: str = "pytest",
    kind: str = "test",
) -> CheckRun:
    return CheckRun(
        label=label, kind=kind, order=order, ran=ran, failed=failed, mutated_after=stale
    )


def test_repeated_check_counts_by_its_latest_run() -> None:
    assert derive_verdict([run(1, failed=True), run(2)], claim_ok=True).passed
    assert not derive_verdict([run(2, failed=True), run(1)], claim_ok=True).passed


def test_check_that_ran_before_the_last_mutation_is_stale() -> None:
    verdict = derive_verdict([run(1, stale=True)], claim_ok=True)
    assert not verdict.passed and verdict.stale


def test_refused_check_did_not_run() -> None:
    verdict = derive_verdict([run(1), run(2, ran=False)], claim_ok=True)
    assert not verdict.passed and verdict.not_run


def test_run_without_any_check_does_not_pass() -> None:
    assert not derive_verdict([], claim_ok=True).passed


def test_outcome_with_false_test_claim_teaches_nothing() -> None:
    verdict = derive_verdict([run(1)], claim_ok=False)
    assert verdict.passed and not verdict.teaches


def test_outcome_with_injected_instruction_teaches_nothing() -> None:
    assert not derive_verdict([run(1)], claim_ok=True, injected_instruction=True).teaches


_runs = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["test", "lint", "build"]),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    ),
    max_size=8,
)


@given(_runs)
def test_verdict_agrees_with_the_proto_footer_rule(
    runs: list[tuple[str, str, bool, bool, bool]],
) -> None:
    ours = [
        run(i, label=lab, kind=k, ran=r, failed=f, stale=m)
        for i, (lab, k, r, f, m) in enumerate(runs)
    ]
    theirs = [
        ProtoCheckRun(label=lab, kind=k, order=i, ran=r, failed=f, mutated_after=m)  # type: ignore[arg-type]
        for i, (lab, k, r, f, m) in enumerate(runs)
    ]
    assert derive_verdict(ours, claim_ok=True).passed == footer_passed(theirs)
