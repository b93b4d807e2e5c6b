"""The import decision: a pure function of (record, local view, params, now).

It runs the import stages that need no I/O, in the issue's order, on a record whose earlier
stages already passed — (1) size and schema (``MemoryV2`` parsing), (2) signature and hash,
(3) key pinned to the claimed source in the registry — and returns an ``ImportDecision``: what
to do, the confidence to store, and the reputation events to emit. It never stores, sends or
raises for a policy outcome; the node does that with the answer.

Stages, in order:

(4) timestamps — any record time beyond ``now + max_future_skew_s`` → reject
    ``future_timestamp``; ``updated_at`` older than ``max_age_days`` → reject ``expired``.
(5) replay / rollback / equivocation, from what the view holds about the record's id:
    the exact bytes were rejected before → ``replay``; the same content hash is held →
    ``duplicate`` (idempotent: the caller adds a provenance entry, nothing else); the id is held
    under another signer → ``id_conflict``; same id and version, different content, same signer
    → ``equivocation`` (two signed versions are proof: penalised hard); an older version than
    one held → ``rollback``.
(6) access level — ``public`` and ``trusted`` are enforced by the sender (it only sends
    ``trusted`` records to peers above its threshold); the receiver checks that a ``private``
    record names it as a recipient (``not_a_recipient``), and refuses an unproven ``claimed``
    lesson (``unproven_claim``: only active lessons may leave a node). Only ``public`` records
    are forwarded: a forwarder cannot apply the publisher's ``trusted`` threshold.
(7) anti-poisoning filters (``filters.py``): an injection or autonomy hit, or red flags, hold
    the record for review (quarantine); any other hard hit refuses it; none charges anyone.
(8) confidence transfer (``transfer.py``).
(9) high-stakes check — if ``policy.high_stakes(record)`` and no verified quorum certificate
    exists → quarantine ``awaiting_quorum`` (the trust issue supplies the quorum).

Who is charged (``docs/trust.md``, "Who is charged"): only what the charged node provably did
itself.

* A fault in what the signer signed (equivocation, a future timestamp) is the signer's: the
  valid signature proves it wrote it, whoever delivered it. An id already bound to another
  signer (``id_conflict``) is refused uncharged: who copied whose id is not provable.
* A record that is stale or misrouted (replay of a hash judged before, rollback, expired,
  not_a_recipient, an unproven claim sent on) is the *sender's* doing only when the sender is
  its signer (:func:`charged_sender`): a relay forwarding what it received did not make it, and
  the signer legitimately signed that record once. A stale copy this node pulled (a Sync
  answer) is nobody's. Otherwise it is refused without charge.
* A filter verdict (injected instruction, autonomy claim, a secret, an undeclared situation,
  the red flags) is a guess about text, never proof: injection and autonomy hits are held for
  review (quarantine), the others refused, and neither charges anyone. Reality judges lessons.
* Quarantine emits nothing: suspicion is not proof.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from lamarck.consensus.high_stakes import HighStakesCheck as HighStakesRule
from lamarck.consensus.high_stakes import HighStakesRule as ConservativeHighStakesRule
from lamarck.consensus.params import HighStakesParams
from lamarck.errors import (
    ConfigError,
    LamarckError,
    PolicyRejected,
    QuarantinedError,
    ReplayError,
    SecretDetected,
    VerificationError,
)
from lamarck.learning.params import EvidenceParams, SecretParams
from lamarck.policy.autonomy_params import AutonomyParams
from lamarck.policy.filters import (
    Corroboration,
    Filter,
    FilterParams,
    FilterReason,
    ImportView,
    VerdictKind,
)
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import DEFAULT_MAX_FUTURE_SKEW_S
from lamarck.proto.timefmt import parse_ts
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand, peer_band, trust_band
from lamarck.reputation.transfer import (
    TransferInputs,
    TransferParams,
    TransferResult,
    imported_confidence,
)

__all__ = [
    "HELD_FILTER_REASONS",
    "ConservativeHighStakesRule",
    "DecisionReason",
    "HighStakesParams",
    "HighStakesRule",
    "ImportDecision",
    "ImportOutcome",
    "ImportParams",
    "ImportPolicy",
    "Incoming",
    "charged_sender",
    "decide_import",
    "error_for",
]

_SECONDS_PER_DAY = 86_400.0


class ImportOutcome(StrEnum):
    """What the node should do with the record."""

    ACCEPT = "accept"
    DUPLICATE = "duplicate"
    QUARANTINE = "quarantine"
    REJECT = "reject"


class DecisionReason(StrEnum):
    """Reasons given by the decision's own stages (filter reasons are ``FilterReason``)."""

    FUTURE_TIMESTAMP = "future_timestamp"
    EXPIRED = "expired"
    REPLAY = "replay"
    ROLLBACK = "rollback"
    EQUIVOCATION = "equivocation"
    ID_CONFLICT = "id_conflict"
    NOT_A_RECIPIENT = "not_a_recipient"
    UNPROVEN_CLAIM = "unproven_claim"
    GRAYLISTED_SOURCE = "graylisted_source"
    AWAITING_QUORUM = "awaiting_quorum"


