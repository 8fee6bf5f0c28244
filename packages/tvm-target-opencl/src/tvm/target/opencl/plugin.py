"""The ``opencl`` plugin of tvm (entry point ``[project.entry-points.tvm] opencl``).

Compile side: the ``opencl`` target kind (device type 4, keys ``opencl, gpu``), its code
generator (``tvm_tir_codegen``) and default GPU schedules (``tvm_tir_default_schedule``, the
shared rules of ``tvm.tir.schedule.gpu_rules``).  Run side: the OpenCL device API
(``tvm_device_api``) and the loader of ``.clmod`` files (``tvm_runtime_module_loader``).
Importing this module is cheap and needs neither pyopencl nor the compiler.
"""

from __future__ import annotations

from typing import Any, Callable

from tvm.ffi.plugin import hookimpl

__all__ = [
    "tvm_register_target_kinds", "tvm_tir_codegen", "tvm_tir_default_schedule",
    "tvm_device_api", "tvm_runtime_module_loader", "OPENCL_TARGET_ATTRS", "ensure_registered",
]

KIND = "opencl"
DEVICE_TYPE = 4  # kDLOpenCL

#: attribute -> (type, default) of the opencl target kind
OPENCL_TARGET_ATTRS = {
    "max_num_threads": (int, 256),
    "max_thread_dims": (list[int], (1024, 1024, 64)),
    "max_shared_memory_per_block": (int, 32768),
    "thread_warp_size": (int, 1),
}


def _kind() -> Any:
    from tvm.ir.target import TargetKind

    return TargetKind(
        KIND,
        DEVICE_TYPE,
        attrs=OPENCL_TARGET_ATTRS,
        default_keys=(KIND, "gpu"),
        package="tvm-target-opencl",
        doc="OpenCL C kernels run through pyopencl: -max_num_threads (work-group size, default "
            "256), -max_shared_memory_per_block (bytes of __local memory), -thread_warp_size "
            "(1: reductions use a __local-memory tree)",
    )


def _is_opencl(target: Any) -> bool:
    kind = getattr(target, "kind_name", None)
    if kind is None and isinstance(target, str):
        kind = target.split()[0] if target.split() else None
    return kind == KIND


@hookimpl
def tvm_register_target_kinds(register: Callable[[Any], None]) -> None:
    register(_kind())


@hookimpl
def tvm_tir_codegen(target: Any) -> Callable[..., Any] | None:
    if not _is_opencl(target):
        return None
    from .build import build

    return build


@hookimpl
def tvm_tir_default_schedule(mod: Any, target: Any) -> Any:
    if not _is_opencl(target):
        return None
    from tvm.tir.schedule.gpu_rules import apply_default_gpu_schedule

    return apply_default_gpu_schedule(mod, target)


@hookimpl
def tvm_device_api(device_type: int) -> Any:
    if int(device_type) != DEVICE_TYPE:
        return None
    from .runtime import device_api

    return device_api()


@hookimpl
def tvm_runtime_module_loader(fmt: str) -> Callable[[str], Any] | None:
    from .runtime import FILE_SUFFIX

    if fmt != FILE_SUFFIX:
        return None
    from .runtime import load_module

    return load_module


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``opencl``."""
    import sys

    from tvm.ffi.plugin import get_plugin_manager, register_plugin

    if get_plugin_manager().get_plugin(KIND) is None:
        register_plugin(sys.modules[__name__], KIND, distribution="tvm-target-opencl")
