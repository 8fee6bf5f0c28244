"""BlockBuilder: the walkthrough module, normalisation rules, scopes and their errors."""

import numpy as np
import pytest

from tvm import relax, te, tir
from tvm.ffi import assert_structural_equal, structural_equal
from tvm.ir import GlobalVar
from tvm.relax import TensorStructInfo, op
from tvm.relax.analysis import get_static_shape, well_formed_problems
from tvm.tir import PrimFunc

n = tir.Var("n", "int64")


def te_matmul(A, B):
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((A.shape[0], B.shape[1]),
                      lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")


def te_add_bias(A, b):
    return te.compute(A.shape, lambda i, j: A[i, j] + b[j], name="add")


def build_walkthrough(batch=1):
    x = relax.Var("x", TensorStructInfo([batch, 784], "float32"))
    w = relax.Var("w", TensorStructInfo([784, 256], "float32"))
    b = relax.Var("b", TensorStructInfo([256], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_matmul, x, w, primfunc_name_hint="matmul")
            lv1 = bb.emit_te(te_add_bias, lv0, b, primfunc_name_hint="add")
            gv = bb.emit_output(lv1)
        bb.emit_func_output(gv)
    return bb.get()


def test_walkthrough_module():
    mod = build_walkthrough()
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["add", "main", "matmul"]
    main = mod["main"]
    assert main.attrs["global_symbol"] == "main"
    assert isinstance(mod["matmul"], PrimFunc) and "global_symbol" not in mod["matmul"].attrs
    assert get_static_shape(main.ret_struct_info) == (1, 256)
    (block,) = main.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    lv0, lv1, gv = block.bindings
    assert isinstance(lv0.var, relax.DataflowVar) and not isinstance(gv.var, relax.DataflowVar)
    call = lv0.value
    assert call.op.name == "relax.call_tir" and call.args[0].name_hint == "matmul"
    assert get_static_shape(call.sinfo_args[0]) == (1, 256)
    assert main.body.body is gv.var
    assert well_formed_problems(mod) == []


def test_walkthrough_is_deterministic_and_alpha_equivalent():
    assert_structural_equal(build_walkthrough(), build_walkthrough())
    assert not structural_equal(build_walkthrough(1), build_walkthrough(2))


def test_symbolic_emit_te_and_tir_vars():
    x = relax.Var("x", TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        lv = bb.emit_te(lambda A: te.compute((A.shape[0] * 2,), lambda i: A[i // 2, 0], name="dup"), x)
        m = tir.Var("m", "int64")
        y = bb.match_cast(lv, TensorStructInfo([m], "float32"))
        out = bb.emit_te(lambda A: te.compute((m + 1,), lambda i: A[0], name="grow"), y)
        bb.emit_func_output(out)
    mod = bb.get()
    calls = [b.value for b in mod["f"].body.blocks[0].bindings if isinstance(b.value, relax.Call)]
    # every symbolic variable of the output shapes is defined by an input shape: no tir_vars
    assert len(calls[0].args) == 2 and len(calls[1].args) == 2
    # the return type mentions m, defined inside the body only: erased to ndim
    assert mod["f"].ret_struct_info.shape is None and mod["f"].ret_struct_info.ndim == 1
    assert well_formed_problems(mod) == []


def test_emit_te_passes_unbound_vars():
    x = relax.Var("x", TensorStructInfo([4], "float32"))
    k = tir.Var("k", "int64")
    s = relax.Var("s", relax.ShapeStructInfo([k]))
    bb = relax.BlockBuilder()
    with bb.function("f", [x, s]):
        out = bb.emit_te(lambda A: te.compute((k,), lambda i: A[0], name="fill"), x)
        bb.emit_func_output(out)
    call = bb.get()["f"].body.blocks[0].bindings[0].value
    assert len(call.args) == 3 and call.args[2].values[0] is k
    prim = bb.get()["fill"]
    assert len(prim.params) == 3


def test_normalize_nested_calls_to_anf():
    x = relax.Var("x", TensorStructInfo([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        with bb.dataflow():
            lv = bb.emit(op.exp(op.add(x, op.multiply(x, x))))
            gv = bb.emit_output(lv)
        bb.emit_func_output(gv)
    block = bb.get()["f"].body.blocks[0]
    names = [b.value.op.name for b in block.bindings[:3]]
    assert names == ["relax.multiply", "relax.add", "relax.exp"]
    assert all(relax.is_leaf(a) for b in block.bindings[:3] for a in b.value.args)
    assert all(isinstance(b.var, relax.DataflowVar) for b in block.bindings[:3])
    assert well_formed_problems(bb.get()) == []


def test_output_tuple_and_nonleaf_output():
    x = relax.Var("x", TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        bb.emit_func_output((op.exp(x), x))
    f = bb.get()["f"]
    assert isinstance(f.body.body, relax.Tuple)
    assert isinstance(f.ret_struct_info, relax.TupleStructInfo)
    assert relax.is_leaf(f.body.body)


def test_constants_and_match_cast():
    x = relax.Var("x", TensorStructInfo(dtype="float32", ndim=2))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        a = tir.Var("a", "int64")
        y = bb.match_cast(x, TensorStructInfo([a, 3], "float32"))
        z = bb.emit(op.add(y, relax.const(np.ones((3,), "float32"))))
        assert z.struct_info.shape_values[0] is a
        bb.emit_func_output(z)
    assert well_formed_problems(bb.get()) == []


def test_if_normalization_uses_lca():
    c = relax.Var("c", relax.PrimStructInfo("bool"))
    x = relax.Var("x", TensorStructInfo([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [c, x]):
        r = bb.emit(relax.If(c, op.exp(x), op.reshape(x, [3, 2])))
        bb.emit_func_output(r)
    f = bb.get()["f"]
    if_node = f.body.blocks[0].bindings[0].value
    assert isinstance(if_node.true_branch, relax.SeqExpr)
    assert relax.is_leaf(if_node.true_branch.body)
    s = r.struct_info
    assert s.ndim == 2 and s.shape is None and s.dtype == "float32"
    assert well_formed_problems(bb.get()) == []


def test_calls_between_functions():
    m = tir.Var("m", "int64")
    y = relax.Var("y", TensorStructInfo([m], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("helper", [y]):
        bb.emit_func_output(bb.emit(op.exp(y)))
    x = relax.Var("x", TensorStructInfo([n], "float32"))
    with bb.function("main", [x]):
        r = bb.emit(relax.Call(bb.get().get_global_var("helper"), [x]))
        assert r.struct_info.shape_values[0] is n
        bb.emit_func_output(r)
    mod = bb.get()
    assert well_formed_problems(mod) == []
    with pytest.raises(relax.StructInfoError, match="calling @helper: argument 0: expects Tensor"):
        with bb.function("bad", [x]):
            bb.emit(relax.Call(mod.get_global_var("helper"), [relax.ShapeExpr([1])]))
    with pytest.raises(relax.StructInfoError, match="unknown global function @nowhere"):
        bb2 = relax.BlockBuilder()
        with bb2.function("g", [x]):
            bb2.emit(relax.Call(GlobalVar("nowhere"), [x]))


def test_declare_func_for_forward_reference():
    x = relax.Var("x", TensorStructInfo([n], "float32"))
    bb = relax.BlockBuilder()
    sig = relax.FuncStructInfo([TensorStructInfo([n], "float32")], TensorStructInfo([n], "float32"))
    gv = bb.declare_func("later", sig)
    with bb.function("main", [x]):
        r = bb.emit(relax.Call(gv, [x]))
        assert r.struct_info.shape_values[0] is n
        bb.emit_func_output(r)


def test_add_func_dedups_prim_funcs_and_names():
    A = te.placeholder((4,), "float32", "A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    bb = relax.BlockBuilder()
    gv1 = bb.add_func(te.create_prim_func([A, B]), "inc")
    gv2 = bb.add_func(te.create_prim_func([A, B]), "inc")
    assert gv1.name_hint == gv2.name_hint == "inc"
    C = te.compute((4,), lambda i: A[i] * 2.0, name="C")
    gv3 = bb.add_func(te.create_prim_func([A, C]), "inc")
    assert gv3.name_hint == "inc1"


def test_scope_errors():
    x = relax.Var("x", TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(relax.NormalizeError, match="needs an open block"):
        bb.emit(op.exp(x))
    with pytest.raises(relax.NormalizeError, match="was not finished"):
        with bb.function("f", [x]):
            bb.emit(op.exp(x))
    with pytest.raises(relax.NormalizeError, match="only valid inside"):
        with bb.function("g", [x]):
            bb.emit_output(x)
    with pytest.raises(relax.NormalizeError, match="after the `with bb.dataflow\\(\\)` block"):
        with bb.function("h", [x]):
            with bb.dataflow():
                bb.emit_func_output(x)
    with pytest.raises(relax.NormalizeError, match="has no parameters"):
        with bb.function("k"):
            bb.emit_func_output(x)


def test_params_on_emit_func_output_and_private():
    x = relax.Var("x", TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", private=True):
        bb.emit_func_output(x, params=[x])
    f = bb.get()["f"]
    assert f.params == (x,) and "global_symbol" not in f.attrs
    assert bb.lookup_binding(x) is None


def test_current_builder():
    x = relax.Var("x", TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    assert relax.BlockBuilder.current() is None
    with bb.function("f", [x]):
        assert relax.BlockBuilder.current() is bb
        v = bb.emit(op.exp(x))
        assert bb.lookup_binding(v).op.name == "relax.exp"
        bb.emit_func_output(v)
    assert relax.BlockBuilder.current() is None
