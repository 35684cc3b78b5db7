"""CPU seconds a process and its live descendants have used, read from Linux ``/proc`` (I/O).

The throughput benchmark reads it for each proxy right before and right after a measured batch;
the difference ÷ the batch's requests is the proxy's CPU seconds per request. Unlike a batch's
wall time, this does not move when other processes compete for the cores: a request costs the
proxy the same CPU whether it waited for a core or not (only cache and frequency effects remain).

Source: ``proc(5)``, ``/proc/<pid>/stat`` fields 14-17 (``utime``, ``stime``, ``cutime``,
``cstime``, in clock ticks of ``os.sysconf("SC_CLK_TCK")``, 100 per second on Linux: a resolution
of 10 ms, so read it around batches of many requests, never around one). Children that already
exited and were waited for are in ``cutime``/``cstime``; live ones are found by their ``ppid``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CLOCK_TICKS", "parse_stat", "tree_cpu_s"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PROC = Path("/proc")


def parse_stat(text: str) -> tuple[int, int]:
    """``(ppid, utime + stime + cutime + cstime in clock ticks)`` of one ``/proc/<pid>/stat`` line.

    The command name (field 2) may hold spaces and parentheses: fields are counted after its last ``)``.
    Raises ``ValueError`` on a line of another shape."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); field n is rest[n - 3]
    return int(rest[1]), sum(int(rest[i]) for i in (11, 12, 13, 14))


def _read(pid: int) -> tuple[int, int] | None:
    try:
        return parse_stat((PROC / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None  # gone, or not Linux


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) of ``pid`` and every live descendant, and of the children they
    have waited for. ``None`` when ``pid`` cannot be read (exited, or no ``/proc``)."""
    own = _read(pid)
    if own is None:
        return None
    parents: dict[int, list[tuple[int, int]]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _read(int(entry.name))) is not None:
            parents.setdefault(stat[0], []).append((int(entry.name), stat[1]))
    ticks, todo, seen = own[1], [pid], {pid}
    while todo:
        for child, child_ticks in parents.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                ticks += child_ticks
                todo.append(child)
    return ticks / CLOCK_TICKS
