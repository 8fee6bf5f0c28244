"""The VM compiler: ``relax.build`` (passes, bytecode generation, kernel compilation).

The runtime half (Executable, VirtualMachine) lives in :mod:`tvm.runtime.vm`; it is
re-exported here so ``relax.VirtualMachine(ex, dev)`` works.
"""

from . import memory_ops  # noqa: F401  (registers relax.memory.* before the passes need them)
from tvm.runtime.vm import Executable, VirtualMachine

from .build import bind_params, build, default_pipeline, vm_lowering_pipeline
from .codegen import CodegenResult, codegen

__all__ = [
    "build",
    "default_pipeline",
    "vm_lowering_pipeline",
    "bind_params",
    "codegen",
    "CodegenResult",
    "Executable",
    "VirtualMachine",
    "memory_ops",
]
