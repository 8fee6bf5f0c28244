"""MutateComputeLocation: another valid location for a ``SampleComputeLocation``.

Which locations are valid depends on the schedule where the instruction runs, so the
trace is replayed onto the unscheduled kernel (the tune context's ``mod``) up to that
instruction and the candidates read there (inline when allowed, root, each loop that
encloses all consumers).
"""

from __future__ import annotations

import random
from typing import Any, Optional

from tvm.tir.schedule import Schedule, Trace
from tvm.tir.schedule.sampling import compute_location_candidates

from .mutate_tile_size import sampled_insts
from .mutator import Mutator

__all__ = ["MutateComputeLocation"]


class _Found(Exception):
    def __init__(self, choices: list[int]):
        self.choices = choices


class MutateComputeLocation(Mutator):
    """See the module doc; ``mod``: the kernel (default: the tune context's)."""

    name = "mutate_compute_location"

    def __init__(self, mod: Optional[Any] = None):
        self.mod = mod

    def initialize_with_tune_context(self, context: Any) -> None:
        super().initialize_with_tune_context(context)
        if self.mod is None:
            self.mod = context.mod

    def _choices(self, trace: Any, inst: Any) -> list[int]:
        pos = next(k for k, i in enumerate(trace.insts) if i is inst)
        prefix = Trace(trace.insts[:pos + 1], trace.decisions)
        sch = Schedule(self.mod)

        def provider(i: Any, inputs: list, attrs: list, decision: Any) -> Any:
            if i is inst:
                can_inline, loops = compute_location_candidates(sch, sch.get_sref(inputs[0]))
                raise _Found(([-2] if can_inline else []) + [-1] + list(range(len(loops))))
            return decision

        try:
            prefix.apply_to_schedule(sch, decision_provider=provider)
        except _Found as found:
            return found.choices
        return []

    def apply(self, trace: Any, rng: random.Random) -> Optional[Any]:
        if self.mod is None:
            raise ValueError("MutateComputeLocation: no kernel to replay onto; give mod= or "
                             "initialize it with a tune context")
        insts = sampled_insts(trace, "SampleComputeLocation")
        order = list(range(len(insts)))
        rng.shuffle(order)
        for k in order:
            inst = insts[k]
            old = trace.decisions[inst]
            others = [c for c in self._choices(trace, inst) if c != old]
            if others:
                return trace.with_decision(inst, others[rng.randrange(len(others))])
        return None
