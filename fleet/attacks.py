"""Byzantine behaviours for fleet scenarios: bad records signed with a real node's key, pushed
to peers the way a peer pushes (PeerService.Publish with a valid peer token).

The record builders are pure (values in, signed bytes out); :class:`PeerPusher` is the edge
(one blocking gRPC channel per target). A Byzantine node here is a real, admitted fleet node
whose key (read from its home) signs what the scripts below send: its own agents may look
honest, its peer traffic does not.

Behaviours: forged signatures (content changed after signing), replays (the
same refused bytes again), equivocation (two contents under one id and version), injected
instructions, inflated validations (self-reported counts and validators, a confidence
nothing backs), false votes (a quorum certificate of the Byzantine keys' own VALIDATE votes
for a poisoned lesson) and Sybil keys (never admitted; registrations refused by admission).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import grpc

from lamarck.consensus.certificate import QuorumCertificate, certificate_bytes
from lamarck.errors import ConfigError
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import KEYS_DIR
from lamarck.proto.memory import MemoryV2
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.proto.signed import SignedMemory
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts
from lamarck.proto.tls import TLS_CERT_FILE, TLS_KEY_FILE, TlsMaterial, load_tls, tls_name
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc, records_pb2
from lamarck.proto.vote import Vote

__all__ = [
    "AttackParams",
    "LessonSpec",
    "PeerPusher",
    "Push",
    "equivocating_pair",
    "false_vote_certificate",
    "forged_signature",
    "signed_lesson",
]


@dataclass(frozen=True, slots=True)
class AttackParams:
    """Sizes and ages of the scripted attacks, validated when built."""

    # Age of a forged record's timestamps (inside every node's freshness window). > 0.
    record_age_s: float = 60.0
    # Confidence an inflated record claims. In (0, 1].
    inflated_confidence: float = 0.99
    # Validations an inflated record claims about itself. Integer >= 1.
    inflated_validations: int = 50
    # Per-call deadline of a push. > 0.
    rpc_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        """Refuse out-of-range values."""
        for name in ("record_age_s", "rpc_timeout_s"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not 0 < v < float("inf"):
                raise ConfigError(f"invalid {name}={v!r}: must be finite and > 0", field=name)
        if not 0 < self.inflated_confidence <= 1:
            raise ConfigError("invalid inflated_confidence: must be in (0, 1]", field="confidence")
        if not isinstance(self.inflated_validations, int) or self.inflated_validations < 1:
            raise ConfigError("invalid inflated_validations: must be >= 1", field="validations")


@dataclass(frozen=True, slots=True)
class LessonSpec:
    """What a crafted lesson says: its text, the operation it is about, its domain."""

    content: str
    operation: str
    domain: str = "build"
    confidence: float = 0.7
    lesson_id: str = ""  # "" draws a fresh uuid4
    version: int = 1
    validation_count: int = 0
    validated_by: tuple[str, ...] = ()
    situation: tuple[tuple[str, Any], ...] = ()  # a situation block's fields, in order
    tags: tuple[str, ...] = ()  # metadata tags (a mechanical lesson's avoid/target tags)


def _lesson_obj(spec: LessonSpec, source_id: str, now: datetime, age_s: float) -> dict[str, Any]:
    stamp = format_ts(now - timedelta(seconds=age_s))
    obj: dict[str, Any] = {
        "schema_version": "2.0",
        "id": spec.lesson_id or str(uuid.uuid4()),
        "type": "AC",
        "content": spec.content,
        "confidence": spec.confidence,
        "access_level": "public",
        "context": {"domain": spec.domain, "environment": "", "tools": []},
        "provenance": {
            "source_agent_id": source_id,
            "source_type": "empirical",
            "created_at": stamp,
            "updated_at": stamp,
            "validation_count": spec.validation_count,
        },
        # Evidence nobody can check from outside: an outcome id of the author's own.
        "evidence": [
            {
                "type": "empirical",
                "description": "local outcome",
                "timestamp": stamp,
                "validator": "reality",
                "outcome_id": str(uuid.uuid4()),
            }
        ],
        "metadata": {"success_count": 1, "failure_count": 0, "tags": list(spec.tags)},
        "lesson": {
            "operation": spec.operation,
            "scope": "global",
            "status": "active",
            "version": spec.version,
        },
        "confidence_interval": {"mean": spec.confidence, "std_dev": 0.1},
    }
    if spec.situation:
        obj["situation"] = dict(spec.situation)
    if spec.validated_by:
        obj["validation"] = {
            "validated_by": list(spec.validated_by),
            "contradicted_by": [],
            "consensus_level": spec.confidence,
        }
    return obj


def signed_lesson(
    spec: LessonSpec, signer: NodeIdentity, now: datetime, params: AttackParams
) -> bytes:
    """A well-formed lesson signed by ``signer`` (a valid record; its claims may be false)."""
    obj = _lesson_obj(spec, signer.node_id, now, params.record_age_s)
    return SignedMemory.sign(MemoryV2.from_obj(obj), signer).raw


def forged_signature(raw: bytes, extra: str) -> bytes:
    """``raw`` with ``extra`` appended to its content after signing (the signature no longer
    binds it)."""
    import json

    obj = json.loads(raw)
    obj["content"] = str(obj["content"]) + extra
    return canonical_bytes(obj)


def equivocating_pair(
    first: LessonSpec, second_content: str, signer: NodeIdentity, now: datetime, p: AttackParams
) -> tuple[bytes, bytes]:
    """Two records with one id and one version and different contents, both validly signed."""
    spec = first if first.lesson_id else LessonSpec(**{**_fields(first), "lesson_id": _uuid()})
    other = LessonSpec(**{**_fields(spec), "content": second_content})
    return signed_lesson(spec, signer, now, p), signed_lesson(other, signer, now, p)


def _fields(spec: LessonSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in LessonSpec.__dataclass_fields__}


def _uuid() -> str:
    return str(uuid.uuid4())


def false_vote_certificate(raw: bytes, voters: Sequence[NodeIdentity], now: datetime) -> bytes:
    """A quorum certificate for ``raw`` made of ``voters``' own VALIDATE votes (false votes:
    nothing they ran backs them)."""
    signed = SignedMemory.from_json(raw)
    votes = []
    for k, voter in enumerate(voters):
        obj = {
            "schema_version": "1.0",
            "kind": "vote",
            "id": _uuid(),
            "memory_id": signed.memory.id,
            "memory_hash": signed.content_hash,
            "voter_id": voter.node_id,
            "verdict": "confirm",
            "confidence": 1.0,
            "outcome_ids": [str(uuid.UUID(int=k + 1, version=4))],
            "created_at": format_ts(now),
        }
        votes.append(Vote.from_obj(sign_object(RecordKind.vote, obj, voter)))
    cert = QuorumCertificate(
        record_hash=signed.content_hash,
        voters=tuple(sorted(v.node_id for v in voters)),
        opened_at=now - timedelta(seconds=5),
        closes_at=now,
        votes=tuple(votes),
    )
    return certificate_bytes(cert)


def _home_tls(home: Path) -> TlsMaterial | None:
    """The peer TLS material in a node's home, or None (a node run off-insecure)."""
    keys = home / KEYS_DIR
    if not (keys / TLS_KEY_FILE).exists():
        return None
    return load_tls(keys / TLS_KEY_FILE, keys / TLS_CERT_FILE)


