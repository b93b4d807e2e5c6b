"""Quorum validation on a node: RequestVote, the collection loop, certificates on the wire.

Each node is an import pipeline over an in-memory store with a fixed clock and seeded RNG;
voters answer through ``handle_request_vote`` over their own stores (the RequestVote handler
itself, without gRPC), Byzantine ones with votes they make up. Principals: every identity is
its own principal (open admission) unless a test groups keys under one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from importing_helpers import NOW

from lamarck.consensus.certificate import QuorumCertificate, certificate_bytes, parse_certificate
from lamarck.consensus.high_stakes import HighStakesRule
from lamarck.consensus.params import HighStakesParams, QuorumParams
from lamarck.consensus.votes import Verdict
from lamarck.domain.rows import LessonFilter, OutcomeRow
from lamarck.errors import InvalidRecord, VerificationError
from lamarck.node.api.peer_handlers import PublishDeps, handle_publish, handle_request_vote
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.view import StoreImportView
from lamarck.node.sharing.quorum import (
    CertificateChecker,
    QuorumCollector,
    QuorumLedger,
    network_view,
    peer_candidates,
    vote_from_wire,
    voter_reality_events,
)
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import DecisionReason, ImportOutcome, ImportParams
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.signed import SignedMemory
from lamarck.proto.v1 import peer_pb2, records_pb2
from lamarck.proto.vote import Vote
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand
from tests.factories import identity, signed_record, signed_vote, uid

T = TypeVar("T")
DIM = 32
OPERATION = "shell:vault rotate"
PARAMS = QuorumParams(voters=7, min_voters=4, vote_timeout_s=30.0, retry_after_s=60.0)

SOURCE = identity(0x10)
SELF = identity(0x11)
OTHER = identity(0x12)
VOTERS = tuple(identity(0x20 + k) for k in range(7))


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion."""
    return asyncio.run(coro)


def high_stakes_record(content: str = "Rotate the vault token before the deploy.") -> bytes:
    """A security-domain lesson (high-stakes) signed by SOURCE."""
    return signed_record(
        SOURCE,
        id=uid(77),
        content=content,
        context={"domain": "security", "environment": "prod"},
        lesson={"operation": OPERATION, "scope": "global", "status": "active"},
    ).raw


