"""matmul, reductions, argmax/argmin and scans legalized and run on every target of the
suite (conftest.py), against numpy."""

import numpy as np
import pytest
from relax_op_harness import run_op

from tvm import tir
from tvm.relax import op

rng = np.random.default_rng(3)
n = tir.Var("n", "int64")


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 3)), ((2, 3, 4), (4,)), ((4,), (4,)),
])
def test_matmul_shapes(a_shape, b_shape):
    a = rng.random(a_shape).astype("float32")
    b = rng.random(b_shape).astype("float32")
    np.testing.assert_allclose(run_op(op.matmul, [a, b]), np.matmul(a, b), rtol=1e-5)


def test_matmul_out_dtype():
    a = rng.integers(-100, 100, (3, 8)).astype("int8")
    b = rng.integers(-100, 100, (8, 2)).astype("int8")
    out = run_op(lambda x, y: op.matmul(x, y, out_dtype="int32"), [a, b])
    np.testing.assert_array_equal(out, a.astype("int32") @ b.astype("int32"))


def test_matmul_symbolic():
    x = rng.random((5, 4)).astype("float32")
    np.testing.assert_allclose(run_op(op.matmul, [x, x.T], shapes=[[n, 4], [4, n]]), x @ x.T,
                               rtol=1e-5)


REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
          "variance": np.var, "std": np.std}


@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False), (-1, False)])
def test_reductions(name, axis, keepdims):
    x = rng.uniform(0.5, 1.5, (2, 3, 4)).astype("float32")
    out = run_op(lambda t: getattr(op, name)(t, axis=axis, keepdims=keepdims), [x])
    np.testing.assert_allclose(out, REDUCE[name](x, axis=axis, keepdims=keepdims), rtol=1e-5,
                               atol=1e-6)


def test_reductions_integer_and_symbolic():
    i = rng.integers(-9, 9, (3, 5)).astype("int32")
    np.testing.assert_array_equal(run_op(lambda t: op.sum(t, axis=1), [i]), i.sum(1))
    np.testing.assert_array_equal(run_op(lambda t: op.max(t, axis=0), [i]), i.max(0))
    x = rng.random((6, 3)).astype("float32")
    np.testing.assert_allclose(run_op(lambda t: op.mean(t, axis=0), [x], shapes=[[n, 3]]),
                               x.mean(0), rtol=1e-5)


@pytest.mark.parametrize("fn,ref", [(op.argmax, np.argmax), (op.argmin, np.argmin)])
def test_arg_reductions_first_index_wins(fn, ref):
    x = np.array([[1, 3, 3, 0], [2, 2, -1, -1], [5, 5, 5, 5]], "float32")
    np.testing.assert_array_equal(run_op(lambda t: fn(t, axis=1), [x]), ref(x, axis=1))
    np.testing.assert_array_equal(run_op(lambda t: fn(t, axis=0, keepdims=True), [x]),
                                  ref(x, axis=0, keepdims=True))
    np.testing.assert_array_equal(run_op(fn, [x]), ref(x))
    i = np.array([[-(2**31), -(2**31)]], "int32")
    np.testing.assert_array_equal(run_op(lambda t: fn(t, axis=1), [i]), ref(i, axis=1))
    inf = np.array([-np.inf, -np.inf, np.inf], "float32")
    np.testing.assert_array_equal(run_op(fn, [inf]), ref(inf))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scans(name, axis, exclusive):
    x = rng.uniform(0.5, 1.5, (3, 4)).astype("float32")
    ref = getattr(np, name)(x, axis=axis)
    if exclusive:
        flat_axis = 0 if axis is None else axis
        ident = 0.0 if name == "cumsum" else 1.0
        ref = np.concatenate([np.full_like(np.take(ref, [0], flat_axis), ident),
                              np.delete(ref, -1, flat_axis)], flat_axis)
    out = run_op(lambda t: getattr(op, name)(t, axis=axis, exclusive=exclusive), [x])
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_scan_dtype():
    b = rng.integers(0, 2, (7,)).astype("int8")
    np.testing.assert_array_equal(run_op(lambda t: op.cumsum(t, 0, dtype="int32"), [b]),
                                  np.cumsum(b, dtype="int32"))


def test_scan_symbolic():
    x = rng.random((5, 2)).astype("float32")
    np.testing.assert_allclose(run_op(lambda t: op.cumsum(t, 0), [x], shapes=[[n, 2]]),
                               np.cumsum(x, 0), rtol=1e-5)


def test_float_max_min_of_infinities_and_empty_axes():
    x = np.array([[-np.inf, -np.inf], [1.0, -np.inf]], "float32")
    np.testing.assert_array_equal(run_op(lambda t: op.max(t, axis=[1]), [x]), [-np.inf, 1.0])
    np.testing.assert_array_equal(run_op(lambda t: op.min(t, axis=[1]), [-x]), [np.inf, -1.0])
    empty = np.zeros((2, 0), "float32")
    np.testing.assert_array_equal(run_op(lambda t: op.max(t, axis=[1]), [empty]), [-np.inf] * 2)
    np.testing.assert_array_equal(run_op(lambda t: op.min(t, axis=[1]), [empty]), [np.inf] * 2)
    ints = np.zeros((2, 0), "int32")
    np.testing.assert_array_equal(run_op(lambda t: op.max(t, axis=[1]), [ints]),
                                  [np.iinfo("int32").min] * 2)
