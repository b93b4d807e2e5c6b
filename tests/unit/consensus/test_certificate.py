"""Quorum certificates: made on one node, verified on another without asking anyone again."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from consensus_helpers import IDS, NOW, OTHER_HASH, RECORD_HASH, forged, vote

from lamarck.consensus.certificate import QuorumCertificate, make_certificate, verify_certificate
from lamarck.consensus.params import QuorumParams
from lamarck.consensus.tally import Accepted, Electorate, tally
from lamarck.consensus.voters import NetworkView
from lamarck.consensus.votes import Verdict
from lamarck.errors import InvalidRecord, VerificationError

PARAMS = QuorumParams()
SOURCE = IDS[0].node_id
V, C, A = Verdict.VALIDATE, Verdict.CONTRADICT, Verdict.ABSTAIN
# The verifier's own view: source and voters IDS[1..7], each under its own operator.
VIEW = {IDS[k].node_id: f"op{k}" for k in range(12)}


def accepted_certificate() -> QuorumCertificate:
    voters = {IDS[k].node_id: f"op{k}" for k in range(1, 8)}
    elect = Electorate.open(RECORD_HASH, voters, now=NOW, by_principal=True, params=PARAMS)
    result = tally(elect, [vote(IDS[k], V) for k in range(1, 6)], PARAMS)
    assert isinstance(result, Accepted)
    return make_certificate(elect, result)


def verify(cert: QuorumCertificate, view: dict[str, str] = VIEW) -> Accepted:
    return verify_certificate(
        cert, record_hash=RECORD_HASH, source_id=SOURCE, view=NetworkView(view), params=PARAMS
    )


def refusal(cert: QuorumCertificate, view: dict[str, str] = VIEW) -> str:
    with pytest.raises(VerificationError) as info:
        verify(cert, view)
    return info.value.reason


def test_a_certificate_survives_the_wire_and_verifies_elsewhere() -> None:
    cert = accepted_certificate()
    wire = json.dumps(cert.to_obj())
    again = QuorumCertificate.from_obj(json.loads(wire))
    assert again == cert
    assert verify(again).validate_count == 5


def test_a_certificate_for_another_record_is_refused() -> None:
    cert = accepted_certificate()
    with pytest.raises(VerificationError) as info:
        verify_certificate(
            cert,
            record_hash=OTHER_HASH,
            source_id=SOURCE,
            view=NetworkView(VIEW),
            params=PARAMS,
        )
    assert info.value.reason == "wrong_record"


def test_too_few_valid_distinct_votes_are_refused_with_a_reason() -> None:
    cert = accepted_certificate()
    # Drop one vote and repeat another: four distinct VALIDATE where five are needed.
    short = QuorumCertificate(
        record_hash=cert.record_hash,
        voters=cert.voters,
        opened_at=cert.opened_at,
        closes_at=cert.closes_at,
        votes=(*cert.votes[:4], cert.votes[0]),
    )
    assert refusal(short) == "too_few_votes"


def test_a_forged_vote_in_a_certificate_counts_for_nothing() -> None:
    cert = accepted_certificate()
    fake = forged(IDS[5], V, by=IDS[9])
    bad = QuorumCertificate(
        record_hash=cert.record_hash,
        voters=cert.voters,
        opened_at=cert.opened_at,
        closes_at=cert.closes_at,
        votes=(*cert.votes[:4], fake),
    )
    assert refusal(bad) == "too_few_votes"


def test_voters_the_verifier_does_not_know_are_refused() -> None:
    view = {k: v for k, v in VIEW.items() if k != IDS[3].node_id}
    assert refusal(accepted_certificate(), view) == "unknown_voter"


def test_many_keys_of_one_principal_do_not_make_a_certificate() -> None:
    # The verifier knows voters 1..4 answer to one operator.
    view = dict(VIEW) | {IDS[k].node_id: "mallory" for k in range(1, 5)}
    assert refusal(accepted_certificate(), view) == "shared_principal"


def test_the_source_cannot_vote_on_its_own_record() -> None:
    view = dict(VIEW) | {IDS[2].node_id: "op0"}  # voter 2 shares the source's principal
    assert refusal(accepted_certificate(), view) == "source_voted"


def test_a_certificate_with_enough_contradictions_is_refused_as_contradicted() -> None:
    voters = {IDS[k].node_id: f"op{k}" for k in range(1, 8)}
    elect = Electorate.open(RECORD_HASH, voters, now=NOW, by_principal=True, params=PARAMS)
    cast = [vote(IDS[k], V) for k in range(1, 5)] + [vote(IDS[k], C) for k in (5, 6, 7)]
    cert = QuorumCertificate(
        record_hash=RECORD_HASH,
        voters=tuple(sorted(voters)),
        opened_at=elect.opened_at,
        closes_at=elect.closes_at,
        votes=tuple(cast),
    )
    assert refusal(cert) == "contradicted"


def test_a_certificate_smaller_than_min_voters_is_refused() -> None:
    cert = accepted_certificate()
    small = QuorumCertificate(
        record_hash=cert.record_hash,
        voters=cert.voters[:3],
        opened_at=cert.opened_at,
        closes_at=cert.closes_at,
        votes=cert.votes[:3],
    )
    assert refusal(small) == "too_few_voters"


def test_a_malformed_certificate_is_an_invalid_record() -> None:
    obj = accepted_certificate().to_obj()
    obj["extra"] = 1
    with pytest.raises(InvalidRecord) as info:
        QuorumCertificate.from_obj(obj)
    assert info.value.reason == "bad_certificate"


# -- certificates against the verifier's view of the whole network ----------------------------


def round_of(voters: list[int], verdicts: list[Verdict]) -> QuorumCertificate:
    """A certificate whatever its maker claims: voters IDS[k] and their signed votes."""
    return QuorumCertificate(
        record_hash=RECORD_HASH,
        voters=tuple(sorted(IDS[k].node_id for k in voters)),
        opened_at=NOW,
        closes_at=NOW + timedelta(seconds=PARAMS.vote_timeout_s),
        votes=tuple(vote(IDS[k], v) for k, v in zip(voters, verdicts, strict=True)),
    )


def network_of(principals: int, **groups: list[int]) -> dict[str, str]:
    """IDS[0..11] spread over ``principals`` principals (IDS[k] under op{k % principals}), the
    source IDS[0] under op0; ``groups`` puts the listed ids under one named principal. Each
    principal also holds a node that votes nowhere here, so regrouping keys drops none."""
    view = {IDS[k].node_id: f"op{k % principals}" for k in range(12)}
    view |= {f"lmk1bystander{p}": f"op{p}" for p in range(principals)}
    for name, members in groups.items():
        view |= {IDS[k].node_id: name for k in members}
    return view


def members_only(cert: QuorumCertificate, view: dict[str, str]) -> dict[str, str]:
    """The principals of the certificate's own voters and source: what a verifier must never
    judge by."""
    return {i: view[i] for i in (*cert.voters, SOURCE)}


def test_four_keys_of_the_sources_principal_are_refused_in_a_ten_principal_network() -> None:
    # The source and four voter keys answer to one principal; the network holds ten.
    view = network_of(10, op0=[1, 2, 3, 4])
    cert = round_of([1, 2, 3, 4], [V, V, V, V])
    assert len(NetworkView(view).principals) == 10
    # Judged by its own members alone it would pass as a one-principal network...
    assert verify(cert, members_only(cert, view)).validate_count == 4
    # ...but the verifier's view of the network says the voters are the source's principal.
    assert refusal(cert, view) == "source_voted"


def test_four_token_admitted_keys_of_the_sources_operator_are_refused() -> None:
    # An operator key admitted the source and four voters by its tokens; nine other
    # principals exist. The same truth: the voters are the source's principal.
    view = network_of(10, operator_key_a=[0, 5, 6, 7, 8])
    assert len(NetworkView(view).principals) == 11
    assert refusal(round_of([5, 6, 7, 8], [V, V, V, V]), view) == "source_voted"


def test_three_keys_of_one_principal_and_one_honest_voter_are_refused() -> None:
    view = network_of(10, mallory=[1, 2, 3])
    cert = round_of([1, 2, 3, 4], [V, V, V, V])
    assert refusal(cert, view) == "shared_principal"
    # With an honest verdict missing the rest is too few whatever principals say.
    honest_short = round_of([1, 4, 5, 6], [V, A, V, A])
    assert refusal(honest_short, network_of(10, mallory=[1])) == "too_few_votes"


def test_the_sources_principal_voting_through_an_endorsed_key_is_refused() -> None:
    # IDS[5] was endorsed by an identity of the source's principal: it counts as op0.
    view = network_of(10) | {IDS[5].node_id: "op0"}
    assert refusal(round_of([1, 2, 3, 5], [V, V, V, V]), view) == "source_voted"


def test_one_principal_network_counts_its_identities_other_than_the_source() -> None:
    view = network_of(1)
    assert verify(round_of([1, 2, 3, 4], [V, V, V, V]), view).validate_count == 4
    assert refusal(round_of([0, 1, 2, 3], [V, V, V, V]), view) == "source_voted"
    assert refusal(round_of([1, 2, 3], [V, V, V]), view) == "too_few_voters"


def test_two_principals_can_certify_nothing() -> None:
    # The one principal besides the source's has many keys: they are one voter, too few.
    view = network_of(2)
    assert refusal(round_of([1, 3, 5, 7], [V, V, V, V]), view) == "shared_principal"
    assert refusal(round_of([1], [V]), view) == "too_few_voters"


def test_four_principals_certify_with_the_other_three_unanimous() -> None:
    view = network_of(4)
    assert verify(round_of([1, 2, 3], [V, V, V]), view).validate_count == 3
    assert refusal(round_of([1, 2, 3], [V, V, A]), view) == "too_few_votes"
    assert refusal(round_of([1, 2, 3], [V, V, C]), view) == "too_few_votes"
    assert refusal(round_of([1, 2, 3], [C, C, C]), view) == "contradicted"
    assert refusal(round_of([1, 2], [V, V]), view) == "too_few_voters"


def test_ten_principals_need_min_voters() -> None:
    view = network_of(10)
    assert refusal(round_of([1, 2, 3], [V, V, V]), view) == "too_few_voters"
    assert verify(round_of([1, 2, 3, 4], [V, V, V, A]), view).validate_count == 3
