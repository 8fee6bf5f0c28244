"""MutateUnroll: another unroll limit (``SampleCategorical`` feeding the root annotation
``meta_schedule.unroll_explicit``)."""

from __future__ import annotations

import random
from typing import Any, Optional

from ..schedule_rule.parallel_vectorize_unroll import UNROLL_ATTR
from .mutator import Mutator

__all__ = ["MutateUnroll", "annotated_categoricals", "mutate_categorical"]


def annotated_categoricals(trace: Any, key: str) -> list[Any]:
    """The SampleCategorical instructions whose value an ``Annotate(key)`` uses."""
    used = {id(i.inputs[1]) for i in trace.insts
            if i.kind.name == "Annotate" and dict(zip(i.kind.attrs, i.attrs)).get("ann_key")
            == key}
    return [i for i in trace.insts if i.kind.name == "SampleCategorical"
            and i in trace.decisions and id(i.outputs[0]) in used]


def mutate_categorical(trace: Any, insts: list[Any], rng: random.Random) -> Optional[Any]:
    """``trace`` with one of ``insts`` taking another of its candidates (a different value,
    with a positive probability); None when none has one."""
    options = []
    for inst in insts:
        attrs = dict(zip(inst.kind.attrs, inst.attrs))
        cands, probs = list(attrs["candidates"]), list(attrs["probs"])
        old = int(trace.decisions[inst])
        others = [k for k in range(len(cands)) if k != old and probs[k] > 0
                  and cands[k] != cands[old]]
        if others:
            options.append((inst, others))
    if not options:
        return None
    inst, others = options[rng.randrange(len(options))]
    return trace.with_decision(inst, others[rng.randrange(len(others))])


class MutateUnroll(Mutator):
    """See the module doc."""

    name = "mutate_unroll"

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        return mutate_categorical(trace, annotated_categoricals(trace, UNROLL_ATTR), rng)
