"""A node remembers its peers' retired keys (``<home>/peers.json``) and never believes one again
as a pin: after a key rotation and a registry that lost its data, somebody holding the retired
key and the id's old admission proof can re-register it, but no node that saw the rotation
accepts that key (logged once)."""

from __future__ import annotations

import json
import logging
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import make_rotation
from lamarck.registry.admitted_file import ADMITTED_FILE
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.memory_directory import InMemoryPeerDirectory, InMemoryRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import sign_endorsement, sign_enrollment

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
WEEK = timedelta(days=7)
REFUSED = "registry serves a retired key as the pin; refused (did the registry lose its data?)"


class _Network:
    """A registry in memory, a token-enrolled root, an endorsed member, an observer's cache."""

    def __init__(self, tmp_path: Path) -> None:
        rng = random.Random(41)
        self.tmp = tmp_path
        self.clock = FixedClock(T0)
        self.operator = NodeIdentity.generate(rng)
        self.root = NodeIdentity.generate(rng)
        self.member = NodeIdentity.generate(rng)
        self.new_key = NodeIdentity.generate(rng)
        self.records = InMemoryRecords(self.clock)
        self.directory = InMemoryPeerDirectory(
            params=RegistryParams.load({"admission": "endorsed"}),
            clock=self.clock,
            operator_public_key=self.operator.public_key_b64,
            rng=random.Random(2),
            records=self.records,
        )
        self.peers_file = tmp_path / "observer" / "peers.json"

    def home(self, name: str) -> Path:
        path = self.tmp / name
        path.mkdir(exist_ok=True)
        return path

    def observer(self) -> CachedDirectory:
        """The observing node's cache over the same registry (a restart: a new object)."""
        return CachedDirectory(self.directory, clock=self.clock, path=self.peers_file)

    def client(
        self, who: NodeIdentity, home: Path, *, node_id: str | None = None
    ) -> RegistryClient:
        token = None
        if who is self.root:
            token = sign_enrollment(
                self.operator, node_id=self.root.node_id, issued_at=T0, expires_at=T0 + WEEK
            )
        return RegistryClient(
            self.directory,
            who,
            address="127.0.0.1:7001",
            domains=(),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=self.clock,
            enrollment_token=token,
            kept_path=home / ADMITTED_FILE,
            node_id=node_id,
        )

    async def admit(self) -> None:
        assert await self.client(self.root, self.home("root")).tick() is TickResult.REGISTERED
        await self.directory.endorse(
            sign_endorsement(
                self.root,
                endorsee_id=self.member.node_id,
                endorsee_public_key=self.member.public_key_b64,
                created_at=T0,
                expires_at=T0 + WEEK,
            )
        )
        member = self.client(self.member, self.home("member"))
        assert await member.tick() is TickResult.REGISTERED

    async def rotate_member(self) -> None:
        member = self.client(self.member, self.home("member"))
        member.use_rotation(self.new_key, make_rotation(self.member, self.new_key, T0))
        assert await member.tick() is TickResult.REGISTERED

    async def lose_data_and_replay_the_old_key(self, stolen: Path) -> None:
        """Redis restarts empty; the holder of the retired key re-registers it first."""
        self.clock.advance(timedelta(days=30).total_seconds())
        assert await self.records.clear() > 0
        assert await self.client(self.root, self.home("root")).tick() is TickResult.REGISTERED
        assert await self.client(self.member, stolen).tick() is TickResult.REGISTERED
        assert await self.directory.pinned_key(self.member.node_id) == self.member.public_key_b64


async def test_a_retired_key_served_after_data_loss_is_refused_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    net = _Network(tmp_path)
    await net.admit()
    # A copy of the member's proof from before its rotation (a backup, a stolen disk).
    stolen = net.home("stolen")
    shutil.copy(net.home("member") / ADMITTED_FILE, stolen / ADMITTED_FILE)
    observer = net.observer()
    assert await observer.refresh()
    assert await observer.pinned_key(net.member.node_id) == net.member.public_key_b64

    await net.rotate_member()
    assert await observer.refresh()
    assert await observer.pinned_key(net.member.node_id) == net.new_key.public_key_b64
    saved = json.loads(net.peers_file.read_text())
    assert saved["retired"] == {net.member.node_id: [net.member.public_key_b64]}

    await net.lose_data_and_replay_the_old_key(stolen)
    restarted = net.observer()  # the observing node restarted meanwhile: peers.json only
    with caplog.at_level(logging.ERROR):
        assert await restarted.refresh()
        assert await restarted.pinned_key(net.member.node_id) is None
        assert await restarted.get_peer(net.member.node_id) is None
        peers = await restarted.live_peers()
    assert net.member.node_id not in {p.node_id for p in peers}
    assert net.root.node_id in {p.node_id for p in peers}
    assert [r.getMessage() for r in caplog.records].count(REFUSED) == 1


async def test_a_rotated_pin_seen_first_teaches_the_keys_it_retired(tmp_path: Path) -> None:
    net = _Network(tmp_path)
    await net.admit()
    stolen = net.home("stolen")
    shutil.copy(net.home("member") / ADMITTED_FILE, stolen / ADMITTED_FILE)
    await net.rotate_member()
    # This observer never saw the first key: the registry's verified chain tells it.
    observer = net.observer()
    assert await observer.refresh()
    assert await observer.pinned_key(net.member.node_id) == net.new_key.public_key_b64
    await net.lose_data_and_replay_the_old_key(stolen)
    assert await observer.pinned_key(net.member.node_id) is None


async def test_a_cache_from_before_retired_keys_still_refuses_the_id_s_own_key_after_a_rotated_pin(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit()
    stolen = net.home("stolen")
    shutil.copy(net.home("member") / ADMITTED_FILE, stolen / ADMITTED_FILE)
    await net.rotate_member()
    observer = net.observer()
    assert await observer.refresh()
    # An older build wrote no "retired" member.
    saved = json.loads(net.peers_file.read_text())
    del saved["retired"]
    net.peers_file.write_text(json.dumps(saved))
    await net.lose_data_and_replay_the_old_key(stolen)
    # The cached pin was reached by rotation, so the key the id is derived from was retired.
    assert await net.observer().pinned_key(net.member.node_id) is None


async def test_the_rotated_node_reentering_first_is_believed_as_before(tmp_path: Path) -> None:
    net = _Network(tmp_path)
    await net.admit()
    observer = net.observer()
    assert await observer.refresh()
    await net.rotate_member()
    assert await observer.refresh()
    net.clock.advance(timedelta(days=30).total_seconds())
    await net.records.clear()
    assert await net.client(net.root, net.home("root")).tick() is TickResult.REGISTERED
    member = net.client(net.new_key, net.home("member"), node_id=net.member.node_id)
    assert await member.tick() is TickResult.REGISTERED
    assert await observer.refresh()
    assert await observer.pinned_key(net.member.node_id) == net.new_key.public_key_b64
    assert net.member.node_id in {p.node_id for p in await observer.live_peers()}
