"""The cblas backend: patterns and checks, generated C, numerics on the VM, the report."""

from __future__ import annotations

import numpy as np
import pytest
from tvm.contrib.cblas import find_cblas, partition_for_cblas
from tvm.contrib.cblas.codegen import build_module, generate_c
from tvm.contrib.cblas.library import CBLASLibrary, _bundled
from tvm.relax import transform as T
from tvm.relax.backend import OffloadReport, get_backend
from tvm.script import ir as I
from tvm.script import relax as R

LIB, WHY = find_cblas()
requires_cblas = pytest.mark.skipif(LIB is None, reason=WHY)
RNG = np.random.default_rng(0)


def _build(mod, **kw):
    pytest.importorskip("tvm.target.llvm")
    from tvm import relax

    return relax.build(mod, offload=["cblas"], **kw)


def _run(ex, *args):
    import tvm
    from tvm import relax

    out = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](*args)
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else out.numpy()


def _rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def _matmul_module(sa, sb, bias=None, dense=False):
    from tvm import relax
    from tvm.relax.block_builder import BlockBuilder
    from tvm.relax.struct_info import TensorStructInfo

    bb = BlockBuilder()
    a = relax.Var("a", TensorStructInfo(sa, "float32"))
    b = relax.Var("b", TensorStructInfo(sb, "float32"))
    params = [a, b]
    if bias is not None:
        c = relax.Var("c", TensorStructInfo(bias, "float32"))
        params.append(c)
    with bb.function("main", params):
        with bb.dataflow():
            rhs = bb.emit(relax.op.permute_dims(b)) if dense else b
            y = bb.emit(relax.op.matmul(a, rhs))
            if bias is not None:
                y = bb.emit(relax.op.add(y, c))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def test_backend_is_registered_by_the_plugin():
    backend = get_backend("cblas")
    assert [p.name for p in backend.patterns] == [
        "cblas.dense_bias", "cblas.matmul_bias", "cblas.dense", "cblas.matmul"]
    assert backend.package == "tvm-contrib-cblas"


CASES = [
    ("matmul2d", (5, 7), (7, 3), None, False),
    ("batch3d", (2, 5, 7), (2, 7, 3), None, False),
    ("rows3d_x_2d", (2, 5, 7), (7, 3), None, False),
    ("bias", (5, 7), (7, 3), (3,), False),
    ("bias_row", (2, 5, 7), (2, 7, 3), (1, 3), False),
    ("dense_bias", (4, 7), (6, 7), (6,), True),
]


@requires_cblas
@pytest.mark.parametrize("name,sa,sb,bias,dense", CASES, ids=[c[0] for c in CASES])
def test_numerics_against_numpy(name, sa, sb, bias, dense):
    mod = _matmul_module(sa, sb, bias, dense)
    ex = _build(mod)
    [part] = ex.offload_report.partitions
    assert part.backend == "cblas"
    args = [_rand(*sa), _rand(*sb)] + ([_rand(*bias)] if bias else [])
    rhs = args[1].T if dense else args[1]
    want = np.matmul(args[0], rhs) + (args[2] if bias else 0)
    np.testing.assert_allclose(_run(ex, *args), want, rtol=1e-5, atol=1e-5)


