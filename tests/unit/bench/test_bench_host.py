"""bench/host.py: the host's stolen CPU time, read from /proc/stat lines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# `bench` is a directory at the repository root, importable from there (not installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.host import CpuTimes, HostWatch, cpu_times, machine_line, steal_share

# user nice system idle iowait irq softirq steal guest guest_nice
LINE = "cpu  266324 0 10149 172363 2878 0 2591 10778 0 0"


def test_the_aggregate_line_gives_the_whole_and_the_stolen_part() -> None:
    times = CpuTimes.parse(LINE)
    # The guest fields are inside user already: never counted twice.
    assert times == CpuTimes(total=266324 + 10149 + 172363 + 2878 + 2591 + 10778, steal=10778)


def test_an_older_kernels_shorter_line_counts_the_missing_fields_as_zero() -> None:
    assert CpuTimes.parse("cpu 10 0 5 85") == CpuTimes(total=100, steal=0)


@pytest.mark.parametrize(
    "line", ["cpu0 1 2 3 4 5 6 7 8", "intr 1 2 3", "", "cpu 1 2", "cpu 1 2 -3 4", "cpu a b c d"]
)
def test_anything_but_the_aggregate_line_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        CpuTimes.parse(line)


def test_the_share_is_the_stolen_part_of_the_time_between_two_readings() -> None:
    before, after = CpuTimes(total=1000, steal=10), CpuTimes(total=3000, steal=110)
    assert steal_share(before, after) == pytest.approx(0.05)


def test_the_share_is_unknown_without_both_readings_or_without_time_passing() -> None:
    reading = CpuTimes(total=1000, steal=10)
    assert steal_share(None, reading) is None
    assert steal_share(reading, None) is None
    assert steal_share(reading, reading) is None


def test_a_watch_reads_the_share_since_it_started(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu 100 0 0 800 0 0 0 100 0 0\ncpu0 1 1 1 1\n")
    watch = HostWatch(stat)
    stat.write_text("cpu 300 0 0 1400 0 0 0 300 0 0\ncpu0 1 1 1 1\n")
    assert watch.share() == pytest.approx(0.2)
    assert "20.0 % of CPU time stolen" in watch.line()


def test_without_proc_stat_the_share_is_unknown_and_said_so(tmp_path: Path) -> None:
    watch = HostWatch(tmp_path / "missing")
    assert cpu_times(tmp_path / "missing") is None
    assert watch.share() is None
    assert "unknown" in watch.line()


def test_the_machine_line_names_the_cores() -> None:
    assert "CPUs, load average" in machine_line()