# --------------------------------------------------------------------------------------------
# High stakes: the rule lives in ``lamarck.consensus.high_stakes``; the old names
# stay importable from here: ``HighStakesRule`` is the callable type, ``ConservativeHighStakesRule``
# the rule itself, ``HighStakesParams`` its parameters.


# --------------------------------------------------------------------------------------------
# Inputs, parameters and the answer.


@dataclass(frozen=True, slots=True)
class Incoming:
    """A verified record as received: the parsed model, its content hash, who delivered it.

    ``content_hash`` is the sha256 hex of the signing input (``signature.hash``, checked in
    stage 2). ``via_node_id`` is the transport-authenticated peer that sent it ("" for a local
    source such as a bundle file). ``pulled``: this node asked for it (an anti-entropy Sync
    answer), so a stale copy is no replay by the peer that answered.
    """

    record: MemoryV2
    content_hash: str
    via_node_id: str = ""
    pulled: bool = False


@dataclass(frozen=True, slots=True)
class ImportParams:
    """Everything the decision needs besides the record and the view; validated."""

    # Largest tolerated lead of any record time over ``now`` (clock skew), seconds >= 0.
    max_future_skew_s: float = DEFAULT_MAX_FUTURE_SKEW_S
    # Oldest ``updated_at`` accepted, days > 0.
    max_age_days: float = 365.0
    transfer: TransferParams = field(default_factory=TransferParams)
    # Only the band thresholds are read here; wire the same instance the reputation book uses.
    reputation: ReputationParams = field(default_factory=ReputationParams)
    # The filters' parameters (data: the chain is built from them at wiring, ``ImportPolicy``).
    filters: FilterParams = field(default_factory=FilterParams)
    autonomy: AutonomyParams = field(default_factory=AutonomyParams)
    # The secret scan's parameters: the node's own, those local learning writes through.
    secrets: SecretParams = field(default_factory=SecretParams)
    # What makes a lesson high-stakes (it waits for a quorum certificate).
    high_stakes: HighStakesParams = field(default_factory=HighStakesParams)
    # How this node's own evidence on a copy meets a newer version from its source.
    evidence: EvidenceParams = field(default_factory=EvidenceParams)

    def __post_init__(self) -> None:
        if not math.isfinite(self.max_future_skew_s) or self.max_future_skew_s < 0:
            raise ConfigError("invalid max_future_skew_s: must be a finite number >= 0")
        if not math.isfinite(self.max_age_days) or self.max_age_days <= 0:
            raise ConfigError("invalid max_age_days: must be a finite number > 0")


@dataclass(frozen=True, slots=True)
class ImportDecision:
    """The answer: outcome, reasons, confidence to store, events to emit, forward or not.

    ``confidence`` and ``transfer`` are set for accept and quarantine (what an operator
    approving it would store); ``reasons`` is empty for accept and duplicate.
    """

    outcome: ImportOutcome
    reasons: tuple[str, ...] = ()
    confidence: float | None = None
    transfer: TransferResult | None = None
    events: tuple[ReputationEvent, ...] = ()
    forward: bool = False

    @property
    def reason(self) -> str:
        """The first reason ("" when there is none)."""
        return self.reasons[0] if self.reasons else ""

    @property
    def error(self) -> LamarckError | None:
        """The typed error for a reject or quarantine (None for accept and duplicate)."""
        if self.outcome is ImportOutcome.REJECT:
            return error_for(self.reason)
        if self.outcome is ImportOutcome.QUARANTINE:
            return QuarantinedError(reason=self.reason, reasons=list(self.reasons))
        return None


