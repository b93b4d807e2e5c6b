"""The quorum count: 2f+1 independent VALIDATE accept, f+1 CONTRADICT reject, junk is nothing."""

from __future__ import annotations

import itertools
from datetime import timedelta

from consensus_helpers import IDS, NOW, OTHER_HASH, RECORD_HASH, forged, tampered, vote
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.tally import Accepted, Electorate, IgnoreReason, Pending, Rejected, tally
from lamarck.consensus.votes import Verdict
from lamarck.proto.vote import Vote

PARAMS = QuorumParams()
V, C, A = Verdict.VALIDATE, Verdict.CONTRADICT, Verdict.ABSTAIN


def electorate(
    n: int,
    *,
    principals: list[str] | None = None,
    by_principal: bool = True,
    needed: int | None = None,
) -> Electorate:
    """Voters IDS[1..n], each its own principal unless ``principals`` says otherwise."""
    names = principals or [f"op{k}" for k in range(n)]
    voters = {IDS[k + 1].node_id: names[k] for k in range(n)}
    return Electorate.open(
        RECORD_HASH, voters, now=NOW, by_principal=by_principal, params=PARAMS, needed=needed
    )


def votes(*verdicts: Verdict) -> list[Vote]:
    """One vote per verdict, by IDS[1], IDS[2], ..."""
    return [vote(IDS[k + 1], v) for k, v in enumerate(verdicts)]


def test_seven_voters_accept_with_five_validations() -> None:
    result = tally(electorate(7), votes(V, V, V, V, V, A, A), PARAMS)
    assert isinstance(result, Accepted)
    assert (result.validate_count, result.accept_at, result.reject_at) == (5, 5, 3)


def test_four_validations_of_seven_stay_pending() -> None:
    result = tally(electorate(7), votes(V, V, V, V, A, A, A), PARAMS)
    assert isinstance(result, Pending) and result.reason == "awaiting_votes"


def test_f_plus_one_contradictions_reject_even_beside_a_validating_majority() -> None:
    # n = 7, f = 2: three contradictions reject; four validations could not accept anyway, but
    # with n = 6 (f = 1) three VALIDATE and two CONTRADICT meet both thresholds: reject wins.
    result = tally(electorate(7), votes(V, V, V, V, C, C, C), PARAMS)
    assert isinstance(result, Rejected) and result.contradict_count == 3
    split = tally(electorate(6), votes(V, V, V, C, C, A), PARAMS)
    assert split.validate_count >= split.accept_at
    assert isinstance(split, Rejected)


def test_a_voter_that_votes_twice_alike_counts_once() -> None:
    cast = [*votes(V, V, V, V), vote(IDS[1], V, n=1), vote(IDS[1], V, n=2)]
    result = tally(electorate(7), cast, PARAMS)
    assert isinstance(result, Pending) and result.validate_count == 4
    assert [i.reason for i in result.ignored] == [IgnoreReason.DUPLICATE] * 2


def test_a_voter_that_votes_both_ways_counts_for_nothing() -> None:
    cast = [*votes(V, V, V, V, V), vote(IDS[5], C, n=1)]
    result = tally(electorate(7), cast, PARAMS)
    assert isinstance(result, Pending) and result.validate_count == 4
    assert result.contradict_count == 0
    assert {i.reason for i in result.ignored} == {IgnoreReason.CONFLICTING}


def test_forged_late_foreign_and_wrong_record_votes_count_for_nothing() -> None:
    cast = [
        *votes(V, V, V, V),
        forged(IDS[5], V, by=IDS[11]),
        tampered(vote(IDS[6], C)),
        vote(IDS[7], V, at=NOW + timedelta(seconds=PARAMS.vote_timeout_s + 1)),
        vote(IDS[10], V),  # not one of the seven voters
        vote(IDS[5], V, record_hash=OTHER_HASH, n=3),
    ]
    result = tally(electorate(7), cast, PARAMS)
    assert isinstance(result, Pending) and result.validate_count == 4
    assert sorted(i.reason for i in result.ignored) == sorted(
        [
            IgnoreReason.FORGED,
            IgnoreReason.FORGED,
            IgnoreReason.LATE,
            IgnoreReason.NOT_A_VOTER,
            IgnoreReason.WRONG_RECORD,
        ]
    )


def test_many_keys_of_one_principal_validate_as_one() -> None:
    # Five of seven voters answer to one operator: their five VALIDATE are one confirmation.
    principals = ["mallory"] * 5 + ["op5", "op6"]
    result = tally(electorate(7, principals=principals), votes(V, V, V, V, V, V, V), PARAMS)
    assert isinstance(result, Pending) and result.validate_count == 3


