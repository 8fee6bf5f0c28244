"""EliminateCommonSubexpr: structural duplicates inside dataflow blocks."""

import numpy as np
from graph_pass_testing import assert_same, bindings, fresh, make_mod, op_names, tensor

from tvm import relax
from tvm.relax import op
from tvm.relax.transform import (
    CanonicalizeBindings,
    CommonSubexpressionElimination,
    EliminateCommonSubexpr,
)


def test_duplicate_calls_are_merged():
    x, y = fresh(tensor([4]), tensor([4]))

    def before(bb, x, y):
        a = bb.emit(op.add(x, y))
        b = bb.emit(op.add(x, y))
        return bb.emit(op.multiply(a, b))

    def after(bb, x, y):
        a = bb.emit(op.add(x, y))
        return bb.emit(op.multiply(a, a))

    out = EliminateCommonSubexpr()(make_mod([x, y], before))
    assert_same(out, make_mod(fresh(tensor([4]), tensor([4])), after))


def test_merging_cascades_through_remapped_arguments():
    x, = fresh(tensor([4]))

    def before(bb, x):
        a = bb.emit(op.exp(x))
        b = bb.emit(op.exp(x))
        c = bb.emit(op.negative(a))
        d = bb.emit(op.negative(b))    # equal to c once b is a
        return bb.emit(op.add(c, d))

    out = EliminateCommonSubexpr()(make_mod([x], before))
    assert op_names(out) == ["relax.exp", "relax.negative", "relax.add", "DataflowVar"]
    add = bindings(out)[2].value
    assert add.args[0] is add.args[1]


def test_different_attributes_or_arguments_are_not_merged():
    x, y = fresh(tensor([2, 3]), tensor([2, 3]))

    def body(bb, x, y):
        a = bb.emit(op.permute_dims(x, [1, 0]))
        b = bb.emit(op.permute_dims(y, [1, 0]))
        c = bb.emit(op.sum(x, axis=[0]))
        d = bb.emit(op.sum(x, axis=[1]))
        return bb.emit(relax.Tuple([a, b, c, d]))

    mod = make_mod([x, y], body)
    assert EliminateCommonSubexpr()(mod) is mod


def test_constants_compare_by_value():
    x, = fresh(tensor([3]))
    c1 = relax.const(np.arange(3, dtype="float32"))
    c2 = relax.const(np.arange(3, dtype="float32"))
    c3 = relax.const(np.ones(3, dtype="float32"))

    def body(bb, x):
        a = bb.emit(op.add(x, c1))
        b = bb.emit(op.add(x, c2))   # same values as c1: merged
        c = bb.emit(op.add(x, c3))   # different values: kept
        return bb.emit(relax.Tuple([a, b, c]))

    out = EliminateCommonSubexpr()(make_mod([x], body))
    assert op_names(out).count("relax.add") == 2


def test_output_duplicate_becomes_alias_then_canonical():
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            bb.emit(op.exp(x))
            gv = bb.emit_output(op.exp(x))
        bb.emit_func_output(gv)
    mod = bb.get()
    out = EliminateCommonSubexpr()(mod)
    assert op_names(out) == ["relax.exp", "DataflowVar"]
    out = CanonicalizeBindings()(out)
    assert op_names(out) == ["relax.exp"]


def test_tuples_and_call_only():
    x, y = fresh(tensor([4]), tensor([4]))

    def body(bb, x, y):
        t1 = bb.emit(relax.Tuple([x, y]))
        t2 = bb.emit(relax.Tuple([x, y]))
        return bb.emit(relax.Tuple([t1, t2]))

    mod = make_mod([x, y], body)
    assert EliminateCommonSubexpr(call_only=True)(mod) is mod
    assert op_names(CommonSubexpressionElimination()(mod)).count("Tuple") == 2


def test_allocations_and_non_dataflow_blocks_are_not_merged():
    x, = fresh(tensor([4]))

    def body(bb, x):
        a = bb.emit(op.builtin.alloc_tensor(relax.ShapeExpr([4]), "float32"))
        b = bb.emit(op.builtin.alloc_tensor(relax.ShapeExpr([4]), "float32"))
        return bb.emit(relax.Tuple([a, b]))

    mod = make_mod([x], body)
    assert EliminateCommonSubexpr()(mod) is mod

    def plain(bb, x):
        a = bb.emit(op.exp(x))
        b = bb.emit(op.exp(x))
        return bb.emit(relax.Tuple([a, b]))

    mod = make_mod([x], plain, dataflow=False)
    assert EliminateCommonSubexpr()(mod) is mod


def test_impure_calls_are_never_merged():
    x, = fresh(tensor([4]))
    effect = relax.ExternFunc("test.effect")   # opaque packed function: impure

    def body(bb, x):
        a = bb.emit(relax.Call(effect, [x], sinfo_args=[tensor([4])]))
        b = bb.emit(relax.Call(effect, [x], sinfo_args=[tensor([4])]))
        return bb.emit(relax.Tuple([a, b]))

    mod = make_mod([x], body)
    assert EliminateCommonSubexpr()(mod) is mod
    pure = relax.ExternFunc("test.pure", relax.FuncStructInfo.opaque_func(purity=True))

    def pure_body(bb, x):
        a = bb.emit(relax.Call(pure, [x], sinfo_args=[tensor([4])]))
        b = bb.emit(relax.Call(pure, [x], sinfo_args=[tensor([4])]))
        return bb.emit(relax.Tuple([a, b]))

    out = EliminateCommonSubexpr()(make_mod([x], pure_body))
    assert op_names(out).count("ExternFunc") == 1
