"""The hook implementations every GPU target plugin shares.

A GPU target distribution (``tvm-target-cuda``, ``-opencl``, ``-metal``, or a vendor's)
implements the same six hooks: it registers its target kind, answers
``tvm_tir_codegen``, ``tvm_tir_schedule_rules`` (the shared GPU rules of
``tvm.tir.schedule.gpu_rules``) and ``tvm_tir_default_schedule`` (those rules applied) for
targets of that kind, the device API for its device type and the loader of its module files.  Only the
facts differ, so a plugin module states them once::

    hooks = GPUTargetHooks("cuda", 2, package="tvm.target.cuda", distribution="tvm-target-cuda",
                           attrs=CUDA_TARGET_ATTRS, doc="...")
    tvm_register_target_kinds = hooks.tvm_register_target_kinds
    ...

``package`` names the plugin's package: its ``build`` module provides ``build(mod, target)``
and its ``runtime`` module ``device_api()``, ``FILE_SUFFIX`` and ``load_module(path)``.
Both are imported only when a hook needs them, so loading the plugin stays cheap and a
runtime-only process never imports the compiler.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping, Optional, Sequence

from tvm.ffi.plugin import hookimpl

__all__ = ["GPUTargetHooks"]


class GPUTargetHooks:
    """The hooks of a GPU target plugin for target kind ``kind`` (see the module doc)."""

    def __init__(self, kind: str, device_type: int, *, package: str, distribution: str,
                 attrs: Mapping[str, tuple], doc: str, keys: Optional[Sequence[str]] = None):
        self.kind = kind
        self.device_type = int(device_type)
        self.package = package
        self.distribution = distribution
        self.attrs = attrs
        self.doc = doc
        self.keys = tuple(keys) if keys is not None else (kind, "gpu")

    def _is_mine(self, target: Any) -> bool:
        kind = getattr(target, "kind_name", None)
        if kind is None and isinstance(target, str):
            kind = target.split()[0] if target.split() else None
        return kind == self.kind

    def _module(self, name: str) -> Any:
        return importlib.import_module(f"{self.package}.{name}")

    @hookimpl
    def tvm_register_target_kinds(self, register: Callable[[Any], None]) -> None:
        from tvm.ir.target import TargetKind

        register(TargetKind(self.kind, self.device_type, attrs=self.attrs,
                            default_keys=self.keys, package=self.distribution, doc=self.doc))

    @hookimpl
    def tvm_tir_codegen(self, target: Any) -> Optional[Callable[..., Any]]:
        return self._module("build").build if self._is_mine(target) else None

    @hookimpl
    def tvm_tir_default_schedule(self, mod: Any, target: Any) -> Any:
        if not self._is_mine(target):
            return None
        from tvm.tir.schedule.gpu_rules import apply_default_gpu_schedule

        return apply_default_gpu_schedule(mod, target)

    @hookimpl
    def tvm_tir_schedule_rules(self, target: Any) -> Optional[list[Any]]:
        if not self._is_mine(target):
            return None
        from tvm.tir.schedule.gpu_rules import GPUParams, gpu_rules

        return gpu_rules(GPUParams.from_target(target))

    @hookimpl
    def tvm_device_api(self, device_type: int) -> Any:
        if int(device_type) != self.device_type:
            return None
        return self._module("runtime").device_api()

    @hookimpl
    def tvm_runtime_module_loader(self, fmt: str) -> Optional[Callable[[str], Any]]:
        runtime = self._module("runtime")
        return runtime.load_module if fmt == runtime.FILE_SUFFIX else None

    def ensure_registered(self, plugin_module: str) -> None:
        """Make the plugin active even when its distribution is not pip-installed (its
        entry point then does not exist): registers ``plugin_module`` in-process under the
        kind's name."""
        from tvm.ffi.plugin import get_plugin_manager, register_plugin

        if get_plugin_manager().get_plugin(self.kind) is None:
            register_plugin(sys.modules[plugin_module], self.kind,
                            distribution=self.distribution)