def _stable_number(text: str) -> int:
    """A 120-bit number from ``text``, the same in every run."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:15], "big")


class Events:
    """A ``ReputationSink`` that keeps what it is told."""

    def __init__(self) -> None:
        self.events: list[ReputationEvent] = []

    def emit(self, event: ReputationEvent) -> None:
        self.events.append(event)


class Pins:
    """Every test identity is registered under its own key."""

    def __init__(self) -> None:
        ids = (SOURCE, SELF, OTHER, *VOTERS)
        self.keys = {i.node_id: i.public_key_b64 for i in ids}

    async def pinned_key(self, node_id: str) -> str | None:
        return self.keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


class Principals:
    """Open admission: every known id is its own principal, unless grouped."""

    def __init__(self, groups: dict[str, str] | None = None) -> None:
        self.groups = groups or {}
        self.known = {i.node_id for i in (SOURCE, SELF, OTHER, *VOTERS)}

    async def __call__(self, ids: Sequence[str]) -> dict[str, str]:
        return {i: self.groups.get(i, i) for i in ids if i in self.known}


class Node:
    """One node: store, pipeline, ledger, collector (voters answer through ``ask``)."""

    def __init__(self, identity: NodeIdentity, tmp: Path | None = None) -> None:
        self.identity = identity
        self.clock = FixedClock(NOW)
        self.store = InMemoryLessonStore(dim=DIM)
        self.events = Events()
        self.ledger = QuorumLedger(tmp)
        self.principals = Principals()
        self.view = StoreImportView(self.store, self, identity.node_id)
        self.pipeline = ImportPipeline(
            store=self.store,
            view=self.view,
            pins=Pins(),
            reputation=self.events,
            embedder=HashingEmbedder(dim=DIM),
            clock=self.clock,
            rng=random.Random(3),
            params=ImportParams(reputation=ReputationParams()),
            certificates=CertificateChecker(
                lambda also: network_view([identity.node_id, *self.peers], also, self.principals),
                PARAMS,
                self.ledger,
            ),
        )
        self.ask: Callable[[str, bytes, str], Coroutine[Any, Any, Vote | None]] = self._no_vote
        #: The live peers (this node's view of the network, with itself).
        self.peers: list[str] = [v.node_id for v in VOTERS] + [SOURCE.node_id]
        #: (peer, domain) -> expertise this node's reputation book holds (none: unknown).
        self.expertise: dict[tuple[str, str], float] = {}
        self.collector = QuorumCollector(
            self.store,
            lambda: self.pipeline,
            self.ledger,
            clock=self.clock,
            rng=random.Random(5),
            params=PARAMS,
            reputation=ReputationParams(),
            ask=lambda v, raw, r: self.ask(v, raw, r),
            candidates=lambda source, domain: peer_candidates(
                self.peers,
                source,
                self.principals,
                lambda _: PeerBand.NEUTRAL,
                lambda peer: self.expertise.get((peer, domain)),
            ),
            sink=self.events,
        )

    def score(self, node_id: str) -> float:
        return 0.5

    @staticmethod
    async def _no_vote(voter: str, raw: bytes, round_id: str) -> Vote | None:
        return None


class Voter:
    """A voter node: its own store of outcomes, answering RequestVote by the real handler."""

    def __init__(self, identity: NodeIdentity, outcomes: Sequence[bool]) -> None:
        self.identity = identity
        self.store = InMemoryLessonStore(dim=DIM)
        self.outcomes = outcomes

    async def fill(self) -> None:
        for k, passed in enumerate(self.outcomes):
            step = {"operation_key": OPERATION, "outcome": "ok" if passed else "failed"}
            await self.store.insert_outcome(
                OutcomeRow(
                    # Stable across runs (a str hash is salted per process).
                    id=uid(_stable_number(f"{self.identity.node_id}:{k}")),
                    session_id="s",
                    turn_index=k,
                    project="p",
                    passed=passed,
                    claim_ok=True,
                    created_at=NOW - timedelta(hours=1),
                    record={"approach": [step]},
                )
            )

    async def vote(self, raw: bytes) -> Vote | None:
        reply = await handle_request_vote(
            peer_pb2.RequestVoteRequest(
                memory=records_pb2.SignedRecord(
                    kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw
                ),
                requester_node_id=SELF.node_id,
            ),
            store=self.store,
            identity=self.identity,
            now=NOW,
            rng=random.Random(self.identity.node_id),
            params=PARAMS,
            max_future_skew_s=300.0,
        )
        return vote_from_wire(bytes(reply.vote.canonical_json))


def made_up_vote(who: NodeIdentity, verdict: Verdict, raw: bytes, *, n: int = 0) -> Vote:
    """A vote ``who`` signs whatever its evidence (a Byzantine voter)."""
    signed = SignedMemory.from_json(raw)
    return signed_vote(
        who,
        verdict,
        memory_id=signed.memory.id,
        memory_hash=signed.content_hash,
        at=NOW,
        confidence=1.0,
        id=uid(9000 + n),
        outcome_ids=[uid(9100 + n)],
    )


def forged_in_name_of(victim: NodeIdentity, by: NodeIdentity, verdict: Verdict, raw: bytes) -> Vote:
    """A vote naming ``victim`` but signed by ``by``."""
    obj = made_up_vote(by, verdict, raw, n=50).to_obj()
    obj["voter_id"] = victim.node_id
    return Vote.from_obj(obj)


async def quarantined(node: Node, raw: bytes) -> None:
    result = await node.pipeline.import_record(
        raw, source=ImportSource.PEER, via_node_id=SOURCE.node_id
    )
    assert result.outcome is ImportOutcome.QUARANTINE
    assert result.reasons == ("awaiting_quorum",)


def honest_and_byzantine(outcomes: bool) -> tuple[list[Voter], dict[str, Verdict]]:
    """Five honest voters whose outcomes all passed (or failed), two Byzantine ones voting the
    other way."""
    honest = [Voter(v, [outcomes, outcomes]) for v in VOTERS[:5]]
    lie = Verdict.CONTRADICT if outcomes else Verdict.VALIDATE
    return honest, {v.node_id: lie for v in VOTERS[5:]}


# -- RequestVote -------------------------------------------------------------------------------


def test_a_voter_with_passing_outcomes_on_the_operation_validates_with_its_evidence() -> None:
    voter = Voter(VOTERS[0], [True, True, False])
    run(voter.fill())
    vote = run(voter.vote(high_stakes_record()))
    assert vote is not None and vote.verdict == "confirm"
    assert len(vote.outcome_ids) == 2
    assert vote.voter_id == VOTERS[0].node_id
    assert vote.memory_hash == SignedMemory.from_json(high_stakes_record()).content_hash


def test_a_voter_with_failing_outcomes_contradicts() -> None:
    voter = Voter(VOTERS[1], [False, False])
    run(voter.fill())
    vote = run(voter.vote(high_stakes_record()))
    assert vote is not None and vote.verdict == "contradict"


def test_holding_the_same_lesson_is_not_evidence_so_the_voter_abstains() -> None:
    voter = Voter(VOTERS[2], [])
    node = Node(VOTERS[2])
    # The voter holds the very lesson (imported), but has no outcome of its own on it.
    run(node.pipeline.import_record(high_stakes_record(), source=ImportSource.BUNDLE))
    voter.store = node.store
    vote = run(voter.vote(high_stakes_record()))
    assert vote is not None and vote.verdict == "abstain" and vote.outcome_ids == ()


def test_request_vote_refuses_a_memory_whose_signature_does_not_hold() -> None:
    raw = bytearray(high_stakes_record())
    raw[raw.index(b"Rotate")] = ord("r")
    voter = Voter(VOTERS[0], [True])
    with pytest.raises((VerificationError, InvalidRecord)) as caught:
        run(voter.vote(bytes(raw)))
    assert getattr(caught.value, "reason", "") in {"bad_signature", "hash_mismatch"}


# -- the collection loop -------------------------------------------------------------------------


def _collect(
    node: Node,
    honest: list[Voter],
    byz: dict[str, Verdict],
    forge: dict[str, NodeIdentity] | None = None,
) -> None:
    """Wire ``node.ask``: honest voters answer by the RequestVote handler over their outcomes;
    Byzantine ones sign their fixed verdict whatever the evidence, or (``forge``) answer with a
    vote made in an honest voter's name."""
    for v in honest:
        run(v.fill())
    by_id = {v.identity.node_id: v for v in honest}
    keys = {v.node_id: v for v in VOTERS}

    async def ask(voter: str, raw: bytes, round_id: str) -> Vote | None:
        if forge and voter in forge:
            return forged_in_name_of(forge[voter], keys[voter], Verdict.CONTRADICT, raw)
        if voter in by_id:
            return await by_id[voter].vote(raw)
        return made_up_vote(keys[voter], byz[voter], raw)

    node.ask = ask


