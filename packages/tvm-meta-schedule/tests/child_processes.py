"""The child processes of this test process (to check that nothing is left running)."""

from __future__ import annotations

import os


def children() -> set[int]:
    """PIDs of the direct children of every thread of this process (Linux /proc)."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids
