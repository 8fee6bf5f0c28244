"""Operators with data-dependent output shapes (nonzero, unique, dynamic_strided_slice)
built with relax.build and run on the VM (for the suite's target, see conftest.py): the
shape is bound at run time by ``match_cast`` and the operators after them see it."""

import numpy as np
import pytest

from relax_op_harness import current_target, device, to_numpy

from tvm import relax, tir
from tvm.relax import TensorStructInfo, op

rng = np.random.default_rng(41)


def run(build_body, params, *inputs):
    """Build ``main(params) = build_body(bb, *params)`` and run it on ``inputs``."""
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build_body(bb, *params))
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), target=current_target())
    vm = relax.VirtualMachine(ex, device())
    return to_numpy(vm["main"](*inputs))


def var(name, shape, dtype="float32"):
    return relax.Var(name, TensorStructInfo(shape, dtype))


# -- nonzero -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2)])
def test_nonzero_feeds_later_operators(shape):
    x = var("x", list(shape))
    data = rng.integers(-1, 2, shape).astype("float32")

    def body(bb, x):
        nz = bb.emit(op.nonzero(x))
        return op.multiply(nz, relax.const(10, "int64"))

    np.testing.assert_array_equal(run(body, [x], data), np.array(np.nonzero(data)) * 10)


def test_nonzero_of_all_zeros_is_empty():
    x = var("x", [2, 3])
    out = run(lambda bb, x: op.nonzero(x), [x], np.zeros((2, 3), "float32"))
    assert out.shape == (2, 0) and out.dtype == np.int64


# -- unique ------------------------------------------------------------------------------------------
def onnxruntime_unique(x, sorted_, axis):
    """onnxruntime's Unique (the ONNX reference evaluator mishandles sorted=0)."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    kwargs = {"sorted": int(sorted_)}
    if axis is not None:
        kwargs["axis"] = axis
    outs = ["y", "indices", "inverse", "counts"]
    node = helper.make_node("Unique", ["x"], outs, **kwargs)
    graph = helper.make_graph(
        [node], "unique", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, [
            TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT64, TensorProto.INT64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("axis", [None, 1])
def test_unique_matches_onnxruntime(sorted_, axis):
    data = rng.integers(0, 3, (4, 5)).astype("float32")
    data[:, 3] = data[:, 1]  # a repeated column for axis=1
    x = var("x", [4, 5])
    out = run(lambda bb, x: op.unique(x, sorted_, True, True, True, axis), [x], data)
    for got, expected in zip(out, onnxruntime_unique(data, sorted_, axis)):
        np.testing.assert_array_equal(got, expected)


def test_unique_values_only_then_add():
    data = np.array([3, 1, 3, 2, 1], "int32")
    x = var("x", [5], "int32")

    def body(bb, x):
        u = bb.emit(op.unique(x))
        return op.add(u, u)

    np.testing.assert_array_equal(run(body, [x], data), np.unique(data) * 2)


# -- dynamic_strided_slice -----------------------------------------------------------------------------
SLICES = [
    ([1, -1], [4, 0], [1, -2]),
    ([-100, 0], [100, 6], [2, 1]),
    ([3, 0], [1, 6], [1, 1]),  # empty
    ([-1, 5], [-6, -7], [-1, -3]),
]


@pytest.mark.parametrize("begin,end,strides", SLICES)
def test_dynamic_strided_slice(begin, end, strides):
    n = tir.Var("n", "int64")
    x, b, e = var("x", [n, 6]), var("b", [2], "int64"), var("e", [2], "int64")
    s = var("s", [2], "int32")
    data = rng.standard_normal((5, 6)).astype("float32")

    def body(bb, x, b, e, s):
        y = bb.emit(op.dynamic_strided_slice(x, b, e, s))
        return op.exp(y)

    out = run(body, [x, b, e, s], data, np.array(begin), np.array(end),
              np.array(strides, "int32"))
    sl = tuple(slice(*t) for t in zip(begin, end, strides))
    np.testing.assert_allclose(out, np.exp(data[sl]), rtol=1e-6)


def test_dynamic_strided_slice_axes_and_zero_stride():
    x, b, e = var("x", [4, 5, 6]), var("b", [1], "int32"), var("e", [1], "int32")
    data = rng.standard_normal((4, 5, 6)).astype("float32")

    def body(bb, x, b, e):
        return op.dynamic_strided_slice(x, b, e, axes=[2])

    out = run(body, [x, b, e], data, np.array([2], "int32"), np.array([-1], "int32"))
    np.testing.assert_array_equal(out, data[:, :, 2:-1])
    s = var("s", [1], "int64")
    with pytest.raises(Exception, match="stride of axis 1 is 0"):
        run(lambda bb, x, b, e, s: op.dynamic_strided_slice(x, b, e, s, axes=[1]),
            [x, b, e, s], data, np.array([0], "int32"), np.array([3], "int32"),
            np.array([0], "int64"))


# -- the added operators through the whole pipeline (FuseOps, FuseTIR, default schedules) -----------
def test_added_operators_build_fused_and_run():
    import nd_reference as ref

    x, w = var("x", [1, 2, 4, 6, 6]), var("w", [4, 2, 3, 3, 3])
    g = var("g", [1, 3, 3, 2])
    xs = [rng.standard_normal((1, 2, 4, 6, 6)).astype("float32"),
          rng.standard_normal((4, 2, 3, 3, 3)).astype("float32"),
          rng.uniform(-1, 1, (1, 3, 3, 2)).astype("float32")]

    def body(bb, x, w, g):
        c = bb.emit(op.nn.relu(op.nn.conv3d(x, w, padding=1)))
        p = bb.emit(op.reshape(op.nn.max_pool3d(c, 2, 2), [1, 8, 3, 3]))
        s = bb.emit(op.image.grid_sample(p, g, "bilinear", "border"))
        e = bb.emit(op.einsum([s, s], "nchw,ndhw->ncd"))
        return op.atanh(op.tanh(op.multiply(e, relax.const(0.002, "float32"))))

    c = np.maximum(ref.conv_nd(xs[0], xs[1], (1, 1, 1), (1,) * 6, (1, 1, 1)), 0)
    p = ref.pool_nd(c, "max", (2, 2, 2), (2, 2, 2), (0,) * 6).reshape(1, 8, 3, 3)
    s = ref.grid_sample(p, xs[2], "bilinear", "border")
    expected = np.einsum("nchw,ndhw->ncd", s, s) * 0.002
    np.testing.assert_allclose(run(body, [x, w, g], *xs), expected, rtol=1e-3, atol=1e-4)


def test_one_hot_with_a_run_time_depth():
    """ONNX OneHot's depth tensor: tensor_to_scalar, then match_cast defines a symbolic depth."""
    idx, dep = var("i", [3], "int64"), var("d", [], "int64")

    def body(bb, idx, dep):
        s = bb.emit(op.call_pure_packed("vm.builtin.tensor_to_scalar", dep,
                                        sinfo_args=relax.PrimStructInfo("int64")))
        depth = bb.match_cast(s, relax.PrimStructInfo(value=tir.Var("depth", "int64")))
        return op.one_hot(idx, depth, (0.0, 1.0))

    out = run(body, [idx, dep], np.array([0, 2, -1]), np.array(4))
    np.testing.assert_array_equal(out, np.eye(4, dtype="float32")[[0, 2, 3]])
