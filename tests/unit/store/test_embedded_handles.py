"""Which of pgserver's handles survive a start: ``prune_handles`` is a pure function."""

from __future__ import annotations

from lamarck.node.store.embedded import HANDLE_CLOCK_SLACK_S, prune_handles

LISTED_AT = 1_700_000_000.0


def test_a_dead_holder_is_dropped_whatever_else_is_listed() -> None:
    # 11 was killed (SIGKILL: it never released its handle); 12 still runs.
    started = {12: LISTED_AT - 50}
    assert prune_handles([11, 12], listed_at=LISTED_AT, started_at=started) == [12]
    assert prune_handles([11], listed_at=LISTED_AT, started_at={}) == []


def test_live_holders_are_kept_in_list_order() -> None:
    started = {30: LISTED_AT - 5, 10: LISTED_AT - 100, 20: LISTED_AT}
    assert prune_handles([30, 10, 20], listed_at=LISTED_AT, started_at=started) == [30, 10, 20]


def test_a_pid_reused_by_a_process_started_after_the_list_was_written_is_dead() -> None:
    # The list was last written at LISTED_AT; a holder wrote itself in, so it started before.
    reused = {7: LISTED_AT + HANDLE_CLOCK_SLACK_S + 60}
    assert prune_handles([7], listed_at=LISTED_AT, started_at=reused) == []


def test_start_times_within_the_clock_slack_are_kept() -> None:
    # Process start times are coarse: a holder may look up to the slack younger than the list.
    started = {7: LISTED_AT + HANDLE_CLOCK_SLACK_S}
    assert prune_handles([7], listed_at=LISTED_AT, started_at=started) == [7]
    assert prune_handles([7], listed_at=LISTED_AT, started_at=started, slack_s=0.0) == []


def test_a_process_that_cannot_be_inspected_keeps_its_handle() -> None:
    # The I/O edge reports an uninspectable live process with start time -inf.
    assert prune_handles([5], listed_at=LISTED_AT, started_at={5: float("-inf")}) == [5]


def test_an_empty_list_stays_empty() -> None:
    assert prune_handles([], listed_at=LISTED_AT, started_at={1: 0.0}) == []
