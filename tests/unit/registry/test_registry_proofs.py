"""Admission proofs judged by a reader: every refusal reason, the chain, the memo; no server."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from lamarck.errors import ConfigError, ProofInvalid
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import make_rotation
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.proofs import (
    IdFacts,
    ProofMemo,
    ProofParams,
    ProofPolicy,
    VerifiedProof,
    endorser_to_fetch,
    revocation_holds,
    revoked_through,
    verify_admission,
)
from lamarck.registry.records import (
    Admission,
    Endorsement,
    EnrollmentToken,
    sign_endorsement,
    sign_enrollment,
    sign_registration,
    sign_revocation,
)
from lamarck.registry.rules import AdmittedVia

NONCE = "bm9uY2Utbm9uY2Utbm9uY2U"
HOUR = timedelta(hours=1)


class World:
    """A fixed clock, an operator, identities, and the records a registry would hold."""

    def __init__(self) -> None:
        rng = random.Random(7)
        self.clock = FixedClock()
        self.operator = NodeIdentity.generate(rng)
        self.root = NodeIdentity.generate(rng)  # admitted with an operator token
        self.member = NodeIdentity.generate(rng)  # endorsed by root
        self.newcomer = NodeIdentity.generate(rng)
        self.sybil = NodeIdentity.generate(rng)
        self.facts: dict[str, IdFacts] = {}

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def policy(
        self, mode: AdmissionMode, *, operator: NodeIdentity | None = None, **proof: Any
    ) -> ProofPolicy:
        return ProofPolicy.of(
            RegistryParams(admission=mode),
            (operator or self.operator).public_key_b64,
            ProofParams(**proof),
        )

    def token(self, who: NodeIdentity, signer: NodeIdentity | None = None, **kw: Any) -> Any:
        args: dict[str, Any] = {
            "node_id": who.node_id,
            "issued_at": self.now,
            "expires_at": self.now + HOUR,
        }
        args.update(kw)
        return sign_enrollment(signer or self.operator, **args)

    def endorsement(self, endorser: NodeIdentity, who: NodeIdentity, **kw: Any) -> Endorsement:
        args: dict[str, Any] = {
            "endorsee_id": who.node_id,
            "endorsee_public_key": who.public_key_b64,
            "created_at": self.now,
            "expires_at": self.now + HOUR,
        }
        args.update(kw)
        return sign_endorsement(endorser, **args)

    def admit(
        self,
        who: NodeIdentity,
        *,
        token: EnrollmentToken | None = None,
        endorsement: Endorsement | None = None,
        node_id: str | None = None,
        created_at: datetime | None = None,
        rotations: tuple[dict[str, Any], ...] = (),
        pin: str | None = None,
    ) -> IdFacts:
        """Store (and return) ``who``'s proof as register() would, with these rotations."""
        reg = sign_registration(
            who,
            node_id=node_id,
            address="127.0.0.1:7000",
            domains=("git",),
            version="0.1.0",
            nonce=NONCE,
            admission=Admission(
                mode=AdmissionMode.ENDORSED, endorsement=endorsement, enrollment_token=token
            ),
            created_at=created_at or self.now,
        )
        ident = node_id or who.node_id
        last_key = rotations[-1]["new_public_key"] if rotations else who.public_key_b64
        facts = IdFacts(
            ident,
            pin=pin or last_key,
            admission=json.dumps(reg.wire()),
            rotations=tuple(json.dumps(r) for r in rotations),
        )
        self.facts[ident] = facts
        return facts

    def revoke(self, who: NodeIdentity, signer: NodeIdentity | None = None) -> None:
        rev = sign_revocation(
            signer or self.operator, node_id=who.node_id, reason="test", created_at=self.now
        )
        self.facts[who.node_id] = replace(
            self.facts[who.node_id], revocation=json.dumps(rev.wire())
        )

    def verify(self, who: NodeIdentity | str, policy: ProofPolicy, **kw: Any) -> VerifiedProof:
        node_id = who if isinstance(who, str) else who.node_id
        return verify_admission(node_id, self.facts, policy=policy, now=self.now, **kw)


@pytest.fixture
def w() -> World:
    return World()


def refused(reason: str) -> Any:
    return pytest.raises(ProofInvalid, match=reason)


