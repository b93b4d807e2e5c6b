"""Loopback means only this machine: 127.0.0.0/8, ::1 and localhost, or a unix socket."""

from __future__ import annotations

import pytest

from lamarck.net import is_loopback_address, is_loopback_host


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.2", "127.1.2.3", "localhost", "LocalHost", "::1", "[::1]"]
)
def test_loopback_hosts(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize(
    "host",
    [
        "0.0.0.0",
        "::",
        "[::]",
        "10.0.0.1",
        "10.0.0.2",
        "example.com",
        "",
        "1270.0.0.1",
        # DNS names that look like loopback resolve wherever their owner likes (rebinding).
        "127.0.0.1.nip.io",
        "127.evil.example",
    ],
)
def test_other_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback_host(host)


def test_addresses_with_ports_and_unix_sockets() -> None:
    assert is_loopback_address("127.0.0.1:7701")
    assert is_loopback_address("[::1]:7701")
    assert is_loopback_address("unix:/run/lamarck.sock")
    assert not is_loopback_address("0.0.0.0:7701")
    assert not is_loopback_address("[::]:7701")
