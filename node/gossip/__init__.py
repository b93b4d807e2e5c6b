"""Gossip: what may leave a node, the durable outbox, fanout routing and anti-entropy sync."""

from __future__ import annotations

from lamarck.node.gossip.audience import may_receive, peers_for
from lamarck.node.gossip.outbox import (
    InMemoryOutbox,
    Outbox,
    OutboxEntry,
    OutboxWorker,
    PostgresOutbox,
)
from lamarck.node.gossip.publisher import GossipParams, may_publish, sign_lesson
from lamarck.node.gossip.router import GossipRouter
from lamarck.node.gossip.sync import bucket_summary, differing_prefixes, sync_step

__all__ = [
    "GossipParams",
    "GossipRouter",
    "InMemoryOutbox",
    "Outbox",
    "OutboxEntry",
    "OutboxWorker",
    "PostgresOutbox",
    "bucket_summary",
    "differing_prefixes",
    "may_publish",
    "may_receive",
    "peers_for",
    "sign_lesson",
    "sync_step",
]
