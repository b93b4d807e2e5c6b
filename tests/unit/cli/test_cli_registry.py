"""`lamarck registry operator-key|enroll|endorse|revoke|retract` on temporary files, no registry
needed.

What talks to a registry (endorse, revoke and peers actually publishing and reading) is
covered against a real Redis in tests/integration/sharing/test_admitted_network.py; here are
the records the CLI signs and every refusal that comes before any connection.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.node.sharing import read_enrollment
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import init_keys, load_private_key, save_private_key
from lamarck.proto.signing import RecordKind
from lamarck.proto.timefmt import parse_ts
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import EnrollmentToken
from lamarck.registry.rules import check_enrollment, verify_signed_by

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_developer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LAMARCK_"):
            monkeypatch.delenv(name)


@pytest.fixture
def operator(tmp_path: Path) -> tuple[Path, NodeIdentity]:
    """An operator key file made by the CLI, and the identity in it."""
    path = tmp_path / "operator.pem"
    result = runner.invoke(app, ["registry", "operator-key", "create", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return path, load_private_key(path)


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(args: list[str]) -> dict[str, Any]:
    value = json.loads(_ok([*args, "--json"]))
    assert isinstance(value, dict)
    return value


def _refused(args: list[str], code: int = 1) -> str:
    """Run a command that must fail; return its one error line."""
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def _config(home: Path, **values: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    body = "".join(f'{k} = "{v}"\n' for k, v in values.items())
    (home / "lamarck.toml").write_text(body)


def _check(token: EnrollmentToken, node: NodeIdentity, operator_key: str) -> None:
    """The registry's own rule admits ``node`` with ``token`` under ``operator_key``."""
    check_enrollment(
        token,
        node_id=node.node_id,
        public_key=node.public_key_b64,
        operator_public_key=operator_key,
        params=RegistryParams(admission=AdmissionMode.ENDORSED),
        now=SystemClock().now(),
    )


# -- operator-key -----------------------------------------------------------------------


def test_operator_key_create_writes_a_private_pem_and_prints_its_public_key(
    tmp_path: Path,
) -> None:
    path = tmp_path / "op.pem"
    facts = _json(["registry", "operator-key", "create", str(path)])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    key = load_private_key(path).public_key_b64
    assert facts["public_key"] == key
    assert facts["path"] == str(path)
    assert facts["config"] == f'operator_public_key = "{key}"'


def test_operator_key_show_prints_the_key_create_printed(
    operator: tuple[Path, NodeIdentity],
) -> None:
    path, identity = operator
    assert _json(["registry", "operator-key", "show", str(path)])["public_key"] == (
        identity.public_key_b64
    )
    assert identity.public_key_b64 in _ok(["registry", "operator-key", "show", str(path)])


def test_operator_key_create_refuses_to_overwrite(operator: tuple[Path, NodeIdentity]) -> None:
    path, _ = operator
    before = path.read_bytes()
    line = _refused(["registry", "operator-key", "create", str(path)])
    assert line.startswith("lamarck: exists: ")
    assert path.read_bytes() == before


def test_operator_key_show_refuses_a_missing_or_readable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    assert _refused(["registry", "operator-key", "show", str(missing)]).startswith(
        "lamarck: missing: "
    )
    loose = tmp_path / "loose.pem"
    save_private_key(loose, NodeIdentity.generate())
    loose.chmod(0o644)
    assert _refused(["registry", "operator-key", "show", str(loose)]).startswith(
        "lamarck: insecure_permissions: "
    )


# -- enroll -----------------------------------------------------------------------------


def test_enroll_by_node_id_prints_a_token_the_registry_accepts(
    operator: tuple[Path, NodeIdentity],
) -> None:
    path, op = operator
    node = NodeIdentity.generate()
    out = _ok(["registry", "enroll", "--node-id", node.node_id, "--operator-key", str(path)])
    token = EnrollmentToken.from_wire(json.loads(out))
    assert token.node_id == node.node_id
    assert token.public_key is None
    assert token.signed_by == op.public_key_b64
    verify_signed_by(RecordKind.enrollment, token, op.public_key_b64)
    _check(token, node, op.public_key_b64)
    # Seven days by default.
    life = parse_ts(token.expires_at) - parse_ts(token.issued_at)
    assert life == timedelta(days=7)


def test_enroll_by_public_key_writes_out_with_the_days_asked(
    operator: tuple[Path, NodeIdentity], tmp_path: Path
) -> None:
    path, op = operator
    node = NodeIdentity.generate()
    out = tmp_path / "token.json"
    facts = _json(
        [
            "registry", "enroll", "--public-key", node.public_key_b64,
            "--operator-key", str(path), "--days", "2", "--out", str(out),
        ]
    )  # fmt: skip
    token = EnrollmentToken.from_wire(json.loads(out.read_text()))
    assert token.public_key == node.public_key_b64 and token.node_id is None
    assert parse_ts(token.expires_at) - parse_ts(token.issued_at) == timedelta(days=2)
    assert facts["path"] == str(out)
    assert facts["operator_public_key"] == op.public_key_b64
    _check(token, node, op.public_key_b64)


