"""The c target as a whole: ABI checks, parallel launch, export, cache, compiler, plugin."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from c_kernels import prim_func, unary_map, var
from conftest import has_cc, requires_cc

from tvm import tir
from tvm.ir import IRModule, Target
from tvm.tir import ForKind

REPO = Path(__file__).resolve().parents[3]


def build(*funcs, target="c"):
    from tvm.target.c import build as c_build

    return c_build(IRModule({f.attrs["global_symbol"]: f for f in funcs}), target)


def _add_func():
    n = var("n")
    a, b, c = (tir.decl_buffer((n, 4), "float32", name) for name in "ABC")
    pa, pb, pc = var("A", "handle"), var("B", "handle"), var("C", "handle")
    i = var("i")
    store = tir.BufferStore(c, a[i // 4, i % 4] + b[i // 4, i % 4], (i // 4, i % 4))
    body = tir.For(i, 0, n * 4, ForKind.SERIAL, store)
    return prim_func("add", [pa, pb, pc], body, {pa: a, pb: b, pc: c})


@pytest.fixture(scope="module")
def add_module():
    if not has_cc():
        pytest.skip("no C compiler (cc/gcc/clang) found")
    return build(_add_func())


# --------------------------------------------------------------------------- ABI errors

@requires_cc
def test_python_side_errors_name_argument_expected_and_given(add_module):
    import tvm.runtime as rt

    a, b = np.ones((3, 4), "float32"), np.ones((3, 4), "float32")
    with pytest.raises(rt.KernelError, match=r"add: argument C has shape\[0\] = 2, but n = 3 from argument A"):
        add_module["add"](a, b, np.zeros((2, 4), "float32"))
    with pytest.raises(rt.KernelError, match=r"add: argument B has dtype float64, expected float32"):
        add_module["add"](a, b.astype("float64"), a)
    with pytest.raises(TypeError, match=r"add\(\) takes 3 arguments"):
        add_module["add"](a, b)


@requires_cc
def test_kernel_checks_its_arguments_itself(add_module):
    """Without the metadata's early checks, the generated C rejects bad calls."""
    import tvm.runtime as rt
    from tvm.runtime.packed_func import PackedCFunc

    raw = PackedCFunc(add_module.lookup_symbol("add"), None, add_module)
    a, b = np.ones((3, 4), "float32"), np.ones((3, 4), "float32")
    cases = [
        ((a, b, np.zeros((2, 4), "float32")),
         r"^add: argument C has shape\[0\] = 2, but n = 3 from argument A$"),
        ((a, b, np.zeros((3, 5), "float32")), r"^add: argument C has shape\[1\] = 5, expected 4$"),
        ((a, b.astype("int32"), a),
         r"^add: argument B has dtype \(code=0, bits=32, lanes=1\), expected float32 "
         r"\(code=2, bits=32, lanes=1\)$"),
        ((a, b, np.zeros(12, "float32")), r"^add: argument C has ndim = 1, expected 2$"),
        ((a, b), r"^add: expected 3 arguments, got 2$"),
        ((a, 1.5, a), r"^add: argument B expects a tensor \(DLTensor\*, type code 7\), got type code 2$"),
        ((a, np.ones((4, 3), "float32").T, a),
         r"^add: argument B is not compact: strides\[1\] = 3, expected 1$"),
    ]
    for args, pattern in cases:
        with pytest.raises(rt.KernelError, match=pattern):
            raw(*args)
    out = np.zeros((3, 4), "float32")
    raw(a, b, out)  # errors do not stick
    np.testing.assert_array_equal(out, a + b)


@requires_cc
def test_byte_offset_views_are_honoured(add_module):
    import tvm.runtime as rt

    big = np.arange(40, dtype="float32").reshape(10, 4)
    view = rt.from_dlpack(big[2:5])  # a view with a non-zero data offset
    out = np.zeros((3, 4), "float32")
    add_module["add"](view, view, out)
    np.testing.assert_array_equal(out, big[2:5] * 2)


# --------------------------------------------------------------------------- parallel

