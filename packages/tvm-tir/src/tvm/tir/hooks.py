"""Compile-side hook specifications of tvm-tir.

A target distribution implements them in its plugin module (entry point group ``tvm``)::

    from tvm.ffi.plugin import hookimpl

    @hookimpl
    def tvm_tir_codegen(target):
        if target.kind_name == "llvm":
            return build_llvm          # (IRModule of lowered packed PrimFuncs, Target) -> Module

``tvm_tir_default_schedule(mod, target)`` may return ``mod`` with default schedules applied.
Both hooks are ``firstresult``: the first plugin that answers (not ``None``) wins.
``tvm_tir_schedule_rules(target)`` is not: every plugin may contribute schedule rules for a
target (its own target's, or a vendor's extra ones; see :mod:`tvm.tir.schedule.rules`).
:func:`get_codegen` asks the plugins and explains what to install when nobody answers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tvm.ffi.plugin import add_hookspecs, get_plugin_manager, hookspec

__all__ = ["tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules", "get_codegen",
           "CodegenFunc"]

#: ``build(mod, target) -> tvm.runtime.Module``: ``mod`` is an IRModule of lowered PrimFuncs
#: with the packed calling convention (``tvm.tir.transform.MakePackedAPI``).
CodegenFunc = Callable[[Any, Any], Any]


@hookspec(firstresult=True)
def tvm_tir_codegen(target: Any) -> CodegenFunc | None:
    """Return the code generator for ``target`` (a :class:`tvm.ir.target.Target`).

    The callable takes ``(mod, target)`` where ``mod`` is an IRModule of lowered PrimFuncs
    already rewritten by MakePackedAPI (for a GPU target, see ``tvm.tir.get_gpu_pipeline``:
    host functions plus ``device_kernel_launch`` kernels), and returns a
    ``tvm.runtime.Module``.  Return ``None`` for target kinds the plugin does not compile.
    """


@hookspec(firstresult=True)
def tvm_tir_default_schedule(mod: Any, target: Any) -> Any:
    """Return ``mod`` (an IRModule) with the target's default schedules applied, or ``None``
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


add_hookspecs(sys.modules[__name__])


def get_codegen(target: Any) -> CodegenFunc:
    """The code generator a plugin provides for ``target``; a clear error if none does."""
    build = get_plugin_manager().hook.tvm_tir_codegen(target=target)
    if build is None:
        kind = getattr(target, "kind_name", str(target))
        from tvm.ir.target import KNOWN_TARGET_DISTRIBUTIONS

        dist = KNOWN_TARGET_DISTRIBUTIONS.get(kind)
        hint = f"; it is provided by {dist} (pip install {dist})" if dist else ""
        raise ValueError(f"no installed plugin generates code for target kind {kind!r}{hint}")
    return build
