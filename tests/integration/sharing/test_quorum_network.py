"""Quorum validation over a real network: seven real nodes, two Byzantine voters beside them.

Real node processes on one Redis registry (open admission): the source S, the receiver R
that puts high-stakes records to a quorum, five honest voters H1..H5 (their own outcomes on
the lesson's operation are their only evidence), and, later, a second receiver R2. Two
Byzantine voters run in this process as registered peers serving ``RequestVote``: B1 always
votes against the honest evidence (CONTRADICT a true lesson, VALIDATE a false one), B2
answers with a vote it signs in an honest voter's name (a forgery) and, on the false lesson,
with two votes of opposite verdicts. n = 7 voters tolerate f = 2: the decision must be the
honest evidence's.

The records are signed with S's own key (read from its home) and handed to R as a bundle
(the same pipeline as gossip). A certificate made on R verifies on R2, which receives the
record with it by Sync and stores it without asking anyone.

The second test closes the network (``endorsed`` admission under an operator key): five
Byzantine keys, all endorsed by one root and so of one principal, vote against the honest
evidence beside three honest voters of three other principals. The receiver asks one of the
five keys and counts one voter for them: the decision is again the honest evidence's.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from conftest import REDIS_URL, Net, imported, outcome, wait_for

import lamarck
from lamarck.client import Client
from lamarck.consensus.votes import Verdict
from lamarck.node.sharing import ENROLLMENT_FILE
from lamarck.operator import OperatorClient
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import identity_path, init_keys, load_private_key
from lamarck.proto.signed import SignedMemory
from lamarck.proto.tls import make_tls
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc, records_pb2
from lamarck.registry.client import RegistryClient
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    Endorsement,
    EnrollmentToken,
    sign_endorsement,
    sign_enrollment,
)
from lamarck.registry.redis_directory import RedisPeerDirectory
from tests.factories import signed_record, signed_vote, uid

pytestmark = pytest.mark.integration

TRUE_OP = "shell:vault rotate --staged"
FALSE_OP = "shell:vault seal --skip-audit"
#: Bound on a quorum decision: the collection loop runs every 5 s, a round ends by its timeout.
DECISION_TIMEOUT_S = 120.0


def _vote(
    signer: NodeIdentity, voter_id: str, memory: dict[str, Any], verdict: Verdict, n: int
) -> bytes:
    signed = signed_vote(
        signer,
        verdict,
        memory_id=memory["id"],
        memory_hash=memory["hash"],
        at=datetime.now(UTC),
        confidence=1.0,
        id=str(uuid.uuid4()),
        outcome_ids=[uid(n + 1)],
    ).to_obj()
    # A forgery names someone else after signing: the signature no longer binds.
    signed["voter_id"] = voter_id
    return canonical_bytes(signed)


class Byzantine(peer_pb2_grpc.PeerServiceServicer):
    """A registered peer whose RequestVote lies (see the module doc)."""

    def __init__(self, identity: NodeIdentity, mode: str, honest_ids: list[str]) -> None:
        self.identity = identity
        self.mode = mode
        self.honest_ids = honest_ids
        self.asked = 0

    async def RequestVote(
        self, request: peer_pb2.RequestVoteRequest, context: Any
    ) -> peer_pb2.RequestVoteResponse:
        self.asked += 1
        raw = bytes(request.memory.canonical_json)
        signed = SignedMemory.from_json(raw)
        memory = {"id": signed.memory.id, "hash": signed.content_hash}
        op = signed.memory.lesson.operation if signed.memory.lesson else ""
        against = Verdict.CONTRADICT if op == TRUE_OP else Verdict.VALIDATE
        voter = self.identity.node_id
        if self.mode == "forge":
            voter = self.honest_ids[0]
        vote = _vote(self.identity, voter, memory, against, self.asked)
        return peer_pb2.RequestVoteResponse(
            vote=records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_VOTE, canonical_json=vote)
        )


class ByzantineNet:
    """Byzantine voters (one per mode; by default the two of the module doc) served and kept
    registered from a thread of this process.

    On an open network each is its own principal. Given an ``endorser`` (an identity admitted
    on an ``endorsed`` network under ``operator_public_key``), each is admitted by an
    endorsement of that endorser: all of them are keys of one principal.
    """

    def __init__(
        self,
        namespace: str,
        honest_ids: list[str],
        modes: tuple[str, ...] = ("against", "forge"),
        *,
        seed: int = 0x60,
        operator_public_key: str | None = None,
        endorser: NodeIdentity | None = None,
    ) -> None:
        self.namespace = namespace
        self.voters = [
            Byzantine(NodeIdentity.from_seed(bytes([seed + k]) * 32), mode, honest_ids)
            for k, mode in enumerate(modes)
        ]
        self._operator_key = operator_public_key
        self._endorser = endorser
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._stop = asyncio.Event()
        self._servers: list[grpc.aio.Server] = []

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)

    async def _start(self) -> None:
        mode = AdmissionMode.OPEN if self._endorser is None else AdmissionMode.ENDORSED
        directory = _directory(self.namespace, mode, self._operator_key)
        clients = []
        for voter in self.voters:
            server = grpc.aio.server()
            peer_pb2_grpc.add_PeerServiceServicer_to_server(voter, server)
            # Over TLS with a certificate of its own, registered as a node's is (a liar
            # need not check who calls it).
            tls = make_tls(voter.identity.node_id, datetime.now(UTC))
            port = server.add_secure_port(
                "127.0.0.1:0", grpc.ssl_server_credentials([(tls.key_pem, tls.cert_pem)])
            )
            await server.start()
            self._servers.append(server)
            endorsement = None
            if self._endorser is not None:
                endorsement = _endorsement(self._endorser, voter.identity)
            client = RegistryClient(
                directory,
                voter.identity,
                address=f"127.0.0.1:{port}",
                domains=(),
                version=lamarck.__version__,
                mode=mode,
                clock=SystemClock(),
                endorsement=endorsement,
                tls_certificate=tls.cert_b64,
            )
            await client.tick()
            clients.append(client)
        self._beats = asyncio.ensure_future(self._beat(clients))

    async def _beat(self, clients: list[RegistryClient]) -> None:
        while True:
            await asyncio.sleep(5.0)
            for client in clients:
                await client.tick()

    def stop(self) -> None:
        async def _stop() -> None:
            self._beats.cancel()
            for server in self._servers:
                await server.stop(None)

        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def _directory(
    namespace: str, mode: AdmissionMode, operator_public_key: str | None
) -> RedisPeerDirectory:
    """A directory of ``namespace`` on the shared Redis, reading it as a node of it would."""
    return RedisPeerDirectory.from_url(
        REDIS_URL,
        namespace=namespace,
        params=RegistryParams(admission=mode),
        clock=SystemClock(),
        operator_public_key=operator_public_key,
    )


def _endorsement(endorser: NodeIdentity, endorsee: NodeIdentity) -> Endorsement:
    now = datetime.now(UTC)
    return sign_endorsement(
        endorser,
        endorsee_id=endorsee.node_id,
        endorsee_public_key=endorsee.public_key_b64,
        created_at=now - timedelta(minutes=1),
        expires_at=now + timedelta(hours=1),
    )


def _enrollment(operator: NodeIdentity, identity: NodeIdentity) -> EnrollmentToken:
    now = datetime.now(UTC)
    return sign_enrollment(
        operator,
        issued_at=now - timedelta(minutes=1),
        expires_at=now + timedelta(hours=1),
        node_id=identity.node_id,
        public_key=identity.public_key_b64,
    )


def _signed_lesson(source_home: Path, op: str, content: str) -> bytes:
    """A security-domain (high-stakes) lesson signed with the source node's own key."""
    return signed_record(
        load_private_key(identity_path(source_home)),
        id=str(uuid.uuid4()),
        created=datetime.now(UTC) - timedelta(minutes=1),
        outcome_id=str(uuid.uuid4()),
        content=content,
        context={"domain": "security", "environment": "prod", "-tools": None},
        lesson={"operation": op},
    ).raw


