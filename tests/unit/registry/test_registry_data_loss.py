"""A registry that loses its data does not lock endorsed nodes out.

The node keeps the endorsement it was admitted with in its home (``admission.json``) and
presents it again: after the registry's records are wiped, the token-enrolled root and the
endorsed node both get back in (the registry re-checks the proof as the first time), and a
node that kept nothing is refused ``no_endorsement`` as before.
"""

from __future__ import annotations

import random
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lamarck.errors import AdmissionRefused, ConfigError
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.admission_file import ADMISSION_FILE, read_admission
from lamarck.registry.client import RegistryClient, TickResult
from lamarck.registry.memory_directory import InMemoryPeerDirectory, InMemoryRecords
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import EnrollmentToken, sign_endorsement, sign_enrollment

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
DAY = timedelta(days=1)


class _Network:
    def __init__(self) -> None:
        rng = random.Random(5)
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

    def token(self) -> EnrollmentToken:
        return sign_enrollment(
            self.operator, node_id=self.root.node_id, issued_at=T0, expires_at=T0 + 30 * DAY
        )

    def client(
        self, who: NodeIdentity, *, token: EnrollmentToken | None = None, proof: Path | None = None
    ) -> RegistryClient:
        return RegistryClient(
            self.directory,
            who,
            address="127.0.0.1:7001",
            domains=(),
            version="0.1.0",
            mode=AdmissionMode.ENDORSED,
            clock=self.clock,
            enrollment_token=token,
            proof_path=proof,
        )

    async def endorse_newcomer(self) -> None:
        await self.directory.endorse(
            sign_endorsement(
                self.root,
                endorsee_id=self.newcomer.node_id,
                endorsee_public_key=self.newcomer.public_key_b64,
                created_at=T0,
                expires_at=T0 + 30 * DAY,
            )
        )


async def test_an_endorsed_node_gets_back_in_after_the_registry_lost_its_data(
    tmp_path: Path,
) -> None:
    net = _Network()
    proof = tmp_path / ADMISSION_FILE
    root = net.client(net.root, token=net.token())
    assert await root.tick() is TickResult.REGISTERED
    await net.endorse_newcomer()
    newcomer = net.client(net.newcomer, proof=proof)
    assert await newcomer.tick() is TickResult.REGISTERED
    kept = read_admission(proof)
    assert kept is not None and kept.endorsee_id == net.newcomer.node_id
    assert stat.S_IMODE(proof.stat().st_mode) == 0o600

    assert await net.records.clear() > 0  # the registry's Redis restarted empty
    assert await net.directory.endorsement_for(net.newcomer.node_id) is None
    assert await root.tick() is TickResult.REGISTERED
    assert await newcomer.tick() is TickResult.REGISTERED
    # A restarted node (a new client) presents the kept proof too.
    await net.records.clear()
    assert await net.client(net.root, token=net.token()).tick() is TickResult.REGISTERED
    assert await net.client(net.newcomer, proof=proof).tick() is TickResult.REGISTERED
    listed = {p.node_id for p in await net.directory.live_peers()}
    assert listed == {net.root.node_id, net.newcomer.node_id}


async def test_without_a_kept_proof_the_endorsed_node_is_refused_after_data_loss(
    tmp_path: Path,
) -> None:
    net = _Network()
    assert await net.client(net.root, token=net.token()).tick() is TickResult.REGISTERED
    await net.endorse_newcomer()
    assert await net.client(net.newcomer).tick() is TickResult.REGISTERED
    await net.records.clear()
    assert await net.client(net.root, token=net.token()).tick() is TickResult.REGISTERED
    with pytest.raises(AdmissionRefused):
        await net.client(net.newcomer).tick()


async def test_a_kept_proof_admits_no_one_else(tmp_path: Path) -> None:
    net = _Network()
    proof = tmp_path / ADMISSION_FILE
    assert await net.client(net.root, token=net.token()).tick() is TickResult.REGISTERED
    await net.endorse_newcomer()
    assert await net.client(net.newcomer, proof=proof).tick() is TickResult.REGISTERED
    stranger = NodeIdentity.generate(random.Random(99))
    with pytest.raises(AdmissionRefused):
        await net.client(stranger, proof=proof).tick()


def test_a_corrupt_admission_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / ADMISSION_FILE
    path.write_text("{not json")
    with pytest.raises(ConfigError) as caught:
        read_admission(path)
    assert caught.value.reason == "bad_admission_file"
