"""Low-precision element types (float8, float4, int4, int2) through Relax: inference,
relax.build and the VM on llvm and c, and the ONNX Cast/CastLike/QuantizeLinear/
DequantizeLinear converters against onnx's reference implementation, bit for bit."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from vm_testing import llvm_available

import tvm.runtime
from tvm import relax
from tvm.relax import op as R

ml_dtypes = pytest.importorskip("ml_dtypes")

LOW = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
       "float4_e2m1fn", "int4", "uint4", "int2", "uint2"]


def _c_available() -> bool:
    try:
        from tvm.target.c.plugin import ensure_registered
    except ImportError:
        return False
    ensure_registered()
    return any(shutil.which(c) for c in ("cc", "gcc", "clang"))


TARGETS = [
    pytest.param("llvm", marks=pytest.mark.skipif(not llvm_available(), reason="no llvm target")),
    pytest.param("c", marks=pytest.mark.skipif(not _c_available(), reason="no c target / cc")),
]


@pytest.fixture(scope="module", autouse=True)
def _private_kernel_cache(tmp_path_factory):
    import os

    old = os.environ.get("TVM_CACHE_DIR")
    os.environ["TVM_CACHE_DIR"] = str(tmp_path_factory.mktemp("tvm-cache"))
    yield
    if old is None:
        os.environ.pop("TVM_CACHE_DIR", None)
    else:
        os.environ["TVM_CACHE_DIR"] = old


def _np(dtype):
    return np.dtype(getattr(ml_dtypes, dtype))


def _float_to_low_int(x: np.ndarray, dtype: str) -> np.ndarray:
    """The documented float -> int4/uint4/int2/uint2 rule: truncated toward zero, and 0 when
    the type cannot hold the result (NaN and infinities too).  ONNX leaves out-of-range
    values undefined and ml_dtypes' answer for them changed between releases (0.5 wraps
    through int8, 0.7 gives 0 as here), so ml_dtypes is the reference for in-range values
    only."""
    bits = 4 if dtype.endswith("4") else 2
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype.startswith("int") \
        else (0, (1 << bits) - 1)
    with np.errstate(all="ignore"):
        t = np.trunc(np.asarray(x, np.float64))
        t = np.where(np.isfinite(t) & (t >= lo) & (t <= hi), t, 0.0)
    return t.astype(np.int32).astype(_np(dtype))


def _cast_reference(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x.astype(dtype)`` with ml_dtypes, except float -> 2/4-bit integers (see above)."""
    if dtype in ("int4", "uint4", "int2", "uint2") and np.asarray(x).dtype.kind == "f":
        return _float_to_low_int(x, dtype)
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(_np(dtype))


def test_float_to_low_int_reference_agrees_with_ml_dtypes_in_range():
    x = np.arange(-8.75, 8.0, 0.25, dtype=np.float32)
    for dtype, lo, hi in (("int4", -8, 7), ("uint4", 0, 15), ("int2", -2, 1), ("uint2", 0, 3)):
        inside = x[(np.trunc(x) >= lo) & (np.trunc(x) <= hi)]
        assert np.array_equal(_float_to_low_int(inside, dtype).astype(np.int32),
                              inside.astype(_np(dtype)).astype(np.int32)), dtype


def _same(got: np.ndarray, ref: np.ndarray) -> bool:
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    if ref.dtype.name in ("int4", "uint4", "int2", "uint2"):
        return np.array_equal(got.astype(np.int32), ref.astype(np.int32))
    if ref.dtype.itemsize == 1:
        return np.array_equal(got.view(np.uint8), ref.view(np.uint8))
    return np.array_equal(got, ref, equal_nan=True)


def _run(mod, target, *args):
    ex = relax.build(mod, target=target)
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    out = vm["main"](*args)
    if isinstance(out, tvm.runtime.Tensor):
        return [out.numpy()]
    return [t.numpy() for t in out]


# ----------------------------------------------------------------------------- inference


@pytest.mark.parametrize("dtype", LOW)
def test_astype_infers_the_low_precision_dtype(dtype):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("main", [x]):
        y = bb.emit(R.astype(x, dtype))
        z = bb.emit(R.astype(y, "float16"))
        bb.emit_func_output(z)
    assert y.struct_info.dtype == dtype and z.struct_info.dtype == "float16"


