"""relax.qnn: integer operators against float references, their TIR computes in integers,
StructInfo errors name the op and attribute, and calls round-trip through TVMScript."""

import numpy as np
import pytest
from graph_pass_testing import requires_host_jit

import tvm.runtime
from tvm import relax, tir
from tvm.ffi import assert_structural_equal
from tvm.relax import StructInfoError, TensorStructInfo, op
from tvm.relax.topi.qnn import fixed_point_multiplier, rounding_shift_np
from tvm.relax.transform import LegalizeOps
from tvm.script import relax as R

qnn = op.qnn
rng = np.random.default_rng(15)


def _mod(params, make):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return bb.get()


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    return vm["main"](*args).numpy()


def _var(name, shape, dtype):
    return relax.Var(name, TensorStructInfo(list(shape), dtype))


# -- fixed point -----------------------------------------------------------------------------
@pytest.mark.parametrize("real", [0.5, 0.3, 1e-4, 2.7, 1.0, 3e-10, 0.0, 1000.0])
def test_fixed_point_multiplier_represents_the_ratio(real):
    m, s = fixed_point_multiplier(real)
    assert 1 <= s <= 62
    assert m == 0 or 2**30 <= m < 2**31
    if real >= 2**-31:
        assert abs(m * 2.0**-s - real) <= real * 2**-30


def test_rounding_shift_rounds_half_to_even():
    p = np.array([5, 6, 7, 10, -5, -6, -7, -10, 3, -3], np.int64)  # / 4
    expected = np.rint(p / 4).astype(np.int64)
    np.testing.assert_array_equal(rounding_shift_np(p, 2), expected)


def test_fixed_point_rejects_bad_ratios():
    with pytest.raises(ValueError, match="requantize: the scale ratio must be finite"):
        fixed_point_multiplier(-1.0)
    with pytest.raises(ValueError, match="too large"):
        fixed_point_multiplier(2.0**31)


# -- kernels against float references ------------------------------------------------------------
@requires_host_jit
def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0, 0.25, 12.7], "float32")
    mod = _mod([_var("x", [9], "float32")], lambda v: qnn.quantize(v, 1.0, 0))
    np.testing.assert_array_equal(_run(mod, x), [0, 2, 2, 0, -2, 127, -128, 0, 13])
    mod = _mod([_var("x", [9], "float32")],
               lambda v: qnn.quantize(v, 0.5, 128, out_dtype="uint8"))
    np.testing.assert_array_equal(_run(mod, x), np.clip(np.rint(x / 0.5) + 128, 0, 255))


@requires_host_jit
def test_per_axis_quantize_dequantize_roundtrip():
    x = rng.uniform(-1.2, 1.2, (2, 3, 4)).astype("float32")  # inside every channel's range
    scale, zp = [0.02, 0.01, 0.03], [3, -4, 0]
    mod = _mod([_var("x", x.shape, "float32")], lambda v: qnn.dequantize(
        qnn.quantize(v, scale, zp, axis=1), scale, zp, axis=1))
    back = _run(mod, x)
    s = np.array(scale, "float32").reshape(1, 3, 1)
    assert np.all(np.abs(back - x) <= s / 2 + 1e-6)


@requires_host_jit
def test_requantize_matches_float_rounding_per_channel():
    acc = rng.integers(-200000, 200000, (2, 4, 16)).astype("int32")
    in_scale = [0.0011, 0.0007, 0.0003, 0.002]
    mod = _mod([_var("a", acc.shape, "int32")], lambda v: qnn.requantize(
        v, in_scale, 0, 0.05, -3, axis=1, out_dtype="int8"))
    ours = _run(mod, acc)
    ratio = np.array(in_scale).reshape(1, 4, 1) / np.float64(np.float32(0.05))
    ref = np.clip(np.rint(acc * ratio) - 3, -128, 127)
    assert np.abs(ours.astype(np.int64) - ref).max() <= 1
    assert (ours == ref).mean() > 0.99


@requires_host_jit
def test_requantize_out_min_is_a_fused_relu():
    x = np.arange(-20, 20, dtype="int32")
    mod = _mod([_var("a", [40], "int32")], lambda v: qnn.requantize(
        v, 1.0, 0, 2.0, 10, out_dtype="uint8", out_min=10))
    np.testing.assert_array_equal(_run(mod, x), np.maximum(np.rint(x / 2) + 10, 10))


def _float_conv(x, w, zx, zw, strides, pads, groups):
    from tvm.relax.op.nn.conv import conv2d_nchw

    x = x.astype(np.int64) - zx
    w = w.astype(np.int64) - np.asarray(zw, np.int64).reshape(-1, 1, 1, 1)
    return conv2d_nchw(x.astype("float64"), w.astype("float64"), strides, pads, (1, 1), groups,
                       np.float64)


