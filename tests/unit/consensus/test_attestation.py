"""Outcome attestations: made, verified, refused, bounded, expired, counted by principal."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.consensus.attestation import (
    AttestationParams,
    admit_attestation,
    attestation_bytes,
    attester_events,
    count_support,
    created_at,
    equivocation_events,
    outcome_digest,
    placement,
    verify_attestation,
)
from lamarck.errors import ConfigError, InvalidRecord, PolicyRejected, VerificationError
from lamarck.proto.attestation import Attestation
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.reputation.events import EventKind
from tests.factories import attestation
from tests.unit.consensus.consensus_helpers import IDS, NOW, OTHER_HASH, RECORD_HASH

PARAMS = AttestationParams(max_age_days=30.0, max_attesters_per_lesson=3)
DIGEST = outcome_digest({"id": "outcome-1", "passed": True})


def attest(
    who: NodeIdentity,
    confirmed: bool = True,
    *,
    memory_hash: str = RECORD_HASH,
    age: timedelta = timedelta(0),
    seed: int = 0,
) -> Attestation:
    """``who``'s attestation on ``memory_hash``, made ``age`` before NOW."""
    return attestation(who, memory_hash, confirmed, at=NOW - age, outcome=DIGEST, seed=seed)


def test_a_made_attestation_verifies_and_names_the_outcome_by_digest_only() -> None:
    made = attest(IDS[0])
    got = verify_attestation(attestation_bytes(made), now=NOW, params=PARAMS)
    assert got == made
    assert got.attester_id == IDS[0].node_id
    assert got.verdict == "confirm"
    assert got.outcome_digest == DIGEST
    assert "outcome-1" not in attestation_bytes(made).decode()


def test_an_attestation_edited_after_signing_is_refused() -> None:
    obj = attest(IDS[0]).to_obj()
    obj["verdict"] = "contradict"
    with pytest.raises(VerificationError) as err:
        verify_attestation(canonical_bytes(obj), now=NOW, params=PARAMS)
    assert err.value.reason == "hash_mismatch"


def test_an_attestation_in_another_nodes_name_is_refused_as_key_mismatch() -> None:
    obj = attest(IDS[0]).to_obj()
    obj["attester_id"] = IDS[1].node_id
    with pytest.raises(VerificationError) as err:
        verify_attestation(canonical_bytes(obj), now=NOW, params=PARAMS)
    assert err.value.reason == "key_mismatch"


def test_non_canonical_bytes_are_refused() -> None:
    raw = json.dumps(attest(IDS[0]).to_obj(), indent=1).encode()
    with pytest.raises(VerificationError) as err:
        verify_attestation(raw, now=NOW, params=PARAMS)
    assert err.value.reason == "not_canonical"


def test_unsigned_and_malformed_attestations_are_invalid_records() -> None:
    obj = attest(IDS[0]).to_obj()
    del obj["signature"]
    with pytest.raises(InvalidRecord):
        verify_attestation(canonical_bytes(obj), now=NOW, params=PARAMS)
    with pytest.raises(InvalidRecord):
        verify_attestation(b'{"kind": "attestation"}', now=NOW, params=PARAMS)
    bad_verdict = {**attest(IDS[0]).to_obj(), "verdict": "abstain"}
    with pytest.raises(InvalidRecord):
        verify_attestation(canonical_bytes(bad_verdict), now=NOW, params=PARAMS)


def test_a_future_dated_attestation_is_refused_after_its_signature() -> None:
    future = attest(IDS[0], age=-timedelta(hours=1))
    with pytest.raises(VerificationError) as err:
        verify_attestation(attestation_bytes(future), now=NOW, params=PARAMS)
    assert err.value.reason == "future_timestamp"


def test_an_attestation_older_than_max_age_is_expired() -> None:
    old = attest(IDS[0], age=timedelta(days=31))
    with pytest.raises(VerificationError) as err:
        verify_attestation(attestation_bytes(old), now=NOW, params=PARAMS)
    assert err.value.reason == "expired"
    assert verify_attestation(
        attestation_bytes(attest(IDS[0], age=timedelta(days=29))), now=NOW, params=PARAMS
    )


def test_a_vote_signature_is_not_an_attestation_signature() -> None:
    # Domain separation: the same object signed as another kind never verifies as this one.
    obj = attest(IDS[0]).to_obj()
    as_vote = sign_object(RecordKind.vote, obj, IDS[0])
    with pytest.raises(VerificationError):
        verify_attestation(canonical_bytes(as_vote), now=NOW, params=PARAMS)


