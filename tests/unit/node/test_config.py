"""Configuration precedence and refusal of invalid values."""

from __future__ import annotations

from pathlib import Path

import pytest

from lamarck.errors import ConfigError
from lamarck.node.config import load_settings


def test_flags_beat_environment_beat_toml_beat_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lamarck.toml").write_text(
        'listen = "127.0.0.1:9100"\nagent_listen = "127.0.0.1:9101"\nembedder = "hashing"\n'
    )
    monkeypatch.setenv("LAMARCK_AGENT_LISTEN", "127.0.0.1:9201")
    monkeypatch.delenv("LAMARCK_LISTEN", raising=False)
    s = load_settings(home=tmp_path, listen="127.0.0.1:9300", agent_listen=None)
    assert s.listen == "127.0.0.1:9300"  # flag
    assert s.agent_listen == "127.0.0.1:9201"  # environment over toml
    assert s.embedder == "hashing"  # toml over default
    assert s.rpc_deadline_s == 30.0  # default


def test_invalid_value_is_refused_naming_field_and_rule(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, listen="nonsense")
    assert err.value.reason == "invalid_config"
    assert "listen" in str(err.value)
    assert "host:port" in str(err.value)


def test_invalid_toml_value_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text('database_url = "mysql://x"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path)
    assert err.value.details["field"] == "database_url"


def test_unknown_key_in_toml_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lamarck.toml").write_text("listne = 3\n")
    with pytest.raises(ConfigError):
        load_settings(home=tmp_path)


def test_agent_api_off_loopback_is_flagged_non_local(tmp_path: Path) -> None:
    assert load_settings(home=tmp_path).agent_is_local
    assert not load_settings(home=tmp_path, agent_listen="0.0.0.0:7701").agent_is_local
    assert load_settings(home=tmp_path, agent_listen="unix:/tmp/x.sock").agent_is_local


def test_shared_scopes_take_a_digest_or_a_project_scope_and_refuse_anything_else(
    tmp_path: Path,
) -> None:
    digest = "ab" * 16
    (tmp_path / "lamarck.toml").write_text(
        f'shared_scopes = ["{digest}", "project:{digest}", "project:{"cd" * 32}"]\n'
    )
    s = load_settings(home=tmp_path)
    assert s.shared_scopes == (f"project:{digest}", f"project:{'cd' * 32}")
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, shared_scopes=("global",))
    assert err.value.details["field"] == "shared_scopes"
    with pytest.raises(ConfigError):
        load_settings(home=tmp_path, publish_threshold=1.5)


def test_the_peer_port_runs_tls_unless_told_off_insecure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings(home=tmp_path).peer_tls == "on"
    monkeypatch.setenv("LAMARCK_PEER_TLS", "off-insecure")
    assert load_settings(home=tmp_path).peer_tls == "off-insecure"
    with pytest.raises(ConfigError) as err:
        load_settings(home=tmp_path, peer_tls="off")
    assert "peer_tls" in str(err.value)
    with pytest.raises(ConfigError):
        load_settings(home=tmp_path, peer_tls_cert_file="/etc/lamarck/tls.crt")


def test_the_advertised_address_is_one_peers_can_dial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAMARCK_ADVERTISE_ADDRESS", "node-3.lamarck.svc:7700")
    assert load_settings(home=tmp_path).advertise_address == "node-3.lamarck.svc:7700"
    for bad in ("0.0.0.0:7700", "[::]:7700", "node-3", "node-3:0", "node-3:99999"):
        with pytest.raises(ConfigError) as err:
            load_settings(home=tmp_path, advertise_address=bad)
        assert "advertise_address" in str(err.value), bad
