"""The child processes of this test process (to check that nothing is left running)."""

from __future__ import annotations

import os

#: process-wide helpers multiprocessing starts on first use and keeps for the process's life
_SINGLETONS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def _is_singleton(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().decode(errors="replace")
    except OSError:
        return False
    return any(name in cmdline for name in _SINGLETONS)


def children() -> set[int]:
    """PIDs of the direct children of every thread of this process (Linux /proc), without
    multiprocessing's resource tracker / fork server (one per process, not a worker)."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return {p for p in pids if not _is_singleton(p)}
