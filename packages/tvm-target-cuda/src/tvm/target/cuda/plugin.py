"""The ``cuda`` plugin of tvm (entry point ``[project.entry-points.tvm] cuda``).

Compile side: the ``cuda`` target kind (device type 2, keys ``cuda, gpu``; ``-arch=sm_90``
and the launch limits), its code generator (``tvm_tir_codegen``: CUDA C, PTX through nvcc)
and default GPU schedules (``tvm_tir_default_schedule``, the shared rules of
``tvm.tir.schedule.gpu_rules``).  Run side: the CUDA device API (``tvm_device_api``,
through pycuda) and the loader of ``.cumod`` files (``tvm_runtime_module_loader``).
Importing this module is cheap and needs neither pycuda, nvcc nor the compiler.
"""

from __future__ import annotations

from tvm.runtime.device_plugin import GPUTargetHooks

__all__ = [
    "tvm_register_target_kinds", "tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules",
    "tvm_device_api", "tvm_runtime_module_loader", "hooks",
    "CUDA_TARGET_ATTRS", "ensure_registered",
]

KIND = "cuda"
DEVICE_TYPE = 2  # kDLCUDA

#: attribute -> (type, default) of the cuda target kind
CUDA_TARGET_ATTRS = {
    "arch": (str, "sm_80"),
    "max_num_threads": (int, 1024),
    "max_thread_dims": (list[int], (1024, 1024, 64)),
    "max_shared_memory_per_block": (int, 49152),
    "thread_warp_size": (int, 32),
    "compiler": (str, None),
    "nvcc": (str, None),
    "nvcc_flags": (list[str], None),
}

hooks = GPUTargetHooks(
    KIND,
    DEVICE_TYPE,
    package="tvm.target.cuda",
    distribution="tvm-target-cuda",
    attrs=CUDA_TARGET_ATTRS,
    doc="CUDA C compiled to PTX by nvcc, run through pycuda: -arch (sm_80, sm_90, ...), "
        "-max_num_threads (threads per block, default 1024), -max_shared_memory_per_block "
        "(bytes, default 49152), -thread_warp_size (32: reductions use __shfl_down_sync), "
        "-compiler (nvcc or nvrtc; default nvcc when installed), -nvcc (path), "
        "-nvcc_flags",
)

tvm_register_target_kinds = hooks.tvm_register_target_kinds
tvm_tir_codegen = hooks.tvm_tir_codegen
tvm_tir_default_schedule = hooks.tvm_tir_default_schedule
tvm_tir_schedule_rules = hooks.tvm_tir_schedule_rules
tvm_device_api = hooks.tvm_device_api
tvm_runtime_module_loader = hooks.tvm_runtime_module_loader


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``cuda``."""
    hooks.ensure_registered(__name__)
