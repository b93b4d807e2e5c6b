"""Bulk operator decisions as node-side jobs: they run to completion whatever the client does.

A bulk decision (release or reject every pending quarantine row held for one reason) can
take longer than one call's deadline. The work is therefore not the RPC's: the RPC starts a
job (or joins the one already running for the same reason, source and decision), waits for
it a while, and replies with the progress so far; the client polls the job by its id until
it is finished. A client that disconnects, or whose deadline passes, cancels only its wait:
the job goes on. A job decides the rows pending when it starts, each as a single decision
would; a row decided meanwhile is skipped, so a second job for the same reason picks up
exactly what is left (the action is idempotent and resumable, across a node restart too).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from lamarck.domain.rows import QuarantineRow
from lamarck.errors import ConflictError, LamarckError

__all__ = ["BulkFailure", "BulkJob", "BulkJobs", "JobKey"]

_E = TypeVar("_E")

#: What identifies the work of a bulk decision: (reason, source node id or "", decision).
JobKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class BulkFailure:
    """A row the job could not decide (it stays pending): its id and the typed error's."""

    id: str
    reason: str
    detail: str


@dataclass(eq=False)
class BulkJob(Generic[_E]):
    """One bulk decision's progress: rows to decide, what was decided, what failed."""

    id: str
    key: JobKey
    total: int
    #: Each decided row's result (the decision's entry and stored lesson id), in order.
    decided: list[_E] = field(default_factory=list)
    failed: list[BulkFailure] = field(default_factory=list)
    #: Rows another decision had taken meanwhile (not decided again).
    skipped: int = 0
    task: asyncio.Task[None] | None = None

    @property
    def finished(self) -> bool:
        """Whether every row was tried (or the job stopped on an unexpected error)."""
        return self.task is not None and self.task.done()

    @property
    def done(self) -> int:
        """Rows tried so far: decided, failed or skipped."""
        return len(self.decided) + len(self.failed) + self.skipped


class BulkJobs(Generic[_E]):
    """The node's running and recently finished bulk jobs, keyed by id and by their work.

    ``keep`` finished jobs stay readable by id (a client polling one that finished between
    two polls reads its end); older ones are forgotten, and polling them is ``NotFound`` at
    the caller, which then starts a fresh job over what is left.
    """

    def __init__(self, keep: int = 32) -> None:
        self._jobs: OrderedDict[str, BulkJob[_E]] = OrderedDict()
        self._keep = keep

    def get(self, job_id: str) -> BulkJob[_E] | None:
        """The job ``job_id``, if it runs or finished recently."""
        return self._jobs.get(job_id)

    def running(self, key: JobKey) -> BulkJob[_E] | None:
        """The unfinished job doing ``key``'s work, if any."""
        for job in self._jobs.values():
            if job.key == key and not job.finished:
                return job
        return None

    def start(
        self,
        key: JobKey,
        rows: Sequence[QuarantineRow],
        decide: Callable[[QuarantineRow], Awaitable[_E]],
    ) -> BulkJob[_E]:
        """A new job deciding ``rows`` in order with ``decide``, running on the node's loop.

        ``decide`` raising ``ConflictError`` means another decision took the row first
        (skipped); any other typed error leaves the row pending and is reported as failed.
        """
        job: BulkJob[_E] = BulkJob(uuid.uuid4().hex, key, len(rows))

        async def run() -> None:
            for row in rows:
                try:
                    job.decided.append(await decide(row))
                except ConflictError:
                    job.skipped += 1
                except LamarckError as e:
                    job.failed.append(BulkFailure(row.id, e.reason, str(e)))

        job.task = asyncio.get_running_loop().create_task(run(), name=f"bulk-{job.id}")
        self._jobs[job.id] = job
        self._forget_old()
        return job

    async def wait(self, job: BulkJob[_E], within_s: float | None) -> None:
        """Wait until ``job`` finishes or ``within_s`` seconds pass; cancelling this wait
        never cancels the job. Re-raises the error that stopped the job, if any."""
        assert job.task is not None
        await asyncio.wait({job.task}, timeout=within_s)
        if job.task.done() and not job.task.cancelled():
            job.task.result()

    async def drain(self) -> None:
        """Wait for every running job to finish (shutdown, tests)."""
        tasks = [j.task for j in self._jobs.values() if j.task is not None and not j.finished]
        if tasks:
            await asyncio.wait(tasks)

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.finished]
        for job_id in finished[: max(0, len(finished) - self._keep)]:
            del self._jobs[job_id]
