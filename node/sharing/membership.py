"""Registry membership: who this node is to its network, and who its live peers are.

The registry is ``redis_url`` (namespace ``redis_namespace``), or an ``EmbeddedRedis`` in the
home; it is wrapped in a ``CachedDirectory`` (peer list and pins survive an outage) and kept
live by a ``RegistryClient`` heartbeat. When the registry cannot be reached the node still
serves: sharing is degraded and says so in the log, once per change of state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lamarck
from lamarck.errors import (
    ConfigError,
    DeliveryFailed,
    InvalidRecord,
    RegistryError,
)
from lamarck.node import metrics
from lamarck.node.api.node_status import Admission, AdmissionState
from lamarck.node.api.peer_auth import PeerAuthenticator
from lamarck.node.config import NodeSettings
from lamarck.node.peer_tls import PeerTls
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import latest_rotation
from lamarck.proto.labels import peer_label
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.registry.admitted_file import ADMITTED_FILE
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient
from lamarck.registry.directory import PeerInfo
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.proofs import ProofParams
from lamarck.registry.records import EnrollmentToken
from lamarck.registry.redis_directory import RedisPeerDirectory
from lamarck.reputation.params import PrincipalParams

__all__ = ["ENROLLMENT_FILE", "PEER_CACHE_FILE", "Membership", "read_enrollment"]

_log = logging.getLogger("lamarck.node.sharing")

#: ``<home>/peers.json``: the cached peer list, pins and revocations.
PEER_CACHE_FILE = "peers.json"
#: ``<home>/enrollment.json``: this node's operator enrollment token, if it was given one.
ENROLLMENT_FILE = "enrollment.json"


def read_enrollment(home: Path) -> EnrollmentToken | None:
    """This node's enrollment token from ``<home>/enrollment.json``, or None if there is none.

    A file that is there but unreadable or not a token is a ``ConfigError``: a node told to
    join with a token must not start as if it had none.
    """
    path = home / ENROLLMENT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}", reason="bad_enrollment_file") from e
    try:
        return EnrollmentToken.from_wire(json.loads(text))
    except (ValueError, InvalidRecord) as e:
        raise ConfigError(
            f"{path} is not an enrollment token: {e}", reason="bad_enrollment_file"
        ) from e


class Membership:
    """This node's registration, the registry directory, and its view of the live peers."""

    def __init__(
        self,
        settings: NodeSettings,
        identity: NodeIdentity,
        clock: Clock,
        *,
        params: RegistryParams,
        auth: PeerAuthParams,
        principals: PrincipalParams,
        proofs: ProofParams,
        address: str,
        tls: PeerTls | None = None,
    ) -> None:
        self._principals = principals
        self._proofs = proofs
        self._tls = tls
        self._settings = settings
        self._identity = identity
        self._clock = clock
        self.params = params
        self._auth_params = auth
        self._address = address
        self._embedded: EmbeddedRedis | None = None
        self.directory: CachedDirectory | None = None
        self.auth: PeerAuthenticator | None = None
        self._client: RegistryClient | None = None
        self._peers: dict[str, PeerInfo] = {}
        # None until the first registry round; then whether the registry answered.
        self._state: bool | None = None
        # The reason of the last refusal logged ("" when the last round was not refused).
        self._refusal = ""
        # The last refusal itself (for the node's status), and whether it was ever admitted.
        self._refused: RegistryError | None = None
        self._admitted_once = False
        # Node id -> human label of every node seen in the registry (kept when it leaves, so
        # the operator still reads who an old peer was); this node's own from its settings.
        self._labels: dict[str, str] = {}
        self._own_label = settings.label
        #: Where this node asked to be admitted (named in every refusal it logs).
        self.registry_name = ""

    async def connect(self) -> None:
        """Open the registry (embedded when no URL is set); degraded, not fatal, if absent."""
        settings = self._settings
        url = settings.redis_url
        if not url:
            self._embedded = EmbeddedRedis(settings.home)
            try:
                url = await self._embedded.start()
            except (RegistryError, OSError, ImportError) as e:
                _log.warning("embedded redis unavailable; sharing degraded: %s", e)
                self._embedded = None
        if not url:
            return
        self.registry_name = (
            f"{_redacted(url)} namespace {settings.redis_namespace!r}"
            if settings.redis_url
            else f"the embedded registry in {settings.home} namespace {settings.redis_namespace!r}"
        )
        inner = RedisPeerDirectory.from_url(
            url,
            namespace=settings.redis_namespace,
            params=self.params,
            clock=self._clock,
            operator_public_key=settings.operator_public_key or None,
            principal_params=self._principals,
            proof_params=self._proofs,
            password=settings.redis_password.get_secret_value() if settings.redis_url else "",
            ca_file=settings.redis_ca_file if settings.redis_url else "",
        )
        self.directory = CachedDirectory(
            inner,
            clock=self._clock,
            path=settings.home / PEER_CACHE_FILE,
            principal_view_s=self.params.principal_view_s,
        )
        self.auth = PeerAuthenticator(
            self._identity.node_id, self.directory, self._clock, self._auth_params
        )
        mode = self.params.admission
        if mode is AdmissionMode.OPEN:
            _log.warning("registry admission is 'open': unsafe outside tests and demos")
        elif not settings.operator_public_key:
            # Not fatal, and not an error: a lone node learns locally and serves its agent API;
            # it says once how it would join a network.
            _log.info(
                "this node shares nothing until it joins a network (admission '%s', no "
                "operator key set): to form one, `lamarck registry operator-key create`, set "
                "operator_public_key and `lamarck registry enroll` (docs/operating.md)",
                mode.value,
            )
        self._client = RegistryClient(
            self.directory,
            self._identity,
            address=self._address,
            domains=tuple(settings.domains),
            version=lamarck.__version__,
            mode=mode,
            clock=self._clock,
            enrollment_token=(token := read_enrollment(settings.home)),
            # The admission proof this node got is kept in its home and presented again if
            # the network's Redis loses it (docs/operating.md).
            kept_path=settings.home / ADMITTED_FILE,
            # The registration binds this node's TLS certificate to its identity.
            tls_certificate=self._tls.certificate if self._tls is not None else None,
            label=settings.label or None,
        )
        self._own_label = peer_label(settings.label, token.label if token is not None else None)
        # After `lamarck keys rotate` the node is the id of its new key: its registrations
        # carry the rotation (signed by both keys), on which the registry admits it as the
        # successor of its old id and moves that id's pin.
        rotation = latest_rotation(settings.home, self._identity)
        if rotation is not None:
            self._client.use_rotation(self._identity, rotation)

    async def tick(self) -> None:
        """Heartbeat or (re-)register, then refresh the peer list (outages are logged)."""
        if self._client is None or self.directory is None:
            return
        try:
            result = await self._client.tick()
            ok = await self.directory.refresh()
        except RegistryError as e:
            metrics.REGISTRY_ROUNDS.labels(result=e.reason).inc()
            self._refused = e
            # Said once per change of reason, not every round: a node waiting for an
            # endorsement is not failing anew every ten seconds.
            if self._state is not False or e.reason != self._refusal:
                self._refusal = e.reason
                # A node that holds no admission material (no operator key, no token) is
                # expected to be refused: a normal lone start is not an error.
                lone = not self._settings.operator_public_key and e.reason == "no_endorsement"
                _log.log(
                    logging.INFO if lone else logging.ERROR,
                    "registry refused this node: %s (%s); registry asked: %s",
                    e,
                    e.reason,
                    self.registry_name,
                )
            self._state = False
            return
        if ok != self._state:
            _log.log(
                logging.INFO if ok else logging.WARNING,
                "registry %s (%s); registry: %s",
                "reachable" if ok else "unreachable; sharing from the peer cache",
                result.value,
                self.registry_name,
            )
        self._state = ok
        self._refusal = ""
        self._refused = None
        self._admitted_once = self._admitted_once or self._client.registered
        metrics.REGISTRY_ROUNDS.labels(result="ok" if ok else "unreachable").inc()
        peers = await self.directory.live_peers()
        self._peers = {p.node_id: p for p in peers if p.node_id != self._identity.node_id}
        self._labels.update((p.node_id, p.label) for p in peers if p.label)
        if self._tls is not None:
            # The peer port accepts client certificates of the listed peers only.
            self._tls.trust_peers(p.tls_certificate for p in self._peers.values())

    @property
    def owns_registry(self) -> bool:
        """Whether the registry is this node's embedded Redis (the node restarts it)."""
        return self._embedded is not None

    async def registry_answers(self) -> bool:
        """Whether the registry this node owns answers now (True when it owns none: an
        external registry's outages are ridden out from the peer cache, not supervised)."""
        embedded = self._embedded
        return True if embedded is None else await embedded.is_running()

    async def recover_registry(self) -> None:
        """Start this node's embedded Redis again (it reuses a server that still runs) and
        register again at once; ``RegistryError`` while it cannot be started."""
        embedded = self._embedded
        if embedded is None:
            return
        try:
            await embedded.start()
        except OSError as e:
            raise RegistryError(
                f"cannot restart the embedded redis: {e}", reason="embedded_unavailable"
            ) from e
        _log.warning("embedded redis restarted; registering again")
        # The directory's client reconnects on its next command; a failed round here is
        # logged by tick() and retried by the heartbeat.
        await self.tick()

    def admission(self) -> Admission:
        """Where this node stands with its registry, for ``lamarck node status``."""
        mode = self.params.admission.value
        if self._client is None or self.directory is None:
            return Admission(AdmissionState.NO_REGISTRY, mode=mode)
        if self._refused is not None:
            state = AdmissionState.REFUSED
        elif self._client.registered and self._state:
            state = AdmissionState.ADMITTED
        elif self._admitted_once:
            state = AdmissionState.DEGRADED
        else:
            state = AdmissionState.PENDING
        by = {"open": "open admission", "endorsed": "endorsement", "operator": "enrollment"}
        return Admission(
            state,
            mode=mode,
            by=by[mode] if state is AdmissionState.ADMITTED else "",
            registry=self.registry_name,
            reason=self._refused.reason if self._refused is not None else "",
            message=str(self._refused) if self._refused is not None else "",
        )

    @property
    def ok(self) -> bool:
        """Whether the registry answered the last round (else sharing runs from the cache)."""
        return bool(self._state)

    def live_peers(self) -> list[str]:
        """Ids of the live peers (other than this node) as last seen in the registry."""
        return sorted(self._peers)

    def network_ids(self) -> list[str]:
        """This node and its live peers: the network as this node sees it."""
        return [self._identity.node_id, *self.live_peers()]

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The registry's principals of the admitted ids among ``node_ids`` ({} without one)."""
        directory = self.directory
        if directory is None:
            return {}
        found: dict[str, str] = await directory.principals(list(node_ids))
        return found

    async def revoked(self) -> frozenset[str]:
        """Every id the registry revoked (operator-signed; remembered through an outage)."""
        directory = self.directory
        if directory is None:
            return frozenset()
        revoked: frozenset[str] = await directory.revoked_ids()
        return revoked

    def known_peer(self, metadata: Any) -> str | None:
        """The node a call's peer token already proved (cached), else None (rate limits)."""
        auth = self.auth
        return auth.known_peer(metadata) if auth is not None else None

    def labels(self) -> dict[str, str]:
        """Node id -> human label of every node this one has seen in the registry, itself
        included (``lamarck.proto.labels``: a claim shown beside the id)."""
        own = {self._identity.node_id: self._own_label} if self._own_label else {}
        return {**self._labels, **own}

    @property
    def peers(self) -> dict[str, PeerInfo]:
        """The live peers by id (other than this node)."""
        return self._peers

    def address_of(self, node_id: str) -> str:
        """Where to reach a live peer; ``DeliveryFailed`` if it is not live."""
        peer = self._peers.get(node_id)
        if peer is None or not peer.address:
            raise DeliveryFailed(f"peer {node_id} is not live", reason="peer_not_live")
        return peer.address

    def certificate_of(self, node_id: str) -> str:
        """The TLS certificate a live peer registered (base64url DER; "" if none);
        ``DeliveryFailed`` if it is not live."""
        peer = self._peers.get(node_id)
        if peer is None:
            raise DeliveryFailed(f"peer {node_id} is not live", reason="peer_not_live")
        return peer.tls_certificate

    def use_tls_certificate(self, certificate: str) -> None:
        """Register the new TLS certificate at the next registry round."""
        if self._client is not None:
            self._client.use_tls_certificate(certificate)

    async def authenticate(self, metadata: Any, claimed: str, channel: str | None) -> str:
        """The proven id of a PeerService caller naming itself ``claimed`` over a connection
        made with the certificate ``channel`` (see ``peer_auth``)."""
        if self.auth is None:
            raise RegistryError(
                "no registry: peers cannot be authenticated", reason="registry_unavailable"
            )
        return await self.auth.authenticate(metadata, claimed, channel)

    async def close(self) -> None:
        """Leave the live peer list, close the directory and any embedded Redis."""
        if self._client is not None and self._client.registered:
            with contextlib.suppress(RegistryError, OSError, TimeoutError):
                async with asyncio.timeout(self.params.deregister_timeout_s):
                    await self._client.deregister()
        if self.directory is not None:
            directory, self.directory = self.directory, None
            with contextlib.suppress(RegistryError, OSError):
                await directory.aclose()
        if self._embedded is not None:
            embedded, self._embedded = self._embedded, None
            try:
                await embedded.stop()
            except RegistryError:
                _log.exception("stopping the embedded redis failed")


def _redacted(url: str) -> str:
    """A Redis URL without its password, for logs."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.split("@", 1)[1]
    return f"{scheme}{sep}{rest}"
