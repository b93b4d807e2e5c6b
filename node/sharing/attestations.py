"""Outcome attestations at the node: made from its own outcomes, received, kept, sent along.

``Attestations`` is the node's side of ``lamarck.consensus.attestation``:

* ``on_outcome``: when this node's own outcome confirmed or contradicted a lesson it imported
  (the ``lesson_confirmed`` / ``lesson_contradicted`` reality events of that outcome), it signs
  an attestation per lesson version, keeps it, and queues it to be pushed to the live peers;
  and it judges the other attesters of that version against reality (``attestation_right`` /
  ``attestation_wrong``, returned for the reputation book).
* ``receive``: attestations from a peer (in a Publish batch, with their lesson or alone, or in
  a Sync page) are verified (signature, age), admitted in this node's own registry view
  (attester admitted and unrevoked, not of the source's principal, about the current version
  of a lesson held here as an import) and kept within the per-version bound; a principal
  found attesting both verdicts is charged ``attestation_equivocation``.
* ``of_records`` / ``shareable``: what travels with each memory in a Publish, and what a Sync
  offers (by the attestation's own content hash, so anti-entropy reconciles them too).

A node keeps its own attestations too: its Syncs serve them until they expire.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from lamarck.consensus.attestation import (
    AttestationParams,
    admit_attestation,
    attestation_bytes,
    attester_events,
    equivocation_events,
    make_attestation,
    outcome_digest,
    verify_attestation,
)
from lamarck.domain.rows import LessonRow
from lamarck.errors import DeliveryFailed, InvalidRecord, PolicyRejected, VerificationError
from lamarck.node.lessons.attested_support import PrincipalLookup
from lamarck.node.metrics import ATTESTATIONS
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.store.attestations import AttestationRow, AttestationStore
from lamarck.node.store.port import LessonStore
from lamarck.proto.attestation import Attestation
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.outcome import Outcome
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.port import ReputationSink

__all__ = ["AttestationPush", "Attestations", "Received"]

_log = logging.getLogger("lamarck.node.sharing")

#: The reality events whose verdict an attestation states, and whether reality confirmed.
_REALITY = {EventKind.LESSON_CONFIRMED: True, EventKind.LESSON_CONTRADICTED: False}


@dataclass(frozen=True, slots=True)
class Received:
    """What became of one received attestation: ``kept`` (new here), or why not (``reason``
    empty for one already held or displaced by a newer one of its attester)."""

    content_hash: str
    kept: bool
    reason: str = ""


class Attestations:
    """This node's outcome attestations and the ones it verified from its peers."""

    def __init__(
        self,
        store: AttestationStore,
        lessons: LessonStore,
        identity: NodeIdentity,
        *,
        principals: PrincipalLookup,
        sink: ReputationSink,
        clock: Clock,
        rng: random.Random,
        max_future_skew_s: float = DEFAULT_MAX_FUTURE_SKEW_S,
    ) -> None:
        """Over the attestation ``store`` and the ``lessons`` they are about."""
        self.store = store
        self._lessons = lessons
        self._identity = identity
        self._principals = principals
        self._sink = sink
        self._clock = clock
        self._rng = rng
        self._skew = max_future_skew_s
        #: This node's attestations not yet pushed to its peers (``take_pending``).
        self._pending: list[bytes] = []

    @property
    def params(self) -> AttestationParams:
        """The bounds and expiry the store keeps."""
        return self.store.params

    # -- this node's own outcomes ---------------------------------------------------------
    async def on_outcome(
        self, outcome: Outcome, reality: Sequence[ReputationEvent]
    ) -> tuple[ReputationEvent, ...]:
        """Attest every imported lesson version ``outcome`` judged; the other attesters' events.

        ``reality`` are the outcome's reality events (``lesson_confirmed`` /
        ``lesson_contradicted`` about imported lessons, keyed by their record hash).
        """
        judged: dict[str, bool] = {}
        for event in reality:
            confirmed = _REALITY.get(event.kind)
            if confirmed is not None and event.record_hash:
                judged.setdefault(event.record_hash, confirmed)
        if not judged:
            return ()
        now = self._clock.now()
        digest = outcome_digest(outcome.to_obj())
        held = await self.store.for_memories(sorted(judged))
        events: list[ReputationEvent] = []
        for memory_hash, confirmed in judged.items():
            events.extend(
                attester_events(
                    (r.attestation for r in held.get(memory_hash, ())),
                    record_hash=memory_hash,
                    reality_confirmed=confirmed,
                    at=now,
                    exclude=frozenset({self._identity.node_id}),
                )
            )
            made = make_attestation(
                identity=self._identity,
                memory_hash=memory_hash,
                confirmed=confirmed,
                outcome=digest,
                now=now,
                rng=self._rng,
            )
            raw = attestation_bytes(made)
            if await self.store.put(AttestationRow(raw, made)):
                self._pending.append(raw)
                ATTESTATIONS.labels(result="made", reason=made.verdict).inc()
        return tuple(events)

    def take_pending(self) -> list[bytes]:
        """This node's attestations made since the last call (to push to the live peers)."""
        pending, self._pending = self._pending, []
        return pending

    # -- from peers -------------------------------------------------------------------------
    async def receive(self, raws: Sequence[bytes]) -> list[Received]:
        """Verify, admit and keep each of ``raws``; one answer each, in order.

        The lessons they name and the registry view of their attesters and sources are read
        once for the whole batch."""
        now = self._clock.now()
        results: list[Received | None] = []
        verified: list[tuple[int, bytes, Attestation]] = []
        for raw in raws:
            try:
                attestation = verify_attestation(
                    raw, now=now, params=self.params, max_future_skew_s=self._skew
                )
            except (InvalidRecord, VerificationError) as e:
                results.append(Received(sha256_hex(raw), kept=False, reason=e.reason))
                continue
            verified.append((len(results), raw, attestation))
            results.append(None)
        if verified:
            held = {a.memory_hash for _, _, a in verified}
            lessons = {h: await self._lessons.find_by_content_hash(h) for h in sorted(held)}
            ids = {a.attester_id for _, _, a in verified}
            ids.update(row.imported_from for row in lessons.values() if row and row.imported_from)
            found = await self._principals(sorted(ids))
            for index, raw, attestation in verified:
                lesson = lessons[attestation.memory_hash]
                results[index] = await self._admit_and_keep(raw, attestation, lesson, found)
        done = [r for r in results if r is not None]
        for r in done:
            result = "kept" if r.kept else "refused" if r.reason else "duplicate"
            ATTESTATIONS.labels(result=result, reason=r.reason).inc()
        return done

    async def _admit_and_keep(
        self,
        raw: bytes,
        attestation: Attestation,
        lesson: LessonRow | None,
        principals: Mapping[str, str],
    ) -> Received:
        content_hash = sha256_hex(raw)
        source = lesson.imported_from if lesson is not None else None
        current: str | None = None
        if lesson is not None and source:
            # A superseded version's copy is still found by its hash: it is stale ("").
            current = lesson.content_hash if lesson.superseded_by is None else ""
        try:
            admit_attestation(
                attestation,
                current_hash=current,
                attester_principal=principals.get(attestation.attester_id),
                source_principal=principals.get(source, "") if source else "",
            )
        except PolicyRejected as e:
            return Received(content_hash, kept=False, reason=e.reason)
        if not await self.store.put(AttestationRow(raw, attestation)):
            return Received(content_hash, kept=False)
        await self._charge_equivocation(attestation.memory_hash)
        return Received(content_hash, kept=True)

    async def _charge_equivocation(self, memory_hash: str) -> None:
        """Charge the principal of an attester whose identities now hold both verdicts."""
        rows = (await self.store.for_memories([memory_hash])).get(memory_hash, [])
        held = [r.attestation for r in rows]
        verdicts = {a.verdict for a in held}
        if len(verdicts) < 2:
            return
        principals = await self._principals(sorted({a.attester_id for a in held}))
        for event in equivocation_events(
            held,
            memory_hash=memory_hash,
            principals=principals,
            now=self._clock.now(),
            params=self.params,
        ):
            if event.node_id != self._identity.node_id:  # a node keeps no score of itself
                self._sink.emit(event)

    # -- what travels -----------------------------------------------------------------------
    async def of_records(self, record_hashes: Sequence[str]) -> dict[str, list[bytes]]:
        """The attestations kept for each memory (by its content hash) that travel with it."""
        held = await self.store.for_memories(record_hashes)
        return {h: [r.raw for r in rows] for h, rows in held.items()}

    async def shareable(self, offered: Mapping[str, bytes], requester: str) -> dict[str, bytes]:
        """The attestations of the memories a Sync offers ``requester`` (``offered``: their
        bytes by content hash), by the attestations' own content hash.

        None about a memory ``requester`` signed: its source keeps no attestations about its
        own lessons (they are proven there), so offering them would make the two nodes' hash
        summaries differ at every pull and resend them each round.
        """
        held = await self.store.for_memories(list(offered))
        return {
            r.content_hash: r.raw
            for memory_hash, rows in held.items()
            if _source_of(offered[memory_hash]) != requester
            for r in rows
        }

    async def expire_once(self) -> int:
        """Drop the attestations older than ``max_age_days``; returns how many."""
        return await self.store.expire(self._clock.now() - self.params.max_age)

    def log_refusals(self, results: Iterable[Received], via: str) -> None:
        """Say at debug level which attestations from ``via`` were refused, and why."""
        for r in results:
            if r.reason:
                _log.debug("attestation %s from %s refused: %s", r.content_hash[:16], via, r.reason)


