"""GradientBased: the next batch goes to the task whose tuning is expected to cut the
model's latency the most (the task scheduler of Ansor, Zheng et al., OSDI 2020).

The objective is the weighted total latency ``f = sum_i w_i * L_i`` (``L_i``: the best time
of task ``i``, the default schedule's included; ``w_i``: its call count).  Its gradient with
respect to the trials ``t_i`` of task ``i`` is estimated from two sides and mixed with
``alpha``::

    backward = (L_i(t_i - window) - L_i(t_i)) / window     # what the last batches gained
    forward  = L_i(t_i) / t_i                               # optimistic: L_i -> 0 linearly
    g_i = w_i * (alpha * backward + (1 - alpha) * forward)

(``window``: over the last ``window_size`` batches of the task, in trials).  After a warm-up
round (one batch per task, in order) each batch goes to the task of the largest ``g_i``; a
task whose candidates all failed so far gets one more batch, then none until it has a time.
"""

from __future__ import annotations

import math

from .task_scheduler import TaskScheduler

__all__ = ["GradientBased"]


class GradientBased(TaskScheduler):
    """``alpha``: weight of the backward (measured) gradient against the forward
    (optimistic) one; ``window_size``: how many of a task's past batches the backward
    gradient looks over."""

    def __init__(self, alpha: float = 0.2, window_size: int = 3) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"GradientBased: alpha must be in [0, 1], got {alpha}")
        if window_size < 1:
            raise ValueError(f"GradientBased: window_size must be >= 1, got {window_size}")
        self.alpha = alpha
        self.window_size = window_size

    def on_prepared(self) -> None:
        self._warmup = 0

    def gradient(self, task_id: int) -> float:
        """The estimated decrease of the weighted model latency per trial of ``task_id``."""
        task = self.tasks[task_id]
        trials, best = task.history[-1]
        if not math.isfinite(best):
            return math.inf if task.rounds < 2 else -math.inf
        if trials <= 0:
            return math.inf
        backward = 0.0
        if len(task.history) > self.window_size:
            old_trials, old_best = task.history[-1 - self.window_size]
            if trials > old_trials and math.isfinite(old_best):
                backward = (old_best - best) / (trials - old_trials)
        forward = best / trials
        return task.weight * (self.alpha * backward + (1.0 - self.alpha) * forward)

    def next_task_id(self) -> int:
        alive = self.alive_tasks()
        if not alive:
            return -1
        while self._warmup < len(self.tasks):
            task_id = self._warmup
            self._warmup += 1
            if task_id in alive:
                return task_id
        grads = {i: self.gradient(i) for i in alive}
        best = max(grads.values())
        if best == -math.inf:
            return -1  # every task left has only failed
        return min(i for i, g in grads.items() if g == best)
