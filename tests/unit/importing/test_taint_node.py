"""Taint on a node: a revoked or graylisted source's lessons leave every prompt at once, are
re-quarantined ``tainted_source`` (kept in history), and an operator releases or rejects them
in bulk. An operator-signed retraction of one record, read from the registry, does the same
for that record's lesson (``retracted_record``), the source's other lessons staying."""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any, TypeVar

import numpy as np
from importing_helpers import NOW

from lamarck.consensus.params import TaintParams
from lamarck.domain.rows import LessonFilter, LessonRow, LessonStatus, OutcomeRow
from lamarck.gossip.publisher import lesson_version
from lamarck.node.api.operator_service import OperatorServicer
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.view import StoreImportView
from lamarck.node.sharing.taint import RETRACT_MARK, TAINT_MARK, TaintSweeper
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportOutcome, ImportParams
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import operator_pb2
from lamarck.registry.client import RegistryClient
from lamarck.registry.memory_directory import InMemoryPeerDirectory, InMemoryRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    sign_endorsement,
    sign_enrollment,
    sign_retraction,
    sign_revocation,
)
from lamarck.reputation.scores import PeerBand
from tests.factories import lesson_row, signed_record

T = TypeVar("T")
DIM = 32
BAD = NodeIdentity.from_seed(b"\x51" * 32)
GOOD = NodeIdentity.from_seed(b"\x52" * 32)
SELF = NodeIdentity.from_seed(b"\x53" * 32)
OPERATOR = NodeIdentity.from_seed(b"\x54" * 32)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion."""
    return asyncio.run(coro)


def uid(n: int) -> str:
    """A deterministic uuid4 string."""
    return str(uuid.UUID(int=n, version=4))


class Pins:
    """Both sources registered under their keys."""

    async def pinned_key(self, node_id: str) -> str | None:
        keys = {i.node_id: i.public_key_b64 for i in (BAD, GOOD, SELF)}
        return keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


class Sink:
    """Keeps nothing."""

    def emit(self, event: object) -> None:
        return None


class World:
    """A node with one lesson from BAD, one from GOOD, and a local lesson learned under BAD's."""

    def __init__(self, store: InMemoryLessonStore | None = None) -> None:
        self.clock = FixedClock(NOW)
        self.store = store if store is not None else InMemoryLessonStore(dim=DIM)
        self.revoked: set[str] = set()
        self.bands: dict[str, PeerBand] = {}
        self.records = InMemoryRecords(self.clock)
        self.registry = InMemoryPeerDirectory(
            params=RegistryParams(),
            clock=self.clock,
            operator_public_key=OPERATOR.public_key_b64,
            records=self.records,
        )
        view = StoreImportView(self.store, self, SELF.node_id)
        self.pipeline = ImportPipeline(
            store=self.store,
            view=view,
            pins=Pins(),
            reputation=Sink(),
            embedder=HashingEmbedder(dim=DIM),
            clock=self.clock,
            rng=random.Random(1),
            params=ImportParams(),
        )
        self.sweeper = TaintSweeper(
            self.store,
            SELF,
            clock=self.clock,
            rng=random.Random(2),
            params=TaintParams(),
            revoked=self._revoked,
            band_of=lambda peer: self.bands.get(peer, PeerBand.NEUTRAL),
            directory=lambda: self.registry,
        )
        self.operator = OperatorServicer(
            self.store, self.clock, pipeline=self.pipeline, taint=lambda: self.sweeper
        )

    def score(self, node_id: str) -> float:
        return 0.5

    async def _revoked(self) -> frozenset[str]:
        return frozenset(self.revoked)

    async def learn_from(self, who: NodeIdentity, n: int, op: str) -> LessonRow:
        """Import one lesson signed by ``who``; the stored row (with its record's hash)."""
        raw = signed_record(
            who,
            id=uid(n),
            content=f"Use {op} for the release.",
            lesson={"operation": op, "scope": "global", "status": "active"},
        ).raw
        result = await self.pipeline.import_record(
            raw, source=ImportSource.PEER, via_node_id=who.node_id
        )
        assert result.outcome is ImportOutcome.ACCEPT
        assert result.lesson_id is not None
        return await self.store.get_lesson(result.lesson_id)

    async def retract(self, content_hash: str, by: NodeIdentity = OPERATOR) -> None:
        """Publish a retraction of ``content_hash`` in the registry, as the CLI does."""
        retraction = sign_retraction(
            by, content_hash=content_hash, reason="wrong advice", created_at=self.clock.now()
        )
        await self.registry.retract(retraction)

    async def fill(self) -> dict[str, str]:
        ids: dict[str, str] = {}
        for who, n, op in ((BAD, 1, "deploy.bad"), (GOOD, 2, "deploy.good")):
            ids[who.node_id] = (await self.learn_from(who, n, op)).id
        # A local lesson whose only evidence is an outcome that had BAD's lesson in play.
        await self.store.insert_outcome(
            OutcomeRow(
                id=uid(10),
                session_id="s",
                turn_index=0,
                project="p",
                passed=True,
                claim_ok=True,
                created_at=NOW - timedelta(hours=1),
                record={"in_play": [ids[BAD.node_id]]},
            )
        )
        local = lesson_row(
            uid(11),
            at=NOW,
            content="Use deploy.local after deploy.bad.",
            operation="deploy.local",
            confidence=0.6,
            evidence=(uid(10),),
            embedding=np.ones(DIM, dtype=np.float32) / np.sqrt(DIM),
        )
        await self.store.insert_lesson(local)
        ids["local"] = local.id
        return ids

    async def live(self) -> set[str]:
        rows = await self.store.list_lessons(LessonFilter(limit=100))
        return {r.id for r in rows}


