"""LLVMModule: sources, export to a shared library loaded by a runtime-only process, plugin."""

from __future__ import annotations

import pathlib
import subprocess
import textwrap

import numpy as np
import pytest
from llvm_test_utils import prim_func
from tvm import tir
from tvm.target.llvm import LLVMModule, build, host_cpu_name
from tvm.tir import For, ForKind, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore

PACKAGES = pathlib.Path(__file__).resolve().parents[2]


def _saxpy():
    n = SizeVar("n", "int32")
    X = decl_buffer((n,), "float32", "X")
    Y = decl_buffer((n,), "float32", "Y")
    a = Var("a", "float32")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.PARALLEL, BufferStore(Y, X[i] * a + Y[i] + tir.op.tanh(X[i]),
                                                      (i,)))
    return prim_func("saxpy", [X, Y, a], body)


@pytest.fixture(scope="module")
def saxpy_module() -> LLVMModule:
    return build(_saxpy())


def test_get_source_ll_and_asm(saxpy_module):
    ll = saxpy_module.get_source("ll")
    assert "define" in ll and "@saxpy(" in ll
    assert saxpy_module.get_source() == ll
    assert "__TVMAPISetLastError" in saxpy_module.get_source("ll-raw")
    asm = saxpy_module.get_source("asm")
    assert "saxpy:" in asm and ("ret" in asm or "retq" in asm)
    with pytest.raises(ValueError, match="no source of format 'cuda'"):
        saxpy_module.get_source("cuda")


def test_target_cpu_and_opt_level_are_honoured():
    mod = build(_saxpy(), "llvm -mcpu=x86-64 -opt-level=0")
    assert mod.options.cpu == "x86-64" and mod.options.opt_level == 0
    # no optimisation: the IR still has the loop blocks we generated
    assert "for.i.task.head" in mod.get_source("ll")
    assert build(_saxpy()).options.cpu == host_cpu_name()


def test_mattr_disables_features():
    f = _saxpy()
    asm = build(f, "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell -mattr=-avx,-avx2"
                ).get_source("asm")
    assert "%ymm" not in asm


def test_cross_target_builds_sources_without_jit():
    mod = build(_saxpy(), "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=generic")
    assert "aarch64" in mod.get_source("ll")
    assert mod.function_names == ["saxpy"]  # listed from the module's metadata
    with pytest.raises(RuntimeError, match="cross-compiled for aarch64-unknown-linux-gnu"):
        mod["saxpy"]()  # but not runnable on this machine
    asm = mod.get_source("asm")
    assert "saxpy:" in asm


RUNNER = textwrap.dedent("""
    import sys, numpy as np
    import tvm.runtime as rt
    for forbidden in ("tvm.ir", "tvm.tir", "tvm.target.llvm"):
        try:
            __import__(forbidden)
        except ImportError:
            pass
        else:
            raise SystemExit(f"{forbidden} must not be importable here")
    mod = rt.load_module(sys.argv[1])
    x = np.linspace(-1, 1, 1000).astype("float32")
    y = np.ones(1000, "float32")
    rt.set_num_threads(2)
    mod["saxpy"](x, y, 3.0)
    np.save(sys.argv[2], y)
    try:
        mod["saxpy"](x, np.ones(7, "float32"), 3.0)
    except rt.KernelError as err:
        print("ERR", err)
    loaded = sorted(m for m in sys.modules if m.startswith(("llvmlite", "tvm.ir", "tvm.tir")))
    print("COMPILER MODULES", loaded)
""")


