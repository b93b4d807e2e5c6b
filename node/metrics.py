"""Prometheus metrics of a node: RPCs, imports, lessons, store size, health and status.

The metric objects are module-level so any part of the node can count (``IMPORTS.labels(
result="rejected", reason="bad_signature").inc()``) without being handed a registry. They
live in the process-wide default registry: one node runs per process, so names never clash.
The store gauges are refreshed by the daemon from ``LessonStore.stats()`` (see
:class:`StoreStatsRefresher`), never by the HTTP thread, which must not touch asyncio objects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, start_http_server

from lamarck.health.params import refresh_spacing_s
from lamarck.node.periodic import Periodic

__all__ = [
    "ADMISSION",
    "ATTESTATIONS",
    "DATABASE_BYTES_KEY",
    "HEALTH",
    "IMPORTS",
    "LESSONS",
    "NODE_INFO",
    "OUTBOX_DEPTH",
    "OUTBOX_OLDEST_AGE",
    "PEERS_BY_BAND",
    "PEERS_LIVE",
    "PEER_BAND",
    "PEER_GLOBAL_TRUST",
    "PEER_SCORE",
    "QUARANTINE_PENDING",
    "RATE_LIMITED",
    "REGISTRY_ROUNDS",
    "REPUTATION_PEERS_MAX",
    "RPC_DURATION",
    "RPC_REQUESTS",
    "STORE_BYTES",
    "STORE_RECORDS",
    "HealthRefresher",
    "MetricsServer",
    "StoreStatsRefresher",
    "apply_health",
    "apply_reputation",
    "apply_status",
    "apply_store_stats",
    "export_peer_scores",
    "import_counts",
    "start_metrics_server",
]

_log = logging.getLogger(__name__)

#: Finished RPCs by server ("peer"/"agent"), full method name and final status code name.
RPC_REQUESTS = Counter(
    "lamarck_rpc_requests",
    "Finished gRPC calls by server, method and status code.",
    ["server", "method", "code"],
)
#: Wall time of finished RPCs, same labels as ``RPC_REQUESTS``.
RPC_DURATION = Histogram(
    "lamarck_rpc_duration_seconds",
    "Wall time of gRPC calls by server, method and status code.",
    ["server", "method", "code"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
#: Records offered for import, by result (accepted, duplicate, quarantined, rejected,
#: deferred) and reason (the typed error's ``reason``; empty for accepted/duplicate).
IMPORTS = Counter(
    "lamarck_imports",
    "Records offered for import by result and reason.",
    ["result", "reason"],
)
#: Outcome attestations: made here, or received and kept / refused (by reason).
ATTESTATIONS = Counter(
    "lamarck_attestations",
    "Outcome attestations made here or received from peers, by result and reason.",
    ["result", "reason"],
)
#: Calls refused by the per-peer limits, by reason (rate_limited, too_many_concurrent).
RATE_LIMITED = Counter(
    "lamarck_peer_limited",
    "PeerService calls refused by per-peer limits, by reason.",
    ["reason"],
)
#: Lessons held, by status (claimed, active, superseded, retired, ...).
LESSONS = Gauge("lamarck_lessons", "Lessons in the store by status.", ["status"])
#: Other rows held: outcomes, quarantine, quarantine_pending, rejections.
STORE_RECORDS = Gauge("lamarck_store_records", "Rows in the store by kind.", ["kind"])
#: Size of the node's database on disk (``pg_database_size``), in bytes.
STORE_BYTES = Gauge("lamarck_store_size_bytes", "Size of the node's database in bytes.")
#: Constant 1, labelled with who this node is and what it runs on.
NODE_INFO = Gauge(
    "lamarck_node_info",
    "This node's id, version, embedder and database kind.",
    ["node_id", "version", "embedder", "database"],
)

#: Every figure of the health report (``lamarck.health.render.gauge_values`` names),
#: e.g. ``lamarck_health{figure="validation_contradiction_rate"}``; ``warning_<code>`` is 1
#: while that warning is raised. A figure without data is absent, not 0.
HEALTH = Gauge("lamarck_health", "Health report figures (Lamarckian memory dashboard).", ["figure"])
#: 1 for the node's current admission state (admitted, degraded, pending, refused,
#: no_registry), 0 for the others.
ADMISSION = Gauge("lamarck_admission", "The node's registry admission state.", ["state"])
#: Registry rounds (registration or heartbeat) by result: ok, unreachable, or the refusal's
#: reason; a refused node logs its refusal once per change, this counts every attempt.
REGISTRY_ROUNDS = Counter(
    "lamarck_registry_rounds",
    "Registry rounds by result (ok, unreachable, refusal reason).",
    ["result"],
)
#: Live peers (other than this node) in the last registry round.
PEERS_LIVE = Gauge("lamarck_peers_live", "Live peers seen in the registry.")
#: Undelivered gossip outbox rows, and the age of the oldest one in seconds (0 when empty).
OUTBOX_DEPTH = Gauge("lamarck_outbox_pending", "Undelivered gossip outbox rows.")
OUTBOX_OLDEST_AGE = Gauge(
    "lamarck_outbox_oldest_age_seconds", "Age of the oldest undelivered outbox row."
)
#: Pending quarantine rows by reason (a row held for two reasons counts under each).
QUARANTINE_PENDING = Gauge(
    "lamarck_quarantine_pending", "Pending quarantine rows by reason.", ["reason"]
)

#: Peers by reputation band (trusted, neutral, graylisted), over every peer the book knows.
PEERS_BY_BAND = Gauge("lamarck_peers_by_band", "Peers in each reputation band.", ["band"])
#: Per-peer figures, for at most ``REPUTATION_PEERS_MAX`` peers (the lowest scores, where an
#: operator acts), so a network of thousands of peers cannot blow up the series count.
PEER_SCORE = Gauge("lamarck_peer_reputation_score", "A peer's reputation score.", ["peer"])
PEER_GLOBAL_TRUST = Gauge("lamarck_peer_global_trust", "A peer's global trust.", ["peer"])
#: 1 for the peer's current band, 0 for the others (a state set: three series per peer).
PEER_BAND = Gauge("lamarck_peer_band", "A peer's reputation band.", ["peer", "band"])
#: Bound on the peers the per-peer gauges label.
REPUTATION_PEERS_MAX = 50
# Whether the per-peer gauges are exported at all (``metrics_peer_scores``, off by default:
# who this node trusts is the operator's business, not every scraper's). Set once by the
# daemon at start (``export_peer_scores``); the registry of series is process-wide anyway.
_peer_series = {"enabled": False}
_BANDS = ("trusted", "neutral", "graylisted")

_LESSON_PREFIX = "lessons_"
#: Key of ``apply_store_stats``'s mapping carrying the database size in bytes.
DATABASE_BYTES_KEY = "database_bytes"


def apply_store_stats(stats: Mapping[str, int]) -> None:
    """Set the store gauges from a ``LessonStore.stats()`` mapping."""
    for key, value in stats.items():
        if not isinstance(key, str):
            continue  # a malformed stats row must not blank every other gauge
        if key == DATABASE_BYTES_KEY:
            STORE_BYTES.set(value)
        elif key.startswith(_LESSON_PREFIX):
            LESSONS.labels(status=key[len(_LESSON_PREFIX) :]).set(value)
        else:
            STORE_RECORDS.labels(kind=key).set(value)


class StoreStatsRefresher:
    """Refreshes the store gauges every ``interval_s`` from an async stats source."""

    def __init__(
        self, stats: Callable[[], Awaitable[Mapping[str, int]]], interval_s: float
    ) -> None:
        """``interval_s``: ``MaintenanceParams.store_stats_interval_s``."""
        self._stats = stats
        self._loop = Periodic("store metrics", self._apply, interval_s, logger=_log)

    async def _apply(self) -> None:
        apply_store_stats(await self._stats())

    async def refresh(self) -> None:
        """One refresh; a failing store is logged, not raised (metrics never stop a node)."""
        await self._loop.round()

    def start(self) -> None:
        """Start the periodic refresh on the running loop."""
        self._loop.start()

    async def stop(self) -> None:
        """End the periodic refresh and wait for it."""
        await self._loop.stop()


def apply_health(values: Mapping[str, float]) -> None:
    """Replace the health gauges by ``values`` (``gauge_values(report)``): a figure that lost
    its data or a warning no longer raised disappears instead of keeping its last value."""
    HEALTH.clear()
    for figure, value in values.items():
        HEALTH.labels(figure=figure).set(value)


def export_peer_scores(enabled: bool) -> None:
    """Export the per-peer gauges (score, global trust, band) or not (the default)."""
    _peer_series["enabled"] = enabled


def apply_reputation(
    peers: Sequence[tuple[str, float, str, float | None]], limit: int = REPUTATION_PEERS_MAX
) -> None:
    """Replace the reputation gauges by ``peers`` (peer, score, band, global trust): bands
    counted over all, per-peer series for the ``limit`` lowest scores (ties by peer id), and
    none unless ``export_peer_scores(True)``. A peer nobody has judged yet (global trust
    ``None``, unknown) has no global-trust series: it is omitted, never exported as 0."""
    if not _peer_series["enabled"]:
        limit = 0
    PEERS_BY_BAND.clear()
    counts = dict.fromkeys(_BANDS, 0)
    for _, _, band, _ in peers:
        counts[band] = counts.get(band, 0) + 1
    for band, count in counts.items():
        PEERS_BY_BAND.labels(band=band).set(count)
    for gauge in (PEER_SCORE, PEER_GLOBAL_TRUST, PEER_BAND):
        gauge.clear()
    for peer, score, band, global_trust in sorted(peers, key=lambda p: (p[1], p[0]))[:limit]:
        PEER_SCORE.labels(peer=peer).set(score)
        if global_trust is not None:
            PEER_GLOBAL_TRUST.labels(peer=peer).set(global_trust)
        for name in _BANDS:
            PEER_BAND.labels(peer=peer, band=name).set(1 if name == band else 0)


def apply_status(status: Mapping[str, Any]) -> None:
    """Set the status gauges from ``status_to_json``'s dict (``lamarck.node.api.node_status``)."""
    network = status.get("network")
    ADMISSION.clear()
    if isinstance(network, Mapping):
        ADMISSION.labels(state=str(network["admission"]["state"])).set(1)
        PEERS_LIVE.set(len(network["live_peers"]))
        OUTBOX_DEPTH.set(network["outbox"]["depth"])
        OUTBOX_OLDEST_AGE.set(network["outbox"]["oldest_age_s"] or 0.0)
    QUARANTINE_PENDING.clear()
    for reason, count in status["quarantine"]["by_reason"].items():
        QUARANTINE_PENDING.labels(reason=reason).set(count)


