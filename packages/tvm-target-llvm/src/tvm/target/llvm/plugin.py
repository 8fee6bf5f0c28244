"""The ``llvm`` plugin of tvm (entry point ``[project.entry-points.tvm] llvm``).

Registers the ``llvm`` target kind (CPU, device type 1), answers ``tvm_tir_codegen`` for it
contributes the default CPU schedule rules for it (``tvm_tir_schedule_rules``) and schedules
unscheduled PrimFuncs with them (``tvm_tir_default_schedule``,
:mod:`tvm.target.llvm.schedule_rules`).  Importing this module stays cheap: LLVM is initialised only when code is generated.
"""

from __future__ import annotations

from typing import Any, Callable

from tvm.ffi.plugin import hookimpl

__all__ = [
    "tvm_register_target_kinds", "tvm_tir_codegen", "tvm_tir_default_schedule",
    "tvm_tir_schedule_rules", "LLVM_TARGET_ATTRS",
]

#: attribute -> (type, default) of the llvm target kind
LLVM_TARGET_ATTRS = {
    "mcpu": (str, None),
    "mtriple": (str, None),
    "mattr": (list[str], None),
    "num-cores": (int, None),
    "opt-level": (int, 3),
    "threading": (str, None),
}


def _kind() -> Any:
    from tvm.ir.target import TargetKind

    return TargetKind(
        "llvm",
        1,
        attrs=LLVM_TARGET_ATTRS,
        default_keys=("cpu",),
        package="tvm-target-llvm",
        doc=("CPU code through LLVM (llvmlite): -mcpu, -mtriple, -mattr, -num-cores, -opt-level, "
             "-threading=omp|pool (parallel loops through libgomp's GOMP_parallel, the default "
             "when libgomp loads, or through the runtime's thread pool)"),
    )


@hookimpl
def tvm_register_target_kinds(register: Callable[[Any], None]) -> None:
    register(_kind())


def _kind_name(target: Any) -> Any:
    kind = getattr(target, "kind_name", None)
    if kind is None and isinstance(target, str):
        kind = target.split()[0] if target.split() else None
    return kind


@hookimpl
def tvm_tir_codegen(target: Any) -> Callable[..., Any] | None:
    if _kind_name(target) != "llvm":
        return None
    from .build import build

    return build


@hookimpl
def tvm_tir_default_schedule(mod: Any, target: Any) -> Any:
    """``mod`` with the default CPU schedules applied to its unscheduled PrimFuncs."""
    if _kind_name(target) != "llvm":
        return None
    from .schedule_rules import apply_default_schedules

    return apply_default_schedules(mod, target)


@hookimpl
def tvm_tir_schedule_rules(target: Any) -> Any:
    """The default CPU rules for an llvm ``target`` (its vector width, registers, cores)."""
    if _kind_name(target) != "llvm":
        return None
    from .schedule_rules import cpu_info, cpu_rules

    return cpu_rules(cpu_info(target))
