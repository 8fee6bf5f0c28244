"""MutateParallel: another parallel extent (``SampleCategorical`` feeding the root
annotation ``meta_schedule.parallel``), so that another number of outer loops is fused
into the parallel loop."""

from __future__ import annotations

import random
from typing import Any, Optional

from ..schedule_rule.parallel_vectorize_unroll import PARALLEL_ATTR
from .mutate_unroll import annotated_categoricals
from .mutator import mutate_categorical
from .mutator import Mutator

__all__ = ["MutateParallel"]


class MutateParallel(Mutator):
    """See the module doc."""

    name = "mutate_parallel"

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        return mutate_categorical(trace, annotated_categoricals(trace, PARALLEL_ATTR), rng)
