"""Cost models: predict how fast a candidate schedule will run, learn from measurements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

__all__ = ["CostModel"]


class CostModel(ABC):
    """Scores candidates (higher is faster) so the search measures the promising ones.

    ``update`` receives the measured candidates of a task with their
    :class:`~tvm.meta_schedule.runner.RunnerResult`; ``predict`` returns one score per
    candidate (a normalized throughput: the model's guess of ``best_time / time``)."""

    @abstractmethod
    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        """Learn from measured ``candidates`` (MeasureCandidate) of ``context`` (TuneContext)."""

    @abstractmethod
    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        """One float per candidate; higher means predicted faster."""

    def save(self, path: str) -> None:  # noqa: B027 - a stateless model saves nothing
        """Write the model's state to ``path`` (not pickle)."""

    def load(self, path: str) -> None:  # noqa: B027
        """Read what :meth:`save` wrote."""