class AttestationPush:
    """This node's new attestations pushed to its live peers (Sync carries them to the
    others), the expired ones dropped first."""

    def __init__(
        self,
        attestations: Attestations,
        client: PeerClient,
        live_peers: Callable[[], list[str]],
        *,
        incognito: bool,
    ) -> None:
        """``incognito`` pushes nothing (the attestations are still made and expired)."""
        self._attestations = attestations
        self._client = client
        self._live_peers = live_peers
        self._incognito = incognito

    async def once(self) -> int:
        """Drop the expired attestations, then push the new ones to the live peers; returns
        how many peers took the push."""
        await self._attestations.expire_once()
        pending = self._attestations.take_pending()
        if not pending or self._incognito:
            return 0
        delivered = 0
        for peer in self._live_peers():
            try:
                await self._client.push_attestations(peer, pending)
                delivered += 1
            except DeliveryFailed as e:
                _log.info("attestations not pushed to %s (Sync carries them): %s", peer, e)
        return delivered


def _source_of(raw: bytes) -> str:
    """The node id a memory's bytes name as its author ("" when they do not say)."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return ""
    provenance = obj.get("provenance") if isinstance(obj, dict) else None
    source = provenance.get("source_agent_id") if isinstance(provenance, dict) else None
    return source if isinstance(source, str) else ""
