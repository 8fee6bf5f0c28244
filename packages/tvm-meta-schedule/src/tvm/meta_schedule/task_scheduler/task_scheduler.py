"""Task schedulers: share one global trial budget among the tasks of a model."""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["TaskScheduler"]


class TaskScheduler(ABC):
    """Drives every task's search strategy, sends its candidates to the builder and runner,
    commits the results to the database and updates the cost model.

    ``tune(tasks, task_weights, max_trials_global, max_trials_per_task, num_trials_per_iter,
    builder, runner, measure_callbacks, database, cost_model)``; subclasses choose which task
    gets the next batch (:meth:`next_task_id`)."""

    @abstractmethod
    def next_task_id(self) -> int:
        """Index of the task to tune next, or -1 when every task is done."""
