"""Mutators: change one sampled decision of a trace (and nothing else)."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, Optional

__all__ = ["Mutator"]


class Mutator(ABC):
    """``apply(trace, rng)`` returns a copy of ``trace`` with one decision of the kind the
    mutator handles changed (``trace.with_decision``), or None when it has nothing to change."""

    name: str = "mutator"

    def initialize_with_tune_context(self, context: Any) -> None:
        self.context = context

    @abstractmethod
    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        """A mutated copy of ``trace``, or None."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
