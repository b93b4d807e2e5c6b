"""The audience policy: which peer may receive a record of a given access level. Pure.

One rule for every way a record leaves this node — a push to a peer (``peers_for``), and a
Sync a peer asks for (``shareable_records``):

* a graylisted peer receives nothing: it is not a gossip target, and the
  records it would get are exactly those it is least trusted to handle;
* ``public``: every other peer;
* ``trusted``: only peers in the trusted band (the one threshold set of
  ``lamarck.reputation.scores.peer_band``: transfer, gossip and voter choice read the same);
* ``private``: only the recipients the record names;
* anything else: nobody (fail closed).

A project lesson (scope ``project:<digest>``) has a second gate, ``scope_audience``: it goes to
every peer when the operator shares that project explicitly (``shared_scopes``), and otherwise
(team sharing) only to the peers that declared the same project in their Sync requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationView
from lamarck.reputation.scores import PeerBand, peer_band

__all__ = [
    "BandOf",
    "DeclaredProjects",
    "band_reader",
    "may_receive",
    "peers_for",
    "scope_audience",
]

#: A peer's band, read from the reputation book on each call.
BandOf = Callable[[str], PeerBand]
#: The project scopes a peer declared it works on (empty: none, or not heard from yet).
DeclaredProjects = Callable[[str], frozenset[str]]


def band_reader(view: ReputationView, params: ReputationParams) -> BandOf:
    """``peer -> band`` over a reputation view and the one threshold set."""
    return lambda peer: peer_band(view.score(peer), params)


def may_receive(access_level: str, recipients: Sequence[str], peer: str, band: PeerBand) -> bool:
    """Whether ``peer`` (in ``band``) may receive a record of ``access_level``."""
    if band is PeerBand.GRAYLISTED:
        return False
    if access_level == "public":
        return True
    if access_level == "trusted":
        return band is PeerBand.TRUSTED
    if access_level == "private":
        return peer in recipients
    return False


def scope_audience(
    scope: str, peer_projects: frozenset[str], shared_scopes: frozenset[str], team_sharing: bool
) -> bool:
    """Whether a lesson of ``scope`` may go to a peer that declared ``peer_projects``."""
    if scope == "global" or scope in shared_scopes:
        return True
    return team_sharing and scope in peer_projects


def peers_for(
    access_level: str,
    peers: Iterable[str],
    band_of: BandOf,
    recipients: Sequence[str] = (),
    *,
    scope: str = "global",
    declared: DeclaredProjects | None = None,
    shared_scopes: frozenset[str] = frozenset(),
    team_sharing: bool = False,
) -> list[str]:
    """The peers a record of ``access_level`` and ``scope`` may be sent to, in input order."""
    return [
        p
        for p in peers
        if may_receive(access_level, recipients, p, band_of(p))
        and scope_audience(
            scope,
            declared(p) if declared is not None else frozenset(),
            shared_scopes,
            team_sharing,
        )
    ]
