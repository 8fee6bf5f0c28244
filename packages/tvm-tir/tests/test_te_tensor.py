"""The te DSL: placeholders, compute, reduction axes and reducers, with their error messages."""

from __future__ import annotations

import pytest

from tvm import te, tir
from tvm.ffi import from_json, structural_equal, to_json
from tvm.tir import IterVarType, Range


def test_placeholder_shape_dtype_name():
    n = te.var("n")
    A = te.placeholder((n, 4), dtype="float16", name="A")
    assert A.ndim == 2 and A.dtype == "float16" and A.name == "A"
    assert A.shape[0] is n and A.shape[1].value == 4
    assert isinstance(A.op, te.PlaceholderOp)
    B = te.placeholder(8)
    assert B.ndim == 1 and B.name == "placeholder" and B.dtype == "float32"
    assert te.placeholder([2, 3]).shape[1].value == 3


@pytest.mark.parametrize("shape, error, message", [
    ((4, -1), ValueError, r"shape\[1\] is negative"),
    ((4, 2.5), TypeError, r"shape\[1\] must be an int or an integer expression"),
    ((tir.Var("x", "float32"),), TypeError, r"shape\[0\] must be an integer"),
    ("abc", TypeError, "shape must be a tuple"),
])
def test_placeholder_bad_shapes(shape, error, message):
    with pytest.raises(error, match=message):
        te.placeholder(shape, name="A")


def test_indexing_builds_producer_loads():
    A = te.placeholder((4, 8), name="A")
    i, j = te.var("i"), te.var("j")
    load = A[i, j + 1]
    assert isinstance(load, te.ProducerLoad)
    assert load.producer == A and load.dtype == "float32"
    assert load.indices[0] is i
    assert structural_equal(A(i, j), A[i, j])
    k = te.reduce_axis((0, 8), name="k")
    assert A[i, k].indices[1] is k.var  # an IterVar indexes with its variable


@pytest.mark.parametrize("index, error, message", [
    ((0,), IndexError, r"tensor 'A' has 2 dimension\(s\) \(shape \(4, 8\)\) but is indexed with 1"),
    ((0, 1, 2), IndexError, "indexed with 3"),
    ((slice(0, 2), 0), TypeError, "slices are not supported"),
    ((0, 1.5), TypeError, "index 1 must be an integer expression"),
    ((0, "x"), TypeError, "index 1 must be an integer expression"),
])
def test_bad_indexing(index, error, message):
    A = te.placeholder((4, 8), name="A")
    with pytest.raises(error, match=message):
        A[index]


def test_tensor_identity_follows_op_and_output_index():
    A = te.placeholder((4,), name="A")
    assert A == A.op.output(0) and hash(A) == hash(A.op.output(0))
    B = te.placeholder((4,), name="A")
    assert A != B
    X, Y = te.compute((4,), lambda i: (A[i], A[i] * 2.0), name="T")
    assert X != Y and X.op is Y.op
    assert (X.name, Y.name, X.value_index, Y.value_index) == ("T_v0", "T_v1", 0, 1)
    assert {A: 1, A.op.output(0): 2} == {A: 2}
    with pytest.raises(IndexError, match="has 2 output"):
        X.op.output(2)
    with pytest.raises(TypeError, match="not iterable"):
        list(A)


def test_compute_names_axes_after_fcompute_parameters():
    A = te.placeholder((3, 5), name="A")
    B = te.compute((3, 5), lambda row, col: A[row, col] + 1.0, name="B", tag="ewise",
                   attrs={"k": 1})
    op = B.op
    assert isinstance(op, te.ComputeOp)
    assert [iv.var.name for iv in op.axis] == ["row", "col"]
    assert [iv.dom.extent.value for iv in op.axis] == [3, 5]
    assert all(iv.iter_type == IterVarType.DATA_PAR for iv in op.axis)
    assert op.tag == "ewise" and op.attrs == {"k": 1} and op.reduce_axis == ()
    assert B.shape[0].value == 3 and B.dtype == "float32"
    assert op.input_tensors == [A]

    C = te.compute((2, 3, 4), lambda i, *rest: A[i, rest[0]] * tir.Cast("float32", rest[1]))
    assert [iv.var.name for iv in C.op.axis] == ["i", "i1", "i2"]
    assert C.name == "compute"


