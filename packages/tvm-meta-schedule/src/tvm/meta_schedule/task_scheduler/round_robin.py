"""RoundRobin: every task in turn gets a batch."""

from __future__ import annotations

from .task_scheduler import TaskScheduler

__all__ = ["RoundRobin"]


class RoundRobin(TaskScheduler):
    """Tasks take batches in turn, skipping finished ones."""

    def on_prepared(self) -> None:
        self._next = 0

    def next_task_id(self) -> int:
        alive = self.alive_tasks()
        if not alive:
            return -1
        n = len(self.tasks)
        for step in range(n):
            task_id = (self._next + step) % n
            if task_id in alive:
                self._next = task_id + 1
                return task_id
        return -1