@requires_host_jit
@pytest.mark.parametrize("zx,zw,groups", [(0, 0, 1), (128, 0, 1), (3, [1, -2, 0, 4], 2),
                                          (200, 5, 1)])
def test_qconv2d_equals_the_real_convolution(zx, zw, groups):
    x = rng.integers(0, 256, (1, 4, 7, 6)).astype("uint8")
    w = rng.integers(-128, 128, (4, 4 // groups, 3, 3)).astype("int8")
    mod = _mod([_var("x", x.shape, "uint8"), _var("w", w.shape, "int8")],
               lambda a, b: qnn.conv2d(a, b, zx, zw, strides=(2, 1), padding=1, groups=groups))
    ours = _run(mod, x, w)
    assert ours.dtype == np.int32
    np.testing.assert_array_equal(ours, _float_conv(x, w, zx, zw, (2, 1), (1, 1, 1, 1), groups))


@requires_host_jit
@pytest.mark.parametrize("transpose_b", [False, True])
def test_qmatmul_batched_and_dense(transpose_b):
    a = rng.integers(0, 256, (2, 3, 9)).astype("uint8")
    b = rng.integers(-128, 128, (5, 9) if transpose_b else (2, 9, 5)).astype("int8")
    zb = [1, 0, -3, 7, 2]
    mod = _mod([_var("a", a.shape, "uint8"), _var("b", b.shape, "int8")],
               lambda x, y: qnn.matmul(x, y, 120, zb, transpose_b=transpose_b))
    bb = b.astype(np.int64)
    bb = np.swapaxes(bb, -1, -2) if transpose_b else bb
    ref = np.matmul(a.astype(np.int64) - 120, bb - np.array(zb))
    np.testing.assert_array_equal(_run(mod, a, b), ref)


@requires_host_jit
def test_qadd_qmul_qconcat_against_float():
    a = rng.integers(-128, 128, (3, 8)).astype("int8")
    b = rng.integers(0, 256, (8,)).astype("uint8")
    va, vb = _var("a", a.shape, "int8"), _var("b", b.shape, "uint8")
    fa, fb = (a.astype(np.float64) + 3) * np.float32(0.05), (b.astype(np.float64) - 128) * \
        np.float32(0.1)
    so = np.float64(np.float32(0.12))
    add = _run(_mod([va, vb], lambda x, y: qnn.add(x, y, 0.05, -3, 0.1, 128, 0.12, 5)), a, b)
    ref = np.clip(np.rint((fa + fb) / so) + 5, -128, 127)
    assert np.abs(add - ref).max() <= 1 and (add == ref).mean() > 0.95
    mul = _run(_mod([va, vb], lambda x, y: qnn.multiply(x, y, 0.05, -3, 0.1, 128, 0.12, 5)),
               a, b)
    ref = np.clip(np.rint(fa * fb / so) + 5, -128, 127)
    assert np.abs(mul - ref).max() <= 1 and (mul == ref).mean() > 0.95
    c = rng.integers(-128, 128, (3, 2)).astype("int8")
    vc = _var("c", c.shape, "int8")
    cat = _run(_mod([va, vc], lambda x, y: qnn.concat([x, y], [0.05, 0.2], [-3, 0], 0.2, 0,
                                                       axis=1)), a, c)
    ref_a = np.clip(np.rint((a.astype(np.float64) + 3) * np.float32(0.05) / np.float32(0.2)),
                    -128, 127)
    assert np.abs(cat[:, :8] - ref_a).max() <= 1
    np.testing.assert_array_equal(cat[:, 8:], c)  # same parameters: copied


# -- the TIR computes in integers ----------------------------------------------------------------
def _float_dtypes(func):
    """dtypes of floats anywhere in a PrimFunc (its printed form names every dtype)."""
    text = func.script()
    return [w for w in ("float16", "float32", "float64") if w in text]


@pytest.mark.parametrize("make", [
    lambda x, w: qnn.requantize(qnn.conv2d(x, w, 128, [1, 2, 3, 4], padding=1), 0.01, 0, 0.1,
                                3),
    lambda x, w: qnn.matmul(x, qnn.requantize(
        relax.const(np.ones((1, 4, 3, 3), "int32")), 0.5, 0, 0.25, 0, out_dtype="int8"), 3, 1),
    lambda x, w: qnn.add(x, x, 0.1, 128, 0.1, 128, 0.3, 0, out_dtype="uint8"),
    lambda x, w: qnn.multiply(x, x, 0.1, 128, 0.1, 128, 0.3, 0, out_dtype="int8"),
    lambda x, w: qnn.concat([x, x], [0.1, 0.2], [128, 0], 0.2, 0, axis=1, out_dtype="uint8"),
])
def test_integer_kernels_have_no_floats(make):
    x, w = _var("x", [1, 4, 3, 3], "uint8"), _var("w", [4, 4, 3, 3], "int8")
    mod = LegalizeOps()(_mod([x, w], make))
    funcs = [f for gv, f in mod.functions.items() if isinstance(f, tir.PrimFunc)]
    assert funcs
    for f in funcs:
        assert not _float_dtypes(f), f.script()


def test_qconv2d_drops_zero_point_terms_that_are_zero():
    x, w = _var("x", [1, 4, 5, 5], "int8"), _var("w", [4, 4, 3, 3], "int8")
    mod = LegalizeOps()(_mod([x, w], lambda a, b: qnn.conv2d(a, b, 0, 0)))
    (func,) = [f for f in mod.functions.values() if isinstance(f, tir.PrimFunc)]
    text = func.script()
    assert "qconv_acc" in text and "xsum" not in text and "wsum" not in text


# -- inference and errors --------------------------------------------------------------------
def _infer(call):
    return relax.BlockBuilder().normalize(call).struct_info


def test_struct_info():
    x = _var("x", [1, 4, 8, 8], "uint8")
    w = relax.const(np.zeros((6, 4, 3, 3), "int8"))
    s = _infer(qnn.conv2d(x, w, 1, 0, strides=2, padding=1))
    assert s.dtype == "int32" and [int(d) for d in s.shape_values] == [1, 6, 4, 4]
    s = _infer(qnn.dense(_var("a", [2, 7], "int8"), _var("b", [5, 7], "int8")))
    assert s.dtype == "int32" and [int(d) for d in s.shape_values] == [2, 5]
    s = _infer(qnn.quantize(_var("f", [3, 4], "float32"), 0.1, 3, out_dtype="uint8"))
    assert s.dtype == "uint8"
    s = _infer(qnn.concat([_var("p", [2, 3], "int8"), _var("q", [2, 5], "int8")], [1.0, 2.0],
                          [0, 0], 1.0, axis=1))
    assert [int(d) for d in s.shape_values] == [2, 8]


@pytest.mark.parametrize("make,match", [
    (lambda: qnn.quantize(_var("f", [3], "float32"), -0.1), "relax.qnn.quantize: scale must be"),
    (lambda: qnn.quantize(_var("f", [3], "float32"), 0.1, 300), "zero_point 300 is outside"),
    (lambda: qnn.quantize(_var("f", [3], "float32"), 0.1, 0, out_dtype="float32"),
     "out_dtype must be one of"),
    (lambda: qnn.requantize(_var("a", [3], "int32"), 1.0, 0, 1.0, out_min=10, out_max=5),
     "out_min 10 and out_max 5"),
    (lambda: qnn.conv2d(_var("x", [1, 4, 5, 5], "int8"), _var("w", [4, 4, 3, 3], "int8"),
                        [1, 2]), "input_zero_point must be one value"),
])
def test_constructor_errors_name_op_and_attribute(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("make,match", [
    (lambda: qnn.quantize(_var("f", [2, 3], "float32"), [0.1, 0.2], axis=1),
     "scale has 2 values but axis 1 has 3 channels"),
    (lambda: qnn.dequantize(_var("f", [3], "float32"), 0.1), "must have an 8/16/32-bit integer"),
    (lambda: qnn.conv2d(_var("x", [1, 4, 5, 5], "float32"), _var("w", [4, 4, 3, 3], "int8")),
     "argument 'data' must be int8 or uint8"),
    (lambda: qnn.conv2d(_var("x", [1, 4, 5, 5], "int8"), _var("w", [4, 4, 3, 3], "int8"),
                        0, [1, 2, 3]), "kernel_zero_point has 3 values but the kernel has 4"),
    (lambda: qnn.conv2d(_var("x", [1, 4, 5, 5], "int8"), _var("w", [4, 4, 3, 3], "int8"), 200),
     "input_zero_point 200 is outside the range"),
    (lambda: qnn.matmul(_var("a", [3, 4], "int8"), _var("b", [5, 2], "int8")),
     "reduction dimensions differ"),
    (lambda: qnn.add(_var("a", [3], "int32"), _var("b", [3], "int8"), 1.0, 0, 1.0, 0, 1.0),
     "argument 'lhs' must be int8 or uint8"),
])
def test_inference_errors_name_op_and_argument(make, match):
    with pytest.raises(StructInfoError, match=match) as info:
        _infer(make())
    assert "relax.qnn." in str(info.value)


def test_calls_roundtrip_through_tvmscript():
    x, w = _var("x", [1, 4, 5, 5], "uint8"), _var("w", [4, 4, 3, 3], "int8")

    def body(a, b):
        acc = qnn.conv2d(a, b, 128, [1, 2, 3, 4], padding=1)
        q = qnn.requantize(acc, [0.01, 0.02, 0.03, 0.04], 0, 0.1, 3, axis=1, out_min=3)
        return qnn.add(q, q, 0.1, 3, 0.1, 3, 0.2, 0)

    mod = _mod([x, w], body)
    assert_structural_equal(R.parse(mod.script()), mod)
    legal = LegalizeOps()(mod)
    assert_structural_equal(R.parse(legal.script()), legal)


def test_calls_roundtrip_through_json():
    from tvm.ffi import from_json, to_json

    x = _var("x", [1, 4, 5, 5], "uint8")
    mod = _mod([x], lambda a: qnn.requantize(
        qnn.conv2d(a, relax.const(np.ones((4, 4, 3, 3), "int8")), 128, [1, 2, 3, 4], padding=1),
        [0.01, 0.02, 0.03, 0.04], 0, 0.1, 3, axis=1))
    assert_structural_equal(from_json(to_json(mod)), mod)


# -- activations shifted to the signedness of the target's dot product -------------------------
class _CPU:
    def __init__(self, want):
        self.int8_activation = want


@pytest.fixture
def cpu_plugin():
    """A plugin answering tvm_tir_cpu_info for kind "llvm" with an ``int8_activation``."""
    from tvm.ffi.plugin import hookimpl, register_plugin, unregister_plugin

    state = {"want": None}

    class Plugin:
        @hookimpl(tryfirst=True)
        def tvm_tir_cpu_info(self, target):
            return _CPU(state["want"]) if target.kind_name == "llvm" else None

    register_plugin(Plugin(), "test_int8_cpu")
    yield state
    unregister_plugin("test_int8_cpu")


@requires_host_jit  # an llvm Target
@pytest.mark.parametrize("want,adt,shift", [("uint8", "int8", 128), ("int8", "uint8", -128),
                                            ("uint8", "uint8", 0), (None, "int8", 0)])
def test_activations_shift_to_the_dot_products_signedness(cpu_plugin, want, adt, shift):
    from tvm.ir.target import Target
    from tvm.relax.op.qnn.linear import activation_shift

    cpu_plugin["want"] = want
    assert activation_shift(adt, "int8") == 0  # no current target: no shift
    with Target("llvm"):
        assert activation_shift(adt, "int8") == shift
        assert activation_shift(adt, "uint8") == 0  # uint8 weights: never
        x = relax.Var("x", TensorStructInfo([2, 8], adt))
        w = relax.const(np.ones((4, 8), "int8"))
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            y = bb.emit(op.qnn.dense(x, w, input_zero_point=1))
            bb.emit_func_output(y)
        text = LegalizeOps()(bb.get()).script()
    assert ("qshift" in text) == bool(shift)
    if shift:
        # the shifted activation, and its zero point moved with it: -(1 + shift) * sum(w)
        assert f'"{"uint8" if shift > 0 else "int8"}"' in text and str(-(1 + shift)) in text


@requires_host_jit
@pytest.mark.parametrize("want,adt", [("uint8", "int8"), ("int8", "uint8")])
def test_shifted_activations_keep_the_numbers(cpu_plugin, want, adt):
    cpu_plugin["want"] = want
    rng = np.random.default_rng(0)
    lo, hi = (-128, 127) if adt == "int8" else (0, 255)
    zx = 5 if adt == "int8" else 200
    x = relax.Var("x", TensorStructInfo([1, 8, 6, 6], adt))
    w = rng.integers(-128, 128, (16, 8, 3, 3)).astype("int8")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(op.qnn.conv2d(x, relax.const(w), input_zero_point=zx, padding=1))
            y = bb.emit_output(op.qnn.dense(bb.emit(op.reshape(
                op.qnn.requantize(c, 0.001, 0, 1.0, 0, out_dtype=adt), [1, -1])),
                relax.const(rng.integers(-128, 128, (8, 16 * 36)).astype("int8")),
                input_zero_point=0))
        bb.emit_func_output(y)
    mod = bb.get()
    xv = rng.integers(lo, hi + 1, (1, 8, 6, 6)).astype(adt)
    ex = relax.build(mod, target="llvm")
    got = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](xv).numpy()
    from tvm.relax.transform import FoldConstant
    from tvm.relax.vm import bind_params

    ref = FoldConstant(evaluator="numpy", max_elements=1 << 30)(bind_params(mod, {"x": xv}))
    body = ref["main"].body
    value = body.body if hasattr(body.body, "data") else body.blocks[-1].bindings[-1].value
    np.testing.assert_array_equal(got, np.asarray(value.data))