def test_five_honest_validations_accept_despite_two_byzantine_contradictions(
    tmp_path: Path,
) -> None:
    node = Node(SELF, tmp_path / "quorum")
    raw = high_stakes_record()
    run(quarantined(node, raw))
    honest, byz = honest_and_byzantine(True)
    _collect(node, honest, byz)
    assert run(node.collector.once()) == 1
    [row] = run(node.store.list_quarantine(state=None))
    assert row.state == "approved"
    [lesson] = run(node.store.list_lessons(LessonFilter(imported=True)))
    assert lesson.content_hash == row.content_hash
    entry = node.ledger.entry(row.content_hash)
    assert entry is not None and entry.state == "accepted"
    assert entry.counts["validate"] == 5 and entry.counts["contradict"] == 2
    cert = node.ledger.certificate(row.content_hash)
    assert cert is not None and len(cert.votes) == 7
    events = run(node.store.lesson_events([row.id]))
    assert [(e.kind, e.actor) for e in events] == [("approved", "quorum")]
    # Nothing more to ask: the row is decided.
    assert run(node.collector.once()) == 0
    # The ledger survives a restart (read back from the home).
    again = QuorumLedger(tmp_path / "quorum")
    assert again.load() == 1
    assert again.certificate_bytes(row.content_hash) == node.ledger.certificate_bytes(
        row.content_hash
    )