@pytest.mark.parametrize("fcompute, message", [
    (lambda i: 0.0, r"fcompute takes 1 argument\(s\) \(i\) but the shape has 2 dimension\(s\)"),
    (lambda i, j, k: 0.0, r"takes 3 argument\(s\)"),
    (lambda: 0.0, r"takes 0 argument\(s\) \(none\)"),
    (lambda i, j, k, *r: 0.0, "at least 3 index argument"),
])
def test_compute_arity_errors(fcompute, message):
    with pytest.raises(TypeError, match=message):
        te.compute((2, 3), fcompute, name="C")


def test_compute_other_errors():
    A = te.placeholder((2,), name="A")

    def kwonly(i, *, scale):
        return A[i] * scale

    with pytest.raises(TypeError, match="keyword-only parameter 'scale'"):
        te.compute((2,), kwonly)
    with pytest.raises(TypeError, match="returned the tensor 'A' itself"):
        te.compute((2,), lambda i: A)
    with pytest.raises(TypeError, match="must return expressions, output 0 is str"):
        te.compute((2,), lambda i: "x")
    with pytest.raises(ValueError, match="empty tuple"):
        te.compute((2,), lambda i: ())
    with pytest.raises(TypeError, match="must be callable"):
        te.compute((2,), 3)
    # parameters with defaults are not index parameters
    B = te.compute((2,), lambda i, s=2.0: A[i] * s)
    assert len(B.op.axis) == 1


def test_reduce_axis_domains():
    k = te.reduce_axis((2, 10), name="k")
    assert k.iter_type == IterVarType.COMM_REDUCE and isinstance(k.var, te.ReduceAxisVar)
    assert (k.dom.min.value, k.dom.extent.value) == (2, 8)
    assert k.var.name == "k"
    n = te.var("n")
    k2 = te.reduce_axis((0, n))
    assert k2.dom.extent is n and k2.var.name == "rv"
    k3 = te.reduce_axis(Range(1, 4), name="k3")
    assert k3.dom.min.value == 1 and k3.dom.extent.value == 4
    k4 = te.reduce_axis((n, n + 4))
    assert k4.dom.min is n
    with pytest.raises(ValueError, match="empty domain"):
        te.reduce_axis((4, 2))
    with pytest.raises(TypeError, match=r"\(lo, hi\) pair"):
        te.reduce_axis(5, name="k")
    with pytest.raises(TypeError, match="bounds must be integers"):
        te.reduce_axis((0, tir.Var("f", "float32")))


def test_sum_builds_a_reduce():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, where=k < 6), name="B")
    red = B.op.body[0]
    assert isinstance(red, tir.Reduce)
    assert B.op.reduce_axis == (k,) and red.axis == (k,)
    assert red.combiner.identity_element[0].value == 0.0
    assert isinstance(red.condition, tir.LT)
    assert red.init == ()
    C = te.compute((4,), lambda i: te.sum(A[i, k], axis=[k], init=2))
    assert C.op.body[0].init[0].dtype == "float32"


def test_reducer_errors():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    i_axis = te.compute((4,), lambda i: A[i, 0]).op.axis[0]
    with pytest.raises(TypeError, match="axis 'i' is not a reduction axis"):
        te.sum(A[0, 0], axis=i_axis)
    with pytest.raises(TypeError, match="where= must be a boolean"):
        te.sum(A[0, k], axis=k, where=k)
    with pytest.raises(ValueError, match="appears twice"):
        te.sum(A[0, k], axis=[k, k])
    with pytest.raises(ValueError, match=r"init has 2 value\(s\) for 1"):
        te.sum(A[0, k], axis=k, init=[0.0, 1.0])
    with pytest.raises(TypeError, match="init has dtype int32, expected float32"):
        te.sum(A[0, k], axis=k, init=tir.const(1))
    with pytest.raises(TypeError, match="missing the reduction axis"):
        te.sum(A[0, k])
    with pytest.raises(TypeError, match="reduction axes made by te.reduce_axis"):
        te.sum(A[0, k], axis=[1, 2])
    with pytest.raises(TypeError, match="the reduced value is the tensor 'A'"):
        te.sum(A, axis=k)
    bad = te.comm_reducer(lambda x, y: (x + y, x), lambda t: tir.const(0, t), name="bad")
    with pytest.raises(ValueError, match=r"combiner returned 2 value\(s\)"):
        bad(A[0, k], axis=k)
    with pytest.raises(TypeError, match="must be callables"):
        te.comm_reducer(1, 2)


