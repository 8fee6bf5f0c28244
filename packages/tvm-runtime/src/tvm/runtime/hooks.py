"""Run-side hook specifications of tvm-runtime.

A target distribution implements these in its plugin module (entry point group ``tvm``)::

    from tvm.ffi.plugin import hookimpl

    @hookimpl
    def tvm_device_api(device_type):
        if device_type == 2:          # kDLCUDA
            return CUDADeviceAPI()    # a tvm.runtime.device.DeviceAPI

    @hookimpl
    def tvm_runtime_module_loader(fmt):
        if fmt == "ptx":
            return load_ptx_module    # path -> tvm.runtime.Module

    @hookimpl
    def tvm_runtime_runner(name, options):
        if name == "qemu":
            return QemuRunner(**options)   # a tvm.runtime.runner.Runner

All three hooks are ``firstresult``: the first plugin that answers (not ``None``) wins; the
built-in implementations (CPU device API, ``.so``/``.dylib`` loader, the ``local`` and
``process``, ``rpc`` runners) run last, so a plugin can override them.  They are called through
:func:`call_runtime_hook` (:func:`tvm.ffi.call_hook`): a plugin whose implementation raises
is reported by name and the others still answer.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

import pluggy
from tvm.ffi.plugin import (
    add_hookspecs,
    call_hook,
    get_plugin_manager,
    hookspec,
    register_plugin,
)

if TYPE_CHECKING:  # pragma: no cover
    from .device import DeviceAPI
    from .module import Module
    from .runner import Runner

__all__ = ["tvm_device_api", "tvm_runtime_module_loader", "tvm_runtime_runner",
           "tvm_runtime_host_cpu_features", "plugin_manager", "register_builtins",
           "call_runtime_hook"]


@hookspec(firstresult=True)
def tvm_device_api(device_type: int) -> DeviceAPI | None:
    """Return the :class:`~tvm.runtime.device.DeviceAPI` serving DLPack ``device_type``.

    Return ``None`` for device types the plugin does not serve.
    """


@hookspec(firstresult=True)
def tvm_runtime_module_loader(fmt: str) -> Callable[[str], Module] | None:
    """Return a loader ``path -> Module`` for files of format ``fmt`` (the suffix, no dot).

    Return ``None`` for formats the plugin does not read.
    """


@hookspec(firstresult=True)
def tvm_runtime_runner(name: str, options: dict) -> Runner | None:
    """Return a :class:`~tvm.runtime.runner.Runner` of kind ``name`` made with ``options``
    (``tvm.runtime.runner.create_runner``), e.g. an emulator runner for a cross triple.

    Return ``None`` for runner names the plugin does not provide.
    """


@hookspec(firstresult=True)
def tvm_runtime_host_cpu_features() -> Mapping[str, bool] | None:
    """Return the host CPU's features as ``{llvm feature name: present}`` (e.g. ``{"avx2":
    True, "avx512f": False}``), or ``None`` to let another plugin (or ``/proc/cpuinfo``)
    answer; :func:`tvm.runtime.host.host_mismatch` checks modules' ``features`` with it."""


add_hookspecs(sys.modules[__name__])

_lock = threading.Lock()
_builtins_registered = False


def register_builtins() -> None:
    """Register tvm-runtime's built-in plugins (CPU device API, shared-library and VM
    executable loaders, the local and process runners) once."""
    global _builtins_registered
    if _builtins_registered:
        return
    with _lock:
        if not _builtins_registered:
            from .device import BuiltinCPUPlugin
            from .module import BuiltinModuleLoaderPlugin
            from .runner.base import BuiltinRunnerPlugin
            from .vm.executable import VMExecutableLoaderPlugin

            register_plugin(BuiltinCPUPlugin, "tvm-runtime-cpu", distribution="tvm-runtime")
            register_plugin(BuiltinModuleLoaderPlugin, "tvm-runtime-so", distribution="tvm-runtime")
            register_plugin(
                VMExecutableLoaderPlugin, "tvm-runtime-vm", distribution="tvm-runtime"
            )
            register_plugin(BuiltinRunnerPlugin, "tvm-runtime-runner",
                            distribution="tvm-runtime")
            _builtins_registered = True


def plugin_manager() -> pluggy.PluginManager:
    """The tvm plugin manager, with tvm-runtime's built-in plugins registered."""
    register_builtins()
    return get_plugin_manager()


def call_runtime_hook(hook: str, /, *, required: bool = False, **kwargs: Any) -> Any:
    """:func:`tvm.ffi.call_hook` with tvm-runtime's built-in plugins registered first."""
    register_builtins()
    return call_hook(hook, required=required, **kwargs)
