"""The planted control's quorum half: a high-stakes lesson published to every
peer with fabricated votes or a forged quorum certificate is refused by every peer.

A planter (node 1's own admitted key, read from its home) signs one high-stakes lesson per
shape (a claimed confidence above the high-stakes threshold) and pushes it with a
certificate to every other node through the real ``PeerService.Publish`` path
(:class:`~lamarck.fleet.attacks.PeerPusher`, the Byzantine scenario's pusher; its
certificates come from :func:`~lamarck.fleet.attacks.false_vote_certificate`).

Shapes, each with the typed reason every peer must refuse its certificate for:

* fabricated votes — ``sybil_voters`` (votes signed by keys nobody admitted:
  ``unknown_voter``), ``claimed_for_admitted_voters`` (those votes relabelled as the admitted
  peers' own, votes they never cast: ``too_few_votes``, the signatures do not bind),
  ``source_voted`` (the planter votes for its own lesson: ``source_voted``);
* forged certificates — ``vote_bytes_altered`` (a certificate the admitted peers' keys did
  sign, with bytes changed after signing: ``too_few_votes``), ``retargeted`` (a valid
  certificate of another lesson renamed to this one: ``too_few_votes``, its votes name the
  other record), ``not_a_certificate`` (bytes that do not parse: ``bad_certificate``).

The control (``control_admitted_keys``) goes first: the same kind of certificate signed by
the admitted peers' keys unaltered is accepted, so the refusals above are the forgeries',
not a certificate path that refuses everything. A refused certificate leaves the lesson to
the usual rules: held ``awaiting_quorum``, never active, never in a prompt (checked through
recall and check on every peer; every planted text carries :data:`PLANTED_MARK`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lamarck.client import Client
from lamarck.fleet.attacks import (
    AttackParams,
    LessonSpec,
    PeerPusher,
    false_vote_certificate,
    signed_lesson,
)
from lamarck.fleet.supervisor import Fleet
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import identity_path, load_private_key

__all__ = [
    "CONTROL",
    "EXPECTED_REASON",
    "PLANTED_MARK",
    "CertificatePush",
    "PlantedReport",
    "figures_met",
    "run_planted_certificates",
]

#: In every planted text: a prompt showing it shows a planted lesson.
PLANTED_MARK = "zq-planted"

#: The positive control: a certificate the admitted peers' keys signed, unaltered.
CONTROL = "control_admitted_keys"

#: Each forged shape -> the typed reason every peer refuses its certificate for.
EXPECTED_REASON: dict[str, str] = {
    "sybil_voters": "unknown_voter",
    "claimed_for_admitted_voters": "too_few_votes",
    "source_voted": "source_voted",
    "vote_bytes_altered": "too_few_votes",
    "retargeted": "too_few_votes",
    "not_a_certificate": "bad_certificate",
}

#: Claimed confidence of a planted lesson: above ``HighStakesParams.confidence_threshold``.
_HIGH_STAKES_CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class CertificatePush:
    """One planted lesson and its certificate pushed to one peer, and how the peer acked."""

    shape: str
    peer: str  # the peer's node name
    lesson_status: str  # the memory's ack status name
    lesson_reason: str
    certificate_status: str  # the certificate's ack status name
    certificate_reason: str


@dataclass
class PlantedReport:
    """What the certificate half of the planted control measured."""

    pushes: list[CertificatePush] = field(default_factory=list)
    in_prompts: list[str] = field(default_factory=list)  # "peer: shape where"
    # Where the control's lesson (accepted) shows: the prompt check can see a planted text.
    control_in_prompts: list[str] = field(default_factory=list)

    def forged(self) -> list[CertificatePush]:
        """The pushes of the forged shapes (the control left out)."""
        return [p for p in self.pushes if p.shape != CONTROL]

    def figures(self) -> dict[str, float]:
        """Counts and shares: how the forged certificates fared, and the control."""
        forged = self.forged()
        control = [p for p in self.pushes if p.shape == CONTROL]
        right = [
            p
            for p in forged
            if p.certificate_status == "ACK_STATUS_REJECTED"
            and p.certificate_reason == EXPECTED_REASON[p.shape]
        ]
        return {
            "forged_certificate_pushes": float(len(forged)),
            "forged_lessons_accepted": float(
                sum(p.lesson_status == "ACK_STATUS_ACCEPTED" for p in forged)
            ),
            "forged_certificates_refused_for_the_right_reason_share": len(right) / len(forged)
            if forged
            else 0.0,
            "planted_in_prompts": float(len(self.in_prompts)),
            "control_certificates_accepted_share": sum(
                p.certificate_status == "ACK_STATUS_ACCEPTED" for p in control
            )
            / len(control)
            if control
            else 0.0,
        }


def _relabelled(cert: bytes, voter_ids: Sequence[str]) -> bytes:
    """``cert`` with its votes (and voter list) renamed to ``voter_ids``, signatures kept."""
    obj = json.loads(cert)
    for vote, voter in zip(obj["votes"], voter_ids, strict=True):
        vote["voter_id"] = voter
    obj["voters"] = sorted(voter_ids)
    return canonical_bytes(obj)


def _votes_altered(cert: bytes) -> bytes:
    """``cert`` with every vote's outcome ids changed after it was signed."""
    obj = json.loads(cert)
    for vote in obj["votes"]:
        vote["outcome_ids"] = [str(uuid.uuid4())]
    return canonical_bytes(obj)


