"""The host a bench runs on: its cores, its load, and the CPU time its hypervisor took away.

On a shared virtual machine the hypervisor also runs other guests on these cores. The time it
takes from this one is "steal" (the eighth number of the ``cpu`` line of ``/proc/stat``); it
slows whatever runs meanwhile, both sides of a bench's ratio alike but not always evenly (a
tail latency, an event loop's share of a catch-up). The benches print the share of CPU time
stolen while they measured, so that a figure read on a busy host is known as one (shown,
never judged). Where ``/proc/stat`` does not exist (not Linux) the share is unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuTimes", "HostWatch", "cpu_times", "machine_line", "steal_share"]

PROC_STAT = Path("/proc/stat")
# user nice system idle iowait irq softirq steal: the fields that make up the whole. The guest
# fields that may follow are already counted inside user and nice.
_FIELDS = 8


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """All cores' CPU time since boot, in clock ticks: the whole and the part stolen."""

    total: int
    steal: int

    @classmethod
    def parse(cls, line: str) -> CpuTimes:
        """From the aggregate ``cpu`` line of ``/proc/stat``; ``ValueError`` if it is not one
        (older kernels print fewer fields: the missing ones count as zero)."""
        parts = line.split()
        if not parts or parts[0] != "cpu":
            raise ValueError(f"not the aggregate cpu line of /proc/stat: {line!r}")
        ticks = [int(p) for p in parts[1 : 1 + _FIELDS]]
        if len(ticks) < 4 or any(t < 0 for t in ticks):
            raise ValueError(f"not the aggregate cpu line of /proc/stat: {line!r}")
        ticks += [0] * (_FIELDS - len(ticks))
        return cls(total=sum(ticks), steal=ticks[7])


def cpu_times(path: Path = PROC_STAT) -> CpuTimes | None:
    """The host's CPU times now, or None where they cannot be read."""
    try:
        with path.open(encoding="ascii") as f:
            return CpuTimes.parse(f.readline())
    except (OSError, ValueError):
        return None


def steal_share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """The share of all CPU time between two readings that the hypervisor took (0 to 1), or
    None when either reading is missing or no time passed."""
    if before is None or after is None:
        return None
    total = after.total - before.total
    if total <= 0:
        return None
    return max(0.0, min(1.0, (after.steal - before.steal) / total))


class HostWatch:
    """Steal over a bench's run: started at construction, read by ``share``."""

    def __init__(self, path: Path = PROC_STAT) -> None:
        self._path = path
        self._start = cpu_times(path)

    def share(self) -> float | None:
        """The share of CPU time stolen since the watch started (None: unknown)."""
        return steal_share(self._start, cpu_times(self._path))

    def line(self) -> str:
        """One line for the bench's log."""
        share = self.share()
        if share is None:
            return "host: CPU time stolen by the hypervisor unknown (no /proc/stat)"
        return (
            f"host: {100.0 * share:.1f} % of CPU time stolen by the hypervisor during the run"
            " (other guests on these cores: whatever ran then ran slower)"
        )


def machine_line() -> str:
    """The cores and the load as the bench starts."""
    return f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