def _evidence(node: Any, op: str, passed: bool) -> None:
    """Two outcomes of the voter's own on ``op``."""
    with Client(node.agent_addr, timeout=20) as client:
        for k in range(2):
            client.record_outcome(
                outcome(
                    f"ev-{k}",
                    f"{k + 1:02x}" * 32,
                    [(op, "ok" if passed else "failed", "vault")],
                    passed=passed,
                )
            )


def _row(node: Any, content_hash: str) -> Any:
    with OperatorClient.from_home(node.home) as op:
        for entry in op.iter_quarantine(None):
            if entry.content_hash == content_hash:
                return entry
    return None


def _decided(node: Any, content_hash: str) -> Any:
    row = _row(node, content_hash)
    return row if row is not None and row.state != "pending" else None


@pytest.fixture
def byzantine(net: Net) -> Iterator[ByzantineNet]:
    """The two Byzantine voters, registered on the test's network before any node starts."""
    voters = ByzantineNet(net.namespace, [])
    voters.start()
    try:
        yield voters
    finally:
        voters.stop()


def test_seven_nodes_decide_by_the_honest_evidence_and_certificates_travel(
    net: Net, byzantine: ByzantineNet
) -> None:
    source = net.start()
    honest = [net.start() for _ in range(5)]
    byzantine.voters[1].honest_ids.append(honest[0].node_id)
    for voter in honest:
        _evidence(voter, TRUE_OP, passed=True)
        _evidence(voter, FALSE_OP, passed=False)
    # Started last, so its first registry round already lists every voter.
    receiver = net.start()
    true_raw = _signed_lesson(source.home, TRUE_OP, "Rotate vault tokens with --staged first.")
    false_raw = _signed_lesson(source.home, FALSE_OP, "Seal the vault with --skip-audit.")
    with Client(receiver.agent_addr, timeout=30) as client:
        result = client.import_bundle(true_raw + b"\n" + false_raw + b"\n")
    assert [a.reason for a in result.acks] == ["awaiting_quorum", "awaiting_quorum"]
    true_hash = SignedMemory.from_json(true_raw).content_hash
    false_hash = SignedMemory.from_json(false_raw).content_hash

    accepted = wait_for(
        lambda: _decided(receiver, true_hash), "the true lesson's quorum", DECISION_TIMEOUT_S
    )
    rejected = wait_for(
        lambda: _decided(receiver, false_hash), "the false lesson's quorum", DECISION_TIMEOUT_S
    )
    assert accepted.state == "approved"
    assert rejected.state == "rejected"
    assert all(v.asked >= 1 for v in byzantine.voters)

    with OperatorClient.from_home(receiver.home) as op:
        shown = op.show(accepted.id)
    quorum = json.loads(shown.quorum_json)
    assert quorum["state"] == "accepted"
    ignored = sorted(v["ignored"] for v in quorum["votes"] if not v["counted"])
    assert ignored == ["forged"]
    assert quorum["counts"]["validate"] == 5 and quorum["counts"]["contradict"] == 1

    # A second receiver gets the record with its certificate by Sync and stores it without
    # asking anyone (the Byzantine voters count every request they get).
    asked_before = [v.asked for v in byzantine.voters]
    late = net.start()

    record_id = SignedMemory.from_json(true_raw).memory.id
    wait_for(
        lambda: imported(late, record_id),
        "the certified record on the late node",
        DECISION_TIMEOUT_S,
    )
    assert _row(late, true_hash) is None  # never held: the certificate was enough
    assert [v.asked for v in byzantine.voters] == asked_before