@dataclass(frozen=True, slots=True)
class Push:
    """One record (and optionally its certificate) sent, and how the target acked it."""

    behaviour: str
    target: str  # the target's node id
    status: str  # the ack's status name, or the RPC error code name
    reason: str


class PeerPusher:
    """Sends records to peers as ``identity`` (a real admitted node's key) would."""

    def __init__(
        self,
        identity: NodeIdentity,
        clock: Clock,
        params: AttackParams,
        *,
        home: Path | None = None,
        peer_homes: Mapping[str, Path] | None = None,
    ) -> None:
        self.identity = identity
        self._params = params
        # The pushing node's TLS material (from its home), and where each target's
        # certificate is read: the pusher dials as that node would, over mutual TLS.
        self._tls = _home_tls(home) if home is not None else None
        self._peer_homes = dict(peer_homes or {})
        self._tokens = PeerTokens(
            identity,
            clock,
            PeerAuthParams(),
            channel=self._tls.fingerprint if self._tls is not None else "",
        )
        self._channels: dict[str, grpc.Channel] = {}

    def close(self) -> None:
        """Close every channel."""
        for ch in self._channels.values():
            ch.close()
        self._channels.clear()

    def _dial(self, target_id: str, address: str) -> grpc.Channel:
        """A channel to ``target_id``: mutual TLS trusting the certificate in its home when
        both ends have one, else plaintext (nodes run off-insecure)."""
        target_home = self._peer_homes.get(target_id)
        server = _home_tls(target_home) if target_home is not None else None
        if self._tls is None or server is None:
            return grpc.insecure_channel(address)
        credentials = grpc.ssl_channel_credentials(
            server.cert_pem, self._tls.key_pem, self._tls.cert_pem
        )
        return grpc.secure_channel(
            address, credentials, options=[("grpc.ssl_target_name_override", tls_name(target_id))]
        )

    def push(
        self,
        behaviour: str,
        target_id: str,
        address: str,
        raws: Sequence[bytes],
        *,
        certificate: bytes | None = None,
    ) -> list[Push]:
        """One Publish of ``raws`` to ``target_id`` at ``address``; one ``Push`` per record."""
        return self.push_acks(behaviour, target_id, address, raws, certificate=certificate)[
            : len(raws)
        ]

    def push_acks(
        self,
        behaviour: str,
        target_id: str,
        address: str,
        raws: Sequence[bytes],
        *,
        certificate: bytes | None = None,
    ) -> list[Push]:
        """Like :meth:`push`, with the certificate's own ack last when one was sent."""
        records = [
            records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw)
            for raw in raws
        ]
        if certificate is not None:
            records.append(
                records_pb2.SignedRecord(
                    kind=records_pb2.RECORD_KIND_QUORUM_CERTIFICATE, canonical_json=certificate
                )
            )
        request = peer_pb2.PublishRequest(
            records=records,
            sender_node_id=self.identity.node_id,
            origin_node_id=self.identity.node_id,
            hop_count=0,
            hop_limit=1,
        )
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = self._dial(target_id, address)
        stub = peer_pb2_grpc.PeerServiceStub(channel)
        try:
            reply = stub.Publish(
                request,
                timeout=self._params.rpc_timeout_s,
                metadata=self._tokens.metadata(target_id),
            )
        except grpc.RpcError as e:
            code = e.code().name if hasattr(e, "code") else "UNKNOWN"
            return [Push(behaviour, target_id, code, str(e.details() or ""))] * len(records)
        return [
            Push(behaviour, target_id, records_pb2.AckStatus.Name(a.status), a.reason)
            for a in reply.acks
        ]