def test_enroll_a_home_writes_its_enrollment_json_for_its_id_and_key(
    operator: tuple[Path, NodeIdentity], tmp_path: Path
) -> None:
    path, op = operator
    home = tmp_path / "node"
    node = init_keys(home)
    facts = _json(["registry", "enroll", "--home", str(home), "--operator-key", str(path)])
    token = read_enrollment(home)  # what the node reads at start
    assert token is not None
    assert facts["path"] == str(home / "enrollment.json")
    assert (token.node_id, token.public_key) == (node.node_id, node.public_key_b64)
    _check(token, node, op.public_key_b64)


def test_enroll_does_not_overwrite_a_token_unless_forced(
    operator: tuple[Path, NodeIdentity], tmp_path: Path
) -> None:
    path, op = operator
    home = tmp_path / "node"
    node = init_keys(home)
    args = ["registry", "enroll", "--home", str(home), "--operator-key", str(path)]
    _ok(args)
    before = (home / "enrollment.json").read_text()
    assert _refused(args).startswith("lamarck: exists: ")
    assert (home / "enrollment.json").read_text() == before
    _ok([*args, "--days", "3", "--force"])
    token = read_enrollment(home)
    assert token is not None
    assert parse_ts(token.expires_at) - parse_ts(token.issued_at) == timedelta(days=3)
    _check(token, node, op.public_key_b64)


def test_enroll_needs_a_node_id_a_public_key_or_a_home(
    operator: tuple[Path, NodeIdentity],
) -> None:
    path, _ = operator
    line = _refused(["registry", "enroll", "--operator-key", str(path)], code=2)
    assert line.startswith("lamarck: missing_identity: ")


def test_enroll_refuses_a_missing_operator_key_file(tmp_path: Path) -> None:
    node = NodeIdentity.generate()
    missing = tmp_path / "nope.pem"
    line = _refused(
        ["registry", "enroll", "--node-id", node.node_id, "--operator-key", str(missing)]
    )
    assert line.startswith("lamarck: missing: ")
    assert str(missing) in line


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--node-id", "not-an-id"], "invalid_node_id"),
        (["--public-key", "AAAA"], "invalid_public_key"),
        (["--node-id", "OTHER", "--public-key", "KEY"], "identity_mismatch"),
        (["--node-id", "SELF", "--home", "HOME"], "conflicting_options"),
    ],
)
def test_enroll_refuses_identities_that_could_admit_nobody(
    operator: tuple[Path, NodeIdentity], tmp_path: Path, extra: list[str], reason: str
) -> None:
    path, _ = operator
    node, other = NodeIdentity.generate(), NodeIdentity.generate()
    values = {
        "OTHER": other.node_id,
        "KEY": node.public_key_b64,
        "SELF": node.node_id,
        "HOME": str(tmp_path / "home"),
    }
    args = [values.get(a, a) for a in extra]
    line = _refused(["registry", "enroll", *args, "--operator-key", str(path)], code=2)
    assert line.startswith(f"lamarck: {reason}: ")


def test_enroll_refuses_a_zero_day_token(operator: tuple[Path, NodeIdentity]) -> None:
    path, _ = operator
    node = NodeIdentity.generate()
    line = _refused(
        ["registry", "enroll", "--node-id", node.node_id, "--operator-key", str(path),
         "--days", "0"],
        code=2,
    )  # fmt: skip
    assert line.startswith("lamarck: usage: ")


# -- endorse, revoke: refusals before any registry is reached -----------------------------


def test_endorse_without_a_running_embedded_registry_says_so(tmp_path: Path) -> None:
    home = tmp_path / "a"
    init_keys(home)
    newcomer = NodeIdentity.generate()
    line = _refused(
        ["registry", "endorse", newcomer.node_id, "--public-key", newcomer.public_key_b64,
         "--home", str(home)]
    )  # fmt: skip
    assert line.startswith("lamarck: registry_not_running: ")
    assert not (home / "redis" / "redis.pid").exists()  # nothing was started


def test_endorse_is_refused_on_an_operator_admission_network(tmp_path: Path) -> None:
    home = tmp_path / "a"
    init_keys(home)
    _config(home, admission="operator")
    newcomer = NodeIdentity.generate()
    line = _refused(
        ["registry", "endorse", newcomer.node_id, "--public-key", newcomer.public_key_b64,
         "--home", str(home)],
        code=2,
    )  # fmt: skip
    assert line.startswith("lamarck: wrong_admission: ")


