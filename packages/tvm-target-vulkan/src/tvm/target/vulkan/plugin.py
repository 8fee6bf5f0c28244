"""The ``vulkan`` plugin of tvm (entry point ``[project.entry-points.tvm] vulkan``).

Compile side: the ``vulkan`` target kind (device type 7, kDLVulkan; keys ``vulkan, gpu``),
its code generator (GLSL -> SPIR-V) and the shared default GPU schedules.  Run side: the
Vulkan device API and the loader of ``.vkmod`` files.  Importing this module is cheap and
needs neither the ``vulkan`` bindings nor the compiler.
"""

from __future__ import annotations

from tvm.runtime.device_plugin import GPUTargetHooks

__all__ = [
    "tvm_register_target_kinds", "tvm_tir_codegen", "tvm_tir_default_schedule", "tvm_tir_schedule_rules",
    "tvm_device_api", "tvm_runtime_module_loader", "hooks",
    "VULKAN_TARGET_ATTRS", "ensure_registered",
]

KIND = "vulkan"
DEVICE_TYPE = 7  # kDLVulkan

#: attribute -> (type, default) of the vulkan target kind (the limits every Vulkan 1.1
#: device guarantees: maxComputeWorkGroupInvocations >= 128, shared memory >= 16 KiB)
VULKAN_TARGET_ATTRS = {
    "max_num_threads": (int, 128),
    "max_thread_dims": (list[int], (128, 128, 64)),
    "max_shared_memory_per_block": (int, 16384),
    "thread_warp_size": (int, 1),
}

hooks = GPUTargetHooks(
    KIND,
    DEVICE_TYPE,
    package="tvm.target.vulkan",
    distribution="tvm-target-vulkan",
    attrs=VULKAN_TARGET_ATTRS,
    doc="GLSL compute shaders compiled to SPIR-V by glslang, run through the vulkan "
        "bindings: -max_num_threads (workgroup size, default 128), "
        "-max_shared_memory_per_block (bytes of shared memory, default 16384), "
        "-thread_warp_size (1: reductions use a shared-memory tree; the device's subgroup "
        "size: subgroup shuffles)",
)

tvm_register_target_kinds = hooks.tvm_register_target_kinds
tvm_tir_codegen = hooks.tvm_tir_codegen
tvm_tir_default_schedule = hooks.tvm_tir_default_schedule
tvm_tir_schedule_rules = hooks.tvm_tir_schedule_rules
tvm_device_api = hooks.tvm_device_api
tvm_runtime_module_loader = hooks.tvm_runtime_module_loader


def ensure_registered() -> None:
    """Make this plugin active even when the distribution is not pip-installed (its entry
    point then does not exist): registers this module as the in-process plugin ``vulkan``."""
    hooks.ensure_registered(__name__)
