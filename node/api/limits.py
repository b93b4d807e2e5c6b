"""What one peer may make this node do: call rate, concurrency, batch size, records a second.

:class:`PeerLimits` holds every constant (validated); :class:`RecordBudget` spends records from
a per-peer token bucket. Calls are limited before any work by the
:class:`~lamarck.node.api.interceptors.PeerLimitInterceptor` (per authenticated peer, else per
connection); a Publish is further held to ``publish_max_records`` records (RESOURCE_EXHAUSTED
``batch_too_large`` above it, before the caller is even authenticated) and, once the caller is
authenticated, to ``records_per_s`` records a second (``records_rate_limited``), since a call
of one record and a call of a thousand cost very different work.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from lamarck.domain.lru import Lru
from lamarck.errors import ConfigError, PolicyRejected
from lamarck.node import metrics
from lamarck.node.api.interceptors import TokenBucket

__all__ = [
    "BATCH_TOO_LARGE",
    "RECORDS_RATE_LIMITED",
    "PeerLimits",
    "RecordBudget",
    "check_batch",
]

#: Reason of a Publish carrying more records than ``publish_max_records``.
BATCH_TOO_LARGE = "batch_too_large"
#: Reason of a Publish whose records exceed the sender's records-per-second budget.
RECORDS_RATE_LIMITED = "records_rate_limited"


@dataclass(frozen=True, slots=True)
class PeerLimits:
    """Every per-peer limit of the peer server; validated on construction."""

    #: Calls one peer may have in flight at once, >= 1.
    max_concurrent: int = 8
    #: Calls a second one peer may make (token refill rate), > 0.
    rate_per_s: float = 50.0
    #: Calls one peer may make at once after a quiet spell, >= 1.
    burst: int = 100
    #: Distinct callers whose budgets are remembered (least recently seen forgotten), >= 1.
    max_peers: int = 10_000
    #: Records one Publish may carry, >= 1 (a sender's gossip batch is 64).
    publish_max_records: int = 256
    #: Records a second one authenticated peer may have this node import, > 0.
    records_per_s: float = 200.0
    #: Records one peer may send at once after a quiet spell; >= ``publish_max_records``, so
    #: a full batch can always pass once the bucket is full.
    records_burst: int = 1024

    def __post_init__(self) -> None:
        for name in ("max_concurrent", "burst", "max_peers", "publish_max_records"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"invalid {name}={value!r}: must be an integer >= 1", field=name)
        for name in ("rate_per_s", "records_per_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"invalid {name}={value!r}: must be finite and > 0", field=name)
        burst, cap = self.records_burst, self.publish_max_records
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < cap:
            raise ConfigError(
                f"invalid records_burst={burst!r}: must be an integer >= publish_max_records"
                f" ({self.publish_max_records})",
                field="records_burst",
            )


def check_batch(count: int, limits: PeerLimits) -> None:
    """Refuse a Publish of more than ``publish_max_records`` records (RESOURCE_EXHAUSTED)."""
    if count > limits.publish_max_records:
        metrics.RATE_LIMITED.labels(reason=BATCH_TOO_LARGE).inc()
        raise PolicyRejected(
            f"a Publish may carry at most {limits.publish_max_records} records, got {count}",
            reason=BATCH_TOO_LARGE,
            limit=limits.publish_max_records,
        )


class RecordBudget:
    """Per-peer token buckets on records: the work one caller can cause per second."""

    def __init__(self, limits: PeerLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self._limits = limits
        self._clock = clock
        # Bounded LRU, like the call buckets: a flood of identities must not grow memory.
        self._buckets: Lru[str, TokenBucket] = Lru(limits.max_peers)

    def spend(self, peer: str, records: int) -> None:
        """Take ``records`` from ``peer``'s bucket or refuse the whole call (nothing spent)."""
        if records <= 0:
            return
        limits = self._limits
        now = self._clock()
        burst = float(limits.records_burst)
        bucket = self._buckets.get_or_put(
            peer, lambda: TokenBucket(limits.records_per_s, burst, burst, now)
        )
        if not bucket.take(now, float(records)):
            metrics.RATE_LIMITED.labels(reason=RECORDS_RATE_LIMITED).inc()
            raise PolicyRejected(
                f"more than {limits.records_per_s:g} records/s (burst {limits.records_burst})"
                " from this peer; retry later",
                reason=RECORDS_RATE_LIMITED,
            )