@pytest.mark.parametrize(
    ("current", "attester", "source", "reason"),
    [
        (None, "p1", "p0", "orphan_attestation"),
        (OTHER_HASH, "p1", "p0", "stale_attestation"),
        (RECORD_HASH, None, "p0", "unknown_attester"),
        (RECORD_HASH, "p0", "p0", "source_attestation"),
    ],
)
def test_a_receiver_refuses_attestations_it_must_not_count(
    current: str | None, attester: str | None, source: str, reason: str
) -> None:
    with pytest.raises(PolicyRejected) as err:
        admit_attestation(
            attest(IDS[0]),
            current_hash=current,
            attester_principal=attester,
            source_principal=source,
        )
    assert err.value.reason == reason


def test_a_receiver_admits_an_independent_attestation_of_the_current_version() -> None:
    admit_attestation(
        attest(IDS[0]), current_hash=RECORD_HASH, attester_principal="p1", source_principal="p0"
    )


def test_params_are_validated() -> None:
    with pytest.raises(ConfigError):
        AttestationParams(max_age_days=0)
    with pytest.raises(ConfigError):
        AttestationParams(max_attesters_per_lesson=0)


# -- counting ---------------------------------------------------------------------------------


def test_support_counts_principals_never_keys_and_never_the_sources_principal() -> None:
    principals = {
        IDS[0].node_id: "alice",
        IDS[1].node_id: "alice",  # a second key of alice: still one principal
        IDS[2].node_id: "bob",
        IDS[3].node_id: "source-op",  # the source's own operator: not independent
    }
    held = [attest(IDS[0]), attest(IDS[1]), attest(IDS[2]), attest(IDS[3])]
    support = count_support(
        held,
        memory_hash=RECORD_HASH,
        principals=principals,
        source_principal="source-op",
        now=NOW,
        params=PARAMS,
    )
    assert support.confirming == frozenset({"alice", "bob"})
    assert support.independent == 2
    assert support.contradicting == frozenset()


def test_an_attester_unknown_to_the_verifier_counts_for_nothing() -> None:
    support = count_support(
        [attest(IDS[0]), attest(IDS[1])],
        memory_hash=RECORD_HASH,
        principals={IDS[0].node_id: "alice"},
        source_principal="",
        now=NOW,
        params=PARAMS,
    )
    assert support.confirming == frozenset({"alice"})


def test_a_principal_with_both_verdicts_counts_for_nothing_and_is_charged() -> None:
    principals = {IDS[0].node_id: "alice", IDS[1].node_id: "alice", IDS[2].node_id: "bob"}
    held = [attest(IDS[0], True), attest(IDS[1], False), attest(IDS[2], False)]
    support = count_support(
        held,
        memory_hash=RECORD_HASH,
        principals=principals,
        source_principal="",
        now=NOW,
        params=PARAMS,
    )
    assert support.confirming == frozenset()
    assert support.contradicting == frozenset({"bob"})
    events = equivocation_events(
        held, memory_hash=RECORD_HASH, principals=principals, now=NOW, params=PARAMS
    )
    assert {(e.kind, e.node_id) for e in events} == {
        (EventKind.ATTESTATION_EQUIVOCATION, IDS[0].node_id),
        (EventKind.ATTESTATION_EQUIVOCATION, IDS[1].node_id),
    }
    assert all(e.record_hash == RECORD_HASH for e in events)


def test_expired_and_other_version_attestations_do_not_count() -> None:
    principals = {i.node_id: f"p{k}" for k, i in enumerate(IDS[:3])}
    held = [
        attest(IDS[0], age=timedelta(days=31)),
        attest(IDS[1], memory_hash=OTHER_HASH),
        attest(IDS[2]),
    ]
    support = count_support(
        held,
        memory_hash=RECORD_HASH,
        principals=principals,
        source_principal="",
        now=NOW,
        params=PARAMS,
    )
    assert support.confirming == frozenset({"p2"})


def test_certified_passes_through() -> None:
    support = count_support(
        [],
        memory_hash=RECORD_HASH,
        principals={},
        source_principal="",
        now=NOW,
        params=PARAMS,
        certified=True,
    )
    assert support.certified and support.independent == 0


