"""Compile-side hook specifications of tvm-tir.

A target distribution implements them in its plugin module (entry point group ``tvm``)::

    from tvm.ffi.plugin import hookimpl

    @hookimpl
    def tvm_tir_codegen(target):
        if target.kind_name == "llvm":
            return build_llvm          # (IRModule of lowered packed PrimFuncs, Target) -> Module

``tvm_tir_default_schedule(mod, target)`` may return ``mod`` with default schedules applied.
Both hooks are ``firstresult``: the first plugin that answers (not ``None``) wins.  They are
called through :func:`tvm.ffi.call_hook`: a plugin whose implementation raises is reported
by name and skipped, unless it is the plugin of the target's kind, whose failure is an
error naming it.
``tvm_tir_schedule_rules(target)`` is not: every plugin may contribute schedule rules for a
target (its own target's, or a vendor's extra ones; see :mod:`tvm.tir.schedule.rules`).
:func:`get_codegen` asks the plugins and explains what to install when nobody answers.

Every ``target`` a hook receives is a :class:`tvm.ir.target.Target` (callers convert
strings and dicts first, with the one target-string parser of :mod:`tvm.ir.target`): a
plugin reads ``target.kind_name`` and ``target.attrs`` and never parses a string.  A
target's TIR lowering passes are not a hook: its kind declares them
(``TargetKind.lowering_passes``) and :func:`tvm.tir.build` runs them by name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tvm.ffi import PluginError
from tvm.ffi.plugin import add_hookspecs, call_hook, hookspec
from tvm.ir.target import KNOWN_TARGET_DISTRIBUTIONS, Target, as_target, target_kind_plugin

__all__ = ["tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules",
           "tvm_tir_tuned_schedule", "tvm_tir_cpu_info", "tvm_tir_register_tensor_intrins",
           "get_codegen", "CodegenFunc"]

#: ``build(mod, target) -> tvm.runtime.Module``: ``mod`` is an IRModule of lowered PrimFuncs
#: with the packed calling convention (``tvm.tir.transform.MakePackedAPI``).
CodegenFunc = Callable[[Any, Any], Any]


@hookspec(firstresult=True)
def tvm_tir_codegen(target: Target) -> CodegenFunc | None:
    """Return the code generator for ``target`` (a :class:`tvm.ir.target.Target`).

    The callable takes ``(mod, target)`` where ``mod`` is an IRModule of lowered PrimFuncs
    already rewritten by MakePackedAPI (for a GPU target, see ``tvm.tir.get_gpu_pipeline``:
    host functions plus ``device_kernel_launch`` kernels), and returns a
    ``tvm.runtime.Module``.  Return ``None`` for target kinds the plugin does not compile.
    """


@hookspec(firstresult=True)
def tvm_tir_default_schedule(mod: Any, target: Target) -> Any:
    """Return ``mod`` (an IRModule) with ``target``'s (a :class:`tvm.ir.target.Target`)
    default schedules applied, or ``None``
    to decline.  :func:`tvm.tir.build` calls it before lowering when some PrimFunc is not
    marked ``tir.is_scheduled``; such marked functions should be left as they are.
    """


@hookspec
def tvm_tir_schedule_rules(target: Any) -> Any:
    """Return a list of :class:`tvm.tir.schedule.rules.ScheduleRule` for ``target`` (a
    :class:`tvm.ir.target.Target`), or ``None``.  Every plugin's answer is used: the target's
    own plugin gives its default rules, others add theirs (sorted by ``priority``, highest
    first).  The default schedule and the tuner's design space both use these rules.
    """


@hookspec(firstresult=True)
def tvm_tir_tuned_schedule(func: Any, target: Target) -> Any:
    """Return ``func`` (an unscheduled PrimFunc) scheduled from tuning records for ``target``
    (marked ``tir.is_scheduled``), or ``None`` when there is none.  Asked before the default
    schedule for every unscheduled PrimFunc; a tuner's record database answers it while it
    is applied (``with database.applied(): relax.build(...)``), so no package below the
    tuner imports it.
    """


@hookspec(firstresult=True)
def tvm_tir_cpu_info(target: Target) -> Any:
    """Return what schedule rules need to know of the CPU ``target`` is for, or ``None``: an
    object with ``vector_bytes``, ``vector_registers``, ``num_cores``, ``l1_bytes``,
    ``l2_bytes``, ``fma_units``, ``fma_latency`` and ``lanes(dtype)`` (the llvm plugin
    answers with its ``CPUInfo``), optionally ``int8_activation`` (``"uint8"`` / ``"int8"``:
    the activation dtype its int8 dot product wants, which the qnn legalization shifts
    activations to).  Target-independent rules (the tuner's design space) read the machine
    through it.
    """


@hookspec
def tvm_tir_register_tensor_intrins(register: Callable[[Any], None]) -> None:
    """Call ``register(TensorIntrinDef(name, desc, impl))`` (:mod:`tvm.tir.tensor_intrin`)
    once per tensor intrinsic the plugin provides (a vendor's matrix instruction, an ISA's
    dot product), so that ``sch.tensorize(loop, name)`` and schedule rules find it by name.
    """


add_hookspecs(sys.modules[__name__])


def get_codegen(target: Target | str | dict) -> CodegenFunc:
    """The code generator a plugin provides for ``target`` (hook ``tvm_tir_codegen``, asked
    with a :class:`~tvm.ir.target.Target`); a clear error if none does."""
    target = as_target(target)
    codegen = call_hook("tvm_tir_codegen", target=target,
                        owner=target_kind_plugin(target.kind_name), required=True)
    if codegen is None:
        kind = target.kind_name
        dist = KNOWN_TARGET_DISTRIBUTIONS.get(kind) or target.kind.package
        hint = f" (install or update {dist})" if dist else ""
        raise PluginError(
            f"no installed plugin generates code for target kind {kind!r}{hint}: the kind is "
            "registered but no plugin implements tvm_tir_codegen for it; see "
            "tvm.ffi.format_plugin_table() for the installed plugins"
        )
    if not callable(codegen):
        raise TypeError(
            f"the tvm_tir_codegen hook for target kind {target.kind_name!r} returned "
            f"{codegen!r}, which is not callable(mod, target)"
        )
    return codegen
