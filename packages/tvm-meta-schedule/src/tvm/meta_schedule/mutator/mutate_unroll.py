"""MutateUnroll: another unroll limit (``SampleCategorical`` feeding the root annotation
``meta_schedule.unroll_explicit``)."""

from __future__ import annotations

import random
from typing import Any, Optional

from ..schedule_rule.parallel_vectorize_unroll import UNROLL_ATTR
from .mutator import Mutator, mutate_categorical

__all__ = ["MutateUnroll", "annotated_categoricals"]


def annotated_categoricals(trace: Any, key: str) -> list[Any]:
    """The SampleCategorical instructions whose value an ``Annotate(key)`` uses."""
    used = {id(i.inputs[1]) for i in trace.insts
            if i.kind.name == "Annotate" and dict(zip(i.kind.attrs, i.attrs)).get("ann_key")
            == key}
    return [i for i in trace.insts if i.kind.name == "SampleCategorical"
            and i in trace.decisions and id(i.outputs[0]) in used]


class MutateUnroll(Mutator):
    """See the module doc."""

    name = "mutate_unroll"

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        return mutate_categorical(trace, annotated_categoricals(trace, UNROLL_ATTR), rng)
