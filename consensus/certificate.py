"""Quorum certificates: the signed votes that made a record accepted, checkable by anyone.

A certificate carries the round (record hash, voter ids, when it opened and closed) and the
votes that counted. Any node verifies it on its own, without asking a voter again:
``verify_certificate`` re-checks every vote's signature and re-runs the same ``tally`` with
*its own* view of the whole network (``NetworkView``: every admitted identity its registry
knows, with its principal, and so how many principals the network holds). Never with a map
built from the certificate's own voters and source: four keys of one principal would then
look like a one-principal network, where identities count. So a certificate made of keys the
verifier does not know, of many keys of one principal, or of keys of the source's principal,
does not verify.

Checks, numbered as in the code; the first that fails raises
``VerificationError(reason=...)``:

(1) ``wrong_record``: the certificate is for another record;
(2) ``too_few_voters``: fewer voters than a quorum needs in the verifier's view
    (``NetworkView.needed``); ``duplicate_voter``: a voter listed twice;
(3) ``source_voted``: the record's source is among the voters, or, where the network has
    several principals, an identity of the source's principal;
(4) ``unknown_voter``: a voter this node does not know as admitted; ``shared_principal``: two
    voters of one principal where the network has several;
(5) ``contradicted`` / ``too_few_votes``: the tally over the valid, distinct votes is not
    ``Accepted``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.tally import Accepted, Electorate, Rejected, tally
from lamarck.consensus.voters import NetworkView
from lamarck.errors import InvalidRecord, VerificationError
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.proto.vote import Vote

__all__ = [
    "QuorumCertificate",
    "certificate_bytes",
    "make_certificate",
    "parse_certificate",
    "verify_certificate",
]

_KEYS = frozenset({"record_hash", "voters", "opened_at", "closes_at", "votes"})


@dataclass(frozen=True, slots=True)
class QuorumCertificate:
    """The round and the signed votes that accepted ``record_hash``."""

    record_hash: str
    voters: tuple[str, ...]
    opened_at: datetime
    closes_at: datetime
    votes: tuple[Vote, ...]

    def to_obj(self) -> dict[str, Any]:
        """The certificate as a JSON-shaped dict (votes as their signed objects)."""
        return {
            "record_hash": self.record_hash,
            "voters": list(self.voters),
            "opened_at": format_ts(self.opened_at),
            "closes_at": format_ts(self.closes_at),
            "votes": [vote.to_obj() for vote in self.votes],
        }

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> QuorumCertificate:
        """Parse a certificate; ``InvalidRecord(reason="bad_certificate")`` on any shape error."""
        if not isinstance(obj, Mapping) or set(obj) != _KEYS:
            raise InvalidRecord("certificate members are wrong", reason="bad_certificate")
        voters, votes = obj["voters"], obj["votes"]
        if not isinstance(voters, list) or not all(isinstance(v, str) for v in voters):
            raise InvalidRecord("certificate voters must be ids", reason="bad_certificate")
        if not isinstance(votes, list) or not all(isinstance(v, Mapping) for v in votes):
            raise InvalidRecord("certificate votes must be objects", reason="bad_certificate")
        if not isinstance(obj["record_hash"], str):
            raise InvalidRecord("certificate record_hash is not text", reason="bad_certificate")
        for name in ("opened_at", "closes_at"):
            if not isinstance(obj[name], str):
                raise InvalidRecord(f"certificate {name} is not text", reason="bad_certificate")
        return cls(
            record_hash=obj["record_hash"],
            voters=tuple(voters),
            opened_at=parse_ts(obj["opened_at"]),
            closes_at=parse_ts(obj["closes_at"]),
            votes=tuple(Vote.from_obj(v) for v in votes),
        )


def certificate_bytes(cert: QuorumCertificate) -> bytes:
    """The certificate on the wire: its canonical JSON (RFC 8785). Unsigned itself: every
    vote in it carries its voter's signature, and the verifier re-counts them."""
    return canonical_bytes(cert.to_obj())


def parse_certificate(raw: bytes) -> QuorumCertificate:
    """A certificate from its wire bytes; ``InvalidRecord(reason="bad_certificate")`` on any
    shape error (a vote that does not parse included)."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidRecord("certificate is not JSON", reason="bad_certificate") from None
    try:
        return QuorumCertificate.from_obj(obj)
    except InvalidRecord as e:
        if e.reason == "bad_certificate":
            raise
        raise InvalidRecord(f"certificate vote: {e}", reason="bad_certificate") from None
    except ValueError as e:
        raise InvalidRecord(f"certificate: {e}", reason="bad_certificate") from None


def make_certificate(electorate: Electorate, accepted: Accepted) -> QuorumCertificate:
    """The certificate of an accepted round: its voters and every vote that counted."""
    return QuorumCertificate(
        record_hash=electorate.record_hash,
        voters=tuple(sorted(electorate.voters)),
        opened_at=electorate.opened_at,
        closes_at=electorate.closes_at,
        votes=accepted.counted,
    )


def _refuse(reason: str, message: str) -> VerificationError:
    return VerificationError(f"quorum certificate refused: {message}", reason=reason)


def verify_certificate(
    cert: QuorumCertificate,
    *,
    record_hash: str,
    source_id: str,
    view: NetworkView,
    params: QuorumParams,
) -> Accepted:
    """Verify ``cert`` for the record ``record_hash`` signed by ``source_id``.

    ``view`` is this node's own view of the whole network (its registry's principals of every
    admitted id it knows, the certificate's voters and source among them). Returns the
    ``Accepted`` tally; raises ``VerificationError`` with the reasons above.
    """
    # (1) The certificate is about this very record.
    if cert.record_hash != record_hash:
        raise _refuse("wrong_record", "it names another record")
    # (2) Enough voters for this network, each listed once.
    needed = view.needed(source_id, params)
    if len(cert.voters) < needed:
        raise _refuse("too_few_voters", f"{len(cert.voters)} voters, need {needed}")
    if len(set(cert.voters)) != len(cert.voters):
        raise _refuse("duplicate_voter", "a voter is listed twice")
    by_principal = view.by_principal
    excluded = view.excluded(source_id)
    # (3) Nobody judges their own record (nor, across principals, their principal's).
    for voter in cert.voters:
        if voter == source_id or (by_principal and view.voter_key(voter) in excluded):
            raise _refuse("source_voted", f"{voter} is the record's source or its principal")
    # (4) Every voter is admitted as far as this node knows, one per principal.
    principals: dict[str, str] = {}
    for voter in cert.voters:
        principal = view.principal_of.get(voter)
        if not principal:
            raise _refuse("unknown_voter", f"{voter} is not an admitted identity here")
        principals[voter] = principal
    if by_principal and len(set(principals.values())) != len(principals):
        raise _refuse("shared_principal", "two voters answer to one principal")
    # (5) The same count as the round's, over valid distinct votes only.
    try:
        electorate = Electorate(
            record_hash=cert.record_hash,
            voters=principals,
            opened_at=cert.opened_at,
            closes_at=cert.closes_at,
            by_principal=by_principal,
            needed=needed,
        )
    except ValueError as exc:
        raise _refuse("bad_certificate", str(exc)) from None
    result = tally(electorate, cert.votes, params)
    if isinstance(result, Rejected):
        raise _refuse("contradicted", f"{result.contradict_count} independent contradictions")
    if not isinstance(result, Accepted):
        raise _refuse(
            "too_few_votes",
            f"{result.validate_count} valid distinct VALIDATE votes, need {result.accept_at}",
        )
    return result
