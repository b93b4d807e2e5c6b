"""After the registry lost its data, a node's kept admitted registration (``admitted.json``)
re-admits it however old its endorsement or token, judged at the registration's own date; it
admits nobody else, and no revoked id."""

from __future__ import annotations

import random
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lamarck.errors import AdmissionRefused, ConfigError
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.admission_file import ADMISSION_FILE
from lamarck.registry.admitted_file import ADMITTED_FILE, read_admitted
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.memory_directory import InMemoryPeerDirectory, InMemoryRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    EnrollmentToken,
    sign_endorsement,
    sign_enrollment,
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

    def client(self, who: NodeIdentity, *, home: Path | None = None) -> RegistryClient:
        return RegistryClient(
            self.directory,
            who,
            address="127.0.0.1:7001",
            domains=(),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=self.clock,
            enrollment_token=self.token() if who is self.root else None,
            proof_path=home / ADMISSION_FILE if home is not None else None,
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
    assert kept is not None and kept.node_id == net.newcomer.node_id
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
    assert caught.value.reason == "bad_endorsement"


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


def test_a_corrupt_admitted_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / ADMITTED_FILE
    path.write_text('{"node_id": 3}')
    with pytest.raises(ConfigError) as caught:
        read_admitted(path)
    assert caught.value.reason == "bad_admitted_file"
