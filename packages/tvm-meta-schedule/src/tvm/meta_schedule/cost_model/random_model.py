"""RandomModel: uniform random scores from a seeded generator (tests, pure random search)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .cost_model import CostModel

__all__ = ["RandomModel"]


class RandomModel(CostModel):
    """Scores every candidate with a uniform draw in ``[0, 1)``; learns nothing.  The same
    ``seed`` and the same sequence of calls give the same scores."""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        if len(candidates) != len(results):
            raise ValueError(f"RandomModel.update: {len(candidates)} candidates but "
                             f"{len(results)} results")

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        return self._rng.random(len(candidates))

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"format": "tvm.meta_schedule.RandomModel", "seed": self.seed,
                       "state": self._rng.bit_generator.state}, f)

    def load(self, path: str) -> None:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != "tvm.meta_schedule.RandomModel":
            raise ValueError(f"{path} is not a saved RandomModel")
        self.seed = int(data["seed"])
        self._rng = np.random.default_rng(self.seed)
        self._rng.bit_generator.state = data["state"]

    def __repr__(self) -> str:
        return f"RandomModel(seed={self.seed})"