def test_a_revoked_sources_lessons_leave_every_prompt_and_are_requarantined() -> None:
    world = World()
    ids = run(world.fill())
    assert run(world.sweeper.once()) == 0  # nobody tainted yet
    world.revoked.add(BAD.node_id)
    assert run(world.sweeper.once()) == 2
    assert run(world.live()) == {ids[GOOD.node_id]}
    rows = run(world.store.list_quarantine("pending"))
    assert sorted(r.reasons for r in rows) == [("tainted_source",), ("tainted_source",)]
    assert {r.source_node_id for r in rows} == {BAD.node_id}
    [bad] = run(world.store.get_lessons([ids[BAD.node_id]]))
    assert bad.status is LessonStatus.RETIRED and bad.superseded_by == TAINT_MARK
    events = run(world.store.lesson_events([ids[BAD.node_id], ids["local"]]))
    assert {(e.kind, e.actor) for e in events if e.kind == "retired"} == {("retired", "taint")}
    # A second sweep takes nothing more out.
    assert run(world.sweeper.once()) == 0


def test_retiring_an_own_lesson_signs_a_newer_version_never_an_equivocation() -> None:
    # This node's own lesson is re-signed from its row, its version is its updated_at: the
    # retirement (and a release) must be a newer version, or every peer holding the lesson
    # would see a second record at the same version and graylist this honest node.
    world = World()
    ids = run(world.fill())
    [before_local, before_bad] = run(world.store.get_lessons([ids["local"], ids[BAD.node_id]]))
    world.clock.advance(5)
    world.revoked.add(BAD.node_id)
    run(world.sweeper.once())
    [local, bad] = run(world.store.get_lessons([ids["local"], ids[BAD.node_id]]))
    assert local.status is LessonStatus.RETIRED
    assert lesson_version(local) > lesson_version(before_local)
    # An imported copy keeps its signer's time: its version is the signer's, not ours.
    assert bad.updated_at == before_bad.updated_at
    world.clock.advance(5)
    rows = run(world.store.list_quarantine("pending"))
    local_row = next(r for r in rows if r.content_hash != before_bad.content_hash)
    run(world.sweeper.release(local_row, "revoked by mistake", "operator"))
    released = run(world.store.get_lesson(ids["local"]))
    assert released.status is LessonStatus.ACTIVE
    assert lesson_version(released) > lesson_version(local)


