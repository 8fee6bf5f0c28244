"""Default CPU schedules: what ``tir.build(func, "llvm")`` does to a PrimFunc with no
schedule (hooks ``tvm_tir_schedule_rules`` and ``tvm_tir_default_schedule``).

The rules are rules of the framework :mod:`tvm.tir.schedule.rules` (docs/schedule_rules.md),
chosen by the structure of each block (its iteration kinds, its store and the index
patterns of its loads), never by names, so fused functions from the graph level (matmul +
bias + relu, conv + add ...) get them as well.  One module per rule family:

* ``rules``        the rule list (:func:`cpu_rules`): padding, inline, int8, anchors,
                   elementwise
* ``analysis``     what a block computes: iteration roles, linear index forms, contractions
* ``contraction``  matmul / batch matmul / dense / conv2d (NCHW, NHWC, depthwise, grouped):
                   register-blocked micro-kernel with vector FMA, tile init and epilogue
* ``int8``         int8/uint8 contractions into int32 (qnn dense / matmul / conv2d),
                   tensorized with the target's dot product (:mod:`..dot_intrin`)
* ``reduction``    reductions, and row groups (softmax, layer norm) fused per row
* ``elementwise``  injective blocks: vectorized inner loop, parallel outer loop
* ``common``       factor choice, parallel outer loops, vector inner loops
* ``cpu``          vector width, registers and cores of the target

::

    from tvm.target.llvm.schedule_rules import schedule_prim_func
    scheduled = schedule_prim_func(func, "llvm -mcpu=haswell")
    scheduled.show()
    explain_default_schedule(func)   # {"C": "contraction", "C_init": ..., "T_relu": ...}

A function marked ``tir.is_scheduled`` (user-scheduled), one without blocks, and one whose
loops were visibly transformed by hand (:func:`looks_scheduled`) are left as they are.  A
rule that fails is skipped with a log message on logger ``tvm.tir.schedule.rules``; set
``TVM_SCHEDULE_RULES_STRICT=1`` to raise instead.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ir.module import IRModule
from tvm.tir import PrimFunc
from tvm.tir.schedule.rules import (
    SCHEDULED_ATTR, STRICT_ENV, ScheduleRule, apply_rules, explain, has_blocks, looks_scheduled,
    rules_for_target, schedule_func, schedule_module,
)

from .analysis import BlockInfo, Contraction, analyze_block, match_contraction
from .cpu import CPUInfo, cpu_info
from .rules import cpu_rules

__all__ = [
    "apply_default_schedules", "schedule_prim_func", "explain_default_schedule",
    "default_rules", "cpu_rules", "looks_scheduled", "SCHEDULED_ATTR", "STRICT_ENV",
    "CPUInfo", "cpu_info", "BlockInfo", "Contraction", "analyze_block", "match_contraction",
    "trace_default_schedule",
]


def default_rules(target: Union[CPUInfo, Any] = None) -> list[ScheduleRule]:
    """The rules of the default schedule for ``target``: those the plugins contribute for
    an llvm Target (the CPU rules and any vendor's), or :func:`cpu_rules` for a
    :class:`CPUInfo` (or when no plugin answers)."""
    if isinstance(target, CPUInfo):
        return cpu_rules(target)
    from tvm.ir.target import Target

    tgt = target if isinstance(target, Target) else Target(target or "llvm")
    return rules_for_target(tgt) or cpu_rules(cpu_info(tgt))


def _leave_alone(func: PrimFunc) -> bool:
    # lowered loops, or loops a user already split/reordered/annotated: leave them
    return not has_blocks(func) or looks_scheduled(func)


def schedule_prim_func(func: PrimFunc, target: Union[CPUInfo, Any] = None,
                       name: str = "main", rules: Optional[Sequence[ScheduleRule]] = None
                       ) -> PrimFunc:
    """``func`` scheduled by the default CPU rules (or ``rules``) and marked
    ``tir.is_scheduled``.

    ``target`` is a :class:`CPUInfo`, an llvm Target or target string (None: the host).
    A function already marked is returned as is.
    """
    if not isinstance(func, PrimFunc):
        raise TypeError(f"schedule_prim_func: expected a tir.PrimFunc, got "
                        f"{type(func).__name__}")
    if func.attrs.get(SCHEDULED_ATTR):
        return func
    if _leave_alone(func):
        return func.with_attr(SCHEDULED_ATTR, True)
    return schedule_func(func, rules if rules is not None else default_rules(target), name)


def apply_default_schedules(mod: IRModule, target: Any = None) -> IRModule:
    """``mod`` with every PrimFunc that lacks ``tir.is_scheduled`` scheduled by the rules
    for ``target`` (an llvm Target, target string, or None for the host)."""
    rules = default_rules(target)
    return schedule_module(mod, lambda f, n: schedule_prim_func(f, target, n, rules))


def explain_default_schedule(func: PrimFunc, target: Union[CPUInfo, Any] = None
                             ) -> dict[str, str]:
    """Which rule the default schedule applies to each block of ``func``: block name ->
    ``"contraction"``, ``"epilogue of C"``, ``"row group"``, ``"reduction"``,
    ``"elementwise"``, ``"inlined"`` or ``"<rule> (created)"`` for blocks a rule made
    (``C_init``, ``C_rf``, packed copies).  Empty for a function left as it is."""
    if func.attrs.get(SCHEDULED_ATTR) or _leave_alone(func):
        return {}
    return explain(func, default_rules(target))


def trace_default_schedule(func: PrimFunc, target: Union[CPUInfo, Any] = None) -> Any:
    """The :class:`~tvm.tir.schedule.Trace` of ``func``'s default schedule (None for a
    function left as it is): printable, JSON-serialisable, replayable onto ``func``."""
    if func.attrs.get(SCHEDULED_ATTR) or _leave_alone(func):
        return None
    return apply_rules(func, default_rules(target)).trace
