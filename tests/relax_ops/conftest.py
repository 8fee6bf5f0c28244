"""Numerical tests of the Relax operators: legalized PrimFuncs built for llvm vs numpy.

They need the llvm target (tvm-target-llvm); without it the whole folder is skipped.
"""

from __future__ import annotations

import pytest

try:
    import tvm.target.llvm.plugin as _llvm_plugin
except ImportError:  # pragma: no cover - depends on the installed distributions
    _llvm_plugin = None


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    if _llvm_plugin is None:
        skip = pytest.mark.skip(reason="tvm.target.llvm (tvm-target-llvm) is not installed")
        for item in items:
            item.add_marker(skip)


def pytest_configure(config):  # noqa: ARG001 - pytest hook signature
    if _llvm_plugin is None:
        return
    from tvm.ffi.plugin import get_plugin_info, register_plugin

    if get_plugin_info("llvm") is None:
        register_plugin(_llvm_plugin, "llvm", distribution="tvm-target-llvm")