def test_export_library_and_load_in_a_runtime_only_process(saxpy_module, tmp_path):
    lib = tmp_path / "saxpy.so"
    saxpy_module.export_library(lib)
    assert lib.exists()
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    out = tmp_path / "y.npy"
    from tvm.runtime.testing import runtime_only_python

    argv, env = runtime_only_python(tmp_path)
    proc = subprocess.run([*argv, str(script), str(lib), str(out)],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    x = np.linspace(-1, 1, 1000).astype("float32")
    np.testing.assert_allclose(np.load(out), x * 3 + 1 + np.tanh(x), rtol=1e-6, atol=1e-6)
    assert "ERR saxpy: argument Y has shape[0] = 7" in proc.stdout
    assert "COMPILER MODULES []" in proc.stdout


def test_export_object_and_ir(saxpy_module, tmp_path):
    saxpy_module.export_library(tmp_path / "k.o")
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"
    saxpy_module.export_library(tmp_path / "k.ll")
    assert "saxpy" in (tmp_path / "k.ll").read_text()


def test_export_without_compiler_is_a_clear_error(saxpy_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(RuntimeError, match="needs a C compiler"):
        saxpy_module.export_library(tmp_path / "x.so")


def test_plugin_registers_target_kind_and_codegen():
    from tvm.ir.target import Target
    from tvm.tir.hooks import get_codegen

    t = Target("llvm -mcpu=znver3 -num-cores=4")
    assert t.device_type == 1 and t.keys == ("cpu",)
    assert t.mcpu == "znver3" and t.num_cores == 4 and t.opt_level == 3
    build_fn = get_codegen(t)
    mod = build_fn(_module_of(_saxpy()), Target("llvm"))
    x, y = np.ones(5, "float32"), np.zeros(5, "float32")
    mod["saxpy"](x, y, 2.0)
    np.testing.assert_allclose(y, 2 + np.tanh(1.0), rtol=1e-6)


def _module_of(func):
    from tvm.ir.module import IRModule
    from tvm.tir.transform import MakePackedAPI

    return MakePackedAPI()(IRModule({"saxpy": func}))


def test_codegen_hook_declines_other_targets():
    from tvm.ir.target import Target
    from tvm.target.llvm.plugin import tvm_tir_codegen

    class Fake:
        kind_name = "cuda"

    assert tvm_tir_codegen(Fake()) is None
    assert tvm_tir_codegen(Target("llvm -mcpu=generic")) is not None


def test_module_with_several_functions():
    from tvm.ir.module import IRModule

    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    i = Var("i", "int32")
    inc = prim_func("inc", [A], For(i, 0, n, ForKind.SERIAL, BufferStore(A, A[i] + 1, (i,))))
    dbl = prim_func("dbl", [A], For(i, 0, n, ForKind.SERIAL, BufferStore(A, A[i] * 2, (i,))))
    mod = build(IRModule({"inc": inc, "dbl": dbl}))
    assert sorted(mod.function_names) == ["dbl", "inc"]
    a = np.arange(4, dtype="int32")
    mod["inc"](a)
    mod["dbl"](a)
    np.testing.assert_array_equal(a, (np.arange(4) + 1) * 2)


@pytest.mark.parametrize("name", ["exp", "asin", "tanh"])
def test_kernel_named_like_a_libm_function(name, tmp_path):
    """A kernel called ``exp`` must not capture libm's ``exp`` (float64 math calls it): it is
    exported under another symbol and found by its name through the module metadata."""
    from tvm.ir.module import IRModule

    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "float64", "A")
    B = decl_buffer((n,), "float64", "B")
    i = Var("i", "int32")
    fn = getattr(tir.op, name)
    func = prim_func(name, [A, B], For(i, 0, n, ForKind.SERIAL, BufferStore(B, fn(A[i]), (i,))))
    mod = build(IRModule({name: func}))
    assert mod.function_names == [name]
    a, b = np.linspace(-0.9, 0.9, 9), np.zeros(9)
    mod[name](a, b)
    np.testing.assert_allclose(b, {"exp": np.exp, "asin": np.arcsin, "tanh": np.tanh}[name](a),
                               rtol=1e-12)
    assert f"__tvm_fn_{name}" in mod.get_source("ll")