def import_counts() -> dict[str, dict[str, int]]:
    """Records offered for import since this process started: result -> reason -> count."""
    out: dict[str, dict[str, int]] = {}
    for metric in IMPORTS.collect():
        for sample in metric.samples:
            if not sample.name.endswith("_total"):
                continue  # the counter's _created timestamps
            result, reason = sample.labels["result"], sample.labels["reason"]
            out.setdefault(result, {})[reason] = int(sample.value)
    return out


class HealthRefresher:
    """Refreshes the health and status gauges every ``interval_s``, or less often when a
    refresh takes more than ``max_share`` of that (``refresh_spacing_s``: the report grows
    with the store).

    ``health`` returns ``gauge_values`` of a fresh report; ``status`` (optional) returns
    ``status_to_json``'s dict, or ``None`` while the node stops. Both are read on the
    daemon's loop, never by the HTTP thread.
    """

    def __init__(
        self,
        health: Callable[[], Awaitable[Mapping[str, float]]],
        interval_s: float,
        *,
        status: Callable[[], Awaitable[Mapping[str, Any] | None]] | None = None,
        max_share: float = 1.0,
    ) -> None:
        self._health = health
        self._status = status
        self._interval_s = interval_s
        self._max_share = max_share
        self._loop = Periodic("health metrics", self._apply, self._rest, logger=_log)

    def _rest(self, took: float) -> float:
        # The spacing runs from the refresh's start: what is left of it after the refresh.
        return refresh_spacing_s(self._interval_s, took, self._max_share) - took

    async def _apply(self) -> None:
        apply_health(await self._health())
        status = await self._status() if self._status is not None else None
        if status is not None:  # None: the node is stopping, its servers are gone
            apply_status(status)

    async def refresh(self) -> None:
        """One refresh; a failure is logged, not raised (metrics never stop a node)."""
        await self._loop.round()

    def start(self) -> None:
        """Start the periodic refresh on the running loop."""
        self._loop.start()

    async def stop(self) -> None:
        """End the periodic refresh and wait for it."""
        await self._loop.stop()


@dataclass
class MetricsServer:
    """The Prometheus HTTP endpoint: where it listens, and how to stop it."""

    host: str
    port: int
    _server: Any

    @property
    def url(self) -> str:
        """``http://host:port/metrics``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        """Stop serving (blocks until the serving thread has left its loop)."""
        self._server.shutdown()
        self._server.server_close()


def start_metrics_server(address: str) -> MetricsServer:
    """Serve the default registry on ``host:port`` (port 0 picks a free one)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    server, _thread = start_http_server(int(port), addr=host)
    return MetricsServer(host=host, port=int(server.server_port), _server=server)
