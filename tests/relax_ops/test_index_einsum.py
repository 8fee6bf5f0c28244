"""scatter_nd, one_hot and einsum legalized and run on every target of the suite
(conftest.py), against numpy (and the ONNX reference runtime when installed)."""

import numpy as np
import pytest
from relax_op_harness import run_op

from tvm import relax, tir
from tvm.relax import op

rng = np.random.default_rng(31)
n = tir.Var("n", "int64")


# -- scatter_nd -------------------------------------------------------------------------------------
def scatter_nd_ref(data, indices, updates, reduction):
    out = data.copy()
    combine = {"update": lambda a, b: b, "add": np.add, "mul": np.multiply, "min": np.minimum,
               "max": np.maximum}[reduction]
    for p in np.ndindex(*indices.shape[:-1]):
        idx = tuple(int(v) for v in indices[p])
        out[idx] = combine(out[idx], updates[p])
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "min", "max"])
def test_scatter_nd_reductions(reduction):
    data = rng.standard_normal((4, 3, 2)).astype("float32")
    indices = np.array([[[0, 1], [3, 2]], [[-1, 0], [0, 1]]], "int64")  # repeats (0, 1)
    updates = rng.standard_normal((2, 2, 2)).astype("float32")
    out = run_op(lambda d, i, u: op.scatter_nd(d, i, u, reduction), [data, indices, updates])
    expected = scatter_nd_ref(data, indices % np.array([4, 3]), updates,
                              "update" if reduction == "none" else reduction)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_scatter_nd_whole_slices_symbolic_and_int():
    data = rng.integers(0, 9, (5, 4)).astype("int32")
    indices = np.array([[4], [1]], "int32")
    updates = rng.integers(0, 9, (2, 4)).astype("int32")
    out = run_op(lambda d, i, u: op.scatter_nd(d, i, u), [data, indices, updates],
                 shapes=[[n, 4], None, None])
    np.testing.assert_array_equal(out, scatter_nd_ref(data, indices, updates, "update"))
    pytest.importorskip("onnx")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction="add")
    idx = np.array([[1, 2], [1, 2], [0, 0]], "int64")
    upd = rng.standard_normal(3).astype("float32")
    dat = rng.standard_normal((2, 3)).astype("float32")
    (expected,) = ReferenceEvaluator(node).run(None, {"d": dat, "i": idx, "u": upd})
    np.testing.assert_allclose(run_op(lambda d, i, u: op.scatter_nd(d, i, u, "add"),
                                      [dat, idx, upd]), expected, rtol=1e-6)


# -- one_hot ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    indices = np.array([[0, 3, -1], [-4, 5, 2]], "int64")  # -4 -> 0; 5 is out of range
    values = np.array([-2.0, 7.5], "float32")
    out = run_op(lambda i, v: op.one_hot(i, 4, v, axis), [indices, values])
    wrapped = np.where(indices < 0, indices + 4, indices)
    expected = np.where(np.expand_dims(wrapped, axis % 3) ==
                        np.arange(4).reshape([4 if d == axis % 3 else 1 for d in range(3)]),
                        values[1], values[0])
    np.testing.assert_array_equal(out, expected)


def test_one_hot_symbolic_depth_and_python_values():
    d = tir.Var("d", "int64")
    indices = np.array([2, 0, 1], "int32")
    out = run_op(lambda i, dv: op.one_hot(i, relax.PrimValue(d), (0, 1), dtype="int32"),
                 [indices, np.zeros(3, "float32")], shapes=[None, [d]])
    np.testing.assert_array_equal(out, np.eye(3, dtype="int32")[indices])


# -- einsum ---------------------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 5)]),
    ("ij", [(3, 5)]),
    ("ba,b", [(3, 2), (3,)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i...,i...->...", [(2, 1, 3), (2, 4, 1)]),
    ("bhid,bhjd->bhij", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("iij,kjj->ik", [(3, 3, 2), (4, 2, 2)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUM_CASES)
def test_einsum_matches_numpy(subscripts, shapes):
    arrays = [rng.standard_normal(s).astype("float32") for s in shapes]
    out = run_op(lambda *xs: op.einsum(list(xs), subscripts), arrays)
    np.testing.assert_allclose(out, np.einsum(subscripts, *arrays), rtol=1e-5, atol=1e-5)


def test_einsum_symbolic_and_integer():
    a = rng.integers(-5, 5, (3, 4)).astype("int32")
    b = rng.integers(-5, 5, (4, 2)).astype("int32")
    out = run_op(lambda x, y: op.einsum([x, y], "ij,jk->ik"), [a, b], shapes=[[n, 4], None])
    np.testing.assert_array_equal(out, a @ b)
