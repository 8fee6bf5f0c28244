"""The oneDNN backend: numerics on the VM against numpy, checks, the report."""

from __future__ import annotations

import numpy as np
import pytest
from tvm.contrib.dnnl import find_dnnl, partition_for_dnnl
from tvm.relax import transform as T
from tvm.relax.backend import OffloadReport, get_backend
from tvm.script import ir as I
from tvm.script import relax as R

LIB, WHY = find_dnnl()
requires_dnnl = pytest.mark.skipif(LIB is None, reason=WHY)
RNG = np.random.default_rng(0)


def _rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def _matmul_module(sa, sb, bias=None, dense=False):
    from tvm import relax
    from tvm.relax.block_builder import BlockBuilder
    from tvm.relax.struct_info import TensorStructInfo

    bb = BlockBuilder()
    params = [relax.Var(n, TensorStructInfo(s, "float32"))
              for n, s in (("a", sa), ("b", sb), ("c", bias)) if s is not None]
    with bb.function("main", params):
        with bb.dataflow():
            rhs = bb.emit(relax.op.permute_dims(params[1])) if dense else params[1]
            y = bb.emit(relax.op.matmul(params[0], rhs))
            if bias is not None:
                y = bb.emit(relax.op.add(y, params[2]))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def _build_run(mod, *args):
    pytest.importorskip("tvm.target.llvm")
    import tvm
    from tvm import relax

    ex = relax.build(mod, offload=["dnnl"])
    out = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](*args)
    return ex, out.numpy()


def test_backend_is_registered_by_the_plugin():
    backend = get_backend("dnnl")
    assert [p.name for p in backend.patterns] == [
        "dnnl.conv2d_bias_relu", "dnnl.conv2d_bias", "dnnl.conv2d_relu", "dnnl.conv2d",
        "dnnl.dense_bias", "dnnl.matmul_bias", "dnnl.dense", "dnnl.matmul"]


CASES = [
    ("matmul2d", (5, 7), (7, 3), None, False),
    ("batch3d", (2, 5, 7), (2, 7, 3), None, False),
    ("rows3d_x_2d", (2, 5, 7), (7, 3), None, False),
    ("bias", (5, 7), (7, 3), (3,), False),
    ("batch_bias", (2, 5, 7), (2, 7, 3), (1, 3), False),
    ("dense_bias", (4, 7), (6, 7), (6,), True),
]


@requires_dnnl
@pytest.mark.parametrize("name,sa,sb,bias,dense", CASES, ids=[c[0] for c in CASES])
def test_numerics_against_numpy(name, sa, sb, bias, dense):
    args = [_rand(*sa), _rand(*sb)] + ([_rand(*bias)] if bias else [])
    ex, got = _build_run(_matmul_module(sa, sb, bias, dense), *args)
    assert [p.backend for p in ex.offload_report.partitions] == ["dnnl"]
    want = np.matmul(args[0], args[1].T if dense else args[1]) + (args[2] if bias else 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # a second call reuses the primitive made by the first
    import tvm
    from tvm import relax

    again = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](*args).numpy()
    np.testing.assert_allclose(again, want, rtol=1e-4, atol=1e-4)


@requires_dnnl
def test_exported_executable_carries_the_dnnl_library(tmp_path, monkeypatch):
    """Everything is offloaded (no host kernels): the file holds only the program and the
    dnnl library, and a process with only tvm-runtime runs it."""
    import tvm
    from tvm import relax
    from tvm.runtime import load_module
    from tvm.runtime.testing import run_exported_vm

    args = [_rand(4, 7), _rand(6, 7), _rand(6)]
    ex, want = _build_run(_matmul_module((4, 7), (6, 7), (6,), True), *args)
    assert not ex.kernel_lib.function_names
    ex.export_library(tmp_path / "model.so")
    got, imported = run_exported_vm(tmp_path / "model.so", args, tmp_path,
                                    {"TVM_CACHE_DIR": str(tmp_path)})
    np.testing.assert_array_equal(got[0], want)
    assert "tvm.relax" not in imported and "tvm.contrib.dnnl" not in imported
    # loading here finds the library in the same cache; a damaged cached copy is rewritten
    monkeypatch.setenv("TVM_CACHE_DIR", str(tmp_path))
    [cached] = (tmp_path / "dnnl").iterdir()
    good = cached.read_bytes()
    cached.write_bytes(good[:-1] + b"!")
    ex2 = load_module(tmp_path / "model.so")
    assert cached.read_bytes() == good
    out = relax.VirtualMachine(ex2, tvm.runtime.cpu())["main"](*args).numpy()
    np.testing.assert_array_equal(out, want)


