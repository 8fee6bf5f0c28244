"""The ``metal`` plugin of tvm (entry point ``[project.entry-points.tvm] metal``).

Compile side: the ``metal`` target kind (device type 8, keys ``metal, gpu``), its code
generator (``tvm_tir_codegen``: Metal Shading Language) and default GPU schedules
(``tvm_tir_default_schedule``, the shared rules of ``tvm.tir.schedule.gpu_rules``).  Run
side: the Metal device API (``tvm_device_api``) and the loader of ``.mtlmod`` files.

Running kernels needs macOS with an Apple GPU: elsewhere the device API says so (every
operation raises DeviceUnavailableError); generating and exporting MSL works anywhere.
"""

from __future__ import annotations

from tvm.runtime.device_plugin import GPUTargetHooks

__all__ = [
    "tvm_register_target_kinds", "tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules",
    "tvm_device_api", "tvm_runtime_module_loader", "hooks",
    "METAL_TARGET_ATTRS", "ensure_registered",
]

KIND = "metal"
DEVICE_TYPE = 8  # kDLMetal

#: attribute -> (type, default) of the metal target kind
METAL_TARGET_ATTRS = {
    "max_num_threads": (int, 256),
    "max_thread_dims": (list[int], (1024, 1024, 1024)),
    "max_shared_memory_per_block": (int, 32768),
    "thread_warp_size": (int, 32),
}

hooks = GPUTargetHooks(
    KIND,
    DEVICE_TYPE,
    package="tvm.target.metal",
    distribution="tvm-target-metal",
    attrs=METAL_TARGET_ATTRS,
    doc="Metal Shading Language kernels (running them needs macOS): -max_num_threads "
        "(threads per threadgroup, default 256), -max_shared_memory_per_block (bytes of "
        "threadgroup memory), -thread_warp_size (SIMD-group width, 32: reductions use "
        "simd_shuffle_down; 1: a threadgroup-memory tree)",
)

tvm_register_target_kinds = hooks.tvm_register_target_kinds
tvm_tir_codegen = hooks.tvm_tir_codegen
tvm_tir_default_schedule = hooks.tvm_tir_default_schedule
tvm_tir_schedule_rules = hooks.tvm_tir_schedule_rules
tvm_device_api = hooks.tvm_device_api
tvm_runtime_module_loader = hooks.tvm_runtime_module_loader


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``metal``."""
    hooks.ensure_registered(__name__)
