"""`lamarck keys init|show|rotate` on a temporary home with real key files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lamarck.cli import app
from lamarck.node.lock import HomeLock
from lamarck.proto.identity import b64u_decode, node_id_for
from lamarck.proto.keys import identity_path, load_private_key, verify_rotation

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_developer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LAMARCK_"):
            monkeypatch.delenv(name)


def _json(args: list[str]) -> dict[str, object]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    value = json.loads(result.stdout)
    assert isinstance(value, dict)
    return value


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_init_creates_a_private_pkcs8_key_and_reports_its_node_id(tmp_path: Path) -> None:
    facts = _json(["keys", "init", "--home", str(tmp_path)])
    path = identity_path(tmp_path)
    assert facts["path"] == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    identity = load_private_key(path)
    assert facts["node_id"] == identity.node_id
    assert facts["public_key"] == identity.public_key_b64
    assert facts["rotations"] == 0
    assert facts["original_node_id"] == identity.node_id


def test_init_table_names_the_node_id(tmp_path: Path) -> None:
    result = runner.invoke(app, ["keys", "init", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    identity = load_private_key(identity_path(tmp_path))
    assert identity.node_id in result.stdout
    assert identity.public_key_b64 in result.stdout


def test_init_refuses_to_overwrite_an_existing_key(tmp_path: Path) -> None:
    _json(["keys", "init", "--home", str(tmp_path)])
    before = identity_path(tmp_path).read_bytes()
    result = runner.invoke(app, ["keys", "init", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert _one_error_line(result.stderr).startswith("lamarck: exists: ")
    assert identity_path(tmp_path).read_bytes() == before


def test_home_defaults_to_lamarck_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMARCK_HOME", str(tmp_path / "from-env"))
    facts = _json(["keys", "init"])
    assert facts["path"] == str(identity_path(tmp_path / "from-env"))


def test_show_prints_what_init_created(tmp_path: Path) -> None:
    created = _json(["keys", "init", "--home", str(tmp_path)])
    shown = _json(["keys", "show", "--home", str(tmp_path)])
    assert shown == created
    table = runner.invoke(app, ["keys", "show", "--home", str(tmp_path)])
    assert table.exit_code == 0
    assert str(created["node_id"]) in table.stdout


def test_show_without_a_key_fails_on_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["keys", "show", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert _one_error_line(result.stderr).startswith("lamarck: missing: ")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_show_refuses_a_key_others_can_read(tmp_path: Path, mode: int) -> None:
    _json(["keys", "init", "--home", str(tmp_path)])
    os.chmod(identity_path(tmp_path), mode)
    for as_json in ([], ["--json"]):
        result = runner.invoke(app, ["keys", "show", "--home", str(tmp_path), *as_json])
        assert result.exit_code == 1
        assert result.stdout == ""
        line = _one_error_line(result.stderr)
        assert line.startswith("lamarck: insecure_permissions: ")
        assert "Traceback" not in result.output


def test_rotate_signs_a_rotation_record_with_the_old_key(tmp_path: Path) -> None:
    created = _json(["keys", "init", "--home", str(tmp_path)])
    rotated = _json(["keys", "rotate", "--home", str(tmp_path)])
    new = load_private_key(identity_path(tmp_path))
    assert rotated["node_id"] == created["node_id"]
    assert rotated["old_public_key"] == created["public_key"]
    assert rotated["new_public_key"] == new.public_key_b64
    assert rotated["new_node_id"] == new.node_id == node_id_for(b64u_decode(new.public_key_b64))
    assert rotated["rotation"] == 1
    record_path = Path(str(rotated["record_path"]))
    on_disk = json.loads(record_path.read_bytes())
    assert on_disk == rotated["record"]
    checked = verify_rotation(on_disk)
    assert checked.signature.signed_by == created["public_key"]
    shown = _json(["keys", "show", "--home", str(tmp_path)])
    assert shown["rotations"] == 1
    assert shown["original_node_id"] == created["node_id"]
    assert shown["node_id"] == new.node_id


def test_second_rotation_keeps_the_original_id(tmp_path: Path) -> None:
    created = _json(["keys", "init", "--home", str(tmp_path)])
    _json(["keys", "rotate", "--home", str(tmp_path)])
    second = _json(["keys", "rotate", "--home", str(tmp_path)])
    assert second["rotation"] == 2
    assert second["node_id"] == created["node_id"]
    table = runner.invoke(app, ["keys", "rotate", "--home", str(tmp_path)])
    assert table.exit_code == 0, table.output
    assert "rotation.3.json" in table.stdout


def test_rotate_is_refused_while_a_node_holds_the_home(tmp_path: Path) -> None:
    created = _json(["keys", "init", "--home", str(tmp_path)])
    # The daemon's own lock, held by this process: exactly what a running node holds.
    with HomeLock(tmp_path):
        result = runner.invoke(app, ["keys", "rotate", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert _one_error_line(result.stderr).startswith("lamarck: node_running: ")
    assert load_private_key(identity_path(tmp_path)).node_id == created["node_id"]


def test_rotate_without_a_key_fails_on_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["keys", "rotate", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert _one_error_line(result.stderr).startswith("lamarck: missing: ")
