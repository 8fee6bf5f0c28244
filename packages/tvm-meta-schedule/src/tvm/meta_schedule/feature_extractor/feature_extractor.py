"""Feature extractors: a candidate schedule -> a numeric description for the cost model."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

__all__ = ["FeatureExtractor"]


class FeatureExtractor(ABC):
    """Turns candidates into feature matrices, one ``[n_stores, n_features]`` float32 array
    per candidate (a row per buffer store of the lowered TIR)."""

    @abstractmethod
    def extract_from(self, context: Any, candidates: list[Any]) -> list[np.ndarray]:
        """One feature matrix per MeasureCandidate."""