@requires_dnnl
def test_merged_partition_and_argument_checks():
    @I.ir_module
    class Chain:
        @R.function
        def main(x: R.Tensor((4, 6), "float32"), w: R.Tensor((6, 6), "float32")):
            with R.dataflow():
                a = R.matmul(x, w)
                b = R.matmul(a, w)
                R.output(b)
            return b

    merged = T.MergeCompositeFunctions()(T.FuseOpsByPattern(get_backend("dnnl").patterns)(Chain))
    x, w = _rand(4, 6), _rand(6, 6)
    ex, got = _build_run(merged, x, w)
    np.testing.assert_allclose(got, x @ w @ w, rtol=1e-4, atol=1e-4)
    [ext] = [m for m in ex.kernel_lib.imported_modules if m.external_backend == "dnnl"]
    assert ext.get_source("c").count("tvm_dnnl_make(&site") == 2
    [name] = ext.function_names
    with pytest.raises(Exception, match="shape\\[1\\] = 7, expected 6"):
        ext[name](_rand(4, 7), w, np.zeros((4, 6), "float32"))


def test_checks_and_report():
    @I.ir_module
    class Mixed:
        @R.function
        def main(x: R.Tensor((4, 8), "float16"), w: R.Tensor((8, 4), "float16")):
            with R.dataflow():
                y = R.matmul(x, w)
                R.output(y)
            return y

    report = OffloadReport()
    assert partition_for_dnnl(Mixed, report) is Mixed
    assert "float16" in report.rejections[0].reason and "dnnl" in report.rejections[0].reason


def test_without_onednn_the_patterns_do_not_offer_themselves(monkeypatch):
    from tvm.contrib.dnnl import library, plugin

    monkeypatch.setattr(library, "find_dnnl", lambda: (None, "no oneDNN (test)"))
    backend = plugin.make_backend()
    assert backend.unavailable == "no oneDNN (test)"
    report = OffloadReport()
    from tvm.relax.backend import partition_for

    mod = _matmul_module((4, 8), (8, 2))
    assert partition_for(mod, [backend], report) is mod
    assert "no oneDNN (test)" in report.rejections[0].reason


def _conv_module(shape, wshape, bias, relu, **attrs):
    from tvm import relax
    from tvm.relax.block_builder import BlockBuilder
    from tvm.relax.struct_info import TensorStructInfo

    bb = BlockBuilder()
    params = [relax.Var(n, TensorStructInfo(s, "float32"))
              for n, s in (("x", shape), ("w", wshape), ("b", bias)) if s is not None]
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(params[0], params[1], **attrs))
            if bias is not None:
                y = bb.emit(relax.op.add(y, params[2]))
            if relu:
                y = bb.emit(relax.op.nn.relu(y))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


