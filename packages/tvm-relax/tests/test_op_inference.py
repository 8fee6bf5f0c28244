"""Operator StructInfo inference: static and symbolic shapes, broadcasting and errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tvm import relax, tir
from tvm.ffi import structural_equal
from tvm.ir import Op
from tvm.relax import PrimStructInfo, TensorStructInfo, op
from tvm.relax.analysis import get_static_shape
from tvm.relax.op.base import get_op_spec

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")


def infer(expr):
    return relax.BlockBuilder().normalize(expr).struct_info


def tensor(shape, dtype="float32", name="x"):
    return relax.Var(name, TensorStructInfo(shape, dtype))


def test_op_registry_attributes():
    add = Op.get("relax.add")
    assert add.get_attr("FInferStructInfo") is not None
    assert add.get_attr("FPurity") is True
    assert add.get_attr("arg_names") == ("x1", "x2")
    assert Op.get("relax.nn.softmax").get_attr("attrs_type") is op.nn.SoftmaxAttrs
    assert get_op_spec("relax.matmul") is op.matmul
    with pytest.raises(ValueError, match="did you mean"):
        Op.get("relax.matmult")
    with pytest.raises(KeyError, match="unknown Relax operator"):
        get_op_spec("relax.nope")


def test_unary_keeps_struct_info():
    x = tensor([n, 4])
    s = infer(op.exp(x))
    assert s is x.struct_info
    assert infer(op.isnan(x)).dtype == "bool"
    assert infer(op.astype(x, "float16")).dtype == "float16"
    assert infer(op.astype(x, "float16")).shape is x.struct_info.shape
    with pytest.raises(relax.StructInfoError, match=r"relax.exp: requires a floating-point input, got dtype int32"):
        infer(op.exp(tensor([2], "int32")))
    with pytest.raises(relax.StructInfoError, match="relax.bitwise_not: requires an integer"):
        infer(op.bitwise_not(tensor([2])))


def test_binary_static_broadcast():
    s = infer(op.add(tensor([4, 1, 3]), tensor([5, 1], name="y")))
    assert get_static_shape(s) == (4, 5, 3) and s.dtype == "float32"
    assert infer(op.less(tensor([2, 3]), tensor([3], name="y"))).dtype == "bool"


def test_binary_symbolic_broadcast():
    s = infer(op.multiply(tensor([n, 1]), tensor([1, m], name="y")))
    assert s.shape_values == (n, m)
    same = infer(op.add(tensor([n, 4]), tensor([n, 4], name="y")))
    assert structural_equal(same.shape.values, (n, tir.IntImm("int64", 4)))
    unknown = infer(op.add(tensor([n]), tensor([m], name="y")))
    assert unknown.shape is None and unknown.ndim == 1


def test_binary_with_scalars():
    x = tensor([2, 3])
    c = relax.PrimValue(tir.FloatImm("float32", 1.0))
    assert get_static_shape(infer(op.add(x, c))) == (2, 3)
    p = infer(op.add(relax.PrimValue(n), relax.PrimValue(m)))
    assert isinstance(p, PrimStructInfo) and p.dtype == "int64"


def test_binary_errors_name_op_and_dims():
    with pytest.raises(relax.StructInfoError, match=r"relax.add: cannot broadcast operands of shapes \(2, 3\) and \(4\)"):
        infer(op.add(tensor([2, 3]), tensor([4], name="y")))
    with pytest.raises(relax.StructInfoError, match="same dtype, got float32 and float16"):
        infer(op.subtract(tensor([2]), tensor([2], "float16", name="y")))
    with pytest.raises(relax.StructInfoError, match=r"relax.add: expects 2 argument\(s\) \(x1, x2\), got 1"):
        infer(relax.Call(Op.get("relax.add"), [tensor([2])]))
    with pytest.raises(relax.StructInfoError, match="argument 'x2' must be a tensor or a scalar"):
        infer(op.add(tensor([2]), relax.ShapeExpr([2])))


def test_error_carries_span():
    from tvm.ir import Span

    call = relax.Call(Op.get("relax.add"), [tensor([2]), tensor([3], name="y")],
                      span=Span("model.py", 7, 3))
    with pytest.raises(relax.StructInfoError, match=r"\(at model.py:7:3\)") as info:
        infer(call)
    assert info.value.op == "relax.add" and info.value.span.line == 7


dim = st.integers(1, 4)
shapes = st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=4)


@settings(max_examples=60, deadline=None)
@given(shapes, shapes)
def test_broadcast_matches_numpy(a, b):
    try:
        expected = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        expected = None
    expr = op.add(tensor(a), tensor(b, name="y"))
    if expected is None:
        with pytest.raises(relax.StructInfoError):
            infer(expr)
    else:
        assert get_static_shape(infer(expr)) == expected


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=0, max_size=2), dim, dim, dim,
       st.sampled_from(["both", "lhs1", "rhs1"]))
def test_matmul_matches_numpy(batch, i, k, j, kind):
    a_shape = [*batch, i, k] if kind != "lhs1" else [k]
    b_shape = [k, j] if kind != "rhs1" else [k]
    expected = np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape
    assert get_static_shape(infer(op.matmul(tensor(a_shape), tensor(b_shape, name="y")))) == expected


def test_matmul_symbolic_and_errors():
    s = infer(op.matmul(tensor([n, 784]), tensor([784, 256], name="w")))
    assert s.shape_values[0] is n and s.shape_values[1].value == 256
    b = infer(op.matmul(tensor([m, 1, n, 4]), tensor([3, 4, 5], name="w")))
    assert b.ndim == 4 and b.shape_values[0] is m and b.shape_values[1].value == 3
    with pytest.raises(relax.StructInfoError, match="reduction dimensions differ: x1 has 4 columns but x2 has 5 rows"):
        infer(op.matmul(tensor([2, 4]), tensor([5, 3], name="w")))
    with pytest.raises(relax.StructInfoError, match="different dtypes"):
        infer(op.matmul(tensor([2, 4]), tensor([4, 3], "float16", name="w")))
    assert infer(op.matmul(tensor([2, 4], "int8"), tensor([4, 3], "int8", name="w"),
                           out_dtype="int32")).dtype == "int32"
    assert infer(op.matmul(tensor([n, 4]), tensor([m, 3], name="w"))).ndim == 2


def test_reshape():
    x = tensor([n, 4, 6])
    s = infer(op.reshape(x, [n, 24]))
    assert s.shape_values[0] is n and s.shape_values[1].value == 24
    inferred = infer(op.reshape(x, (-1, 6)))
    analyzer = relax.BlockBuilder().analyzer
    assert analyzer.can_prove_equal(inferred.shape_values[0], n * 4)
    with pytest.raises(relax.StructInfoError, match=r"cannot reshape a tensor of shape \(2, 3\) into \(4, 2\)"):
        infer(op.reshape(tensor([2, 3]), [4, 2]))
    with pytest.raises(relax.StructInfoError, match="at most one dimension may be -1"):
        infer(op.reshape(tensor([2, 3]), [-1, -1]))
    shape_var = relax.Var("s", relax.ShapeStructInfo(ndim=3))
    assert infer(op.reshape(tensor([2, 3]), shape_var)).ndim == 3


def test_permute_dims():
    x = tensor([n, 3, 5])
    assert infer(op.permute_dims(x)).shape_values[2] is n
    s = infer(op.permute_dims(x, [1, 0, 2]))
    assert get_static_shape(s) is None and s.shape_values[1] is n
    with pytest.raises(relax.StructInfoError, match="not a permutation"):
        infer(op.permute_dims(x, [0, 0, 1]))
    with pytest.raises(relax.StructInfoError, match="out of range"):
        infer(op.permute_dims(x, [0, 1, 3]))


def test_softmax_and_activations():
    x = tensor([n, 10])
    assert infer(op.nn.softmax(x, axis=1)) is x.struct_info
    with pytest.raises(relax.StructInfoError, match="relax.nn.softmax: axis 2 is out of range"):
        infer(op.nn.softmax(x, axis=2))
    with pytest.raises(relax.StructInfoError, match="floating-point"):
        infer(op.nn.softmax(tensor([3], "int32")))
    assert infer(op.nn.relu(tensor([3], "int32"))).dtype == "int32"


def test_call_tir_and_packed():
    gv = relax.GlobalVar("kernel")
    x = tensor([n, 4])
    out = TensorStructInfo([n, 4], "float32")
    call = relax.call_tir(gv, [x], out)
    assert len(call.args) == 2 and isinstance(call.args[1], relax.Tuple)
    assert infer(call) is out
    two = infer(relax.call_tir(gv, [x], [out, out]))
    assert isinstance(two, relax.TupleStructInfo) and len(two.fields) == 2
    with_vars = relax.call_tir(gv, [x], out, tir_vars=[n])
    assert isinstance(with_vars.args[2], relax.ShapeExpr)
    with pytest.raises(TypeError, match="callee must be a GlobalVar"):
        relax.call_tir("kernel", [x], out)
    packed = infer(relax.call_dps_packed("my_func", [x], out))
    assert packed is out
    pure = infer(relax.call_pure_packed("vm.builtin.f", x, sinfo_args=out))
    assert pure is out


def test_shape_of_and_alloc_tensor():
    s = infer(op.shape_of(tensor([n, 3])))
    assert isinstance(s, relax.ShapeStructInfo) and s.values[0] is n
    t = infer(op.builtin.alloc_tensor([n, 2], "float16"))
    assert t.dtype == "float16" and t.shape_values[0] is n


def test_operator_sugar_on_exprs():
    x = tensor([2, 3])
    y = tensor([3], name="y")
    assert (x + y).op is Op.get("relax.add")
    assert (x @ tensor([3, 4], name="w")).op is Op.get("relax.matmul")
    assert (-x).op is Op.get("relax.negative")
    t = relax.Tuple([x, y])
    assert infer(t[1]) is y.struct_info
