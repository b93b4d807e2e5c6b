"""In-memory ``LessonStore``: exact cosine search with numpy, the same semantics as Postgres.

Used by pure tests, the service tests and the fleet simulator. The contract suites
(``tests/contract/test_store_<port>_contract.py``) run it side by side with the Postgres
adapter, so every rule written here (ordering, ties, conflicts, error types) is the rule the
Postgres adapter follows too.

``InMemoryLessonStore`` is every narrow store port at once: each port's part lives in its own
module of ``lamarck.node.store.mem`` (lifecycle, outcomes, lesson rows, queries, recall,
imported lessons, quarantine, event log, state), all over ``mem/tables.py``, the dicts and the
lock they share.
"""

from __future__ import annotations

from lamarck.node.store.mem.events import MemEventLog
from lamarck.node.store.mem.imported import MemImportedLessons
from lamarck.node.store.mem.lessons import MemLessonRows
from lamarck.node.store.mem.lifecycle import MemLifecycle
from lamarck.node.store.mem.outcomes import MemOutcomes
from lamarck.node.store.mem.quarantine import QUARANTINE_STATES, MemQuarantine
from lamarck.node.store.mem.queries import RETIRED_PREFIX, MemLessonQueries
from lamarck.node.store.mem.recall import MemRecall
from lamarck.node.store.mem.state import MemState
from lamarck.node.store.mem.tables import MemTables, lesson_matches
from lamarck.node.store.port import LessonStore

__all__ = [
    "QUARANTINE_STATES",
    "RETIRED_PREFIX",
    "InMemoryLessonStore",
    "lesson_matches",
]


class InMemoryLessonStore(
    MemLifecycle,
    MemOutcomes,
    MemLessonRows,
    MemLessonQueries,
    MemRecall,
    MemImportedLessons,
    MemQuarantine,
    MemEventLog,
    MemState,
    MemTables,
    LessonStore,
):
    """A ``LessonStore`` held in dicts; search is exact cosine over every matching lesson.

    ``dim``, when given, is enforced on every stored embedding and every query, as the
    Postgres column ``vector(dim)`` does. One lock makes each method atomic against the
    others, like one SQL transaction; ``atomic()`` snapshots the dicts for a unit of work.
    """