# -- many keys of one principal ------------------------------------------------------------

#: Honest voters, each admitted under a principal of its own.
HONEST_PRINCIPALS = 3
#: Byzantine keys, all admitted under one principal. Counted by key they would outnumber the
#: honest voters (7 of these 8 asked: at least 4 CONTRADICT the true lesson, f + 1 = 3
#: reject it); counted by principal they are one voter of 4 (f = 1).
SYBIL_KEYS = 5


class Sybils:
    """An ``endorsed`` network's admission: the operator, one root per honest principal (token
    admitted, endorsing one honest node each), and the Byzantine keys endorsed by one more."""

    def __init__(
        self,
        operator: NodeIdentity,
        roots: list[NodeIdentity],
        principal: NodeIdentity,
        voters: ByzantineNet,
    ) -> None:
        self.operator = operator
        self.roots = roots
        self.principal = principal
        self.voters = voters

    @property
    def ids(self) -> set[str]:
        """The Byzantine keys' node ids."""
        return {v.identity.node_id for v in self.voters.voters}


async def _admit_roots(namespace: str, operator: NodeIdentity, roots: list[NodeIdentity]) -> None:
    """Admit ``roots`` by operator tokens, then unlist them: their admission proofs stay (so
    their endorsements hold) but they are no live peers, so nobody asks them anything."""
    directory = _directory(namespace, AdmissionMode.ENDORSED, operator.public_key_b64)
    try:
        for root in roots:
            client = RegistryClient(
                directory, root, address="127.0.0.1:1", domains=(), version=lamarck.__version__,
                mode=AdmissionMode.ENDORSED, clock=SystemClock(),
                enrollment_token=_enrollment(operator, root),
            )  # fmt: skip
            await client.register()
            await directory.deregister(root.node_id)
    finally:
        await directory.aclose()


async def _publish_endorsement(namespace: str, operator_key: str, endorsement: Endorsement) -> None:
    directory = _directory(namespace, AdmissionMode.ENDORSED, operator_key)
    try:
        await directory.endorse(endorsement)
    finally:
        await directory.aclose()


