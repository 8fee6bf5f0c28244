"""The ``webgpu`` plugin of tvm (entry point ``[project.entry-points.tvm] webgpu``).

Compile side: the ``webgpu`` target kind (device type 15, kDLWebGPU; keys ``webgpu, gpu``),
its code generator (WGSL) and the shared default GPU schedules.  Run side: the WebGPU
device API on ``wgpu`` and the loader of ``.wgpumod`` files.  Importing this module is
cheap and needs neither ``wgpu`` nor the compiler.
"""

from __future__ import annotations

from tvm.runtime.device_plugin import GPUTargetHooks

__all__ = [
    "tvm_register_target_kinds", "tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules",
    "tvm_device_api", "tvm_runtime_module_loader", "hooks",
    "WEBGPU_TARGET_ATTRS", "ensure_registered",
]

KIND = "webgpu"
DEVICE_TYPE = 15  # kDLWebGPU

#: attribute -> (type, default) of the webgpu target kind (WebGPU's default limits, which
#: every adapter provides: 256 invocations per workgroup, 16 KiB of workgroup memory)
WEBGPU_TARGET_ATTRS = {
    "max_num_threads": (int, 256),
    "max_thread_dims": (list[int], (256, 256, 64)),
    "max_shared_memory_per_block": (int, 16384),
    "thread_warp_size": (int, 1),
}

hooks = GPUTargetHooks(
    KIND,
    DEVICE_TYPE,
    package="tvm.target.webgpu",
    distribution="tvm-target-webgpu",
    attrs=WEBGPU_TARGET_ATTRS,
    doc="WGSL compute shaders run through wgpu (or in a browser through the JavaScript "
        "loader): -max_num_threads (workgroup size, default 256), "
        "-max_shared_memory_per_block (bytes of workgroup memory, default 16384)",
)

tvm_register_target_kinds = hooks.tvm_register_target_kinds
tvm_tir_codegen = hooks.tvm_tir_codegen
tvm_tir_default_schedule = hooks.tvm_tir_default_schedule
tvm_tir_schedule_rules = hooks.tvm_tir_schedule_rules
tvm_device_api = hooks.tvm_device_api
tvm_runtime_module_loader = hooks.tvm_runtime_module_loader


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``webgpu``."""
    hooks.ensure_registered(__name__)
