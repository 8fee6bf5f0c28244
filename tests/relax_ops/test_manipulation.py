"""Data movement, indexing and creation operators legalized and run on every target of the
suite (conftest.py), against numpy."""

import numpy as np
import pytest
from relax_op_harness import run_op

from tvm import relax, tir
from tvm.relax import op

rng = np.random.default_rng(11)
n = tir.Var("n", "int64")
X = rng.random((2, 3, 4)).astype("float32")


def check(make, inputs, expected, **kw):
    out = run_op(make, inputs, **kw)
    if isinstance(expected, tuple):
        assert isinstance(out, tuple) and len(out) == len(expected)
        for o, e in zip(out, expected):
            np.testing.assert_array_equal(o, e)
    else:
        assert out.shape == np.shape(expected)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("make,ref", [
    (lambda x: op.reshape(x, [4, -1]), lambda x: x.reshape(4, -1)),
    (lambda x: op.reshape(x, [24]), lambda x: x.reshape(24)),
    (lambda x: op.permute_dims(x), lambda x: x.transpose()),
    (lambda x: op.permute_dims(x, [1, 2, 0]), lambda x: x.transpose(1, 2, 0)),
    (lambda x: op.expand_dims(x, [0, -1]), lambda x: x[None, ..., None]),
    (op.flatten, np.ravel),
    (lambda x: op.tile(x, [2, 1, 3]), lambda x: np.tile(x, [2, 1, 3])),
    (lambda x: op.tile(x, [2]), lambda x: np.tile(x, [2])),
    (lambda x: op.tile(x, [2, 1, 1, 2]), lambda x: np.tile(x, [2, 1, 1, 2])),
    (lambda x: op.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, 1)),
    (lambda x: op.repeat(x, 3), lambda x: np.repeat(x, 3)),
    (lambda x: op.flip(x, -1), lambda x: np.flip(x, -1)),
    (lambda x: op.broadcast_to(op.sum(x, 0, keepdims=True), [5, 3, 4]),
     lambda x: np.broadcast_to(x.sum(0, keepdims=True), (5, 3, 4))),
])
def test_movement(make, ref):
    out = run_op(make, [X])
    np.testing.assert_allclose(out, ref(X), rtol=1e-6)


def test_squeeze():
    x = rng.random((1, 3, 1)).astype("float32")
    check(op.squeeze, [x], x.squeeze())
    check(lambda t: op.squeeze(t, [-1]), [x], x.squeeze(-1))


def test_reshape_symbolic():
    x = rng.random((5, 6)).astype("float32")
    check(lambda t: op.reshape(t, [-1, 3]), [x], x.reshape(-1, 3), shapes=[[n, 6]])


def test_concat_and_split():
    a, b = X, rng.random((2, 1, 4)).astype("float32")
    check(lambda s, t: op.concat([s, t], axis=1), [a, b], np.concatenate([a, b], 1))
    check(lambda s, t: op.concat([s, t], axis=None), [a, b], np.concatenate([a.ravel(), b.ravel()]))
    check(lambda s: op.split(s, 2, axis=2), [a], tuple(np.split(a, 2, 2)))
    check(lambda s: op.split(s, [1, 5], axis=1), [a], tuple(np.split(a, [1, 5], 1)))
    check(lambda s: op.split(s, 2, axis=1), [a], (a[:, :2], a[:, 2:]))
    x = rng.random((5, 2)).astype("float32")
    out = run_op(lambda s, t: op.concat([s, t], 0), [x, x], shapes=[[n, 2], [n, 2]])
    np.testing.assert_array_equal(out, np.concatenate([x, x]))


@pytest.mark.parametrize("axes,begin,end,strides", [
    ([1], [1], [3], None),
    ([0, 2], [-1, 3], [-3, 0], [-1, -2]),
    ([2], [-100], [100], [3]),
    ([1, 2], [2, 1], [0, 4], [1, 1]),  # empty
    ([0], [0], [2**63 - 1], [1]),
])
def test_strided_slice(axes, begin, end, strides):
    index = [slice(None)] * 3
    for a, b, e, s in zip(axes, begin, end, strides or [1] * len(axes)):
        index[a] = slice(b, e, s)
    check(lambda t: op.strided_slice(t, axes, begin, end, strides), [X], X[tuple(index)])


def test_strided_slice_symbolic():
    x = rng.random((7, 3)).astype("float32")
    check(lambda t: op.strided_slice(t, [0], [1], [-1], [2]), [x], x[1:-1:2], shapes=[[n, 3]])


