"""The ``llvm`` plugin of tvm (entry point ``[project.entry-points.tvm] llvm``).

Registers the ``llvm`` target kind (CPU, device type 1; a host JIT, capability
``host-jit``, so the core compiles constant folding and weight prepacking with it), with
its named targets (``tvm_register_target_tags``: boards and x86 generations, :mod:`.tags`),
its lowering passes (:data:`LOWERING_PASSES`, run at the end of ``tvm.tir.build``'s default
pipeline) and a check of its ``-mtriple``/``-mcpu``/``-mattr`` names when a Target is made
(:mod:`.target_info`), answers ``tvm_tir_codegen`` for it, contributes the default CPU
schedule rules (``tvm_tir_schedule_rules``) and schedules unscheduled PrimFuncs with them
(``tvm_tir_default_schedule``, :mod:`tvm.target.llvm.schedule_rules`) and registers the
integer dot-product tensor intrinsics those rules tensorize with
(``tvm_tir_register_tensor_intrins``, :mod:`.dot_intrin`); on the run side it
tells tvm-runtime the host CPU's features (``tvm_runtime_host_cpu_features``) and provides
the ``qemu`` runner (``tvm_runtime_runner``, :mod:`tvm.target.llvm.qemu`) that executes
cross-compiled kernels under qemu-user.
Importing this module stays cheap: LLVM is initialised only when code is generated.
Hooks receive a :class:`tvm.ir.target.Target`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

from tvm.ffi.plugin import hookimpl

if TYPE_CHECKING:
    from tvm.ir.target import Target

__all__ = [
    "tvm_register_target_kinds", "tvm_register_target_tags", "tvm_runtime_host_cpu_features",
    "tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules", "tvm_tir_cpu_info",
    "tvm_runtime_runner", "tvm_tir_register_tensor_intrins", "LLVM_TARGET_ATTRS",
    "LOWERING_PASSES",
]

#: attribute -> (type, default) of the llvm target kind
LLVM_TARGET_ATTRS = {
    "mcpu": (str, None),
    "mtriple": (str, None),
    "mattr": (list[str], None),
    "mabi": (str, None),
    "num-cores": (int, None),
    "opt-level": (int, 3),
    "threading": (str, None),
}


def _pass(module: str, factory: str) -> Callable[[], Any]:
    """A factory of the pass ``factory()`` of ``tvm.target.llvm.<module>``, imported on use."""

    def make() -> Any:
        return getattr(importlib.import_module(f"{__package__}.{module}"), factory)()

    return make


#: TIR -> TIR passes of llvm targets, in order, after MakePackedAPI (see tvm.tir.build): full
#: register tiles unswitched out of their guards, then their accumulators kept in registers
LOWERING_PASSES: dict[str, Callable[[], Any]] = {
    "tir.llvm.UnswitchInvariantGuards": _pass("unswitch", "UnswitchInvariantGuards"),
    "tir.llvm.PromoteLoopAccumulators": _pass("promote", "PromoteLoopAccumulators"),
}


def _check_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """A Target's attributes, unchanged, once LLVM knows its -mtriple, -mcpu and -mattr
    names (ValueError with close matches otherwise; see :mod:`.target_info`)."""
    if attrs.get("mtriple") or attrs.get("mcpu") not in (None, "", "native") or attrs.get("mattr"):
        from .host_cpu import host_triple
        from .target_info import check_target_options

        check_target_options(attrs.get("mtriple") or host_triple(), attrs.get("mcpu"),
                             attrs.get("mattr") or ())
    return attrs


def _kind() -> Any:
    from tvm.ir.target import HOST_JIT, TargetKind

    return TargetKind(
        "llvm",
        1,
        attrs=LLVM_TARGET_ATTRS,
        default_keys=("cpu",),
        package="tvm-target-llvm",
        capabilities=(HOST_JIT,),
        lowering_passes=LOWERING_PASSES,
        canonicalize=_check_attrs,
        doc=("CPU code through LLVM (llvmlite): -mcpu, -mtriple, -mattr, -mabi, -num-cores, "
             "-opt-level, "
             "-threading=omp|pool (parallel loops through libgomp's GOMP_parallel, the default "
             "when libgomp loads, or through the runtime's thread pool)"),
    )


@hookimpl
def tvm_register_target_kinds(register: Callable[[Any], None]) -> None:
    register(_kind())


@hookimpl
def tvm_register_target_tags(register: Callable[[Any], None]) -> None:
    """Named llvm targets: boards (Raspberry Pi 4/5, RK3588, VisionFive 2, SpacemiT K1, ...)
    and x86 generations (x86-64-v3/v4, znver3/4, ...), see :mod:`.tags`."""
    from .tags import tags

    for tag in tags():
        register(tag)


@hookimpl
def tvm_runtime_host_cpu_features() -> dict[str, bool] | None:
    """The host CPU's features as LLVM names them (the names llvm modules record)."""
    from .host_cpu import host_cpu_features

    found = {f[1:]: f[0] == "+" for f in host_cpu_features() if f[:1] in "+-"}
    return found or None


@hookimpl
def tvm_tir_codegen(target: Target) -> Callable[..., Any] | None:
    if target.kind_name != "llvm":
        return None
    from .build import build

    return build


@hookimpl
def tvm_tir_default_schedule(mod: Any, target: Target) -> Any:
    """``mod`` with the default CPU schedules applied to its unscheduled PrimFuncs."""
    if target.kind_name != "llvm":
        return None
    from .schedule_rules import apply_default_schedules

    return apply_default_schedules(mod, target)


@hookimpl
def tvm_tir_cpu_info(target: Target) -> Any:
    """The :class:`~.schedule_rules.CPUInfo` of an llvm ``target`` (host or ``-mcpu``)."""
    if target.kind_name != "llvm":
        return None
    from .schedule_rules import cpu_info

    return cpu_info(target)


@hookimpl
def tvm_tir_schedule_rules(target: Target) -> Any:
    """The default CPU rules for an llvm ``target`` (its vector width, registers, cores)."""
    if target.kind_name != "llvm":
        return None
    from .schedule_rules import cpu_info, cpu_rules

    return cpu_rules(cpu_info(target))


@hookimpl
def tvm_tir_register_tensor_intrins(register: Callable[[Any], None]) -> None:
    """The integer dot-product intrinsics (VNNI, AVX2/AVX-512 ``vpmaddwd``, NEON dot
    products; :mod:`.dot_intrin`) the int8 schedule rule tensorizes with."""
    from .dot_intrin import register_dot_intrins

    register_dot_intrins(register)


@hookimpl
def tvm_runtime_runner(name: str, options: dict) -> Any:
    """The ``qemu`` runner (:class:`tvm.target.llvm.qemu.QemuRunner`) made with ``options``."""
    if name != "qemu":
        return None
    from .qemu import QemuRunner

    return QemuRunner(**options)
