from __future__ import annotations

import copy
import ctypes

import numpy as np
import pytest
from rt_testing import KERNEL_META, compile_shared, kernel_source
from tvm.ffi.plugin import hookimpl, register_plugin, unregister_plugin

import tvm.runtime as rt
from tvm.runtime.module import module_from_symbols


class PyModule(rt.Module):
    type_key = "py"

    def __init__(self, **funcs):
        super().__init__()
        self._functions.update(funcs)
        self._sources["py"] = "def f(): ..."


def test_load_module_errors(tmp_path):
    weird = tmp_path / "model.weird"
    weird.write_text("x")
    with pytest.raises(rt.ModuleLoadError, match=r"no loader for format 'weird'.*so") as info:
        rt.load_module(weird)
    assert "tvm_runtime_module_loader" in str(info.value)
    with pytest.raises(FileNotFoundError, match="no such file"):
        rt.load_module(tmp_path / "missing.so")
    bare = tmp_path / "noext"
    bare.write_text("x")
    with pytest.raises(rt.ModuleLoadError, match="has no file suffix; pass fmt="):
        rt.load_module(bare)
    with pytest.raises(rt.ModuleLoadError, match="not written by tvm .*seal"):
        rt.load_module(weird, fmt="so")
    with pytest.raises(rt.ModuleLoadError, match="cannot load .* as a shared library"):
        rt.load_module(weird, fmt="so", trusted=True)


def test_shared_library_without_metadata(tmp_path):
    lib = compile_shared("int answer(void) { return 42; }\n", tmp_path / "plain.so")
    with pytest.raises(rt.ModuleLoadError, match="defines no __tvm_module_meta symbol"):
        rt.load_module(lib)


def test_metadata_version_and_missing_symbol(tmp_path):
    meta = copy.deepcopy(KERNEL_META)
    meta["version"] = 99
    lib = compile_shared(kernel_source(meta), tmp_path / "v99.so")
    with pytest.raises(rt.ModuleLoadError, match="has version 99; this runtime reads version 1"):
        rt.load_module(lib)
    meta = copy.deepcopy(KERNEL_META)
    meta["functions"].append({"name": "ghost", "params": []})
    lib = compile_shared(kernel_source(meta), tmp_path / "ghost.so")
    with pytest.raises(
        rt.ModuleLoadError, match="function 'ghost' is listed .* symbol 'ghost' is missing"
    ):
        rt.load_module(lib)
    meta = copy.deepcopy(KERNEL_META)
    meta["functions"][0]["params"][0]["kind"] = "matrix"
    lib = compile_shared(kernel_source(meta), tmp_path / "kind.so")
    with pytest.raises(rt.ModuleLoadError, match="parameter 'A' has kind 'matrix'"):
        rt.load_module(lib)


def test_entry_function_from_metadata(tmp_path):
    meta = copy.deepcopy(KERNEL_META)
    meta["entry"] = "checked_div"
    mod = rt.load_module(compile_shared(kernel_source(meta), tmp_path / "entry.so"))
    assert mod.entry_name == "checked_div"
    assert mod(7, 2) == 3


def test_module_from_symbols_like_a_jit(kernel_lib):
    lib = ctypes.CDLL(str(kernel_lib))

    def lookup(name):
        try:
            return ctypes.addressof(ctypes.c_char.in_dll(lib, name))
        except ValueError:
            return None

    meta = {"version": 1, "target": "llvm", "functions": [KERNEL_META["functions"][1]]}
    mod = module_from_symbols(lookup, "llvm", meta=meta, keepalive=lib)
    assert mod.type_key == "llvm" and mod.function_names == ["checked_div"]
    assert mod["checked_div"](9, 3) == 3
    assert mod.lookup_symbol("add_scalar") and mod.lookup_symbol("nope") is None
    with pytest.raises(NotImplementedError, match="'llvm' .*cannot be exported"):
        mod.export_library("x.so")


def test_export_library_copies_the_file(kernel_module, tmp_path):
    out = tmp_path / "copy.so"
    kernel_module.export_library(out)
    again = rt.load_module(out)
    a = np.ones(3, "float32")
    b = np.zeros(3, "float32")
    again["add_scalar"](a, b, 1.0)
    assert b.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="takes no options"):
        kernel_module.export_library(out, cc="gcc")


def test_imports_sources_and_base_errors(kernel_module):
    host = PyModule(main=lambda: "main")
    with pytest.raises(
        NotImplementedError, match="module of type 'py' \\(PyModule\\) cannot be exported"
    ):
        host.export_library("out.so")
    host.import_module(kernel_module)
    assert host.imported_modules == [kernel_module]
    assert "checked_div" in host and host["checked_div"](4, 2) == 2
    assert host.get_function("checked_div", query_imports=False, allow_missing=True) is None
    assert host.function_names == ["main"] and host() == "main"
    with pytest.raises(ValueError, match="cycle"):
        host.import_module(host)
    with pytest.raises(TypeError, match="expects a tvm.runtime.Module"):
        host.import_module("x")
    assert host.get_source() == "def f(): ..." and host.get_source("py") == "def f(): ..."
    with pytest.raises(
        ValueError, match="no source of format 'cuda' \\(formats available: 'py'\\)"
    ):
        host.get_source("cuda")
    with pytest.raises(ValueError, match="formats available: none"):
        kernel_module.get_source()


def test_loader_hook_and_registered_loader(tmp_path):
    path = tmp_path / "m.pym"
    path.write_text("x")
    with pytest.raises(rt.ModuleLoadError, match="no loader for format 'pym'"):
        rt.load_module(path)

    class Plugin:
        @staticmethod
        @hookimpl
        def tvm_runtime_module_loader(fmt):
            return (lambda p: PyModule(path=lambda: p)) if fmt == "pym" else None

    register_plugin(Plugin, "test-pym-loader")
    try:
        mod = rt.load_module(path)
        assert isinstance(mod, PyModule) and mod["path"]() == str(path)
    finally:
        unregister_plugin("test-pym-loader")

    rt.register_module_loader(".txtmod", lambda p: "not a module")
    txt = tmp_path / "m.txtmod"
    txt.write_text("x")
    with pytest.raises(rt.ModuleLoadError, match="returned str, not a tvm.runtime.Module"):
        rt.load_module(txt)
    with pytest.raises(ValueError, match="already registered"):
        rt.register_module_loader("txtmod", lambda p: None)
    rt.register_module_loader("txtmod", lambda p: PyModule(), override=True)
    assert isinstance(rt.load_module(txt), PyModule)


def test_runtime_imports_no_compiler():
    import subprocess
    import sys

    code = (
        "import sys, tvm.runtime; "
        "bad = [m for m in sys.modules if m.split('.')[:2] in (['tvm','ir'], ['tvm','tir'], ['tvm','relax'])]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_runtime_plugins_are_listed():
    from tvm.ffi.plugin import list_plugins

    rt.hooks.plugin_manager()
    names = {p.name: p for p in list_plugins()}
    assert names["tvm-runtime-cpu"].status == "loaded"
    assert "tvm_device_api" in names["tvm-runtime-cpu"].hooks
    assert "tvm_runtime_module_loader" in names["tvm-runtime-so"].hooks
