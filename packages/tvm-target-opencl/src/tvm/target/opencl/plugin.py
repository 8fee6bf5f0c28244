"""The ``opencl`` plugin of tvm (entry point ``[project.entry-points.tvm] opencl``).

Compile side: the ``opencl`` target kind (device type 4, keys ``opencl, gpu``), its code
generator (``tvm_tir_codegen``) and default GPU schedules (``tvm_tir_default_schedule``, the
shared rules of ``tvm.tir.schedule.gpu_rules``).  Run side: the OpenCL device API
(``tvm_device_api``) and the loader of ``.clmod`` files (``tvm_runtime_module_loader``).
Importing this module is cheap and needs neither pyopencl nor the compiler.
"""

from __future__ import annotations

from tvm.runtime.device_plugin import GPUTargetHooks

__all__ = [
    "tvm_register_target_kinds", "tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules",
    "tvm_device_api", "tvm_runtime_module_loader", "hooks",
    "OPENCL_TARGET_ATTRS", "ensure_registered",
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

hooks = GPUTargetHooks(
    KIND,
    DEVICE_TYPE,
    package="tvm.target.opencl",
    distribution="tvm-target-opencl",
    attrs=OPENCL_TARGET_ATTRS,
    doc="OpenCL C kernels run through pyopencl: -max_num_threads (work-group size, default "
        "256), -max_shared_memory_per_block (bytes of __local memory), -thread_warp_size "
        "(1: reductions use a __local-memory tree)",
)

tvm_register_target_kinds = hooks.tvm_register_target_kinds
tvm_tir_codegen = hooks.tvm_tir_codegen
tvm_tir_default_schedule = hooks.tvm_tir_default_schedule
tvm_tir_schedule_rules = hooks.tvm_tir_schedule_rules
tvm_device_api = hooks.tvm_device_api
tvm_runtime_module_loader = hooks.tvm_runtime_module_loader


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``opencl``."""
    hooks.ensure_registered(__name__)
