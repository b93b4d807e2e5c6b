"""Why an outcome taught nothing: one reason, by the rules that decided it.

An agent that records an outcome and sees no lesson move needs to know which rule stopped it,
or it cannot tell an honest "nothing to learn" from a recording mistake. The reasons follow
the order the rules apply in (``learning/outcomes.py``, ``attribution.py``,
``mechanical.py``), most basic first, so the first that holds is the one to fix:

1. ``duplicate`` — an outcome with this id was already recorded (node only);
2. ``incognito`` — the session records nothing (node only);
3. ``injected_instruction`` — the run followed an instruction injected through a tool result;
4. ``claim_not_ok`` — the answer claimed checks that did not run;
5. ``no_check_ran`` — no test, lint or build ran: nothing was verified;
6. ``check_not_run`` — the latest run of some check was refused;
7. ``check_failed`` — the latest run of some check failed;
8. ``check_stale`` — something was edited after the latest run of some check;
9. ``not_passed`` — the loop's own verdict was failure although its checks passed;
10. ``not_attributed`` — lessons were in play, but none was about an operation that ran (or the
    run failed elsewhere), so none was confirmed or contradicted (node only: the SDK does not
    know which in-play lessons the node holds);
11. ``no_failed_then_ok_pair`` — no operation failed and then another succeeded on the same
    target, so there is no "prefer B over A for T" lesson to write.

The run recorder (``lamarck.agent.run``) and the node's ``RecordOutcome`` both call
:func:`why_nothing_learned`, so the SDK's forecast and the node's answer use one vocabulary.
"""

from __future__ import annotations

from enum import StrEnum

from lamarck.learning.outcomes import Verdict

__all__ = ["NothingLearned", "why_nothing_learned"]


class NothingLearned(StrEnum):
    """The reasons an outcome moved no lesson (see the module docstring for the order)."""

    DUPLICATE = "duplicate"
    INCOGNITO = "incognito"
    INJECTED_INSTRUCTION = "injected_instruction"
    CLAIM_NOT_OK = "claim_not_ok"
    NO_CHECK_RAN = "no_check_ran"
    CHECK_NOT_RUN = "check_not_run"
    CHECK_FAILED = "check_failed"
    CHECK_STALE = "check_stale"
    NOT_PASSED = "not_passed"
    NOT_ATTRIBUTED = "not_attributed"
    NO_FAILED_THEN_OK_PAIR = "no_failed_then_ok_pair"


def why_nothing_learned(
    verdict: Verdict,
    *,
    claim_ok: bool,
    injected_instruction: bool,
    learned: bool,
    in_play: int = 0,
    duplicate: bool = False,
    incognito: bool = False,
) -> str:
    """The first reason (module docstring order) that nothing was learned; "" if something was.

    ``learned``: a lesson was created, confirmed or contradicted (for the SDK's forecast: the
    run proves a mechanical lesson). ``in_play``: how many live lessons were in play.
    """
    if learned:
        return ""
    if duplicate:
        return NothingLearned.DUPLICATE
    if incognito:
        return NothingLearned.INCOGNITO
    if injected_instruction:
        return NothingLearned.INJECTED_INSTRUCTION
    if not claim_ok:
        return NothingLearned.CLAIM_NOT_OK
    if not verdict.counted:
        return NothingLearned.NO_CHECK_RAN
    if verdict.not_run:
        return NothingLearned.CHECK_NOT_RUN
    if verdict.failing:
        return NothingLearned.CHECK_FAILED
    if verdict.stale:
        return NothingLearned.CHECK_STALE
    if not verdict.passed:
        return NothingLearned.NOT_PASSED
    if in_play:
        return NothingLearned.NOT_ATTRIBUTED
    return NothingLearned.NO_FAILED_THEN_OK_PAIR