def test_five_honest_contradictions_reject_despite_two_byzantine_validations() -> None:
    node = Node(SELF)
    raw = high_stakes_record("Disable the vault audit log to speed up deploys.")
    run(quarantined(node, raw))
    honest, byz = honest_and_byzantine(False)
    _collect(node, honest, byz)
    run(node.collector.once())
    [row] = run(node.store.list_quarantine(state=None))
    assert row.state == "rejected"
    assert run(node.store.list_lessons(LessonFilter(imported=True))) == []
    [event] = run(node.store.lesson_events([row.id]))
    assert event.kind == "rejected" and event.actor == "quorum"
    assert "contradicted" in event.reason
    charged = [e for e in node.events.events if e.node_id == SOURCE.node_id]
    assert [e.kind for e in charged] == [EventKind.REJECTED]


def test_without_evidence_the_round_stays_pending_and_is_retried_on_schedule() -> None:
    node = Node(SELF)
    raw = high_stakes_record()
    run(quarantined(node, raw))
    abstainers = [Voter(v, []) for v in VOTERS]
    _collect(node, abstainers, {})
    assert run(node.collector.once()) == 1
    [row] = run(node.store.list_quarantine(state=None))
    assert row.state == "pending"
    entry = node.ledger.entry(row.content_hash)
    assert entry is not None and entry.reason == "awaiting_votes"
    assert entry.next_at == NOW + timedelta(seconds=PARAMS.retry_after_s)
    assert run(node.collector.once()) == 0  # not due yet
    node.clock.advance(PARAMS.retry_after_s)
    assert run(node.collector.once()) == 1
    assert node.ledger.entry(row.content_hash).rounds == 2  # type: ignore[union-attr]


def test_timeouts_leave_the_record_pending_and_never_in_the_store() -> None:
    node = Node(SELF)
    run(quarantined(node, high_stakes_record()))
    # node.ask answers nothing at all (every voter timed out).
    run(node.collector.once())
    [row] = run(node.store.list_quarantine(state=None))
    assert row.state == "pending"
    assert run(node.store.list_lessons(LessonFilter(statuses=None, imported=True))) == []


def test_too_few_eligible_voters_form_no_quorum() -> None:
    node = Node(SELF)
    # One voter besides the source: a certificate is never one voter's word.
    node.peers = [VOTERS[0].node_id, SOURCE.node_id]
    run(quarantined(node, high_stakes_record()))
    assert run(node.collector.once()) == 1
    entry = node.ledger.entry(SignedMemory.from_json(high_stakes_record()).content_hash)
    assert entry is not None and entry.reason == "too_few_voters"
    assert SOURCE.node_id not in entry.voters


def test_experts_in_the_records_domain_are_asked_first() -> None:
    node = Node(SELF)
    # Three of seven candidates proved themselves in security; the quorum asks only four.
    node.collector.params = replace(PARAMS, voters=4)
    experts = {v.node_id for v in VOTERS[4:]}
    node.expertise = {(peer, "security"): 0.9 for peer in experts}
    # Expert elsewhere counts for nothing here.
    node.expertise[(VOTERS[0].node_id, "frontend")] = 0.95
    run(quarantined(node, high_stakes_record()))
    run(node.collector.once())
    entry = node.ledger.entry(SignedMemory.from_json(high_stakes_record()).content_hash)
    assert entry is not None and len(entry.voters) == 4
    assert experts <= set(entry.voters)


def test_many_keys_of_one_principal_count_as_one_voter() -> None:
    node = Node(SELF)
    # Four of the seven voter keys answer to one principal: three distinct principals are
    # left besides it, four voters in all.
    owner = "operator-key-of-mallory"
    node.principals.groups = {v.node_id: owner for v in VOTERS[3:]}
    run(quarantined(node, high_stakes_record()))
    honest = [Voter(v, [True]) for v in VOTERS]
    _collect(node, honest, {})
    run(node.collector.once())
    entry = node.ledger.entry(SignedMemory.from_json(high_stakes_record()).content_hash)
    assert entry is not None
    assert len(entry.voters) == 4
    assert sum(1 for v in entry.voters if v in {x.node_id for x in VOTERS[3:]}) == 1


# -- certificates on the wire --------------------------------------------------------------------


def _accepted_elsewhere(tmp_path: Path) -> tuple[bytes, bytes]:
    node = Node(OTHER, tmp_path / "other")
    raw = high_stakes_record()
    run(quarantined(node, raw))
    honest, byz = honest_and_byzantine(True)
    _collect(node, honest, byz)
    run(node.collector.once())
    cert = node.ledger.certificate_bytes(SignedMemory.from_json(raw).content_hash)
    assert cert is not None
    return raw, cert


