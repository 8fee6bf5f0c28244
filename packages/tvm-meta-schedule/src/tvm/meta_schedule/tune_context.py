"""TuneContext: everything one tuning task needs (kernel, target, space, search, seed)."""

from __future__ import annotations

import logging
import random
from typing import Any, Optional

__all__ = ["TuneContext"]


class TuneContext:
    """One task: ``mod`` (an IRModule whose ``main`` is the unscheduled kernel), ``target``
    (a Target), its ``space_generator`` and ``search_strategy`` (initialized with this
    context), ``task_name``, a ``seed`` (the same seed gives the same search), ``num_threads``
    for CPU work in this process (feature extraction), and a ``logger``."""

    def __init__(self, mod: Any, target: Any, space_generator: Any = None,
                 search_strategy: Any = None, task_name: str = "main",
                 seed: Optional[int] = None, num_threads: int = 1,
                 logger: Optional[logging.Logger] = None):
        from tvm.ir.module import IRModule
        from tvm.ir.target import as_target
        from tvm.tir.function import PrimFunc

        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        if not isinstance(mod, IRModule) or "main" not in mod:
            raise TypeError(f"TuneContext: mod must be a PrimFunc or an IRModule with a 'main' "
                            f"PrimFunc, got {type(mod).__name__}")
        self.mod = mod
        self.target = as_target(target)
        self.task_name = task_name
        self.seed = random.randrange(1 << 30) if seed is None else int(seed)
        self.rng = random.Random(self.seed)
        self.num_threads = max(1, int(num_threads))
        self.logger = logger or logging.getLogger(f"tvm.meta_schedule.{task_name}")
        self.space_generator = space_generator
        self.search_strategy = search_strategy
        if space_generator is not None:
            space_generator.initialize_with_tune_context(self)
        if search_strategy is not None:
            search_strategy.initialize_with_tune_context(self)

    @property
    def is_gpu(self) -> bool:
        """Whether the target is a GPU (its keys hold ``"gpu"``)."""
        return "gpu" in tuple(self.target.keys)

    def generate_design_space(self) -> list[Any]:
        if self.space_generator is None:
            raise ValueError(f"task {self.task_name}: no space generator")
        return self.space_generator.generate_design_space(self.mod)

    def __repr__(self) -> str:
        return f"TuneContext({self.task_name!r}, target={str(self.target)!r})"
