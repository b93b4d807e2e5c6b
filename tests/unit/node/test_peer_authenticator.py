"""The callee and caller sides of peer authentication (``lamarck.node.api.peer_auth``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lamarck.errors import RegistryError, Unauthenticated
from lamarck.node.api.peer_auth import PeerAuthenticator, PeerTokens
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.peer_auth import PEER_TOKEN_METADATA_KEY, PeerAuthParams, read_token

ALICE = NodeIdentity.from_seed(b"a" * 32)
BOB = NodeIdentity.from_seed(b"b" * 32)
MALLORY = NodeIdentity.from_seed(b"m" * 32)
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
# The SHA-256 of each node's TLS certificate: what its tokens are bound to, and what a TLS
# connection it made presents.
ALICE_CERT, MALLORY_CERT = "a" * 64, "f" * 64
P = PeerAuthParams(lifetime_s=300, renew_fraction=0.5)


class Pins:
    """The registry's pins and revocations, as values; counts the lookups."""

    def __init__(self, pins: dict[str, str], revoked: set[str] | None = None) -> None:
        self.pins = pins
        self.revoked = revoked or set()
        self.down = False
        self.lookups = 0

    async def pinned_key(self, node_id: str) -> str | None:
        self.lookups += 1
        if self.down:
            raise RegistryError("redis is down", reason="unavailable")
        return self.pins.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        if self.down:
            raise RegistryError("redis is down", reason="unavailable")
        return node_id in self.revoked

    async def revoked_through(self, node_ids: list[str]) -> dict[str, str]:
        return {}


def _setup(pins: Pins) -> tuple[FixedClock, PeerTokens, PeerAuthenticator]:
    clock = FixedClock(T0)
    tokens = PeerTokens(ALICE, clock, P, channel=ALICE_CERT)
    return clock, tokens, PeerAuthenticator(BOB.node_id, pins, clock, P)


def _pins() -> Pins:
    return Pins({ALICE.node_id: ALICE.public_key_b64, MALLORY.node_id: MALLORY.public_key_b64})


async def _reason(
    auth: PeerAuthenticator, metadata: object, claimed: str, channel: str | None = ALICE_CERT
) -> str:
    with pytest.raises(Unauthenticated) as caught:
        await auth.authenticate(metadata, claimed, channel)  # type: ignore[arg-type]
    return caught.value.reason


async def test_a_registered_peer_is_authenticated_as_the_id_it_names() -> None:
    _, tokens, auth = _setup(_pins())
    metadata = tokens.metadata(BOB.node_id)
    assert await auth.authenticate(metadata, ALICE.node_id, ALICE_CERT) == ALICE.node_id


async def test_a_token_captured_and_replayed_on_another_connection_is_refused() -> None:
    # Mallory (admitted, with her own certificate) read Alice's token off the wire and
    # replays it on her own TLS connection, as Alice: the token names Alice's certificate,
    # the connection Mallory's.
    _, tokens, auth = _setup(_pins())
    captured = tokens.metadata(BOB.node_id)
    reason = await _reason(auth, captured, ALICE.node_id, channel=MALLORY_CERT)
    assert reason == "channel_mismatch"
    # Alice's own connection still works with the same token.
    assert await auth.authenticate(captured, ALICE.node_id, ALICE_CERT) == ALICE.node_id


async def test_after_the_certificate_rotates_tokens_are_bound_to_the_new_one() -> None:
    _, tokens, auth = _setup(_pins())
    old = tokens.metadata(BOB.node_id)
    tokens.bind(MALLORY_CERT)  # any other certificate
    new = tokens.metadata(BOB.node_id)
    assert new != old
    assert await auth.authenticate(new, ALICE.node_id, MALLORY_CERT) == ALICE.node_id
    assert await _reason(auth, old, ALICE.node_id, channel=MALLORY_CERT) == "channel_mismatch"


async def test_a_connection_without_tls_checks_no_channel() -> None:
    # A node run off-insecure has no certificate to bind to: its tokens name none, and its
    # callee (plaintext too) has no connection certificate to compare.
    clock = FixedClock(T0)
    auth = PeerAuthenticator(BOB.node_id, _pins(), clock, P)
    plain = PeerTokens(ALICE, clock, P).metadata(BOB.node_id)
    assert await auth.authenticate(plain, ALICE.node_id, None) == ALICE.node_id
    # ...and such a token proves nothing on a TLS connection.
    assert await _reason(auth, plain, ALICE.node_id, channel=ALICE_CERT) == "channel_mismatch"


async def test_a_call_without_a_token_is_refused() -> None:
    _, _, auth = _setup(_pins())
    assert await _reason(auth, (), ALICE.node_id) == "token_missing"
    assert await _reason(auth, None, ALICE.node_id) == "token_missing"
    binary = ((PEER_TOKEN_METADATA_KEY, b"abc"),)
    assert await _reason(auth, binary, ALICE.node_id) == "token_malformed"


async def test_a_peer_cannot_speak_for_another_node() -> None:
    # Mallory is registered and proves she is Mallory, but names Alice as the sender: the
    # receiver would otherwise charge Alice for Mallory's bad bytes, or show Mallory what
    # Alice may see.
    clock = FixedClock(T0)
    auth = PeerAuthenticator(BOB.node_id, _pins(), clock, P)
    mallory = PeerTokens(MALLORY, clock, P, channel=MALLORY_CERT)
    metadata = mallory.metadata(BOB.node_id)
    assert await _reason(auth, metadata, ALICE.node_id, MALLORY_CERT) == "sender_mismatch"


async def test_unregistered_revoked_and_substituted_keys_are_refused() -> None:
    pins = _pins()
    _, tokens, auth = _setup(pins)
    metadata = tokens.metadata(BOB.node_id)
    pins.pins[ALICE.node_id] = MALLORY.public_key_b64  # the registry pins another key
    assert await _reason(auth, metadata, ALICE.node_id) == "key_not_pinned"
    del pins.pins[ALICE.node_id]
    assert await _reason(auth, metadata, ALICE.node_id) == "unregistered_peer"
    pins.pins[ALICE.node_id] = ALICE.public_key_b64
    pins.revoked.add(ALICE.node_id)
    # A revocation takes effect on the next call although the token is cached as verified.
    assert await _reason(auth, metadata, ALICE.node_id) == "revoked_peer"


async def test_a_registry_outage_fails_closed() -> None:
    pins = _pins()
    _, tokens, auth = _setup(pins)
    pins.down = True
    reason = await _reason(auth, tokens.metadata(BOB.node_id), ALICE.node_id)
    assert reason == "registry_unavailable"


async def test_a_cached_token_still_expires() -> None:
    clock, tokens, auth = _setup(_pins())
    metadata = tokens.metadata(BOB.node_id)
    assert await auth.authenticate(metadata, ALICE.node_id, ALICE_CERT) == ALICE.node_id
    clock.advance(P.lifetime_s)
    assert await _reason(auth, metadata, ALICE.node_id) == "token_expired"


async def test_the_caller_reuses_its_token_and_renews_it_before_it_runs_out() -> None:
    clock, tokens, _ = _setup(_pins())
    first = tokens.token_for(BOB.node_id)
    clock.advance(P.lifetime_s * P.renew_fraction - 1)
    assert tokens.token_for(BOB.node_id) == first
    assert tokens.token_for(MALLORY.node_id) != first  # one token per audience
    clock.advance(2)
    renewed = tokens.token_for(BOB.node_id)
    assert renewed != first
    peer = read_token(renewed, audience=BOB.node_id, now=clock.now(), params=P)
    assert peer.issued_at == clock.now()