def test_a_certificate_made_on_one_node_is_accepted_on_another_without_asking(
    tmp_path: Path,
) -> None:
    raw, cert = _accepted_elsewhere(tmp_path)
    receiver = Node(SELF)
    asked: list[str] = []

    async def ask(voter: str, raw: bytes, round_id: str) -> Vote | None:
        asked.append(voter)
        return None

    receiver.ask = ask
    result = run(
        receiver.pipeline.import_record(
            raw, source=ImportSource.PEER, via_node_id=OTHER.node_id, certificate=cert
        )
    )
    assert result.outcome is ImportOutcome.ACCEPT and result.certified
    assert receiver.ledger.certificate_bytes(result.content_hash) == cert
    assert run(receiver.collector.once()) == 0
    assert asked == []


def test_a_certificate_promotes_a_copy_already_held_awaiting_its_quorum(tmp_path: Path) -> None:
    raw, cert = _accepted_elsewhere(tmp_path)
    receiver = Node(SELF)
    run(quarantined(receiver, raw))
    result = run(
        receiver.pipeline.import_record(
            raw, source=ImportSource.SYNC, via_node_id=OTHER.node_id, certificate=cert
        )
    )
    assert result.outcome is ImportOutcome.ACCEPT and result.certified
    [row] = run(receiver.store.list_quarantine(state=None))
    assert row.state == "approved"


def test_a_certificate_with_too_few_valid_votes_is_refused_with_its_reason(
    tmp_path: Path,
) -> None:
    raw, cert = _accepted_elsewhere(tmp_path)
    parsed = parse_certificate(cert)
    validating = [v for v in parsed.votes if v.verdict == "confirm"]
    # Keep four VALIDATE votes, and duplicate one of them: still four distinct ones, need five.
    thin = QuorumCertificate(
        record_hash=parsed.record_hash,
        voters=parsed.voters,
        opened_at=parsed.opened_at,
        closes_at=parsed.closes_at,
        votes=(*validating[:4], validating[0]),
    )
    receiver = Node(SELF)
    result = run(
        receiver.pipeline.import_record(
            raw,
            source=ImportSource.PEER,
            via_node_id=OTHER.node_id,
            certificate=certificate_bytes(thin),
        )
    )
    assert result.outcome is ImportOutcome.QUARANTINE
    assert result.reasons == ("awaiting_quorum",)
    assert result.certificate_error is not None
    assert result.certificate_error.reason == "too_few_votes"
    assert not result.certified


def test_a_certificate_with_a_forged_vote_does_not_verify(tmp_path: Path) -> None:
    raw, cert = _accepted_elsewhere(tmp_path)
    parsed = parse_certificate(cert)
    validating = [v for v in parsed.votes if v.verdict == "confirm"]
    forged = forged_in_name_of(VOTERS[0], VOTERS[6], Verdict.VALIDATE, raw)
    votes = (*(v for v in validating if v.voter_id != VOTERS[0].node_id), forged)
    bad = QuorumCertificate(
        parsed.record_hash, parsed.voters, parsed.opened_at, parsed.closes_at, votes
    )
    receiver = Node(SELF)
    result = run(
        receiver.pipeline.import_record(
            raw,
            source=ImportSource.PEER,
            via_node_id=OTHER.node_id,
            certificate=certificate_bytes(bad),
        )
    )
    assert result.outcome is ImportOutcome.QUARANTINE
    assert result.certificate_error is not None
    assert result.certificate_error.reason == "too_few_votes"


def test_publish_acks_a_certificate_next_to_its_memory(tmp_path: Path) -> None:
    raw, cert = _accepted_elsewhere(tmp_path)
    receiver = Node(SELF)
    request = peer_pb2.PublishRequest(
        records=[
            records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw),
            records_pb2.SignedRecord(
                kind=records_pb2.RECORD_KIND_QUORUM_CERTIFICATE, canonical_json=cert
            ),
            records_pb2.SignedRecord(
                kind=records_pb2.RECORD_KIND_QUORUM_CERTIFICATE,
                canonical_json=canonical_bytes({"record_hash": "ef" * 32}),
            ),
        ],
        sender_node_id=OTHER.node_id,
    )
    reply = run(handle_publish(request, PublishDeps(pipeline=receiver.pipeline)))
    assert [a.index for a in reply.acks] == [0, 1, 2]
    assert [a.status for a in reply.acks] == [
        records_pb2.ACK_STATUS_ACCEPTED,
        records_pb2.ACK_STATUS_ACCEPTED,
        records_pb2.ACK_STATUS_REJECTED,
    ]
    assert reply.acks[2].reason == "orphan_certificate"


