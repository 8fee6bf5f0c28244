"""Make the llvm plugin available when the distribution is not installed (PYTHONPATH runs)."""

from __future__ import annotations

from tvm.ffi.plugin import get_plugin_info, register_plugin


def pytest_configure(config):  # noqa: ARG001 - pytest hook signature
    if get_plugin_info("llvm") is None:
        import tvm.target.llvm.plugin as plugin

        register_plugin(plugin, "llvm", distribution="tvm-target-llvm")
