"""How a node connects to the registry's Redis: AUTH or an ACL user's password from its own
setting (never spliced into the URL), and TLS (``rediss://``) that verifies the server.
No server is dialled: the client's connection settings are read as built."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio.connection import SSLConnection

from lamarck.errors import ConfigError
from lamarck.node.config import load_settings
from lamarck.registry.redis_directory import connect_redis


def _kwargs(client: object) -> dict[str, object]:
    pool = client.connection_pool  # type: ignore[attr-defined]
    return dict(pool.connection_kwargs)


def test_a_password_authenticates_an_acl_user_named_in_the_url() -> None:
    client = connect_redis("redis://lamarck@redis:6379/0", password="s3cret")
    kwargs = _kwargs(client)
    assert kwargs["username"] == "lamarck" and kwargs["password"] == "s3cret"


def test_rediss_verifies_the_server_certificate_and_name_against_the_given_ca() -> None:
    client = connect_redis("rediss://redis:6380/0", password="p", ca_file="/etc/ca.pem")
    pool = client.connection_pool
    assert pool.connection_class is SSLConnection
    kwargs = _kwargs(client)
    assert kwargs["ssl_cert_reqs"] == "required" and kwargs["ssl_check_hostname"] is True
    assert kwargs["ssl_ca_certs"] == "/etc/ca.pem"


def test_a_ca_file_without_tls_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError) as e:
        connect_redis("redis://redis:6379/0", ca_file="/etc/ca.pem")
    assert e.value.reason == "invalid_config"


def test_the_redis_password_setting_is_secret_and_sslmode_is_checked(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path, redis_password="s3cret")
    assert "s3cret" not in repr(settings) and "s3cret" not in str(settings.model_dump())
    assert settings.redis_password.get_secret_value() == "s3cret"
    url = "postgresql://lamarck@db:5432/n1?sslmode=verify-full&sslrootcert=/ca.pem"
    assert load_settings(home=tmp_path, database_url=url).database_url == url
    with pytest.raises(Exception, match="sslmode"):
        load_settings(home=tmp_path, database_url="postgresql://db/n1?sslmode=sometimes")


def test_passwords_can_come_from_mounted_secret_files(tmp_path: Path) -> None:
    (tmp_path / "redis").write_text("r3dis\n")
    (tmp_path / "pg").write_text("p0stgres\n")
    settings = load_settings(
        home=tmp_path,
        redis_password_file=str(tmp_path / "redis"),
        database_password_file=str(tmp_path / "pg"),
    )
    assert settings.redis_password.get_secret_value() == "r3dis"
    assert settings.database_password.get_secret_value() == "p0stgres"
    with pytest.raises(Exception, match="redis_password_file"):
        load_settings(home=tmp_path, redis_password_file=str(tmp_path / "missing"))