@requires_cblas
def test_mixed_model_only_matmuls_offloaded(tmp_path):
    @I.ir_module
    class Model:
        @R.function
        def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((32, 16), "float32"),
                 b: R.Tensor((32,), "float32"), w2: R.Tensor((32, 4), "float32"),
                 h: R.Tensor((8, 16), "float16"), v: R.Tensor((16, 4), "float16")):
            with R.dataflow():
                y = R.add(R.matmul(x, R.permute_dims(w)), b)
                r = R.nn.relu(y)
                z = R.matmul(r, w2)
                s = R.nn.softmax(z, axis=-1)
                u = R.matmul(h, v)
                R.output(s, u)
            return (s, u)

    ex = _build(Model)
    report = ex.offload_report
    assert sorted(p.patterns[0] for p in report.partitions) == ["cblas.dense_bias", "cblas.matmul"]
    [rej] = [r for r in report.rejections if r.binding == "u"]
    assert "float16" in rej.reason
    text = str(report)
    assert "partition" in text and "stayed on the host: main/u = relax.matmul" in text
    # relu, softmax and the float16 matmul are llvm kernels; the matmuls are cblas calls
    assert ex.kernel_lib.function_names and ex.kernel_lib.imported_modules
    externals = [m for m in ex.kernel_lib.imported_modules
                 if getattr(m, "external_backend", None) == "cblas"]
    src = externals[0].get_source("c")
    assert len(externals) == 1 and f"#define SGEMM {LIB.sgemm}" in src
    assert src.count("    SGEMM(") == 2
    args = [_rand(8, 16), _rand(32, 16), _rand(32), _rand(32, 4), _rand(8, 16, dtype="float16"),
            _rand(16, 4, dtype="float16")]
    s, u = _run(ex, *args)
    z = np.maximum(args[0] @ args[1].T + args[2], 0) @ args[3]
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(u.astype("float32"), (args[4] @ args[5]).astype("float32"),
                               rtol=1e-2, atol=1e-2)
    _check_export_round_trip(ex, args, [s, u], tmp_path)


def _check_export_round_trip(ex, args, want, tmp_path):
    """The exported executable carries the cblas library: a process with only tvm-runtime
    loads it, writing the library into a fresh cache, and computes the same values."""
    from tvm.runtime.testing import run_exported_vm

    path = tmp_path / "model.so"
    ex.export_library(path)
    got, imported = run_exported_vm(path, args, tmp_path, {"TVM_CACHE_DIR": str(tmp_path)})
    assert not [m for m in imported if m.startswith(("tvm.relax", "tvm.contrib", "tvm.tir"))]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert list((tmp_path / "cblas").iterdir())


def test_checks_reject_what_cblas_cannot_do():
    @I.ir_module
    class Unsupported:
        @R.function
        def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((8, 4), "float32"),
                 a: R.Tensor((4, 8), "float32"), bt: R.Tensor((2, 8, 3), "float32"),
                 q: R.Tensor((4, 8), "float32"), c: R.Tensor((4, 1), "float32")):
            with R.dataflow():
                y = R.matmul(x, w)            # symbolic shape
                z = R.matmul(a, bt)           # 2-D x 3-D
                t = R.add(R.matmul(q, w), c)  # bias along the rows
                R.output(y, z, t)
            return (y, z, t)

    report = OffloadReport()
    after = partition_for_cblas(Unsupported, report)
    reasons = {r.binding: r.reason for r in report.rejections}
    assert "symbolic" in reasons["y"]
    assert "2-D or 3-D" in reasons["z"]
    assert "last axis" in reasons["t"]
    # the bias add was refused but its matmul alone is taken
    assert [p.patterns for p in report.partitions] == [("cblas.matmul",)]
    assert any(f.attrs.get("Codegen") == "cblas" for _, f in after.items())


@requires_cblas
def test_kernel_checks_its_arguments():
    mod = T.RunCodegen()(partition_for_cblas(_matmul_module((4, 8), (8, 2))))
    [ext] = mod.get_attr("external_mods")
    [name] = ext.function_names
    f = ext[name]
    out = np.zeros((4, 2), "float32")
    f(_rand(4, 8), _rand(8, 2), out)
    from tvm.ffi import TVMError

    with pytest.raises((TVMError, ValueError, TypeError), match="shape|expected"):
        f(_rand(4, 9), _rand(8, 2), out)
    with pytest.raises((TVMError, ValueError, TypeError), match="dtype|float32"):
        f(_rand(4, 8).astype("float64"), _rand(8, 2), out)
    # the C checks themselves, whatever the Python wrapper checks first
    assert "has shape[%d] = %lld, expected %lld" in ext.get_source("c")


