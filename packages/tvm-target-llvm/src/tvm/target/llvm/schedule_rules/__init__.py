"""Default CPU schedules: what ``tir.build(func, "llvm")`` does to a PrimFunc with no
schedule (hook ``tvm_tir_default_schedule``).

Rules are chosen by the structure of each block (its iteration kinds, its store and the
index patterns of its loads), never by names, so fused functions from the graph level
(matmul + bias + relu, conv + add ...) get them as well.  One module per rule family:

* ``analysis``     what a block computes: iteration roles, linear index forms, contractions
* ``contraction``  matmul / batch matmul / dense / conv2d (NCHW, NHWC, depthwise, grouped):
                   register-blocked micro-kernel with vector FMA, tile init and epilogue
* ``reduction``    reductions, and row groups (softmax, layer norm) fused per row
* ``elementwise``  injective blocks: vectorized inner loop, parallel outer loop
* ``padding``      zero padding inlined into a contraction made a padded copy again
* ``apply``        the driver: inlining, rule dispatch, ``tir.is_scheduled``
* ``cpu``          vector width, registers and cores of the target

::

    from tvm.target.llvm.schedule_rules import schedule_prim_func
    scheduled = schedule_prim_func(func, "llvm -mcpu=haswell")
    scheduled.show()
    explain_default_schedule(func)   # {"C": "contraction", "C_init": ..., "T_relu": ...}

A function marked ``tir.is_scheduled`` (user-scheduled) is left as it is.  A rule that
fails is skipped with a log message on logger ``tvm.target.llvm.schedule_rules``; set
``TVM_SCHEDULE_RULES_STRICT=1`` to raise instead.
"""

from .analysis import BlockInfo, Contraction, analyze_block, match_contraction
from .apply import (
    SCHEDULED_ATTR, STRICT_ENV, apply_default_schedules, explain_default_schedule,
    looks_scheduled, schedule_prim_func,
)
from .cpu import CPUInfo, cpu_info

__all__ = [
    "apply_default_schedules", "schedule_prim_func", "explain_default_schedule",
    "looks_scheduled", "SCHEDULED_ATTR", "STRICT_ENV",
    "CPUInfo", "cpu_info", "BlockInfo", "Contraction", "analyze_block", "match_contraction",
]