def test_float_ops_accept_float8_and_integer_ops_reject_it():
    x = relax.Var("x", relax.TensorStructInfo((4,), "float8_e5m2"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(R.exp(x))
        assert y.struct_info.dtype == "float8_e5m2"
        with pytest.raises(Exception, match="float8_e5m2"):
            bb.emit(R.bitwise_not(x))
        bb.emit_func_output(y)


# ----------------------------------------------------------------------------- build + VM


def _round_trip_module(dtype):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((64,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            low = bb.emit(R.astype(x, dtype))
            back = bb.emit(R.astype(low, "float32"))
            twice = bb.emit(R.add(low, low))
            out = bb.emit_output(relax.Tuple([low, back, twice]))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn", "int4",
                                   "uint2", "float8_e8m0fnu"])
def test_astype_and_arithmetic_run_on_the_vm(target, dtype):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(56) * 8, [0.0, -0.0, np.nan, np.inf, -np.inf,
                                                      1e9, -1e9, 0.5]]).astype(np.float32)
    low, back, twice = _run(_round_trip_module(dtype), target, x)
    ref = _cast_reference(x, dtype)
    with np.errstate(all="ignore"):
        if dtype.startswith("float"):
            ref_twice = (ref.astype(np.float32) * 2).astype(_np(dtype))
        else:  # integers: added as int32 and wrapped
            ref_twice = (ref.astype(np.int32) * 2).astype(_np(dtype))
    assert _same(low, ref)
    assert _same(back, ref.astype(np.float32))
    assert _same(twice, ref_twice)


@pytest.mark.parametrize("target", TARGETS)
def test_low_precision_constants_and_inputs(target):
    c8 = np.arange(0, 64, 8, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    c4 = np.array([-8, -1, 0, 7, 3, -4, 5, 1], dtype=ml_dtypes.int4)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((8,), "float8_e5m2"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.add(R.astype(relax.const(c8), "float32"), R.astype(x, "float32")))
            b = bb.emit(R.multiply(a, R.astype(relax.const(c4), "float32")))
            out = bb.emit_output(relax.Tuple([b, relax.const(c4)]))
        bb.emit_func_output(out)
    xv = np.linspace(-3, 3, 8).astype(ml_dtypes.float8_e5m2)
    b, c = _run(bb.get(), target, xv)
    ref = (c8.astype(np.float32) + xv.astype(np.float32)) * c4.astype(np.float32)
    np.testing.assert_array_equal(b, ref)
    assert _same(c, c4)


@pytest.mark.skipif(not llvm_available(), reason="no llvm target")
def test_vm_rejects_a_tensor_of_another_float8_format():
    ex = relax.build(_round_trip_module("float8_e4m3fn"), target="llvm")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4,), "float8_e4m3fn"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(R.astype(x, "float32")))
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.runtime.cpu())
    with pytest.raises(Exception, match="float8_e4m3fn"):
        vm["main"](np.zeros(4, ml_dtypes.float8_e5m2))
    np.testing.assert_array_equal(vm["main"](np.ones(4, ml_dtypes.float8_e4m3fn)).numpy(), 1.0)
    assert ex is not None


# ----------------------------------------------------------------------------- ONNX

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tvm.relax.frontend.onnx import OnnxImportError, from_onnx  # noqa: E402

_ONNX = {"float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
         "float8_e5m2": TensorProto.FLOAT8E5M2, "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ,
         "float8_e8m0fnu": TensorProto.FLOAT8E8M0, "float4_e2m1fn": TensorProto.FLOAT4E2M1,
         "int4": TensorProto.INT4, "uint4": TensorProto.UINT4, "int2": TensorProto.INT2,
         "uint2": TensorProto.UINT2, "float32": TensorProto.FLOAT,
         "float16": TensorProto.FLOAT16}
_HARD = np.array([0.0, -0.0, 0.3, -0.3, 1.7, 100.0, 500.0, -500.0, 1e6, -1e6, 6e4, 7e4, 1e-7,
                  -1e-7, 0.124, 3.0, 2.0**-130, np.nan, np.inf, -np.inf], dtype=np.float32)


def _model(node, inputs, outputs, inits=(), opset=25):
    graph = helper.make_graph([node], "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, _ONNX[dtype], shape)


def _onnx_run(model, target, *inputs):
    return _run(from_onnx(model), target, *inputs)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                                   "float8_e5m2fnuz"])
@pytest.mark.parametrize("saturate", [0, 1])
def test_onnx_cast_to_float8_saturates_like_the_reference(target, dtype, saturate):
    node = helper.make_node("Cast", ["x"], ["y"], to=_ONNX[dtype], saturate=saturate)
    model = _model(node, [_vi("x", "float32", [_HARD.size])], [_vi("y", dtype, [_HARD.size])])
    (ref,) = ReferenceEvaluator(model).run(None, {"x": _HARD})
    (got,) = _onnx_run(model, target, _HARD)
    assert _same(got, ref.astype(_np(dtype)))


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [0, 1])
def test_onnx_cast_to_e8m0_rounds_by_round_mode(mode, saturate):
    if not llvm_available():
        pytest.skip("no llvm target")
    values = np.concatenate([_HARD, np.array([2.0**127 * 1.5, 1.5, 0.75, 2.0**-127, 3e38],
                                             np.float32)])
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0,
                            saturate=saturate, round_mode=mode)
    model = _model(node, [_vi("x", "float32", [values.size])],
                   [_vi("y", "float8_e8m0fnu", [values.size])])
    (ref,) = ReferenceEvaluator(model).run(None, {"x": values})
    (got,) = _onnx_run(model, "llvm", values)
    assert _same(got, ref)
    # an initializer input folds at import time to the same bits
    init = onnx.numpy_helper.from_array(values, "x")
    folded = _model(node, [], [_vi("y", "float8_e8m0fnu", [values.size])], [init])
    (got_folded,) = _onnx_run(folded, "llvm")
    assert _same(got_folded, ref)