# -- accountability ------------------------------------------------------------------------------


def test_reality_on_an_accepted_lesson_judges_each_voter_by_its_vote(tmp_path: Path) -> None:
    node = Node(SELF)
    raw = high_stakes_record()
    run(quarantined(node, raw))
    honest, byz = honest_and_byzantine(True)
    _collect(node, honest, byz)
    run(node.collector.once())
    content_hash = SignedMemory.from_json(raw).content_hash
    reality = ReputationEvent(
        kind=EventKind.LESSON_CONFIRMED,
        node_id=SOURCE.node_id,
        at=NOW + timedelta(days=1),
        record_hash=content_hash,
    )
    events = voter_reality_events([reality], node.ledger)
    kinds = {e.node_id: e.kind for e in events}
    assert {kinds[v.node_id] for v in VOTERS[:5]} == {EventKind.VOTE_RIGHT}
    assert {kinds[v.node_id] for v in VOTERS[5:]} == {EventKind.VOTE_WRONG}
    other = ReputationEvent(
        kind=EventKind.LESSON_CONFIRMED, node_id=SOURCE.node_id, at=NOW, record_hash="00" * 32
    )
    assert voter_reality_events([other], node.ledger) == ()
    assert voter_reality_events([reality], None) == ()


def test_quorum_description_lists_votes_and_whether_each_counted(tmp_path: Path) -> None:
    node = Node(SELF)
    raw = high_stakes_record()
    run(quarantined(node, raw))
    honest, byz = honest_and_byzantine(True)
    _collect(node, honest, byz)
    run(node.collector.once())
    described = json.loads(node.ledger.describe(SignedMemory.from_json(raw).content_hash))
    assert described["state"] == "accepted"
    assert len(described["votes"]) == 7
    assert all(v["counted"] for v in described["votes"])
    assert described["certificate"]["record_hash"] == SignedMemory.from_json(raw).content_hash
    assert node.ledger.describe("00" * 32) == ""


def test_votes_forged_in_honest_voters_names_count_for_nothing() -> None:
    node = Node(SELF)
    raw = high_stakes_record()
    run(quarantined(node, raw))
    honest = [Voter(v, [True, True]) for v in VOTERS[:5]]
    # Both Byzantine voters answer with a CONTRADICT signed by themselves in someone else's
    # name: forged, so they count for nothing, and five honest VALIDATE still accept.
    _collect(node, honest, {}, forge={VOTERS[5].node_id: VOTERS[0], VOTERS[6].node_id: VOTERS[1]})
    run(node.collector.once())
    entry = node.ledger.entry(SignedMemory.from_json(raw).content_hash)
    assert entry is not None and entry.state == "accepted"
    assert sorted(v["ignored"] for v in entry.votes if not v["counted"]) == ["forged", "forged"]


# -- certificates judged by this node's view of the whole network ------------------------------

#: One live peer per principal besides the voters: the rest of a ten-principal network.
BYSTANDERS = tuple(f"lmk1bystander{p}" for p in range(10))


def ten_principal_network(node: Node, **groups: Sequence[NodeIdentity]) -> None:
    """The node's registry: SOURCE under op0, VOTERS[k] under op{k+1}, SELF and OTHER under op8
    and op9, a bystander live peer under each; ``groups`` puts identities under one principal
    (a name given as a keyword: ``op0`` is the source's)."""
    principals = node.principals
    principals.known |= set(BYSTANDERS)
    principals.groups = {SOURCE.node_id: "op0", SELF.node_id: "op8", OTHER.node_id: "op9"}
    principals.groups |= {v.node_id: f"op{k + 1}" for k, v in enumerate(VOTERS)}
    principals.groups |= {b: f"op{p}" for p, b in enumerate(BYSTANDERS)}
    for name, members in groups.items():
        principals.groups |= {m.node_id: name for m in members}
    node.peers = [*BYSTANDERS, *(v.node_id for v in VOTERS), SOURCE.node_id]


