"""Quorum certificates: made on one node, verified on another without asking anyone again."""

from __future__ import annotations

import json

import pytest
from consensus_helpers import IDS, NOW, OTHER_HASH, RECORD_HASH, forged, vote

from lamarck.consensus.certificate import QuorumCertificate, make_certificate, verify_certificate
from lamarck.consensus.params import QuorumParams
from lamarck.consensus.tally import Accepted, Electorate, tally
from lamarck.consensus.votes import Verdict
from lamarck.errors import InvalidRecord, VerificationError

PARAMS = QuorumParams()
SOURCE = IDS[0].node_id
V, C = Verdict.VALIDATE, Verdict.CONTRADICT
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
        cert, record_hash=RECORD_HASH, source_id=SOURCE, principal_of=view, params=PARAMS
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
            cert, record_hash=OTHER_HASH, source_id=SOURCE, principal_of=VIEW, params=PARAMS
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
