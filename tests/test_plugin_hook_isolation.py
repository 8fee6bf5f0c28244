"""A plugin whose hook implementation raises does not break the others: ``relax.build``
for llvm (and c) still builds, loads and runs, and the failure names the broken plugin.

The broken plugins are real plugin objects registered on the process-wide manager, so
they are asked before the installed target plugins (the last registered answers first).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402
from tvm.ffi import PluginHookWarning, get_plugin_info, get_plugin_manager, hookimpl  # noqa: E402
from tvm.ffi.plugin import register_plugin, unregister_plugin  # noqa: E402
from tvm.ir.target import TargetKind, register_target_kind  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm.runtime.vm import VirtualMachine  # noqa: E402


@I.ir_module
class AddExp:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        with R.dataflow():
            z = R.exp(R.add(x, y))
            R.output(z)
        return z


class BrokenCodegen:
    @staticmethod
    @hookimpl
    def tvm_tir_codegen(target):
        raise AttributeError("'NoneType' object has no attribute 'emit' (broken on purpose)")


class BrokenSchedule:
    @staticmethod
    @hookimpl
    def tvm_tir_default_schedule(mod, target):
        raise KeyError("schedule table (broken on purpose)")


class BrokenLoader:
    @staticmethod
    @hookimpl
    def tvm_runtime_module_loader(fmt):
        raise RuntimeError("cannot open vendor runtime (broken on purpose)")


class ExitingPlugin:
    @staticmethod
    @hookimpl
    def tvm_tir_codegen(target):
        raise SystemExit("vendor SDK missing (broken on purpose)")

    @staticmethod
    @hookimpl
    def tvm_tir_default_schedule(mod, target):
        raise SystemExit(1)


@pytest.fixture
def broken():
    """``add(plugin, name)`` registers a plugin object for one test."""
    names = []
    get_plugin_manager()  # loaded now, so the broken plugins join last and are asked first

    def add(plugin, name):
        register_plugin(plugin, name, distribution="tvm-testplugin-hooks", version="0.1")
        names.append(name)

    yield add
    for name in names:
        unregister_plugin(name)


def _run(ex):
    x = np.arange(4, dtype="float32")
    y = np.ones(4, dtype="float32")
    z = VirtualMachine(ex, tvm.runtime.cpu())["main"](x, y)
    np.testing.assert_allclose(z.numpy(), np.exp(x + y), rtol=1e-5)


def _messages(caught):
    return [str(w.message) for w in caught if issubclass(w.category, PluginHookWarning)]


@pytest.mark.parametrize("plugin,name,hook,error", [
    (BrokenCodegen, "zz-broken-codegen", "tvm_tir_codegen", "AttributeError"),
    (BrokenSchedule, "zz-broken-schedule", "tvm_tir_default_schedule", "KeyError"),
    (ExitingPlugin, "zz-exiting", "tvm_tir_codegen", "SystemExit"),
])
def test_llvm_builds_past_a_broken_hook(broken, plugin, name, hook, error):
    broken(plugin, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex = relax.build(AddExp, "llvm")
    _run(ex)
    messages = _messages(caught)
    assert any(f"tvm plugin {name!r} (tvm-testplugin-hooks 0.1) failed in hook {hook}(" in m
               and error in m for m in messages), messages
    assert any(e.startswith(f"{hook}: {error}") for e in get_plugin_info(name).hook_errors)


def test_c_target_builds_past_broken_plugins(broken):
    pytest.importorskip("tvm.target.c")
    broken(BrokenCodegen, "zz-broken-codegen")
    broken(ExitingPlugin, "zz-exiting")
    with pytest.warns(PluginHookWarning) as caught:
        ex = relax.build(AddExp, "c")
    _run(ex)
    text = " ".join(_messages(caught))
    assert "'zz-broken-codegen'" in text and "'zz-exiting'" in text


def test_module_loader_hook_failure_does_not_stop_loading_a_library(broken, tmp_path):
    ex = relax.build(AddExp, "llvm")
    path = tmp_path / "add_exp.so"
    ex.export_library(path)
    broken(BrokenLoader, "zz-broken-loader")
    with pytest.warns(PluginHookWarning, match="'zz-broken-loader'.*tvm_runtime_module_loader"
                      r"\(fmt='so'\).*cannot open vendor runtime"):
        mod = tvm.runtime.load_module(path)
    _run(mod)


def test_unknown_format_names_the_plugin_that_failed(broken, tmp_path):
    path = tmp_path / "weights.vendorfmt"
    path.write_bytes(b"\0")
    broken(BrokenLoader, "zz-broken-loader")
    with pytest.raises(RuntimeError, match="cannot open vendor runtime") as info:
        tvm.runtime.load_module(path)
    assert "tvm plugin 'zz-broken-loader'" in info.value.__notes__[0]


class OwnKind:
    """A plugin that provides a target kind, and whose code generator for it is broken."""

    @staticmethod
    @hookimpl
    def tvm_register_target_kinds(register):
        register(TargetKind("zzkind", device_type=1, package="tvm-testplugin-hooks"))

    @staticmethod
    @hookimpl
    def tvm_tir_codegen(target):
        if target.kind_name == "zzkind":
            raise ValueError("zzkind codegen is broken on purpose")
        return None


class Impostor:
    """A plugin that would answer for any target kind."""

    @staticmethod
    @hookimpl(trylast=True)
    def tvm_tir_codegen(target):
        return lambda mod, target: None


def test_failure_of_the_plugin_owning_the_target_is_an_error(broken):
    from tvm.tir.hooks import get_codegen

    broken(Impostor, "zz-impostor")
    broken(OwnKind, "zz-own-kind")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginHookWarning)
        with pytest.raises(ValueError, match="zzkind codegen is broken") as info:
            get_codegen("zzkind")  # not the impostor's answer
    assert info.value.__notes__[0].startswith(
        "tvm plugin 'zz-own-kind' (tvm-testplugin-hooks 0.1) failed in hook tvm_tir_codegen(")
    assert callable(get_codegen("llvm"))  # other kinds are unaffected


def test_in_process_kind_has_no_owner():
    from tvm.ir.target import target_kind_plugin, unregister_target_kind

    register_target_kind(TargetKind("zzlocal", device_type=1))
    try:
        assert target_kind_plugin("zzlocal") is None
    finally:
        unregister_target_kind("zzlocal")
    assert target_kind_plugin("llvm") == "llvm"
    assert target_kind_plugin("no-such-kind") is None
