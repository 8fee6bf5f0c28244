"""StructInfo inference of data movement, indexing and creation operators."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tvm import relax, tir
from tvm.relax import TensorStructInfo, TupleStructInfo, op
from tvm.relax.analysis import get_static_shape
from tvm.relax.op.index import slice_bounds

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")
analyzer = relax.BlockBuilder().analyzer


def infer(expr):
    return relax.BlockBuilder().normalize(expr).struct_info


def tensor(shape, dtype="float32", name="x"):
    return relax.Var(name, TensorStructInfo(shape, dtype))


def static(expr):
    return get_static_shape(infer(expr))


def test_squeeze_expand_flatten():
    x = tensor([1, n, 1, 3])
    s = infer(op.squeeze(x, [0, 2]))
    assert s.shape_values[0] is n and s.ndim == 2
    assert static(op.squeeze(tensor([1, 3, 1]))) == (3,)
    assert infer(op.squeeze(x)).ndim == -1  # symbolic dims might be 1
    with pytest.raises(relax.StructInfoError, match="cannot squeeze axis 3 of size 3"):
        infer(op.squeeze(x, 3))
    assert static(op.expand_dims(tensor([2, 3]), [0, -1])) == (1, 2, 3, 1)
    assert static(op.expand_dims(tensor([2, 3]), 1)) == (2, 1, 3)
    with pytest.raises(relax.StructInfoError, match="out of range"):
        infer(op.expand_dims(tensor([2, 3]), 3))
    f = infer(op.flatten(tensor([n, 3, 2])))
    assert f.ndim == 1 and analyzer.can_prove_equal(f.shape_values[0], n * 6)


def test_broadcast_tile_repeat_flip():
    s = infer(op.broadcast_to(tensor([1, 3]), [n, 4, 3]))
    assert s.shape_values[0] is n and s.ndim == 3
    with pytest.raises(relax.StructInfoError, match=r"cannot broadcast shape \(2, 3\) to \(4, 3\)"):
        infer(op.broadcast_to(tensor([2, 3]), [4, 3]))
    with pytest.raises(relax.StructInfoError, match="cannot broadcast 2 dimension"):
        infer(op.broadcast_to(tensor([2, 3]), [3]))
    assert static(op.tile(tensor([2, 3]), [2])) == (2, 6)
    assert static(op.tile(tensor([2, 3]), [2, 1, 3])) == (2, 2, 9)
    assert static(op.repeat(tensor([2, 3]), 2, axis=0)) == (4, 3)
    assert static(op.repeat(tensor([2, 3]), 3)) == (18,)
    x = tensor([n, 3])
    assert infer(op.flip(x, 0)) is x.struct_info
    with pytest.raises(relax.StructInfoError, match="relax.flip: axis 2 is out of range"):
        infer(op.flip(x, 2))


def test_concat():
    s = infer(op.concat([tensor([n, 3]), tensor([n, 4], name="y")], axis=1))
    assert s.shape_values[0] is n and s.shape_values[1].value == 7
    s = infer(op.concat([tensor([n, 3]), tensor([m, 3], name="y")], axis=0))
    assert analyzer.can_prove_equal(s.shape_values[0], n + m)
    assert static(op.concat([tensor([2, 3]), tensor([4], name="y")], axis=None)) == (10,)
    with pytest.raises(relax.StructInfoError, match=r"tensors\[1\] has shape \(2, 4\), incompatible"):
        infer(op.concat([tensor([2, 3]), tensor([2, 4], name="y")], axis=0))
    with pytest.raises(relax.StructInfoError, match="same number of dimensions"):
        infer(op.concat([tensor([2, 3]), tensor([2], name="y")]))
    with pytest.raises(relax.StructInfoError, match="one dtype"):
        infer(op.concat([tensor([2]), tensor([2], "int32", name="y")]))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 9), st.one_of(st.integers(1, 4),
                                    st.lists(st.integers(0, 11), max_size=3).map(sorted)))
def test_split_matches_numpy(size, spec):
    x = np.zeros((2, size))
    if isinstance(spec, int):
        step = -(-size // spec)
        expected = [x[:, min(k * step, size):min((k + 1) * step, size)].shape for k in range(spec)]
    else:
        expected = [p.shape for p in np.split(x, spec, axis=1)]
    s = infer(op.split(tensor([2, size]), spec, axis=1))
    assert isinstance(s, TupleStructInfo)
    assert [get_static_shape(f) for f in s.fields] == expected


def test_split_symbolic():
    s = infer(op.split(tensor([n, 4]), 2, axis=0))
    assert len(s.fields) == 2 and s.fields[0].shape_values[1].value == 4


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 7), st.integers(-10, 10), st.integers(-10, 10),
       st.sampled_from([1, 2, 3, -1, -2, -3]))
def test_slice_bounds_match_python(size, begin, end, stride):
    start, length = slice_bounds(begin, end, stride, size, simplify=analyzer.simplify)
    expected = range(size)[begin:end:stride]
    assert length.value == len(expected)
    if len(expected):
        assert start.value == expected[0]


def test_strided_slice():
    x = tensor([n, 10, 8])
    s = infer(op.strided_slice(x, [1, 2], [1, -1], [8, 0], [2, -2]))
    assert s.shape_values[0] is n and get_static_shape(s) is None
    assert [v.value for v in s.shape_values[1:]] == [4, 4]
    s = infer(op.strided_slice(x, [0], [1], [2**62]))  # clamped: also right for n == 0
    for size, expected in ((5, 4), (1, 0), (0, 0)):
        value = analyzer.simplify(tir.substitute(s.shape_values[0], {n: tir.IntImm("int64", size)}))
        assert value.value == expected
    s = infer(op.strided_slice(x, [0], [1], [2**62], assume_inbound=True))
    assert analyzer.can_prove_equal(s.shape_values[0], n - 1)
    with pytest.raises(relax.StructInfoError, match="strides must not be zero"):
        infer(op.strided_slice(x, [1], [0], [1], [0]))
    with pytest.raises(ValueError, match="must have one length"):
        op.strided_slice(x, [1, 2], [0], [1])


def test_take_gather_scatter():
    x = tensor([n, 5, 6])
    idx = tensor([2, 3], "int64", name="i")
    s = infer(op.take(x, idx, axis=1))
    assert s.shape_values[0] is n and [v.value for v in s.shape_values[1:]] == [2, 3, 6]
    assert static(op.take(tensor([4, 5]), tensor([7], "int32", name="i"))) == (7,)
    assert static(op.take(tensor([4, 5]), tensor([], "int32", name="i"), axis=0)) == (5,)
    with pytest.raises(relax.StructInfoError, match="indices must be an integer tensor, got dtype float32"):
        infer(op.take(x, tensor([2]), axis=0))
    with pytest.raises(ValueError, match="mode"):
        op.take(x, idx, mode="raise")
    g = infer(op.gather_elements(tensor([4, 5]), tensor([4, 2], "int64", name="i"), axis=1))
    assert get_static_shape(g) == (4, 2) and g.dtype == "float32"
    with pytest.raises(relax.StructInfoError, match="same number of dimensions"):
        infer(op.gather_elements(tensor([4, 5]), tensor([4], "int64", name="i")))
    assert static(op.gather_nd(tensor([2, 3, 4]), tensor([5, 2], "int64", name="i"))) == (5, 4)
    assert static(op.gather_nd(tensor([2, 3, 4]), tensor([2, 1], "int64", name="i"),
                               batch_dims=1)) == (2, 4)
    with pytest.raises(relax.StructInfoError, match="batch dimension 0 differs"):
        infer(op.gather_nd(tensor([2, 3, 4]), tensor([3, 1], "int64", name="i"), batch_dims=1))
    data = tensor([n, 4])
    s = infer(op.scatter_elements(data, tensor([2, 4], "int64", name="i"), tensor([2, 4], name="u"),
                                  reduction="add"))
    assert s is data.struct_info
    with pytest.raises(relax.StructInfoError, match="updates must have data's dtype"):
        infer(op.scatter_elements(data, tensor([2, 4], "int64", name="i"),
                                  tensor([2, 4], "float16", name="u")))
    with pytest.raises(ValueError, match="reduction must be one of"):
        op.scatter_elements(data, data, data, reduction="sub")


def test_creation():
    s = infer(op.zeros(relax.ShapeExpr([n, 3]), "int32"))
    assert s.dtype == "int32" and s.shape_values[0] is n
    assert static(op.ones([2, 3])) == (2, 3)
    f = infer(op.full([2], relax.const(1.5, "float16")))
    assert f.dtype == "float16"
    assert infer(op.full([2], 3, dtype="int8")).dtype == "int8"
    with pytest.raises(relax.StructInfoError, match="fill_value must be a scalar"):
        infer(op.full([2], relax.const(np.zeros(2, "float32"))))
    x = tensor([n, 2])
    assert infer(op.zeros_like(x)).shape is x.struct_info.shape
    assert infer(op.ones_like(x, dtype="int64")).dtype == "int64"
    assert infer(op.full_like(x, 2.0)).dtype == "float32"
    assert static(op.arange(5)) == (5,) and infer(op.arange(5)).dtype == "int64"
    assert static(op.arange(1, 10, 3)) == (3,)
    assert static(op.arange(0.0, 1.0, 0.25)) == (4,) and infer(op.arange(0.0, 1.0, 0.25)).dtype == "float32"
    assert static(op.arange(5, 0, -2)) == (3,)
    a = infer(op.arange(0, relax.PrimValue(n), 2))
    assert analyzer.can_prove_equal(a.shape_values[0], (n + 1) // 2)
    with pytest.raises(relax.StructInfoError, match="step must not be zero"):
        infer(op.arange(0, 5, 0))
    assert static(op.eye(3)) == (3, 3) and static(op.eye(2, 4, k=1, dtype="int32")) == (2, 4)
    assert infer(op.tril(x)) is x.struct_info
    with pytest.raises(relax.StructInfoError, match="relax.triu: needs at least 2 dimensions"):
        infer(op.triu(tensor([3])))
