"""``tvm.relax.vm_build``: the VM compiler entry point (``relax.build``), under TVM's name."""

from .vm.build import bind_params, build, default_pipeline, vm_lowering_pipeline
from .vm.codegen import codegen

__all__ = ["build", "default_pipeline", "vm_lowering_pipeline", "bind_params", "codegen"]