def made_up_certificate(raw: bytes, voters: Sequence[NodeIdentity]) -> bytes:
    """A certificate of VALIDATE votes its maker had ``voters`` sign, whatever the evidence."""
    content_hash = SignedMemory.from_json(raw).content_hash
    return certificate_bytes(
        QuorumCertificate(
            record_hash=content_hash,
            voters=tuple(sorted(v.node_id for v in voters)),
            opened_at=NOW,
            closes_at=NOW + timedelta(seconds=PARAMS.vote_timeout_s),
            votes=tuple(made_up_vote(v, Verdict.VALIDATE, raw, n=k) for k, v in enumerate(voters)),
        )
    )


def published_with(node: Node, raw: bytes, cert: bytes) -> str:
    """Publish the record and its certificate to ``node`` (the peer path); the certificate's
    ack reason. The record must be held awaiting a quorum, nothing stored."""
    request = peer_pb2.PublishRequest(
        records=[
            records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw),
            records_pb2.SignedRecord(
                kind=records_pb2.RECORD_KIND_QUORUM_CERTIFICATE, canonical_json=cert
            ),
        ],
        sender_node_id=SOURCE.node_id,
    )
    reply = run(handle_publish(request, PublishDeps(pipeline=node.pipeline)))
    assert reply.acks[1].status == records_pb2.ACK_STATUS_REJECTED
    [row] = run(node.store.list_quarantine(state=None))
    assert row.state == "pending" and DecisionReason.AWAITING_QUORUM in row.reasons
    assert run(node.store.list_lessons(LessonFilter(statuses=None, imported=True))) == []
    assert node.ledger.certificate(row.content_hash) is None
    return reply.acks[1].reason


def test_four_keys_of_the_sources_principal_do_not_certify_in_a_ten_principal_network() -> None:
    node = Node(SELF)
    ten_principal_network(node, op0=VOTERS[:4])
    raw = high_stakes_record()
    assert published_with(node, raw, made_up_certificate(raw, VOTERS[:4])) == "source_voted"


def test_four_keys_admitted_by_the_sources_operator_do_not_certify() -> None:
    node = Node(SELF)
    ten_principal_network(node, operator_key_a=(SOURCE, *VOTERS[:4]))
    raw = high_stakes_record()
    assert published_with(node, raw, made_up_certificate(raw, VOTERS[:4])) == "source_voted"


def test_three_keys_of_one_principal_and_one_honest_voter_do_not_certify() -> None:
    node = Node(SELF)
    ten_principal_network(node, mallory=VOTERS[:3])
    raw = high_stakes_record()
    cert = made_up_certificate(raw, VOTERS[:4])
    assert published_with(node, raw, cert) == "shared_principal"


def test_the_sources_principal_voting_through_an_endorsed_key_does_not_certify() -> None:
    node = Node(SELF)
    # VOTERS[3] was minted by an identity of the source's principal: it is op0's.
    ten_principal_network(node, op0=VOTERS[3:4])
    raw = high_stakes_record()
    assert published_with(node, raw, made_up_certificate(raw, VOTERS[:4])) == "source_voted"


def test_a_certificate_of_the_other_principals_of_a_small_network_is_believed() -> None:
    # Four principals: the source's (with VOTERS[0]), B, C and D. The three besides the
    # source's are a quorum, unanimous.
    node = Node(SELF)
    node.principals.groups = {SOURCE.node_id: "A", VOTERS[0].node_id: "A"}
    node.principals.groups |= {VOTERS[1].node_id: "B", VOTERS[2].node_id: "B"}
    node.principals.groups |= {VOTERS[3].node_id: "C", SELF.node_id: "D"}
    node.peers = [v.node_id for v in VOTERS[:4]] + [SOURCE.node_id]
    raw = high_stakes_record()
    result = run(
        node.pipeline.import_record(
            raw,
            source=ImportSource.PEER,
            via_node_id=SOURCE.node_id,
            certificate=made_up_certificate(raw, (VOTERS[1], VOTERS[3], SELF)),
        )
    )
    assert result.outcome is ImportOutcome.ACCEPT and result.certified


