"""Gossip: what may leave a node, the durable outbox, fanout routing and anti-entropy sync."""

from __future__ import annotations

from lamarck.gossip.audience import may_receive, peers_for
from lamarck.gossip.publisher import GossipParams, may_publish, sign_lesson
from lamarck.gossip.router import GossipRouter
from lamarck.gossip.sync import bucket_summary, differing_prefixes, sync_step
from lamarck.node.gossip.outbox import (
    InMemoryOutbox,
    Outbox,
    OutboxEntry,
    OutboxWorker,
    PostgresOutbox,
)

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
