"""`lamarck node start|status` failure paths, and the CLI's one-line error contract."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lamarck.cli import app, main
from lamarck.cli.errors import exit_code_for
from lamarck.errors import CliError, ConfigError, KeyFileError, NotFound

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_developer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LAMARCK_"):
            monkeypatch.delenv(name)


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [
        ("--listen", "nowhere", "listen"),
        ("--agent-listen", "127.0.0.1:99999", "agent_listen"),
        ("--metrics-listen", "x", "metrics_listen"),
        ("--embedder", "word2vec", "embedder"),
        ("--database-url", "mysql://db", "database_url"),
        ("--redis-url", "http://cache", "redis_url"),
        ("--log-level", "LOUD", "log_level"),
        ("--redis-namespace", "a:b", "redis_namespace"),
        ("--admission", "anyone", "admission"),
        ("--operator-public-key", "not-a-key", "operator_public_key"),
    ],
)
def test_bad_start_flag_exits_2_naming_the_field(
    tmp_path: Path, flag: str, value: str, field: str
) -> None:
    result = runner.invoke(app, ["node", "start", "--home", str(tmp_path), flag, value])
    assert result.exit_code == 2
    assert result.stdout == ""
    line = _one_error_line(result.stderr)
    assert line.startswith("lamarck: invalid_config: ")
    assert f" {field}: " in line
    # Refused before anything was created: no key, no lock, no database.
    assert not (tmp_path / "keys").exists()
    assert not (tmp_path / "node.lock").exists()


def test_unset_start_flags_let_the_environment_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAMARCK_AGENT_LISTEN", "not-an-address")
    result = runner.invoke(app, ["node", "start", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert " agent_listen: " in _one_error_line(result.stderr)


def test_unset_start_flags_let_lamarck_toml_apply(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text('embedder = "word2vec"\n')
    result = runner.invoke(app, ["node", "start", "--home", str(tmp_path)])
    assert result.exit_code == 2
    assert " embedder: " in _one_error_line(result.stderr)


def test_a_flag_beats_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMARCK_EMBEDDER", "word2vec")
    # The flag fixes the embedder, so the only error left is the bad listen flag.
    result = runner.invoke(
        app, ["node", "start", "--home", str(tmp_path), "--embedder", "hashing", "--listen", "x"]
    )
    assert result.exit_code == 2
    line = _one_error_line(result.stderr)
    assert " listen: " in line and "embedder" not in line


def test_unknown_option_is_a_usage_error_on_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["node", "status", "--home", str(tmp_path), "--verbose"])
    assert result.exit_code == 2
    assert _one_error_line(result.stderr) == "lamarck: usage: No such option: --verbose"


def test_status_without_a_node_exits_1_on_one_line(tmp_path: Path) -> None:
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["node", "status", "--home", str(tmp_path), *extra])
        assert result.exit_code == 1
        assert result.stdout == ""
        assert _one_error_line(result.stderr).startswith("lamarck: node_not_running: ")


def test_no_node_is_one_reason_in_the_shape_the_sdk_and_mcp_use(tmp_path: Path) -> None:
    from lamarck.client import node_address

    result = runner.invoke(app, ["node", "status", "--home", str(tmp_path)])
    with pytest.raises(ConfigError) as sdk:
        node_address(tmp_path)
    # One code per state: the CLI's line and the SDK's error (which MCP relays) agree.
    assert sdk.value.reason == "node_not_running"
    assert _one_error_line(result.stderr).startswith(f"lamarck: {sdk.value.reason}: ")


def _running_fleet(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fleet directory whose supervisor is alive (this process) with nodes node1, node2."""
    fleet = root / "fleet"
    nodes = []
    for name in ("node1", "node2"):
        (fleet / "nodes" / name).mkdir(parents=True)
        nodes.append({"name": name, "home": str(fleet / "nodes" / name)})
    state = {"supervisor_pid": os.getpid(), "state": "running", "nodes": nodes}
    (fleet / "fleet.json").write_text(json.dumps(state))
    monkeypatch.setenv("LAMARCK_FLEET_DIR", str(fleet))
    return fleet


def test_status_without_a_node_names_the_running_fleets_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _running_fleet(tmp_path, monkeypatch)
    result = runner.invoke(app, ["node", "status", "--home", str(tmp_path / "empty")])
    line = _one_error_line(result.stderr)
    assert line.startswith("lamarck: node_not_running: ")
    assert "(node1, node2): pass --node node1" in line


def test_node_option_reaches_a_running_fleets_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = _running_fleet(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    # node2's home holds a node.json naming an exited pid: the error names that very home.
    info = {"pid": _exited_pid(), "node_id": "lmk1x", "listen": "127.0.0.1:1"}
    (fleet / "nodes" / "node2" / "node.json").write_text(json.dumps(info))
    result = runner.invoke(app, ["node", "status", "--node", "node2"])
    line = _one_error_line(result.stderr)
    assert str(fleet / "nodes" / "node2") in line and "has exited" in line
    unknown = runner.invoke(app, ["node", "status", "--node", "node9"])
    line = _one_error_line(unknown.stderr)
    assert line.startswith("lamarck: unknown_node: ") and "pass --node node1" in line


def _exited_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


def test_status_with_a_stale_node_file_exits_1(tmp_path: Path) -> None:
    # A node killed with SIGKILL leaves node.json behind, naming a pid that is gone.
    info = {"pid": _exited_pid(), "node_id": "lmk1x", "listen": "127.0.0.1:1"}
    (tmp_path / "node.json").write_text(json.dumps(info))
    result = runner.invoke(app, ["node", "status", "--home", str(tmp_path)])
    assert result.exit_code == 1
    line = _one_error_line(result.stderr)
    assert line.startswith("lamarck: node_not_running: ") and "has exited" in line


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_status_of_a_node_that_does_not_answer_health_exits_1(tmp_path: Path) -> None:
    # node.json names a live pid (ours) but nothing listens: the node is not serving.
    info = {
        "pid": os.getpid(),
        "node_id": "lmk1example",
        "listen": f"127.0.0.1:{_closed_port()}",
        "agent_listen": "127.0.0.1:1",
        "embedder": "hashing-v1-384",
        "database": "embedded",
    }
    (tmp_path / "node.json").write_text(json.dumps(info))
    result = runner.invoke(app, ["node", "status", "--home", str(tmp_path), "--json"])
    assert result.exit_code == 1
    facts = json.loads(result.stdout)
    assert facts["health"] == "UNREACHABLE"
    assert facts["node_id"] == "lmk1example"
    assert _one_error_line(result.stderr) == "lamarck: not_serving: the node is UNREACHABLE"


def test_main_returns_the_exit_code_instead_of_raising(tmp_path: Path) -> None:
    assert main(["node", "status", "--home", str(tmp_path)]) == 1
    assert main(["schema", "vote"]) == 0
    assert main(["node", "start", "--listen", "x", "--home", str(tmp_path)]) == 2


def test_exit_codes_follow_the_error_kind() -> None:
    assert exit_code_for(ConfigError("bad", reason="invalid_config")) == 2
    assert exit_code_for(ConfigError("busy", reason="already_running")) == 1
    assert exit_code_for(KeyFileError("x", reason="insecure_permissions")) == 1
    assert exit_code_for(NotFound("x")) == 1
    assert exit_code_for(CliError("x", reason="node_not_running")) == 1


def test_the_console_script_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAMARCK_")}
    done = subprocess.run(
        [sys.executable, "-m", "lamarck.cli", "node", "status", "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert _one_error_line(done.stderr).startswith("lamarck: node_not_running: ")
