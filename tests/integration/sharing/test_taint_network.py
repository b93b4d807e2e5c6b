"""Reality moves a source's reputation on every node, and a liar's lessons follow it out.

Real node processes on one Redis registry: a liar L, an honest source G, and two receivers
A and B. L and G sign lessons with their own keys (read from their homes); A and B import
them (the pipeline's bundle path). On each receiver, the agent's own outcomes then confirm
G's lesson and contradict three of L's: G's score rises above a newcomer's, L's falls until
L is graylisted there, and the taint sweep takes L's remaining lesson (never contradicted)
out of every prompt on both receivers, re-quarantined ``tainted_source``; G's stays.

An operator-signed retraction of one record (``lamarck registry retract``, published in the
shared registry) takes that record's lesson out of a receiver's recall, re-quarantined
``retracted_record``, while the other lesson of the same source stays.

On an ``endorsed`` network, revoking an endorser takes the lessons of the identity it endorsed,
and of the one that identity endorsed in turn, out of an honest node's prompts
(``tainted_source``), and the node refuses their fresh records (``revoked_source``).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import REDIS_URL, Net, imported, outcome, wait_for
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.client import Client
from lamarck.operator import OperatorClient
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import identity_path, init_keys, load_private_key, save_private_key
from lamarck.proto.signed import SignedMemory
from lamarck.registry.client import RegistryClient
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import sign_endorsement, sign_enrollment
from lamarck.registry.redis_directory import RedisPeerDirectory
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand
from tests.factories import signed_record

pytestmark = pytest.mark.integration

#: Bound on the sweep (every 5 s) after the score crossed the graylist threshold.
TAINT_TIMEOUT_S = 60.0


def _lesson(home: Path, op: str, content: str) -> bytes:
    """A low-stakes lesson about ``op`` signed with the key of the node on ``home``."""
    return signed_record(
        load_private_key(identity_path(home)),
        id=str(uuid.uuid4()),
        created=datetime.now(UTC) - timedelta(minutes=1),
        outcome_id=str(uuid.uuid4()),
        content=content,
        context={"domain": "build", "environment": "ci", "-tools": None},
        lesson={"operation": op},
    ).raw


def _row(node: Any, peer: str) -> Any:
    with OperatorClient.from_home(node.home) as op:
        for row in op.reputation().rows:
            if row.peer == peer:
                return row
    return None


def _tainted(node: Any, source: str, reason: str = "tainted_source") -> list[Any]:
    with OperatorClient.from_home(node.home) as op:
        return [
            e
            for e in op.iter_quarantine("pending")
            if e.source_node_id == source and reason in e.reasons
        ]


def test_reality_moves_reputation_and_a_graylisted_liar_is_tainted_on_every_node(
    net: Net,
) -> None:
    liar, good = net.start(), net.start()
    receivers = [net.start(), net.start()]
    lies = [
        _lesson(liar.home, f"shell:make lie{k}", f"Run make lie{k} before the build.")
        for k in range(4)
    ]
    truth = _lesson(good.home, "shell:make ok", "Run make ok before the build.")
    bundle = b"".join(raw + b"\n" for raw in (*lies, truth))
    first, second = receivers
    with Client(first.agent_addr, timeout=30) as client:
        assert [a.status for a in client.import_bundle(bundle).acks] == ["accepted"] * 5
    # The second receiver pulls the first's imported copies every second (anti-entropy), so
    # some may be there before the bundle is: those it answers as duplicates, never refuses.
    with Client(second.agent_addr, timeout=30) as client:
        statuses = [a.status for a in client.import_bundle(bundle).acks]
    assert set(statuses) <= {"accepted", "duplicate"}, statuses
    ids = [SignedMemory.from_json(raw).memory.id for raw in (*lies, truth)]
    for n, node in enumerate(receivers):
        local = {rid: imported(node, rid) for rid in ids}
        assert all(local.values())
        with Client(node.agent_addr, timeout=30) as client:
            good_lesson = local[ids[-1]]
            client.record_outcome(
                outcome(
                    f"ok-{n}",
                    "a1" * 32,
                    [("shell:make ok", "ok", "build")],
                    in_play=(good_lesson.id,),
                )
            )
            for k in range(3):
                lie = local[ids[k]]
                client.record_outcome(
                    outcome(
                        f"lie-{n}-{k}",
                        "b2" * 32,
                        [(f"shell:make lie{k}", "failed", "build")],
                        passed=False,
                        in_play=(lie.id,),
                    )
                )
    initial = ReputationParams().initial_score
    for node in receivers:
        honest = wait_for(lambda node=node: _row(node, good.node_id), "the good source's row")
        assert honest.score > initial
        lied = wait_for(
            lambda node=node: (
                r if (r := _row(node, liar.node_id)) and r.band is PeerBand.GRAYLISTED else None
            ),
            "the liar graylisted",
        )
        assert lied.score < ReputationParams().graylist_threshold
    untested = ids[3]
    for node in receivers:
        rows = wait_for(
            lambda node=node: (
                [e for e in _tainted(node, liar.node_id) if e.record_id == untested] or None
            ),
            "the liar's untested lesson re-quarantined tainted_source",
            TAINT_TIMEOUT_S,
        )
        assert rows
        live = {lesson.record["id"] for lesson in _live(node)}
        assert untested not in live
        assert ids[-1] in live


def _live(node: Any) -> list[Any]:
    with Client(node.agent_addr, timeout=20) as client:
        return [
            x
            for x in client.list_lessons(origin="imported", statuses="active").lessons
            if x.record_json
        ]


def test_an_operator_retraction_of_one_record_takes_only_its_lesson_out(
    net: Net, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("LAMARCK_"):
            monkeypatch.delenv(name)  # the CLI reads the operator's home, nothing else
    operator = NodeIdentity.generate()
    key_file = tmp_path / "operator.pem"
    save_private_key(key_file, operator)
    # The operator's own home: the settings `lamarck registry` reads to find the network.
    desk = tmp_path / "desk"
    desk.mkdir()
    (desk / "lamarck.toml").write_text(
        f'redis_url = "{REDIS_URL}"\n'
        f'redis_namespace = "{net.namespace}"\n'
        'admission = "open"\n'
        f'operator_public_key = "{operator.public_key_b64}"\n'
    )
    source = net.start(operator_public_key=operator.public_key_b64)
    # Every unverified import in every plan-time prompt (as a hint): what leaves is visible.
    receiver = net.start(operator_public_key=operator.public_key_b64, unverified_plan_share=1.0)
    wrong = _lesson(source.home, "shell:make wrong", "Run make wrong before the build.")
    right = _lesson(source.home, "shell:make right", "Run make right before the build.")
    with Client(receiver.agent_addr, timeout=30) as client:
        result = client.import_bundle(wrong + b"\n" + right + b"\n")
    assert [a.status for a in result.acks] == ["accepted"] * 2
    wrong_id, right_id = (SignedMemory.from_json(raw).memory.id for raw in (wrong, right))
    assert imported(receiver, wrong_id) and imported(receiver, right_id)

    done = CliRunner().invoke(
        app,
        ["registry", "retract", "--content-hash", sha256_hex(wrong), "--reason", "wrong advice",
         "--operator-key", str(key_file), "--home", str(desk), "--json"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    published = json.loads(done.stdout)
    assert published["content_hash"] == sha256_hex(wrong)
    assert published["signed_by"] == operator.public_key_b64

    rows = wait_for(
        lambda: _tainted(receiver, source.node_id, "retracted_record") or None,
        "the retracted record's lesson re-quarantined retracted_record",
        TAINT_TIMEOUT_S,
    )
    assert [e.record_id for e in rows] == [wrong_id]
    live = {lesson.record["id"] for lesson in _live(receiver)}
    assert wrong_id not in live
    assert right_id in live  # the source's other lesson stays
    with Client(receiver.agent_addr, timeout=20) as client:
        recalled = client.recall("run make before the build", project_digest="ab" * 32)
    assert "make wrong" not in recalled.section
    assert wrong_id not in {x.record["id"] for x in recalled.hints}


def _registry_client(
    directory: RedisPeerDirectory, who: NodeIdentity, *, token: Any = None, endorsement: Any = None
) -> RegistryClient:
    return RegistryClient(
        directory, who, address="127.0.0.1:1", domains=("build",), version="0",
        mode=AdmissionMode.ENDORSED, clock=SystemClock(), enrollment_token=token,
        endorsement=endorsement,
    )  # fmt: skip


@pytest.mark.slow
def test_revoking_an_endorser_taints_what_its_endorsees_signed_on_a_real_node(
    net: Net, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("LAMARCK_"):
            monkeypatch.delenv(name)  # the CLI reads the operator's home, nothing else
    operator = NodeIdentity.generate()
    key_file = tmp_path / "operator.pem"
    save_private_key(key_file, operator)
    net.admit_by(operator.public_key_b64)
    desk = tmp_path / "desk"
    desk.mkdir()
    (desk / "lamarck.toml").write_text(
        f'redis_url = "{REDIS_URL}"\n'
        f'redis_namespace = "{net.namespace}"\n'
        'admission = "endorsed"\n'
        f'operator_public_key = "{operator.public_key_b64}"\n'
    )
    # The honest receiver holds an operator token; so does the endorser, which endorses an
    # identity that endorses another (a chain of depth 2). Those three register as nodes do.
    honest_home = tmp_path / "honest"
    init_keys(honest_home)
    (honest_home / "lamarck.toml").write_text((desk / "lamarck.toml").read_text())
    enrolled = CliRunner().invoke(
        app, ["registry", "enroll", "--home", str(honest_home), "--operator-key", str(key_file)]
    )
    assert enrolled.exit_code == 0, enrolled.output
    endorser, endorsee, second = (NodeIdentity.generate() for _ in range(3))
    homes = {who.node_id: tmp_path / who.node_id[:12] for who in (endorsee, second)}
    for who in (endorsee, second):
        identity_path(homes[who.node_id]).parent.mkdir(parents=True)
        save_private_key(identity_path(homes[who.node_id]), who)

    async def admit() -> None:
        directory = RedisPeerDirectory.from_url(
            REDIS_URL, namespace=net.namespace,
            params=RegistryParams(admission=AdmissionMode.ENDORSED), clock=SystemClock(),
            operator_public_key=operator.public_key_b64,
        )  # fmt: skip
        now = datetime.now(UTC)
        try:
            token = sign_enrollment(
                operator,
                node_id=endorser.node_id,
                issued_at=now,
                expires_at=now + timedelta(hours=1),
            )
            await _registry_client(directory, endorser, token=token).register()
            for by, who in ((endorser, endorsee), (endorsee, second)):
                endorsement = sign_endorsement(
                    by, endorsee_id=who.node_id, endorsee_public_key=who.public_key_b64,
                    created_at=now, expires_at=now + timedelta(hours=1),
                )  # fmt: skip
                await _registry_client(directory, who, endorsement=endorsement).register()
        finally:
            await directory.aclose()

    asyncio.run(admit())
    honest = net.start(honest_home)
    lessons = [
        _lesson(homes[who.node_id], f"shell:make via{n}", f"Run make via{n} before the build.")
        for n, who in enumerate((endorsee, second))
    ]
    with Client(honest.agent_addr, timeout=30) as client:
        acks = client.import_bundle(b"".join(raw + b"\n" for raw in lessons)).acks
    assert [a.status for a in acks] == ["accepted"] * 2
    ids = [SignedMemory.from_json(raw).memory.id for raw in lessons]
    assert all(imported(honest, rid) for rid in ids)

    done = CliRunner().invoke(
        app,
        ["registry", "revoke", endorser.node_id, "--reason", "minting identities",
         "--operator-key", str(key_file), "--home", str(desk), "--json"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    # The endorsee's and its own endorsee's lessons leave every prompt, re-quarantined.
    for who, rid in zip((endorsee, second), ids, strict=True):
        rows = wait_for(
            lambda who=who: _tainted(honest, who.node_id) or None,
            f"the lesson of {who.node_id} re-quarantined tainted_source",
            TAINT_TIMEOUT_S,
        )
        assert [e.record_id for e in rows] == [rid]
    assert not {lesson.record["id"] for lesson in _live(honest)} & set(ids)

    # A fresh record from either is refused, saying why (within the registry's memo lifetime).
    def refused(who: NodeIdentity) -> Any:
        raw = _lesson(homes[who.node_id], "shell:make fresh", f"Run make fresh {uuid.uuid4()}.")
        with Client(honest.agent_addr, timeout=30) as client:
            [ack] = client.import_bundle(raw + b"\n").acks
        return ack if ack.status == "rejected" else None

    for who in (endorsee, second):
        ack = wait_for(lambda who=who: refused(who), f"a record of {who.node_id} refused", 30.0)
        assert ack.reason == "revoked_source"
