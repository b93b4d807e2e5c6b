"""Quorum validation on a node: collecting votes on held high-stakes records, and certificates.

The import pipeline holds a high-stakes record as ``awaiting_quorum``. Here:

* :class:`QuorumLedger` remembers, per record hash, the rounds asked, every vote received,
  the state (``pending`` / ``accepted`` / ``rejected`` / ``certified``: a certificate that
  arrived from a peer), when to ask again, and the certificate once there is one. It is kept
  as one JSON file per record under ``<home>/quorum/`` (survives restarts); ``lamarck
  quarantine show`` prints an entry (:meth:`QuorumLedger.describe`).
* :class:`CertificateChecker` is the pipeline's ``CertificateCheck``: a certificate is
  verified with ``consensus.certificate.verify_certificate`` over this node's own view of the
  whole network (``NetworkView``: the registry's principals of its live peers, of itself, and
  of the certificate's voters and source), without asking any voter again. Never over the
  principals of the certificate's members alone: keys all of one principal would look like a
  one-principal network there.
* :class:`QuorumCollector` runs the rounds: for every pending ``awaiting_quorum`` row that is
  due, choose voters (``consensus.voters.select_voters`` over the same view: admitted, not the
  source, not graylisted, one per principal, experts first, seeded RNG; this node itself is a
  candidate, voting from its own outcomes like any other, asked last), ask them all at once over
  ``PeerService.RequestVote``, tally (``consensus.tally``). Accepted: the record is stored with
  its certificate through the one way in (``ImportPipeline.certify``) and pushed, with the
  certificate, to the live peers. Rejected: the row is marked rejected (``quorum``,
  with the count as the reason) and the source charged ``rejected``. Pending (too few votes,
  timeouts, too few eligible voters): asked again after ``retry_after_s``.
* :func:`voter_reality_events`: when reality later judges a record a quorum accepted, its
  voters are judged too (``consensus.accountability``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from lamarck.consensus.accountability import voter_events_for_reality
from lamarck.consensus.certificate import (
    QuorumCertificate,
    certificate_bytes,
    make_certificate,
    parse_certificate,
    verify_certificate,
)
from lamarck.consensus.params import QuorumParams
from lamarck.consensus.tally import Accepted, Electorate, Pending, Rejected, tally
from lamarck.consensus.voters import Candidate, NetworkView, select_voters
from lamarck.domain.rows import (
    LessonEvent,
    QuarantineRow,
)
from lamarck.errors import InvalidRecord, StoreError
from lamarck.node.importing.pipeline import QUORUM_ACTOR, ImportPipeline
from lamarck.node.store.port import LessonStore
from lamarck.policy.decision import DecisionReason
from lamarck.proto.clock import Clock
from lamarck.proto.memory import MemoryV2, parse_memory
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.proto.vote import Vote
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationSink
from lamarck.reputation.scores import PeerBand

__all__ = [
    "QUORUM_DIR",
    "AskVote",
    "CandidateSource",
    "CertificateChecker",
    "NetworkSource",
    "PrincipalSource",
    "QuorumCollector",
    "QuorumLedger",
    "RoundEntry",
    "network_view",
    "peer_candidates",
    "vote_from_wire",
    "voter_reality_events",
]

_log = logging.getLogger("lamarck.node.sharing.quorum")

#: ``<home>/quorum/``: one JSON file per record a quorum was asked about.
QUORUM_DIR = "quorum"

AskVote = Callable[[str, bytes, str], Awaitable[Vote | None]]
"""Ask ``voter`` to vote on the memory bytes (round id for its logs); None when it did not
answer (timeout, refusal): a missing vote counts for nothing."""

CandidateSource = Callable[[str, str], Awaitable[tuple[list[Candidate], NetworkView]]]
"""Who might vote on a record of ``source`` in ``domain`` (this node and its live peers, with
their principals, bands and expertise in that domain), and this node's view of the network
(the source's principal in it)."""

PrincipalSource = Callable[[Sequence[str]], Awaitable[dict[str, str]]]
"""The registry's principals of the admitted, non-revoked ids among those given."""

NetworkSource = Callable[[Sequence[str]], Awaitable[NetworkView]]
"""This node's view of the whole network (itself and its live peers), with the ids given
looked up in the registry too."""


@dataclass(slots=True)
class RoundEntry:
    """What this node knows of the quorum on one record."""

    content_hash: str
    # pending | accepted | rejected | certified (a certificate that came from a peer)
    state: str = "pending"
    rounds: int = 0
    reason: str = ""
    next_at: datetime | None = None
    voters: list[str] = field(default_factory=list)
    # Every vote received, as its signed object, with whether it counted and why not.
    votes: list[dict[str, Any]] = field(default_factory=list)
    certificate: dict[str, Any] | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        """The entry as JSON (also the file format)."""
        return {
            "content_hash": self.content_hash,
            "state": self.state,
            "rounds": self.rounds,
            "reason": self.reason,
            "next_at": format_ts(self.next_at) if self.next_at is not None else None,
            "voters": list(self.voters),
            "votes": list(self.votes),
            "certificate": self.certificate,
            "counts": dict(self.counts),
        }

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> RoundEntry:
        """Parse an entry written by :meth:`to_obj` (``ValueError`` / ``KeyError`` if not)."""
        next_at = obj.get("next_at")
        return cls(
            content_hash=str(obj["content_hash"]),
            state=str(obj.get("state", "pending")),
            rounds=int(obj.get("rounds", 0)),
            reason=str(obj.get("reason", "")),
            next_at=parse_ts(next_at) if isinstance(next_at, str) else None,
            voters=[str(v) for v in obj.get("voters", [])],
            votes=[dict(v) for v in obj.get("votes", [])],
            certificate=obj.get("certificate"),
            counts={str(k): int(v) for k, v in dict(obj.get("counts", {})).items()},
        )


class QuorumLedger:
    """The quorum entries by record hash; persisted under ``directory`` when one is given."""

    def __init__(self, directory: Path | None = None) -> None:
        self._dir = directory
        self._entries: dict[str, RoundEntry] = {}
        self._certs: dict[str, QuorumCertificate] = {}

    def load(self) -> int:
        """Read every entry kept in the directory (unreadable files are skipped and logged)."""
        if self._dir is None or not self._dir.is_dir():
            return 0
        for path in sorted(self._dir.glob("*.json")):
            try:
                entry = RoundEntry.from_obj(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError) as e:
                _log.warning("quorum entry %s unreadable: %s", path.name, e)
                continue
            self._entries[entry.content_hash] = entry
        return len(self._entries)

    def _save(self, entry: RoundEntry) -> None:
        self._entries[entry.content_hash] = entry
        if self._dir is None:
            return
        self._dir.mkdir(parents=True, exist_ok=True)
        path = self._dir / f"{entry.content_hash}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(entry.to_obj(), sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)

    def entry(self, content_hash: str) -> RoundEntry | None:
        """The entry for ``content_hash``, if a quorum was ever asked or a certificate kept."""
        return self._entries.get(content_hash)

    def entries(self) -> tuple[RoundEntry, ...]:
        """Every entry, by record hash."""
        return tuple(self._entries[h] for h in sorted(self._entries))

    def due(self, content_hash: str, now: datetime) -> bool:
        """Whether a round on ``content_hash`` should run now (never asked, or retry due)."""
        entry = self._entries.get(content_hash)
        if entry is None:
            return True
        if entry.state != "pending":
            return False
        return entry.next_at is None or entry.next_at <= now

    def certificate(self, content_hash: str) -> QuorumCertificate | None:
        """The certificate a record was stored with here, if any."""
        cached = self._certs.get(content_hash)
        if cached is not None:
            return cached
        entry = self._entries.get(content_hash)
        if entry is None or entry.certificate is None:
            return None
        try:
            cert = QuorumCertificate.from_obj(entry.certificate)
        except (InvalidRecord, ValueError):
            return None
        self._certs[content_hash] = cert
        return cert

    def certificate_bytes(self, content_hash: str) -> bytes | None:
        """The certificate's wire bytes (what travels with the record), if any."""
        cert = self.certificate(content_hash)
        return certificate_bytes(cert) if cert is not None else None

    def keep(self, content_hash: str, raw: bytes) -> None:
        """Remember the certificate a record was stored with (ours or a peer's)."""
        try:
            cert = parse_certificate(raw)
        except InvalidRecord:
            return
        entry = self._entries.get(content_hash) or RoundEntry(content_hash)
        if entry.state != "accepted":
            entry.state = "certified"
        entry.certificate = cert.to_obj()
        entry.next_at = None
        self._certs[content_hash] = cert
        self._save(entry)

    def note_round(
        self,
        content_hash: str,
        *,
        voters: Iterable[str],
        result: Pending | Accepted | Rejected | None,
        votes: Iterable[Vote],
        reason: str,
        next_at: datetime | None,
    ) -> RoundEntry:
        """Record one round: who was asked, what came back and how it counted."""
        entry = self._entries.get(content_hash) or RoundEntry(content_hash)
        entry.rounds += 1
        entry.voters = sorted(voters)
        entry.reason = reason
        entry.next_at = next_at
        if result is not None:
            ignored = {id(i.vote): i.reason.value for i in result.ignored}
            entry.votes = [
                {**v.to_obj(), "counted": id(v) not in ignored, "ignored": ignored.get(id(v), "")}
                for v in votes
            ]
            entry.counts = {
                "validate": result.validate_count,
                "contradict": result.contradict_count,
                "abstain": len(result.abstaining),
                "accept_at": result.accept_at,
                "reject_at": result.reject_at,
            }
            if isinstance(result, Rejected):
                entry.state = "rejected"
            elif isinstance(result, Accepted):
                entry.state = "accepted"
        self._save(entry)
        return entry

    def describe(self, content_hash: str) -> str:
        """The entry as JSON for ``lamarck quarantine show`` ("" when there is none)."""
        entry = self._entries.get(content_hash)
        return json.dumps(entry.to_obj(), sort_keys=True) if entry is not None else ""


class CertificateChecker:
    """The pipeline's ``CertificateCheck`` over the registry's principals and a ledger."""

    def __init__(self, network: NetworkSource, params: QuorumParams, ledger: QuorumLedger) -> None:
        self._network = network
        self._params = params
        self._ledger = ledger

    async def verify(self, signed: SignedMemory, certificate: bytes) -> int:
        """Verify ``certificate`` for ``signed`` with this node's own view of the network;
        returns how many VALIDATE votes counted (``VerificationError`` / ``InvalidRecord``)."""
        cert = parse_certificate(certificate)
        view = await self._network([*cert.voters, signed.source_agent_id])
        accepted = verify_certificate(
            cert,
            record_hash=signed.content_hash,
            source_id=signed.source_agent_id,
            view=view,
            params=self._params,
        )
        return accepted.validate_count

    def keep(self, content_hash: str, certificate: bytes) -> None:
        """Keep the certificate of a record stored here (it travels on with the record)."""
        self._ledger.keep(content_hash, certificate)


def _record(row: QuarantineRow) -> MemoryV2 | None:
    try:
        return parse_memory(row.signed_record)
    except (InvalidRecord, ValueError):
        return None


class QuorumCollector:
    """Runs the quorum rounds for the records held ``awaiting_quorum``; see the module doc."""

    def __init__(
        self,
        store: LessonStore,
        pipeline: Callable[[], ImportPipeline | None],
        ledger: QuorumLedger,
        *,
        clock: Clock,
        rng: random.Random,
        params: QuorumParams,
        reputation: ReputationParams,
        ask: AskVote,
        candidates: CandidateSource,
        sink: ReputationSink,
        announce: Callable[[bytes], Awaitable[object]] | None = None,
        node_id: str = "",
    ) -> None:
        self._store = store
        #: This node: a candidate of its own rounds, asked last.
        self._node_id = node_id
        self._pipeline = pipeline
        self.ledger = ledger
        self._clock = clock
        self._rng = rng
        self.params = params
        self._reputation = reputation
        self._ask = ask
        self._candidates = candidates
        self._sink = sink
        self._announce = announce

    async def once(self) -> int:
        """One pass: a round for every due ``awaiting_quorum`` row; returns rounds run."""
        now = self._clock.now()
        rows = [
            r
            for r in await self._store.list_quarantine("pending")
            if DecisionReason.AWAITING_QUORUM in r.reasons and self.ledger.due(r.content_hash, now)
        ]
        for row in rows:
            await self.run_round(row)
        return len(rows)

    async def run_round(self, row: QuarantineRow) -> Pending | Accepted | Rejected | None:
        """Ask the voters about ``row`` once and act on the count (None: no quorum could be
        formed, asked again later)."""
        now = self._clock.now()
        retry = now + timedelta(seconds=self.params.retry_after_s)
        record = _record(row)
        if record is None:
            self.ledger.note_round(
                row.content_hash,
                voters=(),
                result=None,
                votes=(),
                reason="bad_record",
                next_at=None,
            )
            return None
        source = row.source_node_id
        # The domain as reality events tag expertise with it (the record's own spelling).
        candidates, view = await self._candidates(source, record.context.domain)
        selection = select_voters(
            candidates,
            source_id=source,
            view=view,
            rng=self._rng,
            quorum=self.params,
            reputation=self._reputation,
            self_id=self._node_id,
        )
        if not selection.enough:
            self.ledger.note_round(
                row.content_hash,
                voters=[c.node_id for c in selection.voters],
                result=None,
                votes=(),
                reason="too_few_voters",
                next_at=retry,
            )
            return None
        electorate = Electorate.open(
            row.content_hash,
            selection.principal_of,
            now=now,
            by_principal=view.by_principal,
            params=self.params,
            needed=view.needed(source, self.params),
        )
        round_id = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        answers = await asyncio.gather(
            *(self._ask(c.node_id, row.signed_record, round_id) for c in selection.voters)
        )
        votes = [v for v in answers if v is not None]
        result = tally(electorate, votes, self.params)
        self.ledger.note_round(
            row.content_hash,
            voters=electorate.voters,
            result=result,
            votes=votes,
            reason=result.reason,
            next_at=retry if isinstance(result, Pending) else None,
        )
        if isinstance(result, Accepted):
            await self._accept(row, make_certificate(electorate, result))
        elif isinstance(result, Rejected):
            await self._reject(row, result, now)
        return result

    async def _accept(self, row: QuarantineRow, cert: QuorumCertificate) -> None:
        pipeline = self._pipeline()
        if pipeline is None:
            return
        raw = certificate_bytes(cert)
        result = await pipeline.certify(row, raw)
        if not result.certified:
            _log.warning(
                "quorum accepted %s but it was not stored: %s", row.content_hash, result.reason
            )
            return
        if self._announce is not None:
            try:
                await self._announce(row.signed_record)
            except (StoreError, OSError) as e:  # best effort: Sync carries it too
                _log.info("announcing certified %s failed: %s", row.content_hash, e)

    async def _reject(self, row: QuarantineRow, result: Rejected, now: datetime) -> None:
        why = (
            f"quorum contradicted: {result.contradict_count} independent CONTRADICT "
            f"(reject at {result.reject_at})"
        )
        async with self._store.atomic():
            await self._store.set_quarantine_state(row.id, "rejected")
            await self._store.append_events(
                [LessonEvent(row.id, now, "rejected", QUORUM_ACTOR, reason=why)]
            )
        self._sink.emit(
            ReputationEvent(
                kind=EventKind.REJECTED,
                node_id=row.source_node_id,
                at=now,
                record_hash=row.content_hash,
                detail=why,
            )
        )


async def network_view(
    peers: Sequence[str],
    also: Sequence[str],
    principals: PrincipalSource,
    band_of: Callable[[str], PeerBand] | None = None,
) -> NetworkView:
    """This node's view of the network: the registry's principals of ``peers`` (this node and
    its live peers) and of the ids in ``also`` (a record's source, a certificate's voters);
    those ``band_of`` says are graylisted here are not available as voters."""
    found = await principals([*dict.fromkeys([*peers, *also])])
    graylisted = (
        frozenset(i for i in found if band_of(i) is PeerBand.GRAYLISTED)
        if band_of is not None
        else frozenset()
    )
    return NetworkView(found, graylisted)


async def peer_candidates(
    peers: Sequence[str],
    source: str,
    principals: PrincipalSource,
    band_of: Callable[[str], PeerBand],
    expertise: Callable[[str], float | None],
) -> tuple[list[Candidate], NetworkView]:
    """Candidates among ``peers`` (this node and its live peers) for a record of ``source``:
    each with its principal from the registry (none: not admitted), its band and expertise;
    and the network view they were read from (the source among it)."""
    view = await network_view(peers, [source], principals, band_of)
    found = view.principal_of
    candidates = [
        Candidate(
            node_id=peer,
            principal=found.get(peer, ""),
            admitted=bool(found.get(peer)),
            band=band_of(peer),
            expertise=expertise(peer),
        )
        for peer in peers
    ]
    return candidates, view


def voter_reality_events(
    reality: Iterable[ReputationEvent], ledger: QuorumLedger | None
) -> tuple[ReputationEvent, ...]:
    """The voters' events for an outcome's reality events (none without a ledger)."""
    if ledger is None:
        return ()
    return voter_events_for_reality(reality, ledger.certificate)


def vote_from_wire(raw: bytes) -> Vote | None:
    """A vote from its wire bytes; None when they do not parse (it counts for nothing)."""
    try:
        return Vote.from_obj(json.loads(raw))
    except (InvalidRecord, ValueError):
        return None
