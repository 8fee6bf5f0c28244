"""MutateThreadBinding: change a sampled thread count (the block size of a kernel).

It looks for ``sample_categorical`` decisions that decide how many threads a loop is bound
to: the sampled value is a factor of a ``split`` whose loop at that position is bound to
``threadIdx.*`` (AutoBind, CrossThreadReduction).  One of them, picked at random, gets
another of its candidates.  Other categorical decisions (vector lengths, unroll steps) are
left to their own mutators.
"""

from __future__ import annotations

import random
from typing import Any, Optional

from tvm.tir.schedule.handles import ExprRV

from .mutator import Mutator, mutate_categorical

__all__ = ["MutateThreadBinding", "thread_binding_samples"]


def thread_binding_samples(trace: Any) -> list[Any]:
    """The ``SampleCategorical`` instructions of ``trace`` whose value is, alone, the factor
    of a split loop that the trace binds to a ``threadIdx`` axis."""
    bound: set[int] = set()
    for inst in trace.insts:
        if inst.kind.name == "Bind":
            axis = dict(zip(inst.kind.attrs, inst.attrs)).get("thread_axis", "")
            if str(axis).startswith("threadIdx"):
                bound.add(id(dict(zip(inst.kind.inputs, inst.inputs))["loop"]))
    producers = {id(inst.outputs[0]): inst for inst in trace.insts
                 if inst.kind.name == "SampleCategorical" and inst in trace.decisions}
    found: list[Any] = []
    for inst in trace.insts:
        if inst.kind.name != "Split":
            continue
        factors = dict(zip(inst.kind.inputs, inst.inputs))["factors"]
        for factor, loop in zip(factors, inst.outputs):
            if isinstance(factor, ExprRV) and id(loop) in bound and id(factor) in producers:
                sample = producers[id(factor)]
                if not any(s is sample for s in found):
                    found.append(sample)
    return found


class MutateThreadBinding(Mutator):
    """Give one sampled thread count of the trace another of its candidates."""

    name = "mutate_thread_binding"

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        return mutate_categorical(trace, thread_binding_samples(trace), rng)