def test_a_quorum_decides_in_a_network_of_four_principals(tmp_path: Path) -> None:
    # The source's principal A also holds VOTERS[0]; B holds VOTERS[1..2] and OTHER; C
    # VOTERS[3..4]; D VOTERS[5..6] and this node. Three principals besides the source's: a
    # quorum of three, one voter each, all with passing outcomes of their own.
    node = Node(SELF, tmp_path / "quorum")
    groups = {SOURCE.node_id: "A", VOTERS[0].node_id: "A", OTHER.node_id: "B", SELF.node_id: "D"}
    for k, name in ((1, "B"), (2, "B"), (3, "C"), (4, "C"), (5, "D"), (6, "D")):
        groups[VOTERS[k].node_id] = name
    node.principals.groups = groups
    raw = high_stakes_record()
    run(quarantined(node, raw))
    _collect(node, [Voter(v, [True, True]) for v in VOTERS], {})
    run(node.collector.once())
    content_hash = SignedMemory.from_json(raw).content_hash
    entry = node.ledger.entry(content_hash)
    assert entry is not None and entry.state == "accepted", entry
    assert len(entry.voters) == 3 and VOTERS[0].node_id not in entry.voters
    assert entry.counts["validate"] == 3 and entry.counts["accept_at"] == 3
    [lesson] = run(node.store.list_lessons(LessonFilter(imported=True)))
    assert lesson.content_hash == content_hash
    # Another node of the same network believes the certificate without asking anyone.
    other = Node(OTHER)
    other.principals.groups = groups
    cert = node.ledger.certificate_bytes(content_hash)
    assert cert is not None
    again = run(
        other.pipeline.import_record(
            raw, source=ImportSource.PEER, via_node_id=SELF.node_id, certificate=cert
        )
    )
    assert again.outcome is ImportOutcome.ACCEPT and again.certified


def test_in_a_small_network_one_voter_against_the_others_decides_nothing() -> None:
    node = Node(SELF)
    groups = {SOURCE.node_id: "A", VOTERS[0].node_id: "B", VOTERS[1].node_id: "C"}
    node.principals.groups = groups | {VOTERS[2].node_id: "D", SELF.node_id: "D"}
    node.peers = [v.node_id for v in VOTERS[:3]] + [SOURCE.node_id]
    raw = high_stakes_record()
    run(quarantined(node, raw))
    # Two voters' outcomes confirm, a third contradicts (a liar, or its own bad luck): the
    # round tolerates no fault, so it stays pending and the source is not charged.
    _collect(node, [Voter(v, [True]) for v in VOTERS[:2]], {VOTERS[2].node_id: Verdict.CONTRADICT})
    run(node.collector.once())
    [row] = run(node.store.list_quarantine(state=None))
    assert row.state == "pending"
    assert node.events.events == []
    # All three contradicting reject it.
    other = Node(SELF)
    other.principals.groups = node.principals.groups
    other.peers = node.peers
    run(quarantined(other, raw))
    _collect(other, [Voter(v, [False]) for v in VOTERS[:3]], {})
    run(other.collector.once())
    [row] = run(other.store.list_quarantine(state=None))
    assert row.state == "rejected"


def test_a_lesson_high_stakes_by_its_confidence_alone_is_decided_in_a_small_network() -> None:
    # A lesson its source grew surer of (0.9, an ordinary domain) waits for a quorum: in a
    # network of four principals the three besides the source's decide it.
    signed = signed_record(
        SOURCE,
        id=uid(78),
        content="Run the staged vault rotation before the deploy.",
        confidence=0.9,
        context={"domain": "build", "environment": "prod"},
        lesson={"operation": OPERATION, "scope": "global", "status": "active"},
    )
    raw = signed.raw
    assert HighStakesRule(HighStakesParams()).reasons(signed.memory) == ("high_confidence",)
    node = Node(SELF)
    node.principals.groups = {SOURCE.node_id: "A", VOTERS[0].node_id: "B", SELF.node_id: "B"}
    node.principals.groups |= {VOTERS[1].node_id: "C", VOTERS[2].node_id: "D"}
    node.peers = [v.node_id for v in VOTERS[:3]] + [SOURCE.node_id]
    run(quarantined(node, raw))
    _collect(node, [Voter(v, [True]) for v in VOTERS[:3]], {})
    run(node.collector.once())
    [row] = run(node.store.list_quarantine(state=None))
    assert row.state == "approved"
