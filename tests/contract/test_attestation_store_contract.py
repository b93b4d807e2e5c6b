"""The ``AttestationStore`` contract: one suite, run against the in-memory and Postgres stores.

The attestation store comes from ``attestations_for(store, params)`` over the contract suite's
``store`` fixture (the in-memory lesson store, then the embedded Postgres one), as the node
builds it.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from lamarck.consensus.attestation import AttestationParams, attestation_bytes
from lamarck.node.store.attestations import (
    AttestationRow,
    AttestationStore,
    InMemoryAttestationStore,
    PostgresAttestationStore,
    attestations_for,
)
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.port import LessonStore
from lamarck.proto.identity import NodeIdentity
from tests.factories import T0, attestation, identity

NOW = T0
RECORD_HASH, OTHER_HASH = "ab" * 32, "cd" * 32
IDS = tuple(identity(k + 1) for k in range(12))

PARAMS = AttestationParams(max_age_days=30.0, max_attesters_per_lesson=3)


def row(
    who: NodeIdentity,
    confirmed: bool = True,
    *,
    memory_hash: str = RECORD_HASH,
    age: timedelta = timedelta(0),
    seed: int = 0,
) -> AttestationRow:
    """``who``'s attestation on ``memory_hash`` made ``age`` before NOW, as a row."""
    made = attestation(who, memory_hash, confirmed, at=NOW - age, seed=seed)
    return AttestationRow(attestation_bytes(made), made)


@pytest.fixture
def attestations(store: LessonStore) -> AttestationStore:
    """The attestation store that lives with each contract store."""
    return attestations_for(store, PARAMS)


def test_the_store_that_lives_with_each_lesson_store(
    store: LessonStore, attestations: AttestationStore
) -> None:
    expected = InMemoryAttestationStore if isinstance(store, InMemoryLessonStore) else None
    assert isinstance(attestations, expected or PostgresAttestationStore)


async def test_kept_attestations_come_back_byte_for_byte_by_version(
    attestations: AttestationStore,
) -> None:
    a, b, c = row(IDS[0]), row(IDS[1], False), row(IDS[2], memory_hash=OTHER_HASH)
    for r in (a, b, c):
        assert await attestations.put(r)
    got = await attestations.for_memories([RECORD_HASH, OTHER_HASH, "00" * 32])
    assert set(got) == {RECORD_HASH, OTHER_HASH}
    assert sorted(r.raw for r in got[RECORD_HASH]) == sorted([a.raw, b.raw])
    assert [r.raw for r in got[OTHER_HASH]] == [c.raw]
    assert got[RECORD_HASH][0].content_hash in {a.content_hash, b.content_hash}
    assert await attestations.for_memories([]) == {}


async def test_one_attestation_per_attester_and_version_the_newest(
    attestations: AttestationStore,
) -> None:
    older = row(IDS[0], True, age=timedelta(days=2))
    newer = row(IDS[0], False, age=timedelta(days=1), seed=1)
    assert await attestations.put(older)
    assert await attestations.put(newer)
    assert not await attestations.put(older)  # an older one never replaces the newer
    assert not await attestations.put(newer)  # the same one again is nothing new
    got = await attestations.for_memories([RECORD_HASH])
    assert [r.raw for r in got[RECORD_HASH]] == [newer.raw]


async def test_a_full_version_drops_its_oldest_attester_for_a_newer_one(
    attestations: AttestationStore,
) -> None:
    for k in range(3):
        assert await attestations.put(row(IDS[k], age=timedelta(days=5 - k)))
    assert not await attestations.put(row(IDS[6], age=timedelta(days=9)))
    assert await attestations.put(row(IDS[7]))
    got = await attestations.for_memories([RECORD_HASH])
    kept = {r.attestation.attester_id for r in got[RECORD_HASH]}
    assert kept == {IDS[1].node_id, IDS[2].node_id, IDS[7].node_id}


async def test_concurrent_puts_keep_the_bound(attestations: AttestationStore) -> None:
    await asyncio.gather(*(attestations.put(row(IDS[k], age=timedelta(hours=k))) for k in range(8)))
    got = await attestations.for_memories([RECORD_HASH])
    assert len(got[RECORD_HASH]) == PARAMS.max_attesters_per_lesson


async def test_expire_drops_what_was_made_before_the_cut(attestations: AttestationStore) -> None:
    assert await attestations.put(row(IDS[0], age=timedelta(days=40)))
    assert await attestations.put(row(IDS[1], age=timedelta(days=1)))
    assert await attestations.expire(NOW - PARAMS.max_age) == 1
    got = await attestations.for_memories([RECORD_HASH])
    assert [r.attestation.attester_id for r in got[RECORD_HASH]] == [IDS[1].node_id]
    assert await attestations.expire(NOW - PARAMS.max_age) == 0
