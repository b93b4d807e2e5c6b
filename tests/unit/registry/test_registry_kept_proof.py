"""After the registry lost its data, a node's kept admission proof (``admitted.json``: its
admitted registration and key rotations since) re-admits it however old its endorsement or
token, judged at the registration's own date, and under its current key after a rotation; it
admits nobody else, and no revoked id. The restore is not logged as open admission."""

from __future__ import annotations

import json
import logging
import random
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lamarck.errors import AdmissionRefused, ConfigError
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import make_rotation
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts
from lamarck.registry.admitted_file import ADMITTED_FILE, read_admitted
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.memory_directory import InMemoryPeerDirectory, InMemoryRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    Admission,
    EnrollmentToken,
    sign_endorsement,
    sign_enrollment,
    sign_registration,
    sign_revocation,
)

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
DAY = timedelta(days=1)
#: Endorsements and tokens here last a week; the outage comes two months later.
VALID = 7 * DAY
LATER = 60 * DAY


class _Network:
    def __init__(self, tmp_path: Path) -> None:
        rng = random.Random(11)
        self.tmp = tmp_path
        self.clock = FixedClock(T0)
        self.operator = NodeIdentity.generate(rng)
        self.root = NodeIdentity.generate(rng)
        self.newcomer = NodeIdentity.generate(rng)
        self.records = InMemoryRecords(self.clock)
        self.directory = InMemoryPeerDirectory(
            params=RegistryParams.load({"admission": "endorsed"}),
            clock=self.clock,
            operator_public_key=self.operator.public_key_b64,
            rng=random.Random(1),
            records=self.records,
        )

    def home(self, who: NodeIdentity) -> Path:
        path = self.tmp / who.node_id
        path.mkdir(exist_ok=True)
        return path

    def token(self) -> EnrollmentToken:
        return sign_enrollment(
            self.operator, node_id=self.root.node_id, issued_at=T0, expires_at=T0 + VALID
        )

    def client(
        self, who: NodeIdentity, *, home: Path | None = None, node_id: str | None = None
    ) -> RegistryClient:
        return RegistryClient(
            self.directory,
            who,
            address="127.0.0.1:7001",
            domains=(),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=self.clock,
            enrollment_token=self.token() if who is self.root else None,
            kept_path=home / ADMITTED_FILE if home is not None else None,
            node_id=node_id,
        )

    async def admit_both(self) -> None:
        assert await self.client(self.root, home=self.home(self.root)).tick() is (
            TickResult.REGISTERED
        )
        await self.directory.endorse(
            sign_endorsement(
                self.root,
                endorsee_id=self.newcomer.node_id,
                endorsee_public_key=self.newcomer.public_key_b64,
                created_at=T0,
                expires_at=T0 + VALID,
            )
        )
        newcomer = self.client(self.newcomer, home=self.home(self.newcomer))
        assert await newcomer.tick() is TickResult.REGISTERED

    async def lose_data_later(self) -> None:
        self.clock.advance(LATER.total_seconds())
        assert await self.records.clear() > 0


