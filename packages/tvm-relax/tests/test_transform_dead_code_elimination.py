"""DeadCodeElimination: unused bindings (pure only) and unreachable functions."""

import numpy as np
import pytest
from graph_pass_testing import assert_same, fresh, make_mod, op_names, tensor

from tvm import relax, tir
from tvm.relax import op
from tvm.relax.transform import DeadCodeElimination, remove_unused_bindings


def test_unused_chain_is_removed():
    x, = fresh(tensor([4]))

    def before(bb, x):
        dead = bb.emit(op.exp(x))
        bb.emit(op.add(dead, dead))          # only feeds nothing
        return bb.emit(op.negative(x))

    def after(bb, x):
        return bb.emit(op.negative(x))

    mod = make_mod([x], before)
    assert_same(DeadCodeElimination()(mod), make_mod(fresh(tensor([4])), after))


def test_nothing_to_remove_keeps_the_module():
    x, = fresh(tensor([4]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.exp(x)))
    out = DeadCodeElimination()(mod)
    assert out["main"] is mod["main"]


def test_impure_calls_are_kept():
    x, = fresh(tensor([4]))
    effect = relax.ExternFunc("test.print")  # opaque packed function: impure

    def body(bb, x):
        bb.emit(relax.Call(effect, [x], sinfo_args=[relax.ObjectStructInfo()]))
        bb.emit(op.exp(x))  # unused and pure: removed
        return x

    bb = relax.BlockBuilder()
    with bb.function("main", [x], pure=False):
        out = body(bb, x)
        bb.emit_func_output(out)
    mod = DeadCodeElimination()(bb.get())
    values = [b.value for blk in mod["main"].body.blocks for b in blk.bindings]
    assert len(values) == 1 and values[0].op is effect


def test_calls_to_impure_functions_are_kept():
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    y = relax.Var("y", tensor([4]))
    with bb.function("effect", [y], pure=False, private=True):
        bb.emit_func_output(y)
    gv = bb.get().get_global_var("effect")
    with bb.function("main", [x], pure=False):
        bb.emit(relax.Call(gv, [x]))
        bb.emit_func_output(x)
    mod = DeadCodeElimination()(bb.get())
    assert op_names(mod) == ["GlobalVar"]
    assert "effect" in mod


def test_match_cast_without_symbolic_vars_is_removable():
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    n = tir.Var("n", "int64")

    def body(bb, x):
        bb.match_cast(x, tensor([2, 3]))          # unused static check: removed
        bb.match_cast(x, tensor([n, 3]))          # may define n: kept
        return bb.emit(op.exp(x))

    mod = DeadCodeElimination()(make_mod([x], body))
    kinds = [type(b).__name__ for blk in mod["main"].body.blocks for b in blk.bindings]
    assert kinds == ["MatchCast", "VarBinding", "VarBinding"]


def test_dead_bindings_inside_if_branches():
    c = relax.Var("c", relax.PrimStructInfo("bool"))
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [c, x]):
        then_bb = relax.BlockBuilder()
        with then_bb.function("tmp", [x]):
            then_bb.emit(op.exp(x))
            keep = then_bb.emit(op.negative(x))
            then_bb.emit_func_output(keep)
        branch = then_bb.get()["tmp"].body
        out = bb.emit(relax.If(c, branch, x))
        bb.emit_func_output(out)
    mod = DeadCodeElimination()(bb.get())
    if_value = [b.value for blk in mod["main"].body.blocks for b in blk.bindings][0]
    then_ops = [b.value.op.name for blk in if_value.true_branch.blocks for b in blk.bindings]
    assert then_ops == ["relax.negative"]


def _two_function_module():
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    y = relax.Var("y", tensor([4]))
    with bb.function("helper", [y], private=True):
        bb.emit_func_output(bb.emit(op.exp(y)))
    z = relax.Var("z", tensor([4]))
    with bb.function("unused", [z], private=True):
        bb.emit_func_output(z)
    helper = bb.get().get_global_var("helper")
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.Call(helper, [x])))
    return bb.get()


def test_unreachable_functions_are_removed():
    mod = DeadCodeElimination()(_two_function_module())
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["helper", "main"]


def test_entry_functions_keep_private_functions():
    mod = DeadCodeElimination(entry_functions=["unused"])(_two_function_module())
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["helper", "main", "unused"]
    with pytest.raises(ValueError, match="'nope' is not in the module"):
        DeadCodeElimination(["nope"])(_two_function_module())


def test_call_tir_targets_are_reachable_and_unused_prim_funcs_dropped():
    from tvm import te

    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            used = bb.emit_te(lambda a: te.compute(a.shape, lambda i: a[i] * 2), x,
                              primfunc_name_hint="double")
            bb.emit_te(lambda a: te.compute(a.shape, lambda i: a[i] + 1), x,
                       primfunc_name_hint="inc")
            gv = bb.emit_output(used)
        bb.emit_func_output(gv)
    mod = DeadCodeElimination()(bb.get())
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["double", "main"]


def test_module_without_entry_points_keeps_functions():
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("f", [x], private=True):
        bb.emit(op.exp(x))
        bb.emit_func_output(x)
    mod = DeadCodeElimination()(bb.get())
    assert "f" in mod and op_names(mod, "f") == []


def test_remove_unused_bindings_checks_its_input():
    with pytest.raises(TypeError, match="relax.Function"):
        remove_unused_bindings(relax.const(np.zeros(2)))
