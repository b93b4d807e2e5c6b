"""Container health probe: asks a lamarck node's grpc.health.v1 service whether it is SERVING.

Usage: ``python healthcheck.py [--address HOST:PORT] [--service NAME]``. The address defaults
to ``$LAMARCK_LISTEN`` (a wildcard host is probed on loopback), the service to ``""``: the
node process itself, SERVING once it has started and while its store answers, whether or not
it is admitted to a network yet (the liveness question). ``lamarck.v1.PeerService`` is
SERVING only while the node is admitted and its registry answers (the readiness question):
a probe that restarts the node on it would kill every node waiting for its enrollment.
Exit 0 when SERVING, 1 otherwise: what Docker's HEALTHCHECK expects.
Uses only what the node's image installs (grpcio, grpcio-health-checking).

The peer port speaks mutual TLS: the probe dials it with the node's own certificate, which a
node always trusts, from ``--home`` (default ``$LAMARCK_HOME``): ``keys/tls.key``,
``keys/tls.crt`` and the node id in ``node.json``. Without them (or when ``node.json`` says
``peer_tls: off-insecure``) it dials in plaintext.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

#: The whole node's health entry: the process is up and its store answers (liveness).
NODE_SERVICE = ""
#: The peer service's health entry, as lamarck.node.api.server names it (admitted: readiness).
PEER_SERVICE = "lamarck.v1.PeerService"
#: One probe's bound; Docker's own --timeout is the outer one.
TIMEOUT_S = 3.0
_WILDCARDS = {"0.0.0.0", "[::]", "::"}


def probe_address(listen: str) -> str:
    """Where to probe a node listening on ``listen``: a wildcard host becomes loopback."""
    host, _, port = listen.rpartition(":")
    return f"127.0.0.1:{port}" if host in _WILDCARDS else listen


def _channel(address: str, home: Path | None) -> grpc.Channel:
    """A channel to ``address``: with the home's own TLS certificate when it has one."""
    if home is not None:
        try:
            info = json.loads((home / "node.json").read_text())
            key = (home / "keys" / "tls.key").read_bytes()
            cert = (home / "keys" / "tls.crt").read_bytes()
        except (OSError, ValueError):
            info = None
        if isinstance(info, dict) and info.get("peer_tls", "on") == "on" and info.get("node_id"):
            credentials = grpc.ssl_channel_credentials(cert, key, cert)
            name = f"{info['node_id']}.lamarck"
            return grpc.secure_channel(
                address, credentials, options=[("grpc.ssl_target_name_override", name)]
            )
    return grpc.insecure_channel(address)


def check(address: str, service: str, home: Path | None = None) -> bool:
    """True when ``address`` answers SERVING for ``service``."""
    try:
        with _channel(address, home) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=TIMEOUT_S
            )
    except grpc.RpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str] | None = None) -> int:
    """Probe once; 0 when SERVING."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=os.environ.get("LAMARCK_LISTEN", "127.0.0.1:7700"))
    parser.add_argument("--service", default=NODE_SERVICE)
    parser.add_argument("--home", default=os.environ.get("LAMARCK_HOME", ""))
    args = parser.parse_args(argv)
    home = Path(args.home) if args.home else None
    return 0 if check(probe_address(args.address), args.service, home) else 1


if __name__ == "__main__":
    sys.exit(main())