async def test_kept_registrations_readmit_the_root_and_its_endorsee_long_after_expiry(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    kept = read_admitted(net.home(net.newcomer) / ADMITTED_FILE)
    assert kept is not None and kept.registration.node_id == net.newcomer.node_id
    assert kept == await net.directory.admission_proof(net.newcomer.node_id)
    assert stat.S_IMODE((net.home(net.newcomer) / ADMITTED_FILE).stat().st_mode) == 0o600

    await net.lose_data_later()
    # Restarted nodes: new clients over the same homes. The token and the endorsement both
    # expired weeks ago; the kept registrations were valid at their own date.
    root = net.client(net.root, home=net.home(net.root))
    assert await root.tick() is TickResult.REGISTERED
    newcomer = net.client(net.newcomer, home=net.home(net.newcomer))
    assert await newcomer.tick() is TickResult.REGISTERED
    listed = {p.node_id for p in await net.directory.live_peers()}
    assert listed == {net.root.node_id, net.newcomer.node_id}
    # Readers verify the restored proofs like any other: principals follow the chain.
    principals = await net.directory.principals([net.root.node_id, net.newcomer.node_id])
    assert principals[net.newcomer.node_id] == net.root.node_id


async def test_without_a_kept_registration_an_expired_endorsement_is_refused_after_data_loss(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    (net.home(net.newcomer) / ADMITTED_FILE).unlink()
    await net.lose_data_later()
    assert await net.client(net.root, home=net.home(net.root)).tick() is TickResult.REGISTERED
    with pytest.raises(AdmissionRefused) as caught:
        await net.client(net.newcomer, home=net.home(net.newcomer)).tick()
    assert caught.value.reason == "no_endorsement"


async def test_a_revoked_id_is_refused_whatever_it_kept(tmp_path: Path) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    await net.lose_data_later()
    assert await net.client(net.root, home=net.home(net.root)).tick() is TickResult.REGISTERED
    await net.directory.revoke(
        sign_revocation(
            net.operator,
            node_id=net.newcomer.node_id,
            reason="lost laptop",
            created_at=net.clock.now(),
        )
    )
    with pytest.raises(AdmissionRefused) as caught:
        await net.client(net.newcomer, home=net.home(net.newcomer)).tick()
    assert caught.value.reason == "revoked"


async def test_a_kept_registration_does_not_survive_its_endorsers_revocation(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    await net.lose_data_later()
    assert await net.client(net.root, home=net.home(net.root)).tick() is TickResult.REGISTERED
    await net.directory.revoke(
        sign_revocation(
            net.operator, node_id=net.root.node_id, reason="compromised", created_at=net.clock.now()
        )
    )
    with pytest.raises(AdmissionRefused) as caught:
        await net.client(net.newcomer, home=net.home(net.newcomer)).tick()
    assert caught.value.reason == "bad_endorsement"


async def test_someone_elses_kept_registration_admits_no_one(tmp_path: Path) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    await net.lose_data_later()
    assert await net.client(net.root, home=net.home(net.root)).tick() is TickResult.REGISTERED
    stranger = NodeIdentity.generate(random.Random(99))
    # The stranger copied the newcomer's whole home proof files.
    with pytest.raises(AdmissionRefused) as caught:
        await net.client(stranger, home=net.home(net.newcomer)).tick()
    assert caught.value.reason in {"wrong_id", "bad_endorsement"}
    assert stranger.node_id not in {p.node_id for p in await net.directory.live_peers()}


async def test_a_kept_registration_is_not_needed_while_the_registry_keeps_its_records(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    net.clock.advance(LATER.total_seconds())
    # Pinned ids re-register on their stored proof, as before.
    assert await net.client(net.newcomer, home=net.home(net.newcomer)).tick() is (
        TickResult.REGISTERED
    )


async def test_a_restore_is_not_logged_as_open_admission(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    await net.lose_data_later()
    with caplog.at_level(logging.INFO):
        assert await net.client(net.root, home=net.home(net.root)).tick() is (TickResult.REGISTERED)
    messages = [r.getMessage() for r in caplog.records]
    assert "admission restored from the node's kept proof" in messages
    assert not any("UNSAFE" in m for m in messages)


async def test_a_node_that_rotated_its_key_reenters_under_its_current_key(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    home = net.home(net.newcomer)
    new_key = NodeIdentity.generate(random.Random(23))
    client = net.client(net.newcomer, home=home)
    client.use_rotation(new_key, make_rotation(net.newcomer, new_key, net.clock.now()))
    assert await client.tick() is TickResult.REGISTERED
    # The kept proof now carries the chain, copied from the registry.
    kept = read_admitted(home / ADMITTED_FILE)
    assert kept is not None
    assert kept.keys == (net.newcomer.public_key_b64, new_key.public_key_b64)

    await net.lose_data_later()
    assert await net.client(net.root, home=net.home(net.root)).tick() is TickResult.REGISTERED
    restarted = net.client(new_key, home=home, node_id=net.newcomer.node_id)
    assert await restarted.tick() is TickResult.REGISTERED
    assert await net.directory.pinned_key(net.newcomer.node_id) == new_key.public_key_b64
    # The chain came back with the pin: a reader sees the retired key as retired.
    proof = await net.directory.admission_proof(net.newcomer.node_id)
    assert proof is not None and proof.keys == kept.keys
    # The old key, presenting the same proof, is refused: the pin is the current key's.
    with pytest.raises(AdmissionRefused) as caught:
        await net.client(net.newcomer, home=home).tick()
    assert caught.value.reason == "key_pinned"


async def test_a_rotation_presented_in_the_registration_itself_restores_the_chain(
    tmp_path: Path,
) -> None:
    # The registry lost its data between `keys rotate` and the node's next registration.
    net = _Network(tmp_path)
    await net.admit_both()
    home = net.home(net.newcomer)
    await net.lose_data_later()
    assert await net.client(net.root, home=net.home(net.root)).tick() is TickResult.REGISTERED
    new_key = NodeIdentity.generate(random.Random(29))
    client = net.client(net.newcomer, home=home)
    client.use_rotation(new_key, make_rotation(net.newcomer, new_key, net.clock.now()))
    assert await client.tick() is TickResult.REGISTERED
    assert await net.directory.pinned_key(net.newcomer.node_id) == new_key.public_key_b64
    kept = read_admitted(home / ADMITTED_FILE)
    assert kept is not None and kept.keys[-1] == new_key.public_key_b64


async def test_a_kept_chain_not_signed_by_the_retired_key_admits_no_one(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    home = net.home(net.newcomer)
    # Somebody who stole admitted.json appends a "rotation" to its own key, signed by itself.
    thief = NodeIdentity.generate(random.Random(31))
    body = {
        "kind": "key_rotation",
        "node_id": net.newcomer.node_id,
        "old_public_key": net.newcomer.public_key_b64,
        "new_public_key": thief.public_key_b64,
        "new_node_id": thief.node_id,
        "created_at": format_ts(net.clock.now()),
    }
    accepted = sign_object(RecordKind.key_rotation_accept, body, thief)["signature"]
    forged = sign_object(RecordKind.key_rotation, {**body, "countersignature": accepted}, thief)
    obj = json.loads((home / ADMITTED_FILE).read_text())
    obj["rotations"].append(forged)
    (home / ADMITTED_FILE).write_text(json.dumps(obj))
    await net.lose_data_later()
    assert await net.client(net.root, home=net.home(net.root)).tick() is TickResult.REGISTERED
    with pytest.raises(AdmissionRefused) as caught:
        await net.client(thief, home=home, node_id=net.newcomer.node_id).tick()
    assert caught.value.reason == "bad_chain"
    assert await net.directory.pinned_key(net.newcomer.node_id) is None


async def test_a_node_admitted_before_it_kept_a_proof_copies_it_at_its_next_tick(
    tmp_path: Path,
) -> None:
    net = _Network(tmp_path)
    await net.admit_both()
    home = net.home(net.newcomer)
    (home / ADMITTED_FILE).unlink()
    # An older build: registered, nothing kept. The next heartbeat copies the registry's.
    client = net.client(net.newcomer, home=home)
    assert await client.tick() is TickResult.REGISTERED
    (home / ADMITTED_FILE).unlink()
    restarted = net.client(net.newcomer, home=home)
    assert await restarted.tick() is TickResult.REGISTERED
    assert await restarted.tick() is TickResult.HEARTBEAT
    assert read_admitted(home / ADMITTED_FILE) is not None


def test_a_kept_file_of_the_first_format_is_read(tmp_path: Path) -> None:
    net = _Network(tmp_path)
    reg = sign_registration(
        net.root,
        node_id=net.root.node_id,
        address="127.0.0.1:7001",
        domains=(),
        version="0.1.0",
        nonce="A" * 43,
        admission=Admission(mode=AdmissionMode.ENDORSED, enrollment_token=net.token()),
        created_at=T0,
    )
    path = tmp_path / ADMITTED_FILE
    path.write_text(json.dumps(reg.wire()))
    kept = read_admitted(path)
    assert kept is not None and kept.registration == reg and kept.rotations == ()


def test_a_corrupt_admitted_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / ADMITTED_FILE
    path.write_text('{"node_id": 3}')
    with pytest.raises(ConfigError) as caught:
        read_admitted(path)
    assert caught.value.reason == "bad_admitted_file"