def test_a_graylisted_sources_lessons_are_tainted_too() -> None:
    world = World()
    ids = run(world.fill())
    world.bands[BAD.node_id] = PeerBand.GRAYLISTED
    assert run(world.sweeper.once()) == 2
    assert ids[BAD.node_id] not in run(world.live())


def test_an_operator_releases_a_sources_tainted_lessons_in_bulk_and_they_stay() -> None:
    world = World()
    ids = run(world.fill())
    world.revoked.add(BAD.node_id)
    run(world.sweeper.once())
    reply = run(
        world.operator.DecideQuarantineBulk(
            operator_pb2.DecideQuarantineBulkRequest(
                reason="tainted_source",
                source_node_id=BAD.node_id,
                decision=operator_pb2.QUARANTINE_DECISION_APPROVE,
                note="revoked by mistake",
            ),
            None,
        )
    )
    assert len(reply.entries) == 2
    assert set(reply.lesson_ids) == {ids[BAD.node_id], ids["local"]}
    assert run(world.live()) == {ids[BAD.node_id], ids[GOOD.node_id], ids["local"]}
    assert run(world.sweeper.once()) == 0  # released: the operator's word stands


def test_an_operator_rejects_them_in_bulk_and_they_stay_out_kept_in_history() -> None:
    world = World()
    ids = run(world.fill())
    world.revoked.add(BAD.node_id)
    run(world.sweeper.once())
    reply = run(
        world.operator.DecideQuarantineBulk(
            operator_pb2.DecideQuarantineBulkRequest(
                reason="tainted_source",
                decision=operator_pb2.QUARANTINE_DECISION_REJECT,
            ),
            None,
        )
    )
    assert len(reply.entries) == 2
    assert run(world.live()) == {ids[GOOD.node_id]}
    states = {r.state for r in run(world.store.list_quarantine(None))}
    assert states == {"rejected"}


def _bulk(world: World, reason: str, *, approve: bool) -> Any:
    decision = (
        operator_pb2.QUARANTINE_DECISION_APPROVE
        if approve
        else operator_pb2.QUARANTINE_DECISION_REJECT
    )
    return run(
        world.operator.DecideQuarantineBulk(
            operator_pb2.DecideQuarantineBulkRequest(reason=reason, decision=decision), None
        )
    )


def test_a_retracted_record_leaves_every_prompt_and_its_sources_other_lessons_stay() -> None:
    world = World()
    ids = run(world.fill())
    second = run(world.learn_from(BAD, 3, "deploy.second"))
    [bad] = run(world.store.get_lessons([ids[BAD.node_id]]))
    assert bad.content_hash is not None
    run(world.retract(bad.content_hash))
    # BAD's retracted lesson and the local lesson learned only under it; BAD's other stays.
    assert run(world.sweeper.once()) == 2
    assert run(world.live()) == {ids[GOOD.node_id], second.id}
    rows = run(world.store.list_quarantine("pending"))
    assert sorted(r.reasons for r in rows) == [("retracted_record",), ("retracted_record",)]
    assert {r.source_node_id for r in rows} == {BAD.node_id}
    assert bad.content_hash in {r.content_hash for r in rows}
    [gone] = run(world.store.get_lessons([ids[BAD.node_id]]))
    assert gone.status is LessonStatus.RETIRED and gone.superseded_by == RETRACT_MARK
    events = run(world.store.lesson_events([ids[BAD.node_id], ids["local"]]))
    retired = [e for e in events if e.kind == "retired"]
    assert {e.actor for e in retired} == {"taint"}
    assert any(bad.content_hash in (e.reason or "") for e in retired)  # names the retraction
    assert run(world.sweeper.once()) == 0


def test_a_retraction_not_signed_by_the_operator_retracts_nothing() -> None:
    world = World()
    ids = run(world.fill())
    [bad] = run(world.store.get_lessons([ids[BAD.node_id]]))
    assert bad.content_hash is not None
    forged = sign_retraction(
        GOOD, content_hash=bad.content_hash, reason="spite", created_at=world.clock.now()
    )
    # Written straight into the shared records (anyone with Redis access could): every
    # reader judges it against its own operator key.
    run(world.records.put_retraction(bad.content_hash, json.dumps(forged.wire())))
    assert run(world.registry.retractions()) == ()
    assert run(world.sweeper.once()) == 0
    assert ids[BAD.node_id] in run(world.live())