def test_onnx_cast_rejects_an_unknown_round_mode():
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0, round_mode="odd")
    model = _model(node, [_vi("x", "float32", [2])], [_vi("y", "float8_e8m0fnu", [2])])
    with pytest.raises(OnnxImportError, match=r"round_mode must be one of.*got 'odd'"):
        from_onnx(model)


@pytest.mark.skipif(not llvm_available(), reason="no llvm target")
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "int4", "float4_e2m1fn"])
def test_onnx_initializers_of_low_precision_types_fold_like_compiled_casts(dtype):
    """Cast of an initializer folds at import time; the same Cast of a graph input is
    compiled; both give the bits of the reference."""
    src = _HARD if not dtype.startswith("int") else np.arange(-20, 20, 1.5, dtype=np.float32)
    low = onnx.numpy_helper.to_array(onnx.numpy_helper.from_array(
        np.asarray(src).astype(np.float32), "c"))
    node = helper.make_node("Cast", ["c"], ["y"], to=_ONNX[dtype])
    init = onnx.numpy_helper.from_array(low, "c")
    folded = _model(node, [], [_vi("y", dtype, [low.size])], [init])
    compiled = _model(node, [_vi("c", "float32", [low.size])], [_vi("y", dtype, [low.size])])
    (ref,) = ReferenceEvaluator(compiled).run(None, {"c": low})
    if dtype.startswith("int"):  # out-of-range values: the compiler's rule, not ml_dtypes'
        ref = _cast_reference(low, dtype)
    (a,) = _onnx_run(folded, "llvm")
    (b,) = _onnx_run(compiled, "llvm", low)
    assert _same(a, ref) and _same(b, ref)
    # a low-precision initializer is a constant of that dtype
    back = helper.make_node("Cast", ["q"], ["z"], to=TensorProto.FLOAT)
    q_init = onnx.numpy_helper.from_array(ref, "q")
    (c,) = _onnx_run(_model(back, [], [_vi("z", "float32", [ref.size])], [q_init]), "llvm")
    np.testing.assert_array_equal(c, ref.astype(np.float32))


@pytest.mark.skipif(not llvm_available(), reason="no llvm target")
@pytest.mark.parametrize("dtype, zp, saturate", [
    ("int4", -3, 1), ("uint4", 9, 1), ("int2", 1, 1), ("uint2", 2, 1), ("float4_e2m1fn", 0.5, 1),
    ("float8_e4m3fn", 0, 1), ("float8_e5m2", 0, 1), ("float8_e4m3fn", 0, 0),
    ("float8_e5m2", 0, 0),  # saturate applies to float8 outputs only
])
def test_onnx_quantize_and_dequantize_linear(dtype, zp, saturate):
    x = np.array([-1000.0, -7.3, -2.5, -0.4, 0.0, 0.5, 1.5, 2.5, 6.0, 13.1, 1000.0, 1e6],
                 np.float32)
    scale = np.array(0.5, np.float32)
    zero = np.array(zp).astype(_np(dtype))
    q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], saturate=saturate)
    dq = helper.make_node("DequantizeLinear", ["q_in", "s", "z"], ["y"])
    inits = [onnx.numpy_helper.from_array(scale, "s"), onnx.numpy_helper.from_array(zero, "z")]
    qm = _model(q, [_vi("x", "float32", [x.size])], [_vi("q", dtype, [x.size])], inits)
    (ref_q,) = ReferenceEvaluator(qm).run(None, {"x": x})
    (got_q,) = _onnx_run(qm, "llvm", x)
    assert _same(got_q, ref_q.astype(_np(dtype)))
    dm = _model(dq, [_vi("q_in", dtype, [x.size])], [_vi("y", "float32", [x.size])], inits)
    (ref_y,) = ReferenceEvaluator(dm).run(None, {"q_in": ref_q})
    (got_y,) = _onnx_run(dm, "llvm", ref_q)
    np.testing.assert_array_equal(got_y, ref_y)