@requires_cblas
def test_merged_partition_keeps_intermediates_in_c():
    @I.ir_module
    class Chain:
        @R.function
        def main(x: R.Tensor((4, 6), "float32"), w: R.Tensor((6, 6), "float32")):
            with R.dataflow():
                a = R.matmul(x, w)
                b = R.matmul(a, w)
                R.output(b)
            return b

    fused = T.FuseOpsByPattern(get_backend("cblas").patterns)(Chain)
    merged = T.MergeCompositeFunctions()(fused)
    ex = _build(merged)
    src = ex.kernel_lib.imported_modules[0].get_source("c")
    assert "malloc" in src and src.count("    SGEMM(") == 2
    x, w = _rand(4, 6), _rand(6, 6)
    np.testing.assert_allclose(_run(ex, x, w), x @ w @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lib", _bundled(), ids=lambda lib: lib.sgemm)
def test_bundled_openblas_of_the_wheels(lib: CBLASLibrary):
    """numpy's ILP64 OpenBLAS (``scipy_cblas_sgemm64_``, 64-bit ints) and scipy's."""
    mod = partition_for_cblas(_matmul_module((3, 5), (5, 2)))
    funcs = [(gv.name_hint, f) for gv, f in mod.items() if f.attrs.get("Codegen")]
    src, meta = generate_c(funcs, lib)
    assert f"#define BLASINT {lib.int_type}" in src and meta["functions"][0]["name"] == funcs[0][0]
    ext = build_module(funcs, lib)
    a, b, out = _rand(3, 5), _rand(5, 2), np.zeros((3, 2), "float32")
    ext[funcs[0][0]](a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_without_a_library_the_patterns_do_not_offer_themselves(monkeypatch):
    from tvm.contrib.cblas import library, plugin
    from tvm.relax.backend import partition_for

    monkeypatch.setattr(library, "find_cblas", lambda: (None, "no CBLAS library (test)"))
    backend = plugin.make_backend()
    assert backend.unavailable == "no CBLAS library (test)"
    report = OffloadReport()
    mod = _matmul_module((4, 8), (8, 2))
    assert partition_for(mod, [backend], report) is mod
    assert report.partitions == []
    assert "no CBLAS library (test)" in report.rejections[0].reason


@requires_cblas
def test_bound_weights_reach_the_partition_as_arguments():
    w, c = _rand(6, 7), _rand(6)
    ex = _build(_matmul_module((4, 7), (6, 7), (6,), dense=True), params={"b": w, "c": c})
    # the graph passes run before partitioning: the transpose of the bound weight is folded
    # into a constant, so the partition is a matmul with a (constant) transposed weight
    assert [p.patterns for p in ex.offload_report.partitions] == [("cblas.matmul_bias",)]
    x = _rand(4, 7)
    np.testing.assert_allclose(_run(ex, x), x @ w.T + c, rtol=1e-5, atol=1e-5)


def test_identity_permute_is_not_taken_for_a_transpose():
    @I.ir_module
    class Identity:
        @R.function
        def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 8), "float32")):
            with R.dataflow():
                y = R.matmul(x, R.permute_dims(w, axes=[0, 1]))
                R.output(y)
            return y

    from tvm.relax.backend.matmul import check_float32_matmul

    report = OffloadReport()
    partition_for_cblas(Identity, report)
    # the dense pattern refuses it; the plain matmul takes the product, the permute stays out
    [part] = report.partitions
    assert part.patterns == ("cblas.matmul",) and part.bindings == ("y = relax.matmul",)
    dense = [p for p in get_backend("cblas").patterns if p.name == "cblas.dense"][0]
    block = Identity["main"].body.blocks[0]
    values = {b.var: b.value for b in block.bindings}
    m = dense.pattern.match(block.bindings[1].value, values.get)
    from tvm.relax.backend import PatternCheckContext

    ctx = PatternCheckContext(m, block.bindings[1].value,
                              {"matmul": block.bindings[1].value}, values, "cblas.dense")
    assert "not a transpose" in check_float32_matmul(ctx)