def test_an_operator_releases_retracted_lessons_in_bulk_and_they_stay() -> None:
    world = World()
    ids = run(world.fill())
    [bad] = run(world.store.get_lessons([ids[BAD.node_id]]))
    assert bad.content_hash is not None
    run(world.retract(bad.content_hash))
    run(world.sweeper.once())
    reply = _bulk(world, "retracted_record", approve=True)
    assert set(reply.lesson_ids) == {ids[BAD.node_id], ids["local"]}
    assert run(world.live()) == {ids[BAD.node_id], ids[GOOD.node_id], ids["local"]}
    assert run(world.sweeper.once()) == 0  # released: the operator's word stands


def test_an_operator_rejects_retracted_lessons_in_bulk_and_they_stay_out() -> None:
    world = World()
    ids = run(world.fill())
    [bad] = run(world.store.get_lessons([ids[BAD.node_id]]))
    assert bad.content_hash is not None
    run(world.retract(bad.content_hash))
    run(world.sweeper.once())
    assert len(_bulk(world, "retracted_record", approve=False).entries) == 2
    assert run(world.live()) == {ids[GOOD.node_id]}
    assert {r.state for r in run(world.store.list_quarantine(None))} == {"rejected"}


def test_a_lesson_released_from_its_sources_taint_still_leaves_on_a_retraction() -> None:
    world = World()
    ids = run(world.fill())
    world.revoked.add(BAD.node_id)
    run(world.sweeper.once())
    _bulk(world, "tainted_source", approve=True)
    assert run(world.sweeper.once()) == 0
    [bad] = run(world.store.get_lessons([ids[BAD.node_id]]))
    assert bad.content_hash is not None
    run(world.retract(bad.content_hash))
    # A later, more specific statement: the release from the source's taint does not answer it.
    assert run(world.sweeper.once()) == 2
    pending = run(world.store.list_quarantine("pending"))
    assert sorted(r.reasons for r in pending) == [("retracted_record",), ("retracted_record",)]
    # Both rows stay in history, the second under its own key.
    assert len(run(world.store.list_quarantine(None))) == 4