@pytest.mark.parametrize("mode", ["fast", "clip", "wrap"])
def test_take(mode):
    idx = np.array([[0, 2], [-1, 1]], "int64") if mode == "fast" else np.array([[0, 5], [-4, 1]])
    np_mode = {"fast": "raise", "clip": "clip", "wrap": "wrap"}[mode]
    check(lambda t, i: op.take(t, i, axis=1, mode=mode), [X, idx], np.take(X, idx, 1, mode=np_mode))
    check(lambda t, i: op.take(t, i, mode=mode), [X, idx.astype("int32")],
          np.take(X, idx, mode=np_mode))
    scalar = np.array(1, "int64")
    check(lambda t, i: op.take(t, i, axis=2, mode=mode), [X, scalar], X[:, :, 1])


def test_gather_elements_and_nd():
    idx = rng.integers(-3, 3, (2, 5, 4)).astype("int64")
    check(lambda t, i: op.gather_elements(t, i, axis=1), [X, idx],
          np.take_along_axis(X, idx % 3, 1))
    nd = np.array([[0, 2], [1, 0], [1, -1]], "int64")
    check(lambda t, i: op.gather_nd(t, i), [X, nd], X[nd[:, 0], nd[:, 1]])
    batched = np.array([[[2], [0]], [[1], [1]]], "int32")
    expected = np.stack([X[b][batched[b, :, 0]] for b in range(2)])
    check(lambda t, i: op.gather_nd(t, i, batch_dims=1), [X, batched], expected)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "min", "max"])
def test_scatter_elements(reduction):
    data = rng.random((3, 4)).astype("float32")
    idx = np.array([[1, 0, 2, -1], [1, 2, 0, 0]], "int64")
    upd = rng.random((2, 4)).astype("float32")
    expected = data.copy()
    combine = {"none": lambda o, u: u, "add": np.add, "mul": np.multiply, "min": np.minimum,
               "max": np.maximum}[reduction]
    for r in range(2):
        for c in range(4):
            expected[idx[r, c], c] = combine(expected[idx[r, c], c], upd[r, c])
    out = run_op(lambda d, i, u: op.scatter_elements(d, i, u, axis=0, reduction=reduction),
                 [data, idx, upd])
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode):
    width = [(0, 1), (2, 1), (1, 2)]
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    out = run_op(lambda t: op.nn.pad(t, width, mode, 1.5), [X])
    np.testing.assert_array_equal(out, np.pad(X, width, mode, **kw))


def test_creation():
    x = rng.random((2, 3)).astype("float32")
    check(lambda t: op.zeros([2, 3], "int32"), [x], np.zeros((2, 3), "int32"))
    check(lambda t: op.full([2, 2], 7, "int64"), [x], np.full((2, 2), 7, "int64"))
    check(lambda t: op.full_like(t, relax.const(2.5, "float32")), [x], np.full_like(x, 2.5))
    check(lambda t: op.ones_like(t), [x], np.ones_like(x))
    check(lambda t: op.arange(2, 11, 3), [x], np.arange(2, 11, 3))
    check(lambda t: op.arange(5, -1, -2, dtype="int32"), [x], np.arange(5, -1, -2, dtype="int32"))
    np.testing.assert_allclose(run_op(lambda t: op.arange(0.5, 2.0, 0.25), [x]),
                               np.arange(0.5, 2.0, 0.25, dtype="float32"))
    check(lambda t: op.eye(3, 4, k=-1), [x], np.eye(3, 4, -1, "float32"))
    y = rng.random((2, 3, 4)).astype("float32")
    check(lambda t: op.tril(t, 1), [y], np.tril(y, 1))
    check(lambda t: op.triu(t, -1), [y], np.triu(y, -1))


def test_creation_float16():
    x = rng.random((2, 3)).astype("float32")
    check(lambda t: op.ones([4], "float16"), [x], np.ones(4, "float16"))


def test_creation_int8():
    x = rng.random((2, 3)).astype("float32")
    check(lambda t: op.zeros_like(t, "int8"), [x], np.zeros_like(x, "int8"))


def test_creation_with_symbolic_shapes():
    x = rng.random((5, 2)).astype("float32")
    check(lambda t: op.zeros(relax.ShapeExpr([n + 1, 2]), "float32"), [x], np.zeros((6, 2), "float32"),
          shapes=[[n, 2]])
    check(lambda t: op.arange(0, relax.PrimValue(n), 2), [x], np.arange(0, 5, 2), shapes=[[n, 2]])
    check(lambda t: op.full_like(t, 3.0), [x], np.full_like(x, 3.0), shapes=[[n, 2]])
