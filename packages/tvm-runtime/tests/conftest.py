"""Shared fixtures: compiled ABI kernels, a fake non-CPU device."""

from __future__ import annotations

from pathlib import Path

import pytest
from rt_testing import FakeExtDeviceAPI, compile_shared, kernel_source


@pytest.fixture(scope="session")
def kernel_lib(tmp_path_factory) -> Path:
    """Path of the compiled test kernels (``kernels.c``)."""
    return compile_shared(kernel_source(), tmp_path_factory.mktemp("kernels") / "kernels.so")


@pytest.fixture(scope="session")
def kernel_module(kernel_lib):
    import tvm.runtime

    return tvm.runtime.load_module(kernel_lib)


@pytest.fixture
def ext_device():
    """Registers a plugin serving ext_dev (type 12) with host memory; yields its API."""
    from tvm.ffi.plugin import hookimpl, register_plugin, unregister_plugin

    import tvm.runtime

    fake = FakeExtDeviceAPI()

    class Plugin:
        @staticmethod
        @hookimpl
        def tvm_device_api(device_type):
            return fake.api if device_type == 12 else None

    tvm.runtime.hooks.plugin_manager()
    register_plugin(Plugin, "test-fake-ext-dev")
    try:
        yield fake
    finally:
        unregister_plugin("test-fake-ext-dev")