@requires_cc
def test_parallel_loops_match_serial_and_use_the_pool():
    import tvm.runtime as rt

    par = unary_map("par", "float64", lambda x, i: x * 2.0 + tir.Cast("float64", i),
                    kind=ForKind.PARALLEL)
    a8 = tir.decl_buffer((8, 8), "int32", "A")
    pa = var("A", "handle")
    i, j = var("i"), var("j")
    nested = tir.For(i, 1, 7, ForKind.PARALLEL, tir.For(
        j, 0, 8, ForKind.PARALLEL, tir.BufferStore(a8, i * 10 + j, (i, j))))
    nest = prim_func("nest", [pa], nested, {pa: a8})
    mod = build(par, nest)
    src = mod.get_source()
    assert "__TVMBackendParallelLaunch" in src and "par_compute_parallel" in src
    assert "__TVMBackendParallelLaunch" in mod.slots
    x = np.random.default_rng(0).random(10007)
    for threads in (1, 3, 4):
        rt.set_num_threads(threads)
        try:
            y = np.zeros_like(x)
            mod["par"](x, y)
            np.testing.assert_array_equal(y, x * 2 + np.arange(x.size))
        finally:
            rt.set_num_threads(None)
    m = np.full((8, 8), -1, "int32")
    mod["nest"](m)
    expected = np.full((8, 8), -1, "int32")
    expected[1:8] = np.arange(1, 8)[:, None] * 10 + np.arange(8)  # For(i, min=1, extent=7)
    np.testing.assert_array_equal(m, expected)
    empty = np.zeros(0)
    mod["par"](empty, empty.copy())  # zero iterations


@requires_cc
def test_error_inside_a_parallel_task_reaches_python():
    import tvm.runtime as rt

    n = var("n")
    a = tir.decl_buffer((n,), "int32", "A")
    pa = var("A", "handle")
    i = var("i")
    check = tir.AssertStmt(a[i] >= 0, "neg: A[%lld] = %lld is negative", tir.BufferStore(a, a[i] * 2, (i,)),
                           (tir.Cast("int64", i), tir.Cast("int64", a[i])))
    mod = build(prim_func("neg", [pa], tir.For(i, 0, n, ForKind.PARALLEL, check), {pa: a}))
    data = np.arange(100, dtype="int32")
    data[57] = -3
    rt.set_num_threads(4)
    try:
        with pytest.raises(rt.KernelError, match=r"^neg: A\[57\] = -3 is negative$"):
            mod["neg"](data)
    finally:
        rt.set_num_threads(None)


# --------------------------------------------------------------------------- source & export

@requires_cc
def test_get_source_and_metadata(add_module):
    src = add_module.get_source()
    assert src == add_module.get_source("c")
    assert "TVM_DLL int32_t add(TVMValue* args, int32_t* arg_type_ids, int32_t num_args," in src
    assert "static int32_t add_compute_(" in src
    assert 'const char __tvm_module_meta[]' in src
    assert add_module.type_key == "c" and add_module.function_names == ["add"]
    assert add_module.meta["target"] == "c"
    assert add_module["add"].signature() == \
        "add(A: Tensor[(n, 4), float32], B: Tensor[(n, 4), float32], C: Tensor[(n, 4), float32])"