def _brute_force(
    held: list[Attestation], principals: Mapping[str, str], source: str
) -> tuple[set[str], set[str]]:
    """The counting rule written the slow way: per principal, the set of verdicts."""
    confirming, contradicting = set(), set()
    for principal in set(principals.values()) - {source}:
        verdicts = [
            a.verdict
            for a in held
            if principals.get(a.attester_id) == principal
            and a.memory_hash == RECORD_HASH
            and NOW - timedelta(days=PARAMS.max_age_days) <= created_at(a)
        ]
        if verdicts and all(v == "confirm" for v in verdicts):
            confirming.add(principal)
        if verdicts and all(v == "contradict" for v in verdicts):
            contradicting.add(principal)
    return confirming, contradicting


_POOL = IDS[:6]
_MADE = {
    (k, confirmed, old, other): attest(
        _POOL[k],
        confirmed,
        memory_hash=OTHER_HASH if other else RECORD_HASH,
        age=timedelta(days=40 if old else 1),
    )
    for k in range(len(_POOL))
    for confirmed in (True, False)
    for old in (True, False)
    for other in (True, False)
}


@settings(max_examples=200, deadline=None)
@given(
    picks=st.lists(st.sampled_from(sorted(_MADE)), max_size=12),
    owner=st.lists(st.sampled_from(["a", "b", "c", "src", None]), min_size=6, max_size=6),
    source=st.sampled_from(["a", "src", ""]),
)
def test_count_support_matches_a_brute_force_count(
    picks: list[tuple[int, bool, bool, bool]], owner: list[str | None], source: str
) -> None:
    held = [_MADE[p] for p in picks]
    principals = {_POOL[k].node_id: p for k, p in enumerate(owner) if p is not None}
    support = count_support(
        held,
        memory_hash=RECORD_HASH,
        principals=principals,
        source_principal=source,
        now=NOW,
        params=PARAMS,
    )
    confirming, contradicting = _brute_force(held, principals, source)
    assert support.confirming == confirming
    assert support.contradicting == contradicting
    assert not support.confirming & support.contradicting
    assert source not in support.confirming | support.contradicting


# -- bounds ----------------------------------------------------------------------------------


def test_one_attestation_per_attester_the_newest() -> None:
    older = attest(IDS[0], True, age=timedelta(days=2))
    newer = attest(IDS[0], False, age=timedelta(days=1), seed=1)
    assert placement([older], newer, PARAMS).keep
    assert placement([older], newer, PARAMS).evict == (IDS[0].node_id,)
    assert not placement([newer], older, PARAMS).keep
    assert not placement([newer], newer, PARAMS).keep


def test_a_full_lesson_makes_room_by_dropping_its_oldest_attester() -> None:
    held = [attest(IDS[k], age=timedelta(days=5 - k)) for k in range(3)]
    newest = attest(IDS[5], age=timedelta(0))
    assert placement(held, newest, PARAMS).evict == (IDS[0].node_id,)
    oldest = attest(IDS[5], age=timedelta(days=9))
    assert not placement(held, oldest, PARAMS).keep
    # Another version's attestations take no room from this one.
    other = [attest(IDS[k], memory_hash=OTHER_HASH) for k in range(3)]
    assert placement(other, newest, PARAMS) == placement([], newest, PARAMS)


# -- accountability ---------------------------------------------------------------------------


def test_reality_judges_each_attester_once_right_or_wrong() -> None:
    held = [attest(IDS[0], True), attest(IDS[1], False), attest(IDS[2], True)]
    events = attester_events(
        held,
        record_hash=RECORD_HASH,
        reality_confirmed=True,
        at=NOW,
        exclude=frozenset({IDS[2].node_id}),
    )
    assert {(e.node_id, e.kind) for e in events} == {
        (IDS[0].node_id, EventKind.ATTESTATION_RIGHT),
        (IDS[1].node_id, EventKind.ATTESTATION_WRONG),
    }
    # Keyed by record hash without time: a second outcome judges nobody twice.
    again = attester_events(
        held, record_hash=RECORD_HASH, reality_confirmed=True, at=NOW + timedelta(hours=1)
    )
    assert {e.key for e in events} <= {e.key for e in again}
    assert EventKind.ATTESTATION_RIGHT.raises and not EventKind.ATTESTATION_WRONG.raises


def test_reality_judges_no_attester_of_another_version() -> None:
    held = [attest(IDS[0], True, memory_hash=OTHER_HASH)]
    assert attester_events(held, record_hash=RECORD_HASH, reality_confirmed=False, at=NOW) == ()
