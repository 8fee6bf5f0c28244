"""Schedule rules of the tuner's design space: rules of the one framework
(:class:`tvm.tir.schedule.rules.ScheduleRule`) whose traces sample.

* :class:`MultiLevelTiling` ("SSRSRS" on CPU, write cache or fused consumer, packed operand)
* :class:`AutoInline`, :class:`AddRFactor`, :class:`RandomComputeLocation`
* :class:`ParallelizeVectorizeUnroll` (root annotations the postprocessor rewrites)
* GPU: :class:`MultiLevelTilingGPU` ("SSSRRSRS", shared-memory operands, a local
  accumulator), :class:`CrossThreadReduction`, :class:`AutoBind`
"""

from __future__ import annotations

from .add_rfactor import AddRFactor
from .auto_bind import AutoBind
from .auto_inline import AutoInline
from .cross_thread_reduction import CrossThreadReduction
from .multi_level_tiling import LAYOUT_REWRITE_ATTR, TILING_ATTR, MultiLevelTiling
from .multi_level_tiling_gpu import MultiLevelTilingGPU
from .parallel_vectorize_unroll import (
    PARALLEL_ATTR, UNROLL_ATTR, VECTORIZE_ATTR, ParallelizeVectorizeUnroll,
)
from .random_compute_location import RandomComputeLocation
from .target_info import GenericCPU, cpu_info

__all__ = [
    "AddRFactor", "AutoInline", "MultiLevelTiling", "ParallelizeVectorizeUnroll",
    "RandomComputeLocation", "TILING_ATTR", "LAYOUT_REWRITE_ATTR", "PARALLEL_ATTR",
    "VECTORIZE_ATTR", "UNROLL_ATTR", "cpu_info", "GenericCPU", "MultiLevelTilingGPU",
    "CrossThreadReduction", "AutoBind",
]
