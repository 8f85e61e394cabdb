"""Processes as /proc shows them: children, CPU seconds and resident memory, for the
benchmarks that measure servers they started (bench/bench_load.py, tests/e2e/chain.py)."""

from __future__ import annotations

import os
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGESIZE")


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (field 3 of proc(5) first)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def parents() -> dict[int, list[int]]:
    """Every process's children, by parent PID."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            out.setdefault(int(fields[1]), []).append(int(entry))
    return out


def children(pid: int) -> list[int]:
    return parents().get(pid, [])


def descendants(pid: int) -> list[int]:
    """pid and every process under it (gunicorn's master and its workers)."""
    tree = parents()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(tree.get(p, []))
    return out


def cpu_seconds(pid: int) -> float:
    """utime + stime (fields 14 and 15 of proc(5)); 0 for a process gone."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK if fields else 0.0


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0
