"""Relax node construction, structural equality, JSON round trips and repr."""

import numpy as np
import pytest

from tvm import relax, tir
from tvm.ffi import (
    assert_structural_equal,
    from_json,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
    to_json,
)
from tvm.ir import IRModule
from tvm.relax import TensorStructInfo, op


def test_var_and_constant():
    x = relax.Var("x", [2, 3])
    assert isinstance(x.struct_info, TensorStructInfo) and x.struct_info.dtype == "float32"
    assert isinstance(relax.Var("o").struct_info, relax.ObjectStructInfo)
    c = relax.const(np.arange(6, dtype="int32").reshape(2, 3))
    assert c.struct_info.dtype == "int32" and relax.get_static_shape(c.struct_info) == (2, 3)
    assert relax.const(1.5).data.dtype == np.float32
    assert relax.const(2, "float16").struct_info.dtype == "float16"
    with pytest.raises(TypeError, match="Constant: data must be"):
        relax.Constant(object())


def test_constant_from_runtime_tensor():
    from tvm import runtime

    t = runtime.tensor(np.ones((2, 2), "float32"))
    c = relax.Constant(t)
    assert isinstance(c.data, np.ndarray) and c.data.shape == (2, 2)


def test_leaf_nodes_have_struct_info():
    n = tir.Var("n", "int64")
    assert relax.ShapeExpr([n, 2]).struct_info.values[0] is n
    assert relax.PrimValue(3).struct_info.dtype == "int64"
    assert relax.PrimValue(1.0).struct_info.dtype == "float32"
    assert isinstance(relax.StringImm("a").struct_info, relax.ObjectStructInfo)
    assert relax.DataTypeImm("float32").value == "float32"
    t = relax.Tuple([relax.PrimValue(1), relax.ShapeExpr([2])])
    assert isinstance(t.struct_info, relax.TupleStructInfo)
    assert isinstance(relax.TupleGetItem(t, 1).struct_info, relax.ShapeStructInfo)
    with pytest.raises(relax.StructInfoError, match="index 2 is out of range"):
        relax.TupleGetItem(t, 2)
    assert relax.Call(relax.ExternFunc("f"), []).struct_info_ is None
    with pytest.raises(ValueError, match="has no StructInfo yet"):
        relax.Call(relax.ExternFunc("f"), []).struct_info


def test_construction_errors():
    x = relax.Var("x", [2])
    with pytest.raises(TypeError, match="Call: op must be"):
        relax.Call("relax.add", [x])
    with pytest.raises(TypeError, match="argument 0 must be a Relax expression"):
        relax.Call(relax.ExternFunc("f"), [object()])
    with pytest.raises(TypeError, match="parameter 0 must be a relax Var"):
        relax.Function([1], x)
    with pytest.raises(TypeError, match="must not be a DataflowVar"):
        relax.Function([relax.DataflowVar("d", [2])], x)
    with pytest.raises(TypeError, match="VarBinding: var must be"):
        relax.VarBinding(relax.ShapeExpr([1]), x)
    with pytest.raises(TypeError, match="binding 0 must be"):
        relax.BindingBlock([x])


def test_as_expr():
    assert isinstance(relax.as_expr(3), relax.PrimValue)
    assert isinstance(relax.as_expr("s"), relax.StringImm)
    assert isinstance(relax.as_expr(np.zeros(2)), relax.Constant)
    assert isinstance(relax.as_expr([1, relax.Var("x")]), relax.Tuple)
    with pytest.raises(TypeError, match="expected a Relax expression, got None"):
        relax.as_expr(None)


