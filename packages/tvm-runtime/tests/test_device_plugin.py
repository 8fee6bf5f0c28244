"""GPUTargetHooks: the shared hook implementations of GPU target plugins."""

from __future__ import annotations

import sys
import types

import pytest
from tvm.runtime.device_plugin import GPUTargetHooks


@pytest.fixture
def fake_package(monkeypatch):
    """A plugin package ``fakegpu`` with ``build`` and ``runtime`` modules."""
    pkg = types.ModuleType("fakegpu")
    build = types.ModuleType("fakegpu.build")
    build.build = lambda mod, target: ("built", mod)
    runtime = types.ModuleType("fakegpu.runtime")
    runtime.FILE_SUFFIX = "fakemod"
    runtime.device_api = lambda: "the device api"
    runtime.load_module = lambda path: ("loaded", path)
    for name, mod in (("fakegpu", pkg), ("fakegpu.build", build), ("fakegpu.runtime", runtime)):
        monkeypatch.setitem(sys.modules, name, mod)
    return GPUTargetHooks("fakegpu", 99, package="fakegpu", distribution="tvm-target-fakegpu",
                          attrs={}, doc="a test kind")


class _Target:
    """Stands in for the tvm.ir.target.Target the compile-side hooks receive (tvm-runtime
    cannot import tvm-ir): they read only ``kind_name``."""

    def __init__(self, kind_name: str) -> None:
        self.kind_name = kind_name


def test_hooks_answer_only_for_their_kind_and_device(fake_package):
    hooks = fake_package
    assert hooks.tvm_tir_codegen(_Target("fakegpu")) is sys.modules["fakegpu.build"].build
    assert hooks.tvm_tir_codegen(_Target("cuda")) is None
    assert hooks.tvm_tir_default_schedule(object(), _Target("cuda")) is None
    assert hooks.tvm_device_api(99) == "the device api"
    assert hooks.tvm_device_api(2) is None
    assert hooks.tvm_runtime_module_loader("fakemod")("x") == ("loaded", "x")
    assert hooks.tvm_runtime_module_loader("so") is None
    assert hooks.keys == ("fakegpu", "gpu")


def test_bound_hooks_carry_the_hookimpl_marker(fake_package):
    # plugin modules export the bound methods; pluggy finds them through the marker
    assert getattr(fake_package.tvm_device_api, "tvm_impl", None) is not None
