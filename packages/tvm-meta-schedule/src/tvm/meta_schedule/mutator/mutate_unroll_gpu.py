"""MutateUnrollGPU: change a kernel's sampled unroll limit.

MultiLevelTilingGPU annotates a kernel's ``blockIdx`` loop with
``meta_schedule.gpu_unroll_max_step`` = a ``sample_categorical`` value (applied by the
RewriteUnrollGPU postprocessor).  This mutator gives one such decision another of its
candidates.
"""

from __future__ import annotations

import random
from typing import Any, Optional

from ..postproc.rewrite_unroll_gpu import UNROLL_KEY
from .mutator import Mutator, mutate_categorical

__all__ = ["MutateUnrollGPU", "unroll_samples"]


def unroll_samples(trace: Any) -> list[Any]:
    """The ``SampleCategorical`` instructions of ``trace`` whose value is annotated as a
    kernel's unroll limit."""
    producers = {id(inst.outputs[0]): inst for inst in trace.insts
                 if inst.kind.name == "SampleCategorical" and inst in trace.decisions}
    found: list[Any] = []
    for inst in trace.insts:
        if inst.kind.name != "Annotate":
            continue
        values = dict(zip(inst.kind.attrs, inst.attrs))
        values.update(zip(inst.kind.inputs, inst.inputs))
        sample = producers.get(id(values["ann_val"]))
        if values["ann_key"] == UNROLL_KEY and sample is not None and sample not in found:
            found.append(sample)
    return found


class MutateUnrollGPU(Mutator):
    """Give one sampled unroll limit of the trace another of its candidates."""

    name = "mutate_unroll_gpu"

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        return mutate_categorical(trace, unroll_samples(trace), rng)