def test_a_single_principal_network_counts_identities() -> None:
    principals = ["operator"] * 7
    result = tally(
        electorate(7, principals=principals, by_principal=False), votes(V, V, V, V, V), PARAMS
    )
    assert isinstance(result, Accepted) and result.validate_count == 5


def test_a_round_smaller_than_min_voters_never_decides() -> None:
    result = tally(electorate(3), votes(V, V, V), PARAMS)
    assert isinstance(result, Pending) and result.reason == "too_few_voters"


def test_a_round_as_small_as_the_network_allows_accepts_only_unanimously() -> None:
    # Three eligible principals in all (the network needs three): every one must validate.
    assert isinstance(tally(electorate(3, needed=3), votes(V, V, V), PARAMS), Accepted)
    two_of_three = tally(electorate(3, needed=3), votes(V, V, A), PARAMS)
    assert isinstance(two_of_three, Pending) and two_of_three.accept_at == 3
    # No fault is tolerated: one voter against the others decides nothing either way.
    one_no = tally(electorate(3, needed=3), votes(V, V, C), PARAMS)
    assert isinstance(one_no, Pending) and one_no.reject_at == 3
    assert isinstance(tally(electorate(3, needed=3), votes(C, C, C), PARAMS), Rejected)
    # Where the network holds four or more, three voters are too few.
    assert tally(electorate(3, needed=4), votes(V, V, V), PARAMS).reason == "too_few_voters"


# -- Against a brute-force count ------------------------------------------------------------

OK, FORGED, LATE, WRONG = "ok", "forged", "late", "wrong_record"


def _make(who: int, verdict: Verdict, kind: str, n: int) -> Vote:
    if kind == FORGED:
        return forged(IDS[who], verdict, by=IDS[(who + 1) % len(IDS)])
    if kind == LATE:
        return vote(IDS[who], verdict, at=NOW + timedelta(seconds=PARAMS.vote_timeout_s + 5), n=n)
    if kind == WRONG:
        return vote(IDS[who], verdict, record_hash=OTHER_HASH, n=n)
    return vote(IDS[who], verdict, n=n)


def _brute_force(
    voters: dict[int, str],
    specs: list[tuple[int, Verdict, str, int]],
    by_principal: bool,
    needed: int,
) -> str:
    """The rule read literally, by enumerating sets of independent voters."""
    n = len(voters)
    if n < needed:
        return "pending"
    # Below min_voters no fault is tolerated: either side needs every voter.
    f = (n - 1) // 3
    small = n < PARAMS.min_voters
    accept_at = n if small else 2 * f + 1
    reject_at = n if small else f + 1
    said: dict[int, set[Verdict]] = {}
    for who, verdict, kind, _ in specs:
        if kind == OK and who in voters:
            said.setdefault(who, set()).add(verdict)
    sole = {who: next(iter(s)) for who, s in said.items() if len(s) == 1}

    def independent(verdict: Verdict) -> set[str]:
        whos = [w for w, v in sole.items() if v is verdict]
        return {voters[w] if by_principal else str(w) for w in whos}

    def some_set_of(size: int, pool: set[str]) -> bool:
        return any(True for _ in itertools.combinations(sorted(pool), size))

    if some_set_of(reject_at, independent(C)):
        return "rejected"
    if some_set_of(accept_at, independent(V)):
        return "accepted"
    return "pending"


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=10),
    principal_pool=st.integers(min_value=1, max_value=10),
    data=st.data(),
    by_principal=st.booleans(),
    needed=st.integers(min_value=1, max_value=5),
)
def test_tally_agrees_with_a_brute_force_count(
    n: int, principal_pool: int, data: st.DataObject, by_principal: bool, needed: int
) -> None:
    principals = data.draw(
        st.lists(st.integers(0, principal_pool - 1), min_size=n, max_size=n), label="principals"
    )
    voters = {k + 1: f"p{principals[k]}" for k in range(n)}
    specs = data.draw(
        st.lists(
            st.tuples(
                st.integers(1, 11),
                st.sampled_from(list(Verdict)),
                st.sampled_from([OK, OK, OK, FORGED, LATE, WRONG]),
                st.integers(0, 2),
            ),
            max_size=16,
        ),
        label="votes",
    )
    elect = Electorate.open(
        RECORD_HASH,
        {IDS[k].node_id: p for k, p in voters.items()},
        now=NOW,
        by_principal=by_principal,
        params=PARAMS,
        needed=needed,
    )
    result = tally(elect, [_make(*spec) for spec in specs], PARAMS)
    expected = _brute_force(voters, specs, by_principal, needed)
    assert type(result).__name__.lower() == expected