CONV_CASES = [
    ("plain", (1, 3, 9, 9), (8, 3, 3, 3), None, False, {}),
    ("bias_relu_pad", (2, 4, 8, 7), (16, 4, 3, 3), (1, 16, 1, 1), True, {"padding": 1}),
    ("bias_3d", (1, 8, 6, 6), (8, 8, 1, 1), (8, 1, 1), False, {}),
    ("relu_stride_asym", (1, 5, 11, 10), (6, 5, 3, 2), None, True,
     {"strides": (2, 3), "padding": (1, 0, 2, 1)}),
    ("dilated", (1, 4, 12, 12), (4, 4, 3, 3), (1, 4, 1, 1), False,
     {"dilation": 2, "padding": 2}),
    ("grouped", (1, 8, 7, 7), (12, 2, 3, 3), (1, 12, 1, 1), True,
     {"groups": 4, "padding": 1}),
    ("depthwise", (1, 16, 10, 10), (16, 1, 3, 3), (1, 16, 1, 1), True,
     {"groups": 16, "strides": 2, "padding": 1}),
    ("nhwc_ohwi", (2, 9, 8, 4), (6, 3, 3, 4), (1, 1, 1, 6), True,
     {"padding": (1, 0, 1, 2), "data_layout": "NHWC", "kernel_layout": "OHWI"}),
    ("nhwc_hwio_stride", (1, 11, 10, 5), (3, 3, 5, 8), (8,), False,
     {"strides": 2, "data_layout": "NHWC", "kernel_layout": "HWIO"}),
    ("nhwc_grouped_ohwi", (1, 7, 7, 8), (12, 3, 3, 2), None, True,
     {"groups": 4, "padding": 1, "data_layout": "NHWC", "kernel_layout": "OHWI"}),
    ("nhwc_depthwise_hwio", (1, 10, 10, 16), (3, 3, 1, 16), (1, 1, 1, 16), True,
     {"groups": 16, "padding": 1, "dilation": 2, "data_layout": "NHWC",
      "kernel_layout": "HWIO"}),
]


@requires_dnnl
@pytest.mark.parametrize("name,shape,wshape,bias,relu,attrs", CONV_CASES,
                         ids=[c[0] for c in CONV_CASES])
def test_conv2d_against_the_host_compiler(name, shape, wshape, bias, relu, attrs):
    import tvm
    from tvm import relax

    mod = _conv_module(shape, wshape, bias, relu, **attrs)
    args = [_rand(*shape), _rand(*wshape)] + ([_rand(*bias)] if bias else [])
    ex, got = _build_run(mod, *args)
    want_name = "dnnl.conv2d" + ("_bias" if bias else "") + ("_relu" if relu else "")
    assert [p.patterns for p in ex.offload_report.partitions] == [(want_name,)]
    host = relax.build(mod)
    want = relax.VirtualMachine(host, tvm.runtime.cpu())["main"](*args).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # partitioned first, the model keeps its own layout (NCHW cases run as NCHW primitives)
    kept = relax.build(partition_for_dnnl(mod))
    [ext] = [m for m in kept.kernel_lib.imported_modules if m.external_backend == "dnnl"]
    layout = attrs.get("data_layout", "NCHW")
    assert f"dnnl_{layout.lower()}" in ext.get_source("c")
    np.testing.assert_allclose(relax.VirtualMachine(kept, tvm.runtime.cpu())["main"](
        *args).numpy(), want, rtol=1e-4, atol=1e-4)
    # weights are arguments: new values are reordered again, not taken from the first call
    args[1] = _rand(*wshape)
    again = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](*args).numpy()
    want = relax.VirtualMachine(host, tvm.runtime.cpu())["main"](*args).numpy()
    np.testing.assert_allclose(again, want, rtol=1e-4, atol=1e-4)