def error_for(reason: str) -> LamarckError:
    """The distinct typed error for a rejection reason."""
    if reason in (DecisionReason.FUTURE_TIMESTAMP, DecisionReason.EXPIRED):
        return VerificationError(reason=reason)
    if reason in (DecisionReason.REPLAY, DecisionReason.ROLLBACK, DecisionReason.EQUIVOCATION):
        return ReplayError(reason=reason)
    if reason == FilterReason.SECRET_DETECTED:
        return SecretDetected(reason=reason)
    return PolicyRejected(reason=reason)


# --------------------------------------------------------------------------------------------
# The stages.


@dataclass(frozen=True, slots=True)
class _Ctx:
    incoming: Incoming
    now: datetime

    @property
    def source(self) -> str:
        return self.incoming.record.provenance.source_agent_id

    def event(self, kind: EventKind, node_id: str, detail: str = "") -> tuple[ReputationEvent, ...]:
        if not node_id:
            # A local source (bundle file) has no peer to hold responsible.
            return ()
        record = self.incoming.record
        return (
            ReputationEvent(
                kind=kind,
                node_id=node_id,
                at=self.now,
                record_hash=self.incoming.content_hash,
                domain=record.context.domain,
                detail=detail,
            ),
        )

    def sender_event(self, kind: EventKind) -> tuple[ReputationEvent, ...]:
        """``kind`` charged to the delivering peer, only where it provably originated the
        record (:func:`charged_sender`); nothing otherwise."""
        return self.event(kind, charged_sender(self.incoming.via_node_id, self.source))

    def replay_event(self) -> tuple[ReputationEvent, ...]:
        """A stale copy (replay, rollback, expired) charged as :meth:`sender_event` does, and
        never for a copy this node pulled: answering a Sync with what one holds is no
        replay (a rejected record's hash is never held here, so a Sync offers it again)."""
        return () if self.incoming.pulled else self.sender_event(EventKind.REPLAY)

    def reject(self, reason: str, events: tuple[ReputationEvent, ...] = ()) -> ImportDecision:
        return ImportDecision(outcome=ImportOutcome.REJECT, reasons=(reason,), events=events)


def charged_sender(via_node_id: str, signer: str) -> str:
    """Who a broken, stale or misrouted record is charged to: the delivering peer when it is
    the record's signer (it provably originated it), else nobody ("").

    A relay forwarding what it received did not make it, and bytes changed on the way prove
    nothing about who sent them; only a sender vouching for its own record owns its faults.
    """
    return via_node_id if via_node_id and via_node_id == signer else ""


def _timestamps(ctx: _Ctx, params: ImportParams) -> ImportDecision | None:
    record = ctx.incoming.record
    prov = record.provenance
    times = [prov.created_at, prov.updated_at, *(e.timestamp for e in record.evidence)]
    if prov.last_validated is not None:
        times.append(prov.last_validated)
    latest = max(parse_ts(t) for t in times)
    if latest > ctx.now + timedelta(seconds=params.max_future_skew_s):
        # Only the signer chose that time (a trick to always look newest, or a broken clock).
        return ctx.reject(
            DecisionReason.FUTURE_TIMESTAMP, ctx.event(EventKind.REJECTED, ctx.source)
        )
    if parse_ts(prov.updated_at) < ctx.now - timedelta(days=params.max_age_days):
        return ctx.reject(DecisionReason.EXPIRED, ctx.replay_event())
    return None


def _history(ctx: _Ctx, view: ImportView) -> ImportDecision | None:
    incoming = ctx.incoming
    record = incoming.record
    if view.previously_rejected(incoming.content_hash) is not None:
        # Already judged here: refused again. A relay forwarding what it accepted is not
        # replaying (its view differs from ours); only the signer sending it again is.
        return ctx.reject(DecisionReason.REPLAY, ctx.replay_event())
    known = view.known_versions(record.id)
    if any(k.content_hash == incoming.content_hash for k in known):
        return ImportDecision(outcome=ImportOutcome.DUPLICATE)
    if any(k.source_id != ctx.source for k in known):
        # Ids are bound to their first signer; a uuid4 collision is deliberate, but by whom is
        # not provable: whoever saw a record first can sign its id under another key to make
        # the real one look like the copy. Refused, nobody charged.
        return ctx.reject(DecisionReason.ID_CONFLICT)
    # A memory without a lesson block is never edited in place: it is its own first version.
    version = record.lesson.version if record.lesson is not None else 1
    same = [k for k in known if k.version == version]
    if same:
        detail = f"also signed {same[0].content_hash} as version {version}"
        return ctx.reject(
            DecisionReason.EQUIVOCATION, ctx.event(EventKind.EQUIVOCATION, ctx.source, detail)
        )
    if known and version < max(k.version for k in known):
        return ctx.reject(DecisionReason.ROLLBACK, ctx.replay_event())
    return None


