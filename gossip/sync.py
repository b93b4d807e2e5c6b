"""Anti-entropy: a node that was down or partitioned pulls what it lacks.

Pure parts: a hash summary in buckets by hex prefix (``bucket_summary``), the buckets where two
summaries differ (``differing_prefixes``), and the server's choice of records for a request
(``select_for_sync``, ordered by hash with the last hash sent as the cursor). The client step
(``sync_step``) pulls pages through an injected ``fetch`` until the server says it is caught
up, handing each record to an injected ``importer`` (the import pipeline).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Bucket",
    "SyncPage",
    "SyncQuery",
    "bucket_summary",
    "differing_prefixes",
    "held_from",
    "select_for_sync",
    "sync_step",
]


@dataclass(frozen=True, slots=True)
class Bucket:
    """How many hashes a bucket holds and the digest of them (wire ``HashBucket``)."""

    count: int
    digest: str


_EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


def bucket_summary(hashes: Iterable[str], prefix_len: int) -> dict[str, Bucket]:
    """Summary of ``hashes`` by lower-case hex prefix: count and sha256 of the sorted hashes,
    each followed by ``\\n``. Empty buckets are omitted (they compare as count 0)."""
    groups: dict[str, list[str]] = {}
    for h in set(hashes):
        groups.setdefault(h[:prefix_len].lower(), []).append(h)
    out: dict[str, Bucket] = {}
    for prefix, members in groups.items():
        data = "".join(f"{h}\n" for h in sorted(members)).encode("ascii")
        out[prefix] = Bucket(len(members), hashlib.sha256(data).hexdigest())
    return out


def differing_prefixes(mine: Mapping[str, Bucket], theirs: Mapping[str, Bucket]) -> set[str]:
    """Prefixes whose bucket differs (a missing bucket is an empty one)."""
    empty = Bucket(0, _EMPTY_DIGEST)
    return {p for p in set(mine) | set(theirs) if mine.get(p, empty) != theirs.get(p, empty)}


@dataclass(frozen=True, slots=True)
class SyncQuery:
    """A Sync request as values: cursor, the requester's summary and known hashes, a cap."""

    cursor: str = ""
    buckets: Mapping[str, Bucket] | None = None
    known_hashes: frozenset[str] = frozenset()
    max_records: int = 64


@dataclass(frozen=True, slots=True)
class SyncPage:
    """One page of a Sync answer: records (hash, bytes), the cursor after them, more or not,
    and the signed trust summaries the server sent with it (exact bytes, unverified)."""

    records: tuple[tuple[str, bytes], ...]
    cursor: str
    more: bool
    summaries: tuple[bytes, ...] = ()


def select_for_sync(held: Mapping[str, bytes], query: SyncQuery, prefix_len: int) -> SyncPage:
    """The server's page: records the requester lacks, in hash order after the cursor.

    With a summary, only records in buckets that differ are candidates; ``known_hashes`` are
    never sent. The cursor is the last hash sent (only this server reads it).
    """
    if query.max_records < 1:
        raise ValueError("max_records must be at least 1")
    wanted: set[str] | None = None
    if query.buckets is not None:
        wanted = differing_prefixes(bucket_summary(held, prefix_len), query.buckets)
    candidates = [
        h
        for h in sorted(held)
        if h > query.cursor
        and h not in query.known_hashes
        and (wanted is None or h[:prefix_len].lower() in wanted)
    ]
    page = candidates[: query.max_records]
    cursor = page[-1] if page else query.cursor
    return SyncPage(
        records=tuple((h, held[h]) for h in page),
        cursor=cursor,
        more=len(candidates) > len(page),
    )


Fetch = Callable[[SyncQuery], Awaitable[SyncPage]]
"""Ask one peer for a page."""

Importer = Callable[[bytes], Awaitable[object]]
"""Hand one received record to the import pipeline."""


async def sync_step(
    my_hashes: Iterable[str],
    fetch: Fetch,
    importer: Importer,
    *,
    prefix_len: int,
    page_size: int,
    max_pages: int = 100,
) -> int:
    """Pull from one peer until caught up (or ``max_pages``); returns records received.

    Records already held are listed in the summary, so the server sends only what differs;
    a record arriving anyway is a DUPLICATE for the pipeline, never a second copy.
    """
    mine = set(my_hashes)
    summary = bucket_summary(mine, prefix_len)
    cursor = ""
    received = 0
    for _ in range(max_pages):
        page = await fetch(SyncQuery(cursor=cursor, buckets=summary, max_records=page_size))
        for h, raw in page.records:
            if h in mine:
                continue
            mine.add(h)
            await importer(raw)
            received += 1
        if not page.more or page.cursor == cursor:
            break
        cursor = page.cursor
    return received


def held_from(records: Sequence[tuple[str, bytes]]) -> dict[str, bytes]:
    """Index records by content hash (first copy wins)."""
    out: dict[str, bytes] = {}
    for h, raw in records:
        out.setdefault(h, raw)
    return out
