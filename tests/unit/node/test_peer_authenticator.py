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
    return clock, PeerTokens(ALICE, clock, P), PeerAuthenticator(BOB.node_id, pins, clock, P)


def _pins() -> Pins:
    return Pins({ALICE.node_id: ALICE.public_key_b64, MALLORY.node_id: MALLORY.public_key_b64})


async def _reason(auth: PeerAuthenticator, metadata: object, claimed: str) -> str:
    with pytest.raises(Unauthenticated) as caught:
        await auth.authenticate(metadata, claimed)  # type: ignore[arg-type]
    return caught.value.reason


async def test_a_registered_peer_is_authenticated_as_the_id_it_names() -> None:
    _, tokens, auth = _setup(_pins())
    assert await auth.authenticate(tokens.metadata(BOB.node_id), ALICE.node_id) == ALICE.node_id


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
    mallory = PeerTokens(MALLORY, clock, P)
    assert await _reason(auth, mallory.metadata(BOB.node_id), ALICE.node_id) == "sender_mismatch"


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
    assert await auth.authenticate(metadata, ALICE.node_id) == ALICE.node_id
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