async def _principals(namespace: str, operator_key: str, ids: list[str]) -> dict[str, str]:
    directory = _directory(namespace, AdmissionMode.ENDORSED, operator_key)
    try:
        return await directory.principals(ids)
    finally:
        await directory.aclose()


def _enrolled_home(home: Path, operator: NodeIdentity) -> Path:
    """A node home whose first registration presents an operator token (``registry enroll``)."""
    identity = init_keys(home)
    (home / ENROLLMENT_FILE).write_text(json.dumps(_enrollment(operator, identity).wire()))
    return home


def _endorsed_home(home: Path, namespace: str, operator_key: str, root: NodeIdentity) -> Path:
    """A node home whose id ``root`` endorsed in the registry (``registry endorse``)."""
    identity = init_keys(home)
    asyncio.run(_publish_endorsement(namespace, operator_key, _endorsement(root, identity)))
    return home


@pytest.fixture
def sybils(net: Net) -> Iterator[Sybils]:
    """Close the test's network (``endorsed``) and register the Byzantine keys of one principal
    on it before any node starts."""
    operator = NodeIdentity.from_seed(bytes([0x40]) * 32)
    roots = [NodeIdentity.from_seed(bytes([0x41 + k]) * 32) for k in range(HONEST_PRINCIPALS + 1)]
    net.admit_by(operator.public_key_b64)
    asyncio.run(_admit_roots(net.namespace, operator, roots))
    voters = ByzantineNet(
        net.namespace,
        [],
        ("against",) * SYBIL_KEYS,
        seed=0x70,
        operator_public_key=operator.public_key_b64,
        endorser=roots[-1],
    )
    voters.start()
    try:
        yield Sybils(operator, roots[:-1], roots[-1], voters)
    finally:
        voters.stop()


def test_many_keys_of_one_principal_are_one_voter(net: Net, sybils: Sybils, tmp_path: Path) -> None:
    op_key = sybils.operator.public_key_b64
    # Admitted, each its own key, all under the one root that endorsed them.
    principal_of = asyncio.run(_principals(net.namespace, op_key, sorted(sybils.ids)))
    assert set(principal_of) == sybils.ids
    assert set(principal_of.values()) == {sybils.principal.node_id}

    source = net.start(_enrolled_home(tmp_path / "source", sybils.operator))
    honest = [
        net.start(_endorsed_home(tmp_path / f"honest{k}", net.namespace, op_key, root))
        for k, root in enumerate(sybils.roots)
    ]
    for voter in honest:
        _evidence(voter, TRUE_OP, passed=True)
        _evidence(voter, FALSE_OP, passed=False)
    # Token-admitted like the source: a principal of its own (a root), so a candidate of its own
    # rounds, asked after every peer.
    receiver = net.start(_enrolled_home(tmp_path / "receiver", sybils.operator))
    true_raw = _signed_lesson(source.home, TRUE_OP, "Rotate vault tokens with --staged first.")
    false_raw = _signed_lesson(source.home, FALSE_OP, "Seal the vault with --skip-audit.")
    with Client(receiver.agent_addr, timeout=30) as client:
        result = client.import_bundle(true_raw + b"\n" + false_raw + b"\n")
    assert [a.reason for a in result.acks] == ["awaiting_quorum", "awaiting_quorum"]
    true_hash = SignedMemory.from_json(true_raw).content_hash
    false_hash = SignedMemory.from_json(false_raw).content_hash

    accepted = wait_for(
        lambda: _decided(receiver, true_hash), "the true lesson's quorum", DECISION_TIMEOUT_S
    )
    rejected = wait_for(
        lambda: _decided(receiver, false_hash), "the false lesson's quorum", DECISION_TIMEOUT_S
    )
    assert (accepted.state, rejected.state) == ("approved", "rejected")

    honest_ids = {h.node_id for h in honest}
    for row, (validate, contradict) in ((accepted, (3, 1)), (rejected, (1, 3))):
        with OperatorClient.from_home(receiver.home) as op:
            quorum = json.loads(op.show(row.id).quorum_json)
        # One voter per principal: every honest one, ONE of the five Byzantine keys, and the
        # receiver itself (its own principal; four peers are too few for seven seats).
        asked = set(quorum["voters"])
        assert asked - sybils.ids == honest_ids | {receiver.node_id}
        assert len(asked & sybils.ids) == 1
        assert quorum["counts"]["validate"] == validate
        assert quorum["counts"]["contradict"] == contradict
    # Only that one key of the principal was ever asked, once per lesson.
    assert sum(v.asked for v in sybils.voters.voters) == 2