class CountingStore(InMemoryLessonStore):
    """Counts the lesson rows a caller reads back (listed or scanned)."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim)
        self.read: list[str] = []

    async def list_lessons(self, flt: LessonFilter) -> list[LessonRow]:
        rows = await super().list_lessons(flt)
        self.read += [r.id for r in rows]
        return rows

    async def scan_lessons(self, flt: LessonFilter, after: str, limit: int) -> list[LessonRow]:
        rows = await super().scan_lessons(flt, after, limit)
        self.read += [r.id for r in rows]
        return rows


def test_a_sweep_reads_no_lesson_unless_a_source_is_tainted_or_a_record_retracted() -> None:
    # The sweep runs every few seconds: on a node of 100k imported lessons, reading them all
    # each time was the cost. It asks for the sources in one aggregate instead.
    store = CountingStore(DIM)
    world = World(store)
    ids = run(world.fill())
    others = [run(world.learn_from(GOOD, 100 + i, f"deploy.other{i}")).id for i in range(5)]
    store.read.clear()
    assert run(world.sweeper.once()) == 0
    assert store.read == []
    # Tainted: the source's live lessons and the local ones; never the honest source's.
    world.revoked.add(BAD.node_id)
    assert run(world.sweeper.once()) == 2
    assert set(store.read) == {ids[BAD.node_id], ids["local"]}
    assert not set(store.read) & {ids[GOOD.node_id], *others}
    # Once they are out, the source's taint costs no read either.
    store.read.clear()
    assert run(world.sweeper.once()) == 0
    assert store.read == []


# -- revocation through endorsement chains ---------------------------------------------------

ENDORSER = NodeIdentity.from_seed(b"\x55" * 32)  # admitted by an operator token
ENDORSEE = NodeIdentity.from_seed(b"\x56" * 32)  # endorsed by ENDORSER
SECOND = NodeIdentity.from_seed(b"\x57" * 32)  # endorsed by ENDORSEE: depth 2


class EndorsedWorld(World):
    """A node on an ``endorsed`` registry: GOOD and ENDORSER hold operator tokens, ENDORSER
    endorses ENDORSEE, ENDORSEE endorses SECOND. The registry is the pipeline's key pins and
    the sweep's revocations, as on a real node."""

    def __init__(self) -> None:
        super().__init__()
        self.registry = InMemoryPeerDirectory(
            params=RegistryParams(admission=AdmissionMode.ENDORSED),
            clock=self.clock,
            operator_public_key=OPERATOR.public_key_b64,
            records=self.records,
        )
        self.pipeline._pins = self.registry
        self.sweeper._revoked = self.registry.revoked_ids

    async def admit(self) -> None:
        now = self.clock.now()
        for who, endorser in (
            (GOOD, None),
            (ENDORSER, None),
            (ENDORSEE, ENDORSER),
            (SECOND, ENDORSEE),
        ):
            token = endorsement = None
            if endorser is None:
                token = sign_enrollment(
                    OPERATOR,
                    node_id=who.node_id,
                    issued_at=now,
                    expires_at=now + timedelta(hours=1),
                )
            else:
                endorsement = sign_endorsement(
                    endorser,
                    endorsee_id=who.node_id,
                    endorsee_public_key=who.public_key_b64,
                    created_at=now,
                    expires_at=now + timedelta(hours=1),
                )
            client = RegistryClient(
                self.registry, who, address="127.0.0.1:7001", domains=(), version="0.1.0",
                mode=AdmissionMode.ENDORSED, clock=self.clock, enrollment_token=token,
                endorsement=endorsement,
            )  # fmt: skip
            await client.register()

    async def revoke(self, who: NodeIdentity) -> None:
        await self.registry.revoke(
            sign_revocation(
                OPERATOR, node_id=who.node_id, reason="minting", created_at=self.clock.now()
            )
        )


def test_revoking_an_endorser_taints_and_refuses_every_identity_admitted_through_it() -> None:
    world = EndorsedWorld()
    run(world.admit())
    ids = {
        who.node_id: run(world.learn_from(who, n, op)).id
        for who, n, op in (
            (GOOD, 1, "deploy.good"),
            (ENDORSEE, 2, "deploy.b"),
            (SECOND, 3, "deploy.c"),
        )
    }
    assert run(world.sweeper.once()) == 0
    run(world.revoke(ENDORSER))
    # The endorsee and the identity it endorsed in turn leave every prompt at once.
    assert run(world.sweeper.once()) == 2
    assert run(world.live()) == {ids[GOOD.node_id]}
    rows = run(world.store.list_quarantine("pending"))
    assert sorted((r.source_node_id, r.reasons) for r in rows) == sorted(
        [(ENDORSEE.node_id, ("tainted_source",)), (SECOND.node_id, ("tainted_source",))]
    )
    events = run(world.store.lesson_events([ids[SECOND.node_id]]))
    [retired] = [e for e in events if e.kind == "retired"]
    assert f"admitted through {ENDORSER.node_id}, which is revoked" in (retired.reason or "")
    assert run(world.sweeper.once()) == 0
    # Their fresh records are refused from then on, saying why (once the verdicts the
    # registry remembers for memo_ttl_s have expired).
    world.clock.advance(60)
    for who, n in ((ENDORSEE, 4), (SECOND, 5)):
        raw = signed_record(
            who,
            id=uid(n),
            content=f"Use deploy.new{n} for the release.",
            lesson={"operation": f"deploy.new{n}", "scope": "global", "status": "active"},
        ).raw
        result = run(
            world.pipeline.import_record(raw, source=ImportSource.PEER, via_node_id=GOOD.node_id)
        )
        assert result.outcome is ImportOutcome.REJECT
        assert result.reason == "revoked_source"
        assert f"admitted through {ENDORSER.node_id}" in str(result.error)
    # GOOD, admitted by its own token, is untouched.
    assert run(world.learn_from(GOOD, 6, "deploy.good2")).status is LessonStatus.ACTIVE