def test_reduce_axis_used_outside_a_reduction():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(ValueError, match="the reduction axis 'k' is used outside of a reduction"):
        te.compute((4,), lambda i: A[i, k], name="B")
    k2 = te.reduce_axis((0, 8), name="k2")
    with pytest.raises(ValueError, match="reduction axis 'k2' is used outside"):
        te.compute((4,), lambda i: te.sum(A[i, k] + A[i, k2], axis=k), name="B")
    with pytest.raises(ValueError, match="init value of a reduction"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k, init=A[i, k]), name="B")


def test_reduction_must_be_the_whole_body():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(ValueError, match="must be the whole body of the compute"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1.0, name="B")
    with pytest.raises(ValueError, match="output 1 is a reduction but output 0 is not"):
        te.compute((4,), lambda i: (A[i, 0], te.sum(A[i, k], axis=k)), name="B")
    with pytest.raises(ValueError, match="different reductions"):
        te.compute((4,), lambda i: (te.sum(A[i, k], axis=k), te.sum(A[i, k], axis=k)), name="B")


def _argmax():
    def fcombine(x, y):
        take_x = x[1] >= y[1]
        return tir.Select(take_x, x[0], y[0]), tir.Select(take_x, x[1], y[1])

    return te.comm_reducer(fcombine, lambda t0, t1: (tir.const(-1, t0), tir.min_value(t1)),
                           name="argmax")


def test_tuple_reducer_components():
    argmax = _argmax()
    idx = te.placeholder((4, 8), name="idx", dtype="int32")
    val = te.placeholder((4, 8), name="val")
    k = te.reduce_axis((0, 8), name="k")
    r0, r1 = argmax((idx[0, k], val[0, k]), axis=k)
    assert (r0.value_index, r1.value_index) == (0, 1) and r0.combiner is r1.combiner
    assert len(r0.combiner.lhs) == 2 and r0.combiner.identity_element[0].value == -1
    T0, T1 = te.compute((4,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    assert T0.op.input_tensors == [idx, val]
    with pytest.raises(ValueError, match="return the components in order"):
        te.compute((4,), lambda i: tuple(reversed(argmax((idx[i, k], val[i, k]), axis=k))))
    with pytest.raises(ValueError, match=r"has 2 component\(s\) but fcompute returned 1"):
        te.compute((4,), lambda i: argmax((idx[i, k], val[i, k]), axis=k)[0])


def test_max_min_combine_plain_values_directly():
    x = te.var("x", "float32")
    relu = te.max(x, 0.0)
    assert isinstance(relu, tir.Max) and relu.b.value == 0.0
    clip = te.min(te.max(x, -1.0), 1.0, 2.0)
    assert isinstance(clip, tir.Min) and isinstance(clip.a, tir.Min)
    assert repr(te.sum) == "te.comm_reducer('sum')"


def test_itervar_arithmetic_and_helpers():
    A = te.placeholder((10,), name="A")
    r = te.reduce_axis((0, 3), name="r")
    B = te.compute((8,), lambda i: te.sum(A[i + r] * 2.0, axis=r), name="B")
    load = B.op.body[0].source[0].a
    assert isinstance(load.indices[0], tir.Add) and load.indices[0].b is r.var
    assert isinstance(r * 2, tir.Mul) and isinstance(1 + r, tir.Add)
    tx = te.thread_axis("threadIdx.x")
    assert tx.iter_type == IterVarType.THREAD_INDEX and tx.thread_tag == "threadIdx.x"
    assert tx.dom is None and tx.var.name == "threadIdx.x"
    bx = te.thread_axis((0, 32), "blockIdx.x", name="bx")
    assert bx.dom.extent.value == 32 and bx.var.name == "bx"
    with pytest.raises(ValueError, match="needs a tag"):
        te.thread_axis()
    assert te.size_var("n").__class__ is tir.SizeVar
    assert te.const(2, "int64").dtype == "int64"
    assert te.exp is tir.exp and te.if_then_else is tir.if_then_else


def test_structural_equality_of_te_graphs():
    def build(scale):
        A = te.placeholder((4, 8), name="A")
        k = te.reduce_axis((0, 8), name="k")
        return te.compute((4,), lambda i: te.sum(A[i, k] * scale, axis=k), name="B")

    b1, b2, b3 = build(2.0), build(2.0), build(3.0)
    # placeholders are free inputs: equal only when mapped onto each other
    assert not structural_equal(b1.op, b2.op)
    assert structural_equal(b1.op, b2.op, map_free_vars=True)
    assert not structural_equal(b1.op, b3.op, map_free_vars=True)
    assert structural_equal(from_json(to_json(b1.op)), b1.op, map_free_vars=True)
