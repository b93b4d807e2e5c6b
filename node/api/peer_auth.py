"""Peer authentication at the node's edge: issuing our peer tokens, checking the callers'.

The token format and its checks (1)-(3) live in :mod:`lamarck.proto.peer_auth`. Here:

* :class:`PeerTokens` — the caller side: one token per callee, bound to this node's TLS
  certificate, reused until ``renew_fraction`` of its lifetime is left, so a Publish or Sync
  costs no signature;
* :class:`PeerAuthenticator` — the callee side: reads ``lamarck-peer-token`` from the call
  metadata, caches checks (1)-(3) per token (they are what costs an Ed25519 verification),
  and on every call runs (4) the registry pin and revocation check, so a revocation takes
  effect at once, (5) compares the id the request names with the token's, and (6) compares
  the certificate the token names with the one the call's TLS connection was made with, so a
  token captured from one connection is refused on any other (``channel_mismatch``).

Every refusal raises :class:`~lamarck.errors.Unauthenticated` (gRPC ``UNAUTHENTICATED``) with
its reason; nothing is charged to reputation, since an unproven caller has no identity to
charge.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from lamarck.errors import Unauthenticated
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.peer_auth import (
    PEER_TOKEN_METADATA_KEY,
    PeerAuthParams,
    PeerToken,
    issue_token,
    read_token,
)
from lamarck.registry.pins import KeyPins, pin_refusal
from lamarck.registry.rules import PinReason

__all__ = ["PeerAuthenticator", "PeerTokens"]

# The peer-side name of each pin refusal.
_PIN_REASONS: dict[PinReason, str] = {
    PinReason.REGISTRY_UNAVAILABLE: "registry_unavailable",
    PinReason.REVOKED_SOURCE: "revoked_peer",
    PinReason.UNREGISTERED_SOURCE: "unregistered_peer",
    PinReason.KEY_NOT_PINNED: "key_not_pinned",
    PinReason.REVOKED_KEY: "revoked_key",
}
# Verified tokens kept per node; a fleet has at most a few hundred callers, each renewing
# its token every few minutes.
_CACHE_MAX = 4096


class PeerTokens:
    """This node's peer tokens, one per callee, renewed before they run out."""

    def __init__(
        self,
        identity: NodeIdentity,
        clock: Clock,
        params: PeerAuthParams,
        *,
        channel: str = "",
    ) -> None:
        self._identity = identity
        self._clock = clock
        self._params = params
        self._channel = channel
        self._tokens: dict[str, tuple[str, datetime]] = {}

    def bind(self, channel: str) -> None:
        """Bind the tokens issued from now on to the TLS certificate ``channel`` (its SHA-256
        hex; "" without TLS): after the certificate rotates, tokens held are dropped."""
        if channel != self._channel:
            self._channel = channel
            self._tokens.clear()

    def metadata(self, audience: str) -> tuple[tuple[str, str], ...]:
        """The call metadata proving this node to ``audience``."""
        return ((PEER_TOKEN_METADATA_KEY, self.token_for(audience)),)

    def token_for(self, audience: str) -> str:
        """A token for calls to ``audience`` that has a good share of its lifetime left."""
        now = self._clock.now()
        held = self._tokens.get(audience)
        if held is not None and now < held[1]:
            return held[0]
        token = issue_token(self._identity, audience, now, self._params, channel=self._channel)
        renew_after = self._params.lifetime_s * (1 - self._params.renew_fraction)
        self._tokens[audience] = (token, now + timedelta(seconds=renew_after))
        return token


class PeerAuthenticator:
    """Proves which registered peer sent a PeerService call (checks (1)-(5))."""

    def __init__(self, node_id: str, pins: KeyPins, clock: Clock, params: PeerAuthParams) -> None:
        self._node_id = node_id
        self._pins = pins
        self._clock = clock
        self._params = params
        self._verified: dict[str, PeerToken] = {}

    async def authenticate(
        self,
        metadata: Iterable[tuple[str, str | bytes]] | None,
        claimed: str,
        channel: str | None,
    ) -> str:
        """The authenticated caller's id, which equals ``claimed``; else ``Unauthenticated``.

        ``channel``: the SHA-256 (hex) of the client certificate the call's TLS connection was
        made with, ``None`` for a connection without TLS (a node run ``off-insecure``).
        """
        token = _token_from(metadata)
        now = self._clock.now()
        peer = self._verified.get(token)
        if peer is None or now >= peer.expires_at:
            peer = read_token(token, audience=self._node_id, now=now, params=self._params)
            self._remember(token, peer, now)
        # (4) The key is the one the registry bound to this id, and the id is not revoked
        # (fail closed when the registry cannot say: the callers retry).
        refusal = await pin_refusal(self._pins, peer.node_id, peer.public_key_b64)
        if refusal is not None:
            reason, why = refusal
            raise Unauthenticated(f"peer {why}", reason=_PIN_REASONS[reason])
        # (5) The request speaks for the node that proved itself, and for no other.
        if claimed != peer.node_id:
            raise Unauthenticated(
                f"the request names {claimed or 'no node'} but comes from {peer.node_id}",
                reason="sender_mismatch",
            )
        # (6) The call comes over a connection made with the certificate the token names:
        # a token read off one connection proves nothing on another.
        if channel is not None and channel != peer.channel:
            raise Unauthenticated(
                f"the peer token of {peer.node_id} is bound to another TLS certificate than "
                "this connection's",
                reason="channel_mismatch",
            )
        return peer.node_id

    def known_peer(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
        """The node a call's token already proved (cached, unexpired), else ``None``.

        A dictionary lookup, no signature check: rate limits use it to budget a caller by
        who it proved to be before any work is done. It is not authentication (revocation
        and the request's claimed id are checked by :meth:`authenticate`).
        """
        for key, value in metadata or ():
            if key == PEER_TOKEN_METADATA_KEY and isinstance(value, str):
                peer = self._verified.get(value)
                if peer is not None and self._clock.now() < peer.expires_at:
                    return peer.node_id
                return None
        return None

    def _remember(self, token: str, peer: PeerToken, now: datetime) -> None:
        if len(self._verified) >= _CACHE_MAX:
            self._verified = {t: p for t, p in self._verified.items() if now < p.expires_at}
            if len(self._verified) >= _CACHE_MAX:
                self._verified.clear()  # only a flood of valid tokens gets here: start over
        self._verified[token] = peer


def _token_from(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    for key, value in metadata or ():
        if key == PEER_TOKEN_METADATA_KEY:
            if isinstance(value, bytes):
                raise Unauthenticated("peer token must be text", reason="token_malformed")
            return value
    raise Unauthenticated(
        f"PeerService calls must carry {PEER_TOKEN_METADATA_KEY}", reason="token_missing"
    )
