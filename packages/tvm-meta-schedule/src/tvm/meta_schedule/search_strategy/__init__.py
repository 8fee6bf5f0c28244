"""Search strategies: :class:`ReplayTrace` (random replays of the design spaces, a baseline
for tests) and :class:`EvolutionarySearch` (the cost-model guided default)."""

from __future__ import annotations

from typing import Any

from .replay_trace import ReplayTrace
from .search_strategy import SearchStrategy

__all__ = ["SearchStrategy", "ReplayTrace", "EvolutionarySearch"]


def __getattr__(name: str) -> Any:
    # imported on first use, so that the replay baseline works without the search's extras
    if name == "EvolutionarySearch":
        from .evolutionary_search import EvolutionarySearch

        return EvolutionarySearch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
