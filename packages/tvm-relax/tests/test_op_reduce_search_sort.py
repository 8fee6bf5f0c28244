"""StructInfo inference of reductions, scans, where/argmax/argmin and sorting ops."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tvm import relax, tir
from tvm.relax import TensorStructInfo, TupleStructInfo, op
from tvm.relax.analysis import get_static_shape

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


def infer(expr):
    return relax.BlockBuilder().normalize(expr).struct_info


def tensor(shape, dtype="float32", name="x", ndim=-1):
    sinfo = TensorStructInfo(shape, dtype, ndim) if shape is not None else TensorStructInfo(
        None, dtype, ndim)
    return relax.Var(name, sinfo)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "variance", "std"])
def test_reductions_static(name):
    fn = getattr(op, name)
    x = tensor([2, 3, 4])
    assert get_static_shape(infer(fn(x, axis=1))) == (2, 4)
    assert get_static_shape(infer(fn(x, axis=[0, -1], keepdims=True))) == (1, 3, 1)
    assert get_static_shape(infer(fn(x))) == ()
    assert infer(fn(x)).dtype == "float32"
    with pytest.raises(relax.StructInfoError, match=f"relax.{name}: axis 3 is out of range"):
        infer(fn(x, axis=3))
    with pytest.raises(relax.StructInfoError, match="repeats an axis"):
        infer(fn(x, axis=[1, -2]))


def test_reductions_symbolic_and_unknown():
    s = infer(op.sum(tensor([n, m, 4]), axis=[2]))
    assert s.shape_values[0] is n and s.shape_values[1] is m
    s = infer(op.mean(tensor([n, m]), axis=0, keepdims=True))
    assert s.shape_values[0].value == 1 and s.shape_values[1] is m
    assert infer(op.sum(tensor(None, ndim=3), axis=1)).ndim == 2
    assert infer(op.sum(tensor(None, ndim=-1))).ndim == 0
    assert infer(op.sum(tensor(None, ndim=-1), axis=1)).ndim == -1
    with pytest.raises(relax.StructInfoError, match="relax.variance: requires a floating-point"):
        infer(op.variance(tensor([3], "int32")))
    assert infer(op.sum(tensor([3], "int32"))).dtype == "int32"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data())
def test_reduction_shape_matches_numpy(shape, data):
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a: a % len(shape),
                              max_size=len(shape)))
    keep = data.draw(st.booleans())
    expected = np.sum(np.zeros(shape), axis=tuple(axes), keepdims=keep).shape
    assert get_static_shape(infer(op.sum(tensor(shape), axis=axes, keepdims=keep))) == expected


def test_scans():
    x = tensor([n, 4])
    assert infer(op.cumsum(x, axis=1)).shape is x.struct_info.shape
    flat = infer(op.cumprod(x))
    assert flat.ndim == 1 and relax.BlockBuilder().analyzer.can_prove_equal(flat.shape_values[0], n * 4)
    assert infer(op.cumsum(tensor([3], "int8"), 0, dtype="int32")).dtype == "int32"
    with pytest.raises(relax.StructInfoError, match="relax.cumsum: axis 2 is out of range"):
        infer(op.cumsum(x, axis=2))


def test_where():
    c = tensor([n, 1], "bool", name="c")
    s = infer(op.where(c, tensor([4], name="a"), tensor([n, 4], name="b")))
    assert s.shape_values[0] is n and s.shape_values[1].value == 4 and s.dtype == "float32"
    assert get_static_shape(infer(op.where(tensor([2, 1], "bool"), tensor([3], name="a"),
                                           tensor([1], name="b")))) == (2, 3)
    with pytest.raises(relax.StructInfoError, match="the condition must be a bool tensor, got dtype float32"):
        infer(op.where(tensor([2]), tensor([2], name="a"), tensor([2], name="b")))
    with pytest.raises(relax.StructInfoError, match="same dtype"):
        infer(op.where(c, tensor([4], name="a"), tensor([4], "float16", name="b")))
    with pytest.raises(relax.StructInfoError, match="cannot broadcast"):
        infer(op.where(tensor([3], "bool"), tensor([4], name="a"), tensor([4], name="b")))


@pytest.mark.parametrize("fn", [op.argmax, op.argmin])
def test_arg_reductions(fn):
    x = tensor([n, 5, 6])
    s = infer(fn(x, axis=1))
    assert s.dtype == "int64" and s.shape_values[0] is n and s.shape_values[1].value == 6
    assert get_static_shape(infer(fn(tensor([2, 3]), axis=-1, keepdims=True))) == (2, 1)
    assert get_static_shape(infer(fn(tensor([2, 3])))) == ()
    assert get_static_shape(infer(fn(tensor([2, 3]), keepdims=True))) == (1, 1)
    with pytest.raises(relax.StructInfoError, match="out of range"):
        infer(fn(x, axis=3))
    with pytest.raises(relax.StructInfoError, match="does not accept bool"):
        infer(fn(tensor([2], "bool")))


def test_sort_argsort_topk():
    x = tensor([n, 8])
    assert infer(op.sort(x)) is x.struct_info
    a = infer(op.argsort(x, axis=0, dtype="int64"))
    assert a.dtype == "int64" and a.shape is x.struct_info.shape
    t = infer(op.topk(x, k=3))
    assert isinstance(t, TupleStructInfo)
    values, indices = t.fields
    assert values.shape_values[0] is n and values.shape_values[1].value == 3
    assert values.dtype == "float32" and indices.dtype == "int32"
    only = infer(op.topk(x, k=2, axis=0, ret_type="indices"))
    assert only.dtype == "int32" and only.shape_values[0].value == 2
    with pytest.raises(relax.StructInfoError, match="k=9 exceeds the size 8 of axis 1"):
        infer(op.topk(x, k=9))
    with pytest.raises(relax.StructInfoError, match="index dtype must be an integer"):
        infer(op.argsort(x, dtype="float32"))
    with pytest.raises(relax.StructInfoError, match="axis 2 is out of range"):
        infer(op.sort(x, axis=2))
    with pytest.raises(ValueError, match="ret_type"):
        op.topk(x, ret_type="all")