def test_endorse_refuses_a_key_that_is_not_the_node_ids(tmp_path: Path) -> None:
    home = tmp_path / "a"
    init_keys(home)
    one, two = NodeIdentity.generate(), NodeIdentity.generate()
    line = _refused(
        ["registry", "endorse", one.node_id, "--public-key", two.public_key_b64,
         "--home", str(home)],
        code=2,
    )  # fmt: skip
    assert line.startswith("lamarck: identity_mismatch: ")


def test_revoke_needs_the_networks_operator_key(
    operator: tuple[Path, NodeIdentity], tmp_path: Path
) -> None:
    path, op = operator
    home = tmp_path / "a"
    target = NodeIdentity.generate().node_id
    args = ["registry", "revoke", target, "--reason", "test", "--operator-key", str(path)]
    _config(home)
    line = _refused([*args, "--home", str(home)], code=2)
    assert line.startswith("lamarck: no_operator_key: ")
    assert op.public_key_b64 in line  # tells the operator what to configure
    _config(home, operator_public_key=NodeIdentity.generate().public_key_b64)
    line = _refused([*args, "--home", str(home)], code=2)
    assert line.startswith("lamarck: operator_key_mismatch: ")


def test_retract_checks_the_hash_the_reason_and_the_networks_operator_key(
    operator: tuple[Path, NodeIdentity], tmp_path: Path
) -> None:
    path, op = operator
    home = tmp_path / "a"
    _config(home, operator_public_key=op.public_key_b64)
    args = ["registry", "retract", "--operator-key", str(path), "--home", str(home)]
    line = _refused([*args, "--content-hash", "AB" * 32, "--reason", "x"], code=2)
    assert line.startswith("lamarck: invalid_content_hash: ")
    line = _refused([*args, "--content-hash", "ab" * 31, "--reason", "x"], code=2)
    assert line.startswith("lamarck: invalid_content_hash: ")
    line = _refused([*args, "--content-hash", "ab" * 32, "--reason", " "], code=2)
    assert line.startswith("lamarck: invalid_reason: ")
    _config(home)
    line = _refused([*args, "--content-hash", "ab" * 32, "--reason", "x"], code=2)
    assert line.startswith("lamarck: no_operator_key: ")
    assert op.public_key_b64 in line
    _config(home, operator_public_key=NodeIdentity.generate().public_key_b64)
    line = _refused([*args, "--content-hash", "ab" * 32, "--reason", "x"], code=2)
    assert line.startswith("lamarck: operator_key_mismatch: ")
    # With the right key, only the registry is missing (nothing is started for it).
    _config(home, operator_public_key=op.public_key_b64)
    line = _refused([*args, "--content-hash", "ab" * 32, "--reason", "x"])
    assert line.startswith("lamarck: registry_not_running: ")


# -- labels -------------------------------------------------------------------------------


def test_enroll_signs_the_nodes_label_and_a_registration_carrying_it_shows_it(
    operator: tuple[Path, NodeIdentity],
) -> None:
    from lamarck.registry.directory import PeerInfo
    from lamarck.registry.records import Admission, sign_registration

    path, op = operator
    node = NodeIdentity.generate()
    args = ["registry", "enroll", "--node-id", node.node_id, "--operator-key", str(path)]
    token = EnrollmentToken.from_wire(json.loads(_ok([*args, "--label", "node3"])))
    assert token.label == "node3"
    # The label is under the operator's signature: changing it breaks the token.
    verify_signed_by(RecordKind.enrollment, token, op.public_key_b64)
    _check(token, node, op.public_key_b64)
    # A node registering with this token is shown by the operator's label, whatever its own.
    now = SystemClock().now()
    reg = sign_registration(
        node,
        address="127.0.0.1:7000",
        domains=(),
        version="1",
        nonce="bm9uY2Utbm9uY2Utbm9uY2U",
        admission=Admission(mode=AdmissionMode.OPERATOR, enrollment_token=token),
        created_at=now,
        label="i-am-the-operator",
    )
    assert PeerInfo.from_registration(reg, now).label == "node3"
    assert reg.label == "i-am-the-operator"


@pytest.mark.parametrize("label", ["", " node3", "node\n3", "a\x1b[31mred", "x" * 41])
def test_enroll_refuses_a_label_that_is_empty_padded_unprintable_or_too_long(
    operator: tuple[Path, NodeIdentity], label: str
) -> None:
    path, _ = operator
    node = NodeIdentity.generate()
    args = ["registry", "enroll", "--node-id", node.node_id, "--operator-key", str(path)]
    line = _refused([*args, "--label", label])
    assert line.startswith("lamarck: invalid_label: ")