ENDORSED, OPERATOR, OPEN = AdmissionMode.ENDORSED, AdmissionMode.OPERATOR, AdmissionMode.OPEN


# -- what a pin alone is worth: nothing --------------------------------------------------


def test_a_pin_without_a_proof_is_not_admitted_in_any_mode(w: World) -> None:
    w.facts[w.sybil.node_id] = IdFacts(w.sybil.node_id, w.sybil.public_key_b64, None)
    for mode in (OPEN, ENDORSED, OPERATOR):
        with refused("no_proof"):
            w.verify(w.sybil, w.policy(mode))


def test_open_mode_needs_only_a_self_signed_proof_for_the_pinned_key(w: World) -> None:
    w.admit(w.sybil)
    assert w.verify(w.sybil, w.policy(OPEN)).via is AdmittedVia.OPEN
    # ... but the same proof admits nobody for a closed-mode reader.
    with refused("no_endorsement"):
        w.verify(w.sybil, w.policy(ENDORSED))
    with refused("bad_enrollment"):
        w.verify(w.sybil, w.policy(OPERATOR))


def test_a_proof_for_another_key_or_id_is_refused(w: World) -> None:
    theirs = w.admit(w.root, token=w.token(w.root))
    # The root's genuine proof copied under the sybil's id, or against the sybil's pin.
    w.facts[w.sybil.node_id] = replace(theirs, node_id=w.sybil.node_id)
    with refused("wrong_id"):
        w.verify(w.sybil, w.policy(OPEN))
    w.facts[w.root.node_id] = replace(theirs, pin=w.sybil.public_key_b64)
    with refused("bad_chain") as e:
        w.verify(w.root, w.policy(OPEN))
    assert "own key" in str(e.value)  # the sybil's key does not derive the root's id


def test_a_proof_with_a_forged_signature_is_refused(w: World) -> None:
    facts = w.admit(w.root, token=w.token(w.root))
    assert facts.admission is not None
    obj = json.loads(facts.admission)
    obj["address"] = "10.6.6.6:7000"  # edited after signing
    w.facts[w.root.node_id] = replace(facts, admission=json.dumps(obj))
    with refused("bad_proof"):
        w.verify(w.root, w.policy(OPEN))


def test_a_malformed_proof_is_refused(w: World) -> None:
    w.facts[w.root.node_id] = IdFacts(w.root.node_id, w.root.public_key_b64, "{not json")
    with refused("malformed_proof"):
        w.verify(w.root, w.policy(OPEN))


# -- operator tokens ---------------------------------------------------------------------