def _func(name_x="x", n_name="n"):
    n = tir.Var(n_name, "int64")
    x = relax.Var(name_x, TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(op.exp(x))
            gv = bb.emit_output(op.add(lv, relax.const(np.ones(4, "float32"))))
        bb.emit_func_output(gv)
    return bb.get()["main"]


def test_alpha_equivalence_across_functions():
    f, g = _func(), _func("y", "m")
    assert structural_equal(f, g)
    assert structural_hash(f) == structural_hash(g)
    # the symbolic variable is bound by the parameter: a different shape is a difference
    h = _func()
    x2 = relax.Var("x", TensorStructInfo([tir.Var("k", "int64"), 5], "float32"))
    assert not structural_equal(h.with_fields(params=(x2,)), f)
    # a free variable is compared by identity
    a, b = relax.Var("a", [2]), relax.Var("a", [2])
    assert not structural_equal(op.exp(a), op.exp(b))
    assert structural_equal(op.exp(a), op.exp(b), map_free_vars=True)


def test_mismatch_path():
    f = _func()
    bb = relax.BlockBuilder()
    x = relax.Var("x", TensorStructInfo([tir.Var("n", "int64"), 4], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(op.log(x))
            gv = bb.emit_output(op.add(lv, relax.const(np.ones(4, "float32"))))
        bb.emit_func_output(gv)
    path = get_first_structural_mismatch(f, bb.get()["main"])
    assert path is not None and path.startswith(".body.blocks[0].bindings[0].value.op")


def test_json_round_trip_with_constants():
    f = _func()
    mod = IRModule({"main": f})
    back = from_json(to_json(mod))
    assert_structural_equal(back, mod)
    const = back["main"].body.blocks[0].bindings[1].value.args[1]
    assert isinstance(const, relax.Constant) and const.data.dtype == np.float32
    # derived StructInfo survives the round trip
    assert back["main"].body.blocks[0].bindings[0].value.struct_info_ is not None
    assert back["main"].body.blocks[0].bindings[0].value.op is f.body.blocks[0].bindings[0].value.op


def test_json_round_trip_of_attrs_and_sinfo_args():
    x = relax.Var("x", [2, 3])
    call = relax.BlockBuilder().normalize(op.permute_dims(x, [1, 0]))
    back = from_json(to_json(call))
    assert back.attrs.axes == (1, 0)
    assert_structural_equal(back, call, map_free_vars=True)
    ct = relax.call_tir(relax.GlobalVar("k"), [x], TensorStructInfo([3], "float32"))
    assert_structural_equal(from_json(to_json(ct)), ct, map_free_vars=True)


def test_repr_does_not_crash():
    f = _func()
    for obj in (f, f.body, f.body.blocks[0], f.struct_info, relax.Var("x", [1])):
        assert isinstance(repr(obj), str)
    assert "main" in IRModule({"main": f}).script()


def test_function_struct_info_and_with_attr():
    f = _func()
    assert isinstance(f.struct_info, relax.FuncStructInfo)
    assert f.struct_info.params[0] is f.params[0].struct_info
    g = f.with_attr("k", 1)
    assert g.attrs["k"] == 1 and g.body is f.body
    empty = relax.Function.create_empty(f.params, f.ret_struct_info)
    assert empty.body is None and isinstance(empty.struct_info, relax.FuncStructInfo)


def test_with_fields_recomputes_derived_struct_info():
    x, y = relax.Var("x", [2]), relax.Var("y", [3, 3])
    t = relax.Tuple([x])
    t2 = t.with_fields(fields=(x, y))
    assert len(t2.struct_info.fields) == 2
    call = relax.BlockBuilder().normalize(op.exp(x))
    assert call.with_fields(args=(y,)).struct_info_ is None  # needs normalising again
    assert call.with_fields(span=None) is call


def test_negative_dimension_rejected():
    with pytest.raises(ValueError, match="dimension 0 is -1"):
        TensorStructInfo([-1, 4], "float32")
    assert relax.ShapeExpr([-1, 4]).values[0].value == -1  # allowed as a reshape argument


def test_op_without_inference_is_a_clear_error():
    from tvm.ir import Op

    fake = Op.register("relax.test_only_no_infer")
    with pytest.raises(relax.StructInfoError, match="relax.test_only_no_infer: operator has no StructInfo inference"):
        relax.BlockBuilder().normalize(relax.Call(fake, [relax.Var("x", [1])]))
