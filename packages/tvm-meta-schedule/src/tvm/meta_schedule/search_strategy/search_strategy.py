"""Search strategies: which candidates of the design space to measure next."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional

__all__ = ["SearchStrategy"]


class SearchStrategy(ABC):
    """The loop the task scheduler drives for one task::

        strategy.initialize_with_tune_context(ctx)
        strategy.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database, cost_model)
        while (batch := strategy.generate_measure_candidates()) is not None:
            results = measure(batch)
            strategy.notify_runner_results(batch, results)
        strategy.post_tuning()

    ``design_spaces`` are Schedules whose traces hold sampling instructions; a candidate is
    a Schedule made by replaying one of them with concrete decisions (and postprocessed).
    Candidates already in the database are not proposed again.
    """

    def initialize_with_tune_context(self, context: Any) -> None:
        self.context = context

    @abstractmethod
    def pre_tuning(self, max_trials: int, num_trials_per_iter: int, design_spaces: list[Any],
                   database: Any = None, cost_model: Any = None) -> None:
        """Start a search of at most ``max_trials`` measured candidates."""

    @abstractmethod
    def generate_measure_candidates(self) -> Optional[list[Any]]:
        """The next batch of MeasureCandidate, or None when the search is over."""

    @abstractmethod
    def notify_runner_results(self, candidates: list[Any], results: list[Any]) -> None:
        """The RunnerResult of each candidate of the last batch."""

    def post_tuning(self) -> None:  # noqa: B027
        """The search is over."""
