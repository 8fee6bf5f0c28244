"""Schedule rules: the one framework the default CPU and GPU schedules, a vendor's rules and
the auto-tuner's design spaces are written in (docs/schedule_rules.md).

* ``rule.py``    :class:`ScheduleRule` (``applies`` by structure, ``apply(sch, block) ->
                 list[Schedule]``), :class:`RuleNotApplicable`, :class:`FirstOf`, claims
                 (which rule scheduled which block), ``SCHEDULED_ATTR``
* ``blocks.py``  block classification (spatial / reduction / other), loop roles,
                 ``loop_extent``, the :class:`AutoInline` rule, hand-scheduled detection
* ``driver.py``  :func:`apply_rules` over every block of a function (on copies, logged,
                 ``TVM_SCHEDULE_RULES_STRICT``), :func:`schedule_func`,
                 :func:`schedule_module`, :func:`explain`

Rules come from plugins through hook ``tvm_tir_schedule_rules(target)``
(:func:`rules_for_target`): the target's plugin contributes its own rules, a vendor plugin
extra ones (``priority`` above 0 to run first).  The GPU rules every GPU target shares are
in :mod:`tvm.tir.schedule.gpu_rules`; the CPU rules in ``tvm.target.llvm.schedule_rules``.

::

    from tvm.tir.schedule.rules import ScheduleRule, apply_rules

    class ParallelOuter(ScheduleRule):
        name = "parallel_outer"
        def applies(self, sch, block):
            return block_kind(sch, block) == "spatial"
        def transform(self, sch, block):
            sch.parallel(sch.get_loops(block)[0])

    result = apply_rules(func, [ParallelOuter()])
    result.func.show(); result.trace.show(); result.explain   # {"B": "parallel_outer"}
"""

from __future__ import annotations

from typing import Any

from .blocks import (
    AutoInline, block_kind, has_blocks, is_output_block, looks_scheduled, loop_extent,
    loop_roles, root_blocks,
)
from .driver import (
    STRICT_ENV, RulesResult, apply_rules, explain, schedule_func, schedule_module, sort_rules,
    strict_mode,
)
from .rule import SCHEDULED_ATTR, FirstOf, RuleNotApplicable, ScheduleRule, claim, claims, fork

__all__ = [
    "ScheduleRule", "RuleNotApplicable", "FirstOf", "SCHEDULED_ATTR", "claim", "claims", "fork",
    "AutoInline", "block_kind", "loop_roles", "loop_extent", "root_blocks", "is_output_block",
    "has_blocks", "looks_scheduled", "apply_rules", "schedule_func", "schedule_module",
    "explain", "strict_mode", "STRICT_ENV", "RulesResult", "sort_rules", "rules_for_target",
]


def rules_for_target(target: Any) -> list[ScheduleRule]:
    """The rules every plugin contributes for ``target`` (hook ``tvm_tir_schedule_rules``),
    stably sorted by priority, highest first; empty when no plugin answers."""
    from tvm.ffi.plugin import call_hook
    from tvm.ir.target import as_target, target_kind_plugin

    from ... import hooks  # noqa: F401  (registers the hook specs)

    out: list[ScheduleRule] = []
    target = as_target(target)
    owner = target_kind_plugin(target.kind_name)
    for answer in call_hook("tvm_tir_schedule_rules", target=target, owner=owner):
        for rule in answer:
            if not isinstance(rule, ScheduleRule):
                raise TypeError(f"a tvm_tir_schedule_rules hook returned {rule!r} for target "
                                f"{str(target)!r}; expected ScheduleRule objects")
            out.append(rule)
    return sort_rules(out)
