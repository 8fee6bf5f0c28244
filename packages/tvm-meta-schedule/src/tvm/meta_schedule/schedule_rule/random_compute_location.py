"""RandomComputeLocation: compute a producer block at a sampled loop of its consumers.

``loc = sch.sample_compute_location(block)`` then ``sch.compute_at(block, loc)``: the
decision picks inline, root or one of the loops enclosing every consumer, and
MutateComputeLocation moves it.  Applies to blocks no other rule scheduled (tiled blocks
are claimed) that have consumers, do not write a function output, and still sit under the
root with their own loops.
"""

from __future__ import annotations

from typing import Any

from tvm.tir.schedule.rules import ScheduleRule, is_output_block

from .multi_level_tiling import TILING_ATTR

__all__ = ["RandomComputeLocation"]


class RandomComputeLocation(ScheduleRule):
    """Sampled compute location for producers (see the module doc)."""

    name = "random_compute_location"

    def applies(self, sch: Any, block: Any) -> bool:
        b = sch.get(block)
        if TILING_ATTR in b.annotations or is_output_block(sch, block):
            return False
        if not sch.get_loops(block) or not sch.get_consumers(block):
            return False
        return True

    def transform(self, sch: Any, block: Any) -> None:
        loc = sch.sample_compute_location(block)
        sch.compute_at(block, loc)