def _retargeted(cert: bytes, record_hash: str) -> bytes:
    """``cert`` (of another record) renamed to certify ``record_hash``."""
    obj = dict(json.loads(cert), record_hash=record_hash)
    return canonical_bytes(obj)


def _content_hash(raw: bytes) -> str:
    from lamarck.proto.signed import SignedMemory

    return SignedMemory.from_json(raw).content_hash


def _mark(tag: str, shape: str) -> str:
    """The text only the planted lesson of ``shape`` carries."""
    return f"{PLANTED_MARK}-{tag}-{shape}".replace("_", "-")


def _lesson(tag: str, shape: str) -> LessonSpec:
    target = f"{tag}-{shape}".replace("_", "-")
    return LessonSpec(
        content=f"Before deploying {target}, run `make verify-{target}` first "
        f"({_mark(tag, shape)}).",
        operation=f"shell:make deploy-{target}",
        confidence=_HIGH_STAKES_CONFIDENCE,
    )


def _certificate(
    shape: str,
    raw: bytes,
    planter: NodeIdentity,
    voters: Sequence[NodeIdentity],
    other_raw: bytes,
    now: datetime,
) -> bytes:
    """The certificate ``shape`` sends with ``raw`` (see the module doc)."""
    if shape == CONTROL:
        return false_vote_certificate(raw, voters, now)
    sybils = [NodeIdentity.generate() for _ in voters]
    if shape == "sybil_voters":
        return false_vote_certificate(raw, sybils, now)
    if shape == "claimed_for_admitted_voters":
        cert = false_vote_certificate(raw, sybils, now)
        return _relabelled(cert, [v.node_id for v in voters])
    if shape == "source_voted":
        return false_vote_certificate(raw, [planter, *voters[1:]], now)
    if shape == "vote_bytes_altered":
        return _votes_altered(false_vote_certificate(raw, voters, now))
    if shape == "retargeted":
        return _retargeted(false_vote_certificate(other_raw, voters, now), _content_hash(raw))
    if shape == "not_a_certificate":
        return b'{"record_hash": ' + _content_hash(raw).encode() + b", not json"
    raise ValueError(f"unknown shape {shape!r}")


def _in_prompts(client: Client, spec: LessonSpec, mark: str) -> list[str]:
    """Where a prompt of this peer shows the text carrying ``mark`` (``[]``: nowhere)."""
    found = []
    for where, text in (
        ("recall", client.recall(spec.content).section),
        ("check", client.check_operation(spec.operation).preamble),
    ):
        if mark in text:
            found.append(where)
    return found


def run_planted_certificates(
    fleet: Fleet,
    tag: str,
    params: AttackParams | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> PlantedReport:
    """Node 1 publishes one high-stakes lesson per shape to every other node, each with its
    certificate (the control first); then every peer's prompts are checked."""
    params = params or AttackParams()
    planter_node, peers = fleet.nodes[0], fleet.nodes[1:]
    planter = load_private_key(identity_path(planter_node.home))
    voters = [load_private_key(identity_path(n.home)) for n in peers]
    now = SystemClock().now()
    report = PlantedReport()
    specs: dict[str, LessonSpec] = {}
    pusher = PeerPusher(
        planter,
        SystemClock(),
        params,
        home=planter_node.home,
        peer_homes={node.node_id: node.home for node in fleet.nodes},
    )
    try:
        for shape in (CONTROL, *EXPECTED_REASON):
            spec = specs[shape] = _lesson(tag, shape)
            raw = signed_lesson(spec, planter, now, params)
            other = signed_lesson(_lesson(tag, f"{shape}-other"), planter, now, params)
            cert = _certificate(shape, raw, planter, voters, other, now)
            for peer in peers:
                lesson_ack, cert_ack = _push_pair(pusher, shape, peer, raw, cert)
                report.pushes.append(CertificatePush(shape, peer.name, *lesson_ack, *cert_ack))
            seen = sorted(
                {
                    f"lesson {p.lesson_status}:{p.lesson_reason}, certificate "
                    f"{p.certificate_status}:{p.certificate_reason}"
                    for p in report.pushes
                    if p.shape == shape
                }
            )
            say(f"planted control: {shape}: {'; '.join(seen)}")
    finally:
        pusher.close()
    for peer in peers:
        with Client(peer.agent_addr, timeout=60) as client:
            for shape, spec in specs.items():
                seen = [
                    f"{peer.name}: {shape} {w}"
                    for w in _in_prompts(client, spec, _mark(tag, shape))
                ]
                if shape == CONTROL:
                    report.control_in_prompts += seen
                else:
                    report.in_prompts += seen
    return report


def _push_pair(
    pusher: PeerPusher, shape: str, peer: Any, raw: bytes, cert: bytes
) -> tuple[tuple[str, str], tuple[str, str]]:
    """Publish ``raw`` with ``cert`` to ``peer``: (lesson ack, certificate ack) as
    (status, reason) pairs."""
    acks = pusher.push_acks(shape, peer.node_id, peer.peer_addr, [raw], certificate=cert)
    lesson, certificate = acks[0], acks[-1]
    return (lesson.status, lesson.reason), (certificate.status, certificate.reason)


def figures_met(figures: Mapping[str, float]) -> bool:
    """The goal over (mean) figures: every forged certificate refused for its reason,
    none accepted, none in a prompt, and the control accepted."""
    return (
        figures.get("forged_lessons_accepted") == 0.0
        and figures.get("forged_certificates_refused_for_the_right_reason_share") == 1.0
        and figures.get("planted_in_prompts") == 0.0
        and figures.get("control_certificates_accepted_share") == 1.0
    )
