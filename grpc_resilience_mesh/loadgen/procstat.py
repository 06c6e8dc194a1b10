"""CPU seconds a process has used, read from /proc/PID/stat (utime + stime)."""

from __future__ import annotations

import os
from collections.abc import Mapping

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_s(pid: int | str = "self") -> float | None:
    """utime + stime of `pid` in seconds; None when it cannot be read (gone, not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after "(comm)", which may hold spaces
    return (int(fields[11]) + int(fields[12])) / _TICKS


def cpu_by_name(pids: Mapping[str, int]) -> dict[str, float] | None:
    """The CPU seconds of each named process; None if one cannot be read (it exited)."""
    out: dict[str, float] = {}
    for name, pid in pids.items():
        used = cpu_s(pid)
        if used is None:
            return None
        out[name] = used
    return out
