"""Task schedulers: one trial budget over a model's tasks.  :class:`GradientBased` (the
default: trials where they cut the weighted latency most) and :class:`RoundRobin`."""

from .gradient_based import GradientBased
from .round_robin import RoundRobin
from .task_scheduler import MeasureCallback, TaskScheduler, TaskState

__all__ = ["TaskScheduler", "TaskState", "MeasureCallback", "RoundRobin", "GradientBased"]
