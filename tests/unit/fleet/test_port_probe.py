"""The fleet's port probe: a listener makes a port busy; a stopped fleet's connections in
TIME-WAIT do not (``make run`` started again at once)."""

from __future__ import annotations

import os
import socket
import time

import pytest

from lamarck.errors import ConfigError
from lamarck.fleet.launcher import check_ports_free, port_is_free

HOST = "127.0.0.1"
BOUND_S = 10.0  # seconds to wait for the kernel to reach TIME-WAIT, never reached when it does


def _listener() -> socket.socket:
    # As the nodes' gRPC servers listen: with SO_REUSEADDR.
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((HOST, 0))
    server.listen()
    return server


def _time_wait_on(port: int) -> bool:
    with open("/proc/net/tcp") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    # Column 1 is local address:port in hex, column 3 the state (06: TIME_WAIT).
    return any(int(r[1].split(":")[1], 16) == port and r[3] == "06" for r in rows)


def test_a_listening_port_is_busy_and_refused_by_name() -> None:
    server = _listener()
    port = server.getsockname()[1]
    try:
        assert not port_is_free(HOST, port)
        with pytest.raises(ConfigError) as info:
            check_ports_free(HOST, [port])
        assert info.value.reason == "port_busy"
    finally:
        server.close()


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's TCP table")
def test_a_port_whose_last_connections_are_in_time_wait_is_free() -> None:
    server = _listener()
    port = server.getsockname()[1]
    client = socket.create_connection((HOST, port))
    accepted, _ = server.accept()
    accepted.close()  # the server side closes first: its end goes to TIME-WAIT
    client.close()
    server.close()
    deadline = time.monotonic() + BOUND_S
    while not _time_wait_on(port):
        if time.monotonic() > deadline:
            pytest.skip("the kernel kept no TIME-WAIT connection to test with")
        time.sleep(0.01)
    assert port_is_free(HOST, port)