def _access(ctx: _Ctx, view: ImportView) -> ImportDecision | None:
    record = ctx.incoming.record
    if record.access_level == "private" and view.self_node_id not in record.recipients:
        return ctx.reject(DecisionReason.NOT_A_RECIPIENT, ctx.sender_event(EventKind.REJECTED))
    if record.lesson is not None and record.lesson.status == "claimed":
        # Signing a claimed lesson is no fault (a node signs its own); sending it on is.
        return ctx.reject(DecisionReason.UNPROVEN_CLAIM, ctx.sender_event(EventKind.REJECTED))
    return None


def _graylisted(ctx: _Ctx, view: ImportView, params: ImportParams) -> ImportDecision | None:
    """A graylisted source's records are not imported: its band is the one
    threshold set transfer, gossip and voter choice read. No new charge: it is down already,
    and only reality or its operator's reset (``lamarck reputation reset``) lifts it."""
    source = ctx.source
    if source and peer_band(view.reputation(source), params.reputation) is PeerBand.GRAYLISTED:
        return ctx.reject(DecisionReason.GRAYLISTED_SOURCE)
    return None


#: Filter hits held for an operator's review rather than refused: text aimed at the agent or
#: claiming authority is a guess about meaning (honest lessons trip it too), so a person
#: looks; it never reaches a prompt meanwhile.
HELD_FILTER_REASONS: frozenset[str] = frozenset(
    {FilterReason.INJECTED_INSTRUCTION, FilterReason.AUTONOMY_CLAIM}
)


def _transfer(
    ctx: _Ctx, view: ImportView, params: ImportParams, corr: Corroboration
) -> TransferResult:
    record = ctx.incoming.record
    reputation = view.reputation(ctx.source)
    if not math.isfinite(reputation):
        reputation = 0.0  # a broken adapter fails closed
    reputation = min(1.0, max(0.0, reputation))
    inputs = TransferInputs(
        original_confidence=record.confidence,
        reputation=reputation,
        band=trust_band(reputation, params.reputation),
        supporting_votes=corr.supporting_votes,
        contradicting_votes=corr.contradicting_votes,
        quorum_certified=corr.quorum_certified,
        same_agent=ctx.source == view.self_node_id,
        track=view.track_record(ctx.source),
    )
    return imported_confidence(inputs, params.transfer)


@dataclass(frozen=True, slots=True)
class ImportPolicy:
    """The checks the decision runs, built once from ``ImportParams`` at wiring
    (``lamarck.policy.chain.build_policy``): the filter chain and the high-stakes rule."""

    filters: Filter
    high_stakes: HighStakesRule


def decide_import(
    incoming: Incoming,
    view: ImportView,
    params: ImportParams,
    now: datetime,
    policy: ImportPolicy,
) -> ImportDecision:
    """Run stages (4)..(9) on a verified record and say what to do with it (``policy``: the
    checks built from ``params``; the decision embeds nothing and does no I/O)."""
    if now.tzinfo is None:
        raise ValueError("decide_import needs a timezone-aware now")
    ctx = _Ctx(incoming=incoming, now=now)
    record = incoming.record
    # (4) timestamps, (5) replay / rollback / equivocation, (6) access level and source band;
    # the first refusal wins.
    early = (
        _timestamps(ctx, params)
        or _history(ctx, view)
        or _access(ctx, view)
        or _graylisted(ctx, view, params)
    )
    if early is not None:
        return early
    # (7) anti-poisoning filters: held or refused, never charged (a verdict is not proof).
    verdict = policy.filters.check(record, view)
    if verdict.kind is VerdictKind.REJECT and verdict.reason not in HELD_FILTER_REASONS:
        return ctx.reject(verdict.reason)
    held = list(verdict.reasons)
    # (8) confidence transfer.
    corr = view.corroboration(record)
    result = _transfer(ctx, view, params, corr)
    # (9) high stakes wait for a verified quorum certificate.
    if policy.high_stakes(record) and not corr.quorum_certified:
        held.append(DecisionReason.AWAITING_QUORUM)
    if held:
        return ImportDecision(
            outcome=ImportOutcome.QUARANTINE,
            reasons=tuple(held),
            confidence=result.confidence,
            transfer=result,
        )
    return ImportDecision(
        outcome=ImportOutcome.ACCEPT,
        confidence=result.confidence,
        transfer=result,
        forward=record.access_level == "public",
    )