def test_operator_token_admits_for_a_reader_with_that_operator_key(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    proof = w.verify(w.root, w.policy(OPERATOR))
    assert (proof.via, proof.keys, proof.height) == (
        AdmittedVia.ENROLLMENT,
        (w.root.public_key_b64,),
        0,
    )
    assert w.verify(w.root, w.policy(ENDORSED)).via is AdmittedVia.ENROLLMENT


def test_token_signed_by_another_key_is_refused(w: World) -> None:
    w.admit(w.sybil, token=w.token(w.sybil, signer=w.sybil))
    with refused("bad_enrollment") as e:
        w.verify(w.sybil, w.policy(OPERATOR))
    assert "signed by another key" in str(e.value)
    # A reader trusting another operator refuses the genuine operator's token too.
    w.admit(w.root, token=w.token(w.root))
    with refused("bad_enrollment"):
        w.verify(w.root, w.policy(OPERATOR, operator=w.sybil))


def test_token_for_another_identity_is_refused(w: World) -> None:
    w.admit(w.sybil, token=w.token(w.root))
    with refused("bad_enrollment") as e:
        w.verify(w.sybil, w.policy(OPERATOR))
    assert "another node id" in str(e.value)


def test_a_token_that_expired_since_still_proves_the_admission(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    w.clock.advance(30 * 24 * 3600)
    assert w.verify(w.root, w.policy(OPERATOR)).via is AdmittedVia.ENROLLMENT


def test_a_token_expired_when_the_registration_was_made_is_refused(w: World) -> None:
    token = w.token(w.root)
    w.clock.advance(2 * 3600)
    w.admit(w.root, token=token)
    with refused("bad_enrollment") as e:
        w.verify(w.root, w.policy(OPERATOR))
    assert "expired" in str(e.value)


def test_a_registration_dated_in_the_future_is_refused(w: World) -> None:
    token = w.token(w.root, expires_at=w.now + 48 * HOUR)
    w.admit(w.root, token=token, created_at=w.now + 24 * HOUR)
    with refused("bad_proof") as e:
        w.verify(w.root, w.policy(OPERATOR))
    assert "future" in str(e.value)


# -- endorsements, recursively ----------------------------------------------------------


def test_endorsement_by_an_admitted_endorser_admits(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    w.admit(w.member, endorsement=w.endorsement(w.root, w.member))
    proof = w.verify(w.member, w.policy(ENDORSED))
    assert (proof.via, proof.height) == (AdmittedVia.ENDORSEMENT, 1)
    assert endorser_to_fetch(w.facts[w.member.node_id], w.policy(ENDORSED)) == w.root.node_id
    # An operator-mode reader takes no endorsement, and looks no further.
    assert endorser_to_fetch(w.facts[w.member.node_id], w.policy(OPERATOR)) is None
    with refused("bad_enrollment"):
        w.verify(w.member, w.policy(OPERATOR))


def test_endorsement_by_a_non_admitted_endorser_is_refused(w: World) -> None:
    # The sybil wrote itself a pin and a proof with no material, then endorsed a newcomer.
    w.admit(w.sybil)
    w.admit(w.newcomer, endorsement=w.endorsement(w.sybil, w.newcomer))
    with refused("bad_endorsement") as e:
        w.verify(w.newcomer, w.policy(ENDORSED))
    assert e.value.details["endorser_reason"] == "no_endorsement"
    assert e.value.details["endorser_id"] == w.sybil.node_id
    # An endorser with no records at all fares no better.
    del w.facts[w.sybil.node_id]
    w.facts[w.sybil.node_id] = IdFacts(w.sybil.node_id, None, None)
    with refused("bad_endorsement") as e:
        w.verify(w.newcomer, w.policy(ENDORSED))
    assert e.value.details["endorser_reason"] == "no_proof"


def test_endorsement_by_a_revoked_endorser_is_refused(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    w.admit(w.member, endorsement=w.endorsement(w.root, w.member))
    w.revoke(w.root)
    with refused("bad_endorsement") as e:
        w.verify(w.member, w.policy(ENDORSED))
    assert "revoked" in str(e.value)


def test_a_proof_names_the_endorsers_its_admission_runs_through(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    w.admit(w.member, endorsement=w.endorsement(w.root, w.member))
    w.admit(w.newcomer, endorsement=w.endorsement(w.member, w.newcomer))
    policy = w.policy(ENDORSED)
    assert w.verify(w.root, policy).chain == ()
    assert w.verify(w.member, policy).chain == (w.root.node_id,)
    assert w.verify(w.newcomer, policy).chain == (w.member.node_id, w.root.node_id)


def test_revoking_an_endorser_reaches_every_identity_admitted_through_it(w: World) -> None:
    # root (token) endorses member, member endorses newcomer: a chain of depth 2.
    w.admit(w.root, token=w.token(w.root))
    w.admit(w.member, endorsement=w.endorsement(w.root, w.member))
    w.admit(w.newcomer, endorsement=w.endorsement(w.member, w.newcomer))
    policy = w.policy(ENDORSED)

    def through(who: NodeIdentity) -> str | None:
        return revoked_through(
            who.node_id, w.facts, policy=policy, now=w.now, chain_memo=ProofMemo(ProofParams())
        )

    assert [through(x) for x in (w.root, w.member, w.newcomer)] == [None, None, None]
    # Revoking the middle link reaches what it admitted, not what admitted it.
    w.revoke(w.member)
    assert [through(x) for x in (w.root, w.member, w.newcomer)] == [
        None,
        w.member.node_id,
        w.member.node_id,
    ]
    # Revoking the root reaches the whole chain; the nearest revoked link is named.
    w.revoke(w.root)
    assert [through(x) for x in (w.root, w.member, w.newcomer)] == [
        w.root.node_id,
        w.member.node_id,
        w.member.node_id,
    ]
    # Neither is admitted any more: the ordinary proof is refused for both.
    with refused("bad_endorsement"):
        w.verify(w.newcomer, policy)


def test_only_a_verified_chain_and_an_operator_revocation_taint_an_identity(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    w.admit(w.member, endorsement=w.endorsement(w.root, w.member))
    policy = w.policy(ENDORSED)
    memo = ProofMemo(ProofParams())
    # A revocation the operator did not sign revokes nobody, so reaches nobody either.
    w.revoke(w.root, signer=w.sybil)
    assert revoked_through(w.member.node_id, w.facts, policy=policy, now=w.now) is None
    w.revoke(w.root)
    # A writer pastes the member's proof (root's endorsement) under the newcomer's id: it is
    # not the newcomer's registration, so it names no chain and taints nobody.
    w.facts[w.newcomer.node_id] = replace(
        w.facts[w.member.node_id], node_id=w.newcomer.node_id, pin=w.newcomer.public_key_b64
    )
    assert (
        revoked_through(w.newcomer.node_id, w.facts, policy=policy, now=w.now, chain_memo=memo)
        is None
    )
    assert (
        revoked_through(w.member.node_id, w.facts, policy=policy, now=w.now, chain_memo=memo)
        == w.root.node_id
    )


def test_endorsements_in_a_cycle_admit_nobody(w: World) -> None:
    w.admit(w.member, endorsement=w.endorsement(w.newcomer, w.member))
    w.admit(w.newcomer, endorsement=w.endorsement(w.member, w.newcomer))
    with refused("bad_endorsement") as e:
        w.verify(w.newcomer, w.policy(ENDORSED))
    assert e.value.details["endorser_reason"] == "bad_endorsement"


def test_endorsement_chain_deeper_than_the_bound_is_refused_and_not_memoised(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    w.admit(w.member, endorsement=w.endorsement(w.root, w.member))
    w.admit(w.newcomer, endorsement=w.endorsement(w.member, w.newcomer))
    memo = ProofMemo(ProofParams())
    with refused("bad_endorsement") as e:
        w.verify(w.newcomer, w.policy(ENDORSED, max_endorsement_depth=1), memo=memo)
    assert e.value.details["endorser_reason"] == "endorsement_too_deep"
    # The refusals (newcomer's and member's) depended on the bound: none was remembered, so
    # a reader that may look deeper is not misled by them.
    assert len(memo) == 0
    deeper = w.verify(w.newcomer, w.policy(ENDORSED, max_endorsement_depth=2), memo=memo)
    assert deeper.height == 2 and len(memo) == 3


def test_endorsement_by_a_retired_key_counts_only_if_made_before_the_rotation(
    w: World,
) -> None:
    # root's key later moves to the sybil's key (think: a new key the root generated).
    old_endorsement = w.endorsement(w.root, w.member)
    w.clock.advance(60)
    rotation = make_rotation(w.root, w.sybil, w.now)
    w.admit(w.root, token=w.token(w.root, expires_at=w.now + HOUR), rotations=(rotation,))
    w.admit(w.member, endorsement=old_endorsement, created_at=w.now - timedelta(seconds=30))
    assert w.verify(w.member, w.policy(ENDORSED)).via is AdmittedVia.ENDORSEMENT
    # After the rotation the old key endorses nobody.
    w.clock.advance(60)
    w.admit(w.newcomer, endorsement=w.endorsement(w.root, w.newcomer))
    with refused("bad_endorsement") as e:
        w.verify(w.newcomer, w.policy(ENDORSED))
    assert "retired" in str(e.value)


# -- the rotation chain --------------------------------------------------------------------


def test_a_rotation_chain_is_followed_to_the_pin(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    first = make_rotation(w.root, w.member, w.now)
    second = make_rotation(w.member, w.newcomer, w.now, node_id=w.root.node_id)
    w.admit(w.root, token=w.token(w.root), rotations=(first, second))
    proof = w.verify(w.root, w.policy(OPERATOR))
    assert proof.keys == (w.root.public_key_b64, w.member.public_key_b64, w.newcomer.public_key_b64)
    assert proof.pinned_key == w.newcomer.public_key_b64
    assert len(proof.retired_at) == 2


def test_a_chain_with_a_missing_or_forged_link_is_refused(w: World) -> None:
    first = make_rotation(w.root, w.member, w.now)
    second = make_rotation(w.member, w.newcomer, w.now, node_id=w.root.node_id)
    # A link left out: the chain jumps from root's key to the newcomer's.
    w.admit(w.root, token=w.token(w.root), rotations=(second,))
    with refused("bad_chain"):
        w.verify(w.root, w.policy(OPERATOR))
    # A pin moved by someone who never held the pinned key (the sybil signs it).
    forged = make_rotation(w.sybil, w.newcomer, w.now, node_id=w.root.node_id)
    forged["old_public_key"] = w.member.public_key_b64
    w.admit(w.root, token=w.token(w.root), rotations=(first, forged))
    with refused("bad_chain"):
        w.verify(w.root, w.policy(OPERATOR))
    # A genuine chain, but the pin was then set to another key by hand.
    w.admit(w.root, token=w.token(w.root), rotations=(first,), pin=w.sybil.public_key_b64)
    with refused("bad_chain") as e:
        w.verify(w.root, w.policy(OPERATOR))
    assert "pinned key" in str(e.value)


def test_a_proof_made_by_a_later_key_of_the_chain_verifies(w: World) -> None:
    # How a rotated node replaces a proof that stopped verifying: it registers again.
    first = make_rotation(w.root, w.member, w.now)
    w.admit(w.member, node_id=w.root.node_id, token=w.token(w.root), rotations=(first,))
    assert w.verify(w.root, w.policy(OPERATOR)).pinned_key == w.member.public_key_b64


# -- revocations ---------------------------------------------------------------------------


def test_only_an_operator_signed_revocation_of_that_id_holds(w: World) -> None:
    w.admit(w.root, token=w.token(w.root))
    policy = w.policy(ENDORSED)
    assert not revocation_holds(w.facts[w.root.node_id], policy, w.now)
    w.revoke(w.root, signer=w.sybil)
    assert not revocation_holds(w.facts[w.root.node_id], policy, w.now)
    w.revoke(w.root)
    assert revocation_holds(w.facts[w.root.node_id], policy, w.now)
    # The operator's revocation of root, stored under the member's id, revokes nobody else.
    w.admit(w.member)
    moved = replace(w.facts[w.member.node_id], revocation=w.facts[w.root.node_id].revocation)
    assert not revocation_holds(moved, policy, w.now)
    # A reader without an operator key honours no revocation (none could be checked).
    no_op = ProofPolicy.of(RegistryParams(admission=OPEN), None)
    assert not revocation_holds(w.facts[w.root.node_id], no_op, w.now)


# -- the memo ------------------------------------------------------------------------------


def test_memo_reuses_a_verdict_until_it_expires_and_rejudges_changed_records(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lamarck.registry.proofs as proofs

    w.admit(w.root, token=w.token(w.root))
    w.admit(w.member, endorsement=w.endorsement(w.root, w.member))
    policy = w.policy(ENDORSED, memo_ttl_s=5.0)
    memo = ProofMemo(policy.proof_params)
    calls: list[str] = []
    real = proofs._verify_uncached

    def counting(own: IdFacts, *a: Any, **kw: Any) -> VerifiedProof:
        calls.append(own.node_id)
        return real(own, *a, **kw)

    monkeypatch.setattr(proofs, "_verify_uncached", counting)
    w.verify(w.member, policy, memo=memo)
    w.verify(w.member, policy, memo=memo)
    assert calls == [w.member.node_id, w.root.node_id]
    # A changed record is a new key: judged again at once (and refused: wrong id).
    w.facts[w.member.node_id] = replace(
        w.facts[w.member.node_id], admission=w.facts[w.root.node_id].admission
    )
    with refused("wrong_id"):
        w.verify(w.member, policy, memo=memo)
    with refused("wrong_id"):
        w.verify(w.member, policy, memo=memo)
    assert calls[2:] == [w.member.node_id]
    w.clock.advance(5.0)
    w.verify(w.root, policy, memo=memo)
    assert calls[3:] == [w.root.node_id]


def test_memo_stays_bounded_under_a_flood_of_ids(w: World) -> None:
    memo = ProofMemo(ProofParams(memo_max_entries=3))
    for i in range(10):
        memo.put(("x", str(i)), True, w.now)
        assert len(memo) <= 3


def test_proof_params_are_validated() -> None:
    for bad in (
        {"max_endorsement_depth": -1},
        {"memo_ttl_s": 0.0},
        {"memo_ttl_s": float("nan")},
        {"memo_max_entries": 0},
    ):
        with pytest.raises(ConfigError) as e:
            ProofParams(**bad)
        assert e.value.details["field"] == next(iter(bad))