def test_conv2d_checks_say_why_a_convolution_stays_on_the_host():
    from tvm import relax
    from tvm.relax.block_builder import BlockBuilder
    from tvm.relax.struct_info import TensorStructInfo

    bb = BlockBuilder()
    x = relax.Var("x", TensorStructInfo((1, 8, 8, 4), "float32"))
    w = relax.Var("w", TensorStructInfo((8, 4, 3, 3), "float32"))
    h = relax.Var("h", TensorStructInfo((1, 4, 8, 8), "float16"))
    wh = relax.Var("wh", TensorStructInfo((8, 4, 3, 3), "float16"))
    x2 = relax.Var("x2", TensorStructInfo((1, 4, 8, 8), "float32"))
    w2 = relax.Var("w2", TensorStructInfo((8, 4, 3, 3), "float32"))
    b2 = relax.Var("b2", TensorStructInfo((1, 1, 6, 6), "float32"))
    with bb.function("main", [x, w, h, wh, x2, w2, b2]):
        with bb.dataflow():
            nhwc = bb.emit(relax.op.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="OIHW"))
            half = bb.emit(relax.op.nn.conv2d(h, wh))
            conv = bb.emit(relax.op.nn.conv2d(x2, w2))
            rowbias = bb.emit(relax.op.add(conv, b2))
            out = bb.emit_output(relax.Tuple([nhwc, half, rowbias]))
        bb.emit_func_output(out)
    report = OffloadReport()
    partition_for_dnnl(bb.get(), report)
    reasons = {r.binding: r.reason for r in report.rejections}
    assert "layouts ('NHWC', 'OIHW', 'NHWC')" in reasons[nhwc.name_hint]
    assert "float16" in reasons[half.name_hint]
    assert "channel axis" in reasons[rowbias.name_hint]
    # the add with a spatial bias is refused, the convolution under it is still taken
    assert [p.patterns for p in report.partitions] == [("dnnl.conv2d",)]


@requires_dnnl
def test_a_constant_weight_is_prepared_once_and_threads_get_their_own_primitive():
    """A weight every call passes as the same constant is reordered when the primitive is
    made (RunCodegen's constant_params); each thread count gets a primitive of its own."""
    pytest.importorskip("tvm.target.llvm")
    import tvm
    from tvm import relax

    w = _rand(16, 8, 3, 3)
    mod = _conv_module((1, 8, 10, 10), (16, 8, 3, 3), (1, 16, 1, 1), True, padding=1)
    bound = relax.build(mod, offload=["dnnl"], params={"w": w})
    [ext] = [m for m in bound.kernel_lib.imported_modules if m.external_backend == "dnnl"]
    assert "1, 1, 1, DATA(1));" in ext.get_source("c")  # bias, relu, w_const; the weight
    host = relax.build(mod)
    x, b = _rand(1, 8, 10, 10), _rand(1, 16, 1, 1)
    want = relax.VirtualMachine(host, tvm.runtime.cpu())["main"](x, w, b).numpy()
    vm = relax.VirtualMachine(bound, tvm.runtime.cpu())
    try:
        for n in (1, 2, 1):
            tvm.runtime.set_num_threads(n)
            np.testing.assert_allclose(vm["main"](x, b).numpy(), want, rtol=1e-4, atol=1e-4)
    finally:
        tvm.runtime.set_num_threads(None)
    # the same model with the weight as an argument reorders it on every call
    unbound = relax.build(mod, offload=["dnnl"])
    [ext] = [m for m in unbound.kernel_lib.imported_modules if m.external_backend == "dnnl"]
    assert "1, 1, 0, DATA(1));" in ext.get_source("c")


@requires_dnnl
def test_relax_build_converts_to_the_layout_the_backend_asks_for():
    """dnnl asks for NHWC/OHWI: relax.build(offload=["dnnl"]) converts the NCHW model before
    partitioning, and the results are those of the NCHW model on the host."""
    import tvm
    from tvm import relax

    mod = _conv_module((1, 4, 9, 9), (8, 4, 3, 3), (1, 8, 1, 1), True, padding=1)
    args = [_rand(1, 4, 9, 9), _rand(8, 4, 3, 3), _rand(1, 8, 1, 1)]
    ex, got = _build_run(mod, *args)
    [ext] = [m for m in ex.kernel_lib.imported_modules if m.external_backend == "dnnl"]
    assert "dnnl_nhwc" in ext.get_source("c") and "dnnl_ohwi" in ext.get_source("c")
    want = relax.VirtualMachine(relax.build(mod), tvm.runtime.cpu())["main"](*args).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