@requires_cc
def test_export_and_load_in_a_fresh_process_with_only_the_runtime(add_module, tmp_path):
    lib = tmp_path / "add.so"
    add_module.export_library(lib)
    add_module.export_library(tmp_path / "add.c")
    assert (tmp_path / "add.c").read_text() == add_module.get_source()
    script = textwrap.dedent(f"""
        import numpy as np, sys
        import tvm.runtime as rt
        m = rt.load_module({str(lib)!r})
        a = np.arange(8, dtype="float32").reshape(2, 4)
        c = np.zeros_like(a)
        m["add"](a, a, c)
        assert (c == 2 * a).all(), c
        try:
            m["add"](a, a, np.zeros((3, 4), "float32"))
        except rt.KernelError as err:
            print("error:", err)
        assert not any(k in sys.modules for k in ("tvm.tir", "tvm.ir", "tvm.target.c.codegen"))
        for forbidden in ("tvm.ir", "tvm.tir", "tvm.target.c"):
            try:
                __import__(forbidden)
            except ImportError:
                pass
            else:
                raise SystemExit(forbidden + " must not be importable here")
        print("ok", m.target)
    """)
    from tvm.runtime.testing import runtime_only_python

    argv, env = runtime_only_python(tmp_path)
    proc = subprocess.run([*argv, "-c", script], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "error: add: argument C has shape[0] = 3, but n = 2 from argument A" in proc.stdout
    assert proc.stdout.strip().endswith("ok c")


@requires_cc
def test_export_errors(add_module, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        add_module.export_library(tmp_path / "missing" / "x.so")
    with pytest.raises(TypeError, match="takes no options"):
        add_module.export_library(tmp_path / "x.so", cc="gcc")


# --------------------------------------------------------------------------- cache & compiler

@requires_cc
def test_rebuilding_the_same_kernel_hits_the_cache(monkeypatch):
    from tvm.target.c import compiler

    first = build(unary_map("cached", "float32", lambda x, i: x + 42.0))
    calls = []
    real_run = subprocess.run

    def spy(cmd, *args, **kwargs):
        if "-shared" in cmd:
            calls.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(compiler.subprocess, "run", spy)
    again = build(unary_map("cached", "float32", lambda x, i: x + 42.0))
    assert calls == [] and again.library_path == first.library_path
    assert first.library_path.parent == compiler.cache_dir()
    other = build(unary_map("cached", "float32", lambda x, i: x + 43.0))
    assert len(calls) == 1 and other.library_path != first.library_path
    # another flag, another library
    flagged = build(unary_map("cached", "float32", lambda x, i: x + 42.0), target="c -opt-level=1")
    assert flagged.library_path != first.library_path


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    from tvm.target.c.compiler import cache_dir

    monkeypatch.setenv("TVM_CACHE_DIR", str(tmp_path))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("TVM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "tvm" / "c"


def test_missing_compiler_is_a_clear_error(monkeypatch):
    from tvm.target.c import CCompilerNotFoundError, find_compiler

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(CCompilerNotFoundError, match=r"target c needs a C compiler.*"
                                                     r"'cc', 'gcc', 'clang'.*-cc=/path/to/cc"):
        find_compiler()
    with pytest.raises(CCompilerNotFoundError, match=r"the C compiler 'mycc' \(-cc\) was not found"):
        find_compiler("mycc")
    with pytest.raises(CCompilerNotFoundError):
        build(unary_map("nocc", "float32", lambda x, i: x))


@requires_cc
def test_compiler_errors_show_the_command_and_keep_the_source():
    from tvm.target.c import CCompileError

    with pytest.raises(CCompileError, match=r"(?s)the C compiler failed .*-fno-such-flag") as info:
        build(unary_map("badflag", "float32", lambda x, i: x), target="c -cflags=-fno-such-flag")
    kept = str(info.value).split("generated source ")[1].split(":")[0]
    assert Path(kept).read_text().startswith("/* Generated by tvm-target-c")


# --------------------------------------------------------------------------- plugin & tir.build

def test_target_kind_and_codegen_hook():
    from tvm.target.c import plugin
    from tvm.target.c.build import build as c_build

    t = Target("c -mcpu=generic -num-cores=2 -cflags=-ffast-math,-funroll-loops")
    assert t.kind_name == "c" and t.keys == ("cpu",) and t.device_type == 1
    assert t.get_attr("num-cores") == 2 and t.cflags == ("-ffast-math", "-funroll-loops")
    assert plugin.tvm_tir_codegen(target=t) is c_build
    assert plugin.tvm_tir_codegen(target=Target({"kind": "c"}).with_fields()) is c_build
    from tvm.ir.target import TargetKind, register_target_kind, unregister_target_kind

    register_target_kind(TargetKind("ctestother", 1))
    try:
        assert plugin.tvm_tir_codegen(target=Target("ctestother")) is None
    finally:
        unregister_target_kind("ctestother")
    from tvm.target.c.compiler import CompilerOptions

    opts = CompilerOptions.from_target(t)
    assert opts.flags == ("-O3", "-ffast-math", "-funroll-loops")


@requires_cc
def test_tir_build_with_target_c():
    build_fn = getattr(tir, "build", None)
    if build_fn is None:
        pytest.skip("tvm.tir.build is not available")
    f = unary_map("twice", "float32", lambda x, i: x * 2.0)
    mod = build_fn(f, target="c")
    a = np.arange(6, dtype="float32")
    b = np.zeros_like(a)
    mod["twice"](a, b)
    np.testing.assert_array_equal(b, a * 2)
    assert type(mod).__name__ == "CModule"


@requires_cc
def test_tir_build_of_a_te_compute_with_reduction():
    te = pytest.importorskip("tvm.te")
    if not hasattr(te, "create_prim_func") or not hasattr(tir, "build"):
        pytest.skip("te.create_prim_func / tir.build not available")
    n = te.var("n")
    A = te.placeholder((n, 16), "float32", name="A")
    k = te.reduce_axis((0, 16), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="S")
    mod = tir.build(te.create_prim_func([A, S]), target="c", name="sumsq")
    a = np.random.default_rng(2).random((5, 16)).astype("float32")
    s = np.zeros(5, "float32")
    mod["sumsq"](a, s)
    np.testing.assert_allclose(s, (a * a).sum(axis=1), rtol=1e-5)
