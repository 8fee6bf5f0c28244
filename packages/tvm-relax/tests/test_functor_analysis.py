"""ExprVisitor / ExprMutator, variable analyses and the well-formedness checker."""

import numpy as np

from tvm import relax, tir
from tvm.ir import GlobalVar, IRModule, Op
from tvm.relax import TensorStructInfo, op
from tvm.relax.analysis import (
    all_global_vars,
    bound_vars,
    defined_symbolic_vars,
    free_symbolic_vars,
    free_vars,
    get_var2val,
    verify_well_formed,
    well_formed,
    well_formed_problems,
)

n = tir.Var("n", "int64")


def build():
    x = relax.Var("x", TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(op.exp(x))
            lv1 = bb.emit(op.add(lv, x))
            gv = bb.emit_output(op.multiply(lv1, lv1))
        bb.emit_func_output(gv)
    return bb.get()


class CallCounter(relax.ExprVisitor):
    def __init__(self):
        self.ops = []
        self.defs = []

    def visit_call_(self, call):
        self.ops.append(call.op.name)
        super().visit_call_(call)

    def visit_var_def_(self, var):
        self.defs.append(var.name_hint)


def test_visitor_dispatch():
    v = CallCounter()
    v.visit_expr(build()["main"])
    assert v.ops == ["relax.exp", "relax.add", "relax.multiply"]
    assert v.defs[0] == "x" and len(v.defs) == 4  # dataflow vars reach visit_var_def_ too


class ExpToLog(relax.ExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if isinstance(call.op, Op) and call.op.name == "relax.exp":
            return op.log(call.args[0])
        return call


class AddToMatmulShape(relax.ExprMutator):
    """Changes a value's StructInfo: its variable must be replaced and uses remapped."""

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if isinstance(call.op, Op) and call.op.name == "relax.exp":
            return op.reshape(call.args[0], [-1])
        return call


def test_mutator_identity_when_unchanged():
    f = build()["main"]
    assert relax.ExprMutator().visit_expr(f) is f


def test_mutator_rewrites_and_keeps_the_rest():
    f = build()["main"]
    g = ExpToLog().visit_expr(f)
    assert g is not f
    bindings = g.body.blocks[0].bindings
    assert bindings[0].value.op.name == "relax.log"
    assert bindings[1].var is f.body.blocks[0].bindings[1].var  # same StructInfo: kept
    assert well_formed(IRModule({"main": g}))


def test_mutator_reinfers_struct_info_and_remaps_vars():
    f = build()["main"]
    g = AddToMatmulShape().visit_expr(f)
    b0, b1, _ = g.body.blocks[0].bindings
    assert b0.var.struct_info.ndim == 1
    assert b0.var is not f.body.blocks[0].bindings[0].var
    assert b1.value.args[0] is b0.var
    assert b1.value.struct_info.ndim == 2  # (n*4,) + (n, 4) broadcast to 2-d
    assert well_formed_problems(IRModule({"main": g})) == []


def test_free_and_bound_vars():
    f = build()["main"]
    assert free_vars(f) == []
    body_binding = f.body.blocks[0].bindings[1]
    assert {v.name_hint for v in free_vars(body_binding.value)} == {"lv", "x"}
    assert [v.name_hint for v in bound_vars(f)][0] == "x"
    assert len(get_var2val(f)) == 3
    assert len(get_var2val(build())) == 3
    assert defined_symbolic_vars(f) == [n]
    assert free_symbolic_vars(f) == []
    gv = GlobalVar("g")
    assert all_global_vars(relax.call_tir(gv, [f.params[0]], TensorStructInfo([2]))) == [gv]


def test_well_formed_detects_problems():
    x = relax.Var("x", TensorStructInfo([n], "float32"))
    m = tir.Var("m", "int64")
    dv = relax.DataflowVar("d", TensorStructInfo([n], "float32"))
    y = relax.Var("y", TensorStructInfo([m], "float32"))
    # not normalised: nested call, no StructInfo
    nested = relax.Function([x], relax.SeqExpr([], x), TensorStructInfo([n], "float32"))
    assert well_formed(nested)
    bad_blocks = [
        relax.BindingBlock([relax.VarBinding(dv, x)]),  # DataflowVar outside a dataflow block
        relax.BindingBlock([relax.VarBinding(y, op.exp(op.exp(x)))]),  # nested call, m undefined
    ]
    bad = relax.Function([x], relax.SeqExpr(bad_blocks, y), TensorStructInfo([n], "float32"))
    problems = well_formed_problems(bad)
    text = "\n".join(problems)
    assert "DataflowVar 'd' is defined outside a dataflow block" in text
    assert "argument 0 of a call must be a leaf" in text
    assert "has no StructInfo" in text
    assert "symbolic variable 'm'" in text


def test_well_formed_scoping_and_purity():
    x = relax.Var("x", TensorStructInfo([2], "float32"))
    dv = relax.DataflowVar("d", TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    exp_x = bb.normalize(op.exp(x))
    body = relax.SeqExpr([relax.DataflowBlock([relax.VarBinding(dv, exp_x)])], dv)
    f = relax.Function([x], body, TensorStructInfo([2], "float32"))
    assert any("used outside the scope" in p for p in well_formed_problems(f))
    undefined = relax.Function([x], relax.SeqExpr([], relax.Var("z", [2])), TensorStructInfo([2]))
    assert any("never defined" in p for p in well_formed_problems(undefined))
    impure = relax.Call(relax.ExternFunc("print"), [x], sinfo_args=[relax.ObjectStructInfo()])
    impure = bb.normalize(impure)
    v = relax.Var("p")
    f2 = relax.Function([x], relax.SeqExpr([relax.BindingBlock([relax.VarBinding(v, impure)])], x),
                        TensorStructInfo([2]))
    f2 = bb.normalize(f2)
    assert any("impure call to print inside a pure function" in p for p in well_formed_problems(f2))
    impure_f2 = f2.with_fields(is_pure=False)
    assert impure_f2.struct_info.purity is False  # derived StructInfo follows the change
    assert well_formed(impure_f2)
    try:
        verify_well_formed(f2)
    except relax.WellFormedError as err:
        assert "impure call" in str(err) and err.problems
    else:
        raise AssertionError("verify_well_formed did not raise")


def test_well_formed_module_checks_globals():
    mod = build()
    f = mod["main"]
    call = relax.BlockBuilder().normalize(
        relax.call_tir(GlobalVar("missing"), [f.params[0]], TensorStructInfo([n, 4], "float32"))
    )
    v = relax.Var("v", call.struct_info)
    g = relax.Function(f.params, relax.SeqExpr([relax.BindingBlock([relax.VarBinding(v, call)])], v),
                       attrs={"global_symbol": "other"})
    problems = well_formed_problems(IRModule({"main": g}))
    assert any("@missing is not in the module" in p for p in problems)
    assert any("global_symbol 'other' differs" in p for p in problems)


def test_constant_only_function_is_well_formed():
    x = relax.Var("x", TensorStructInfo([3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        bb.emit_func_output(bb.emit(op.add(x, relax.const(np.ones(3, "float32")))))
    verify_well_formed(bb.get())


def test_mutator_through_if_branches():
    c = relax.Var("c", relax.PrimStructInfo("bool"))
    x = relax.Var("x", TensorStructInfo([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [c, x]):
        r = bb.emit(relax.If(c, op.exp(x), op.negative(x)))
        bb.emit_func_output(r)
    f = bb.get()["f"]
    assert relax.ExprMutator().visit_expr(f) is f
    g = ExpToLog().visit_expr(f)
    if_node = g.body.blocks[0].bindings[0].value
    inner = if_node.true_branch.blocks[0].bindings[0].value
    assert inner.op.name == "relax.log"
    assert if_node.false_branch is f.body.blocks[0].bindings[0].value.false_branch
    assert well_formed_problems(IRModule({"f": g})) == []
    v = CallCounter()
    v.visit_expr(g)
    assert v.ops == ["relax.log", "relax.negative"]
