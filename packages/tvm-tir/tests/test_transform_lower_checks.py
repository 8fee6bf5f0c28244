"""LowerChecks: ``tir.check`` values become asserts before the statement that uses them,
hoisted out of the loops they do not depend on."""

from lowering_helpers import func_of
from tvm.ffi import assert_structural_equal
from tvm.tir import (
    LT, AssertStmt, Cast, BufferStore, For, ForKind, IntImm, Not, Or, Var, checked, decl_buffer,
    if_then_else,
)
from tvm.tir.transform import lower_checks

MSG = "op: index %lld is out of range"


def _buffers():
    X = decl_buffer((4, 8), "float32", "X")
    Idx = decl_buffer((3,), "int32", "Idx")
    Out = decl_buffer((3, 8), "float32", "Out")
    return X, Idx, Out


def _func(body, X, Idx, Out):
    params = [Var(n, "handle") for n in "xio"]
    return func_of(params, body, dict(zip(params, (X, Idx, Out))))


def test_a_row_check_is_hoisted_out_of_the_column_loop():
    X, Idx, Out = _buffers()
    i, j = Var("i"), Var("j")
    raw = Idx[i]
    pos = checked(raw, LT(raw, 4), MSG, raw)

    def body(pos_expr, inner=lambda s: s):
        return For(i, 0, 3, ForKind.SERIAL, inner(
            For(j, 0, 8, ForKind.SERIAL, BufferStore(Out, X[pos_expr, j], (i, j)))))

    got = lower_checks(_func(body(pos), X, Idx, Out))
    inner = For(j, 0, 8, ForKind.SERIAL, BufferStore(Out, X[raw, j], (i, j)))
    want = For(i, 0, 3, ForKind.SERIAL, AssertStmt(LT(raw, 4), MSG, inner, (Cast("int64", raw),)))
    assert_structural_equal(got.body, want)


def test_a_check_that_depends_on_the_loop_stays_inside_it():
    X, Idx, Out = _buffers()
    i = Var("i")
    raw = Idx[i]
    store = BufferStore(Out, X[checked(raw, LT(raw, 4), MSG, raw), 0], (i, 0))
    got = lower_checks(_func(For(i, 0, 3, ForKind.SERIAL, store), X, Idx, Out))
    want = For(i, 0, 3, ForKind.SERIAL,
               AssertStmt(LT(raw, 4), MSG, BufferStore(Out, X[raw, 0], (i, 0)), (Cast("int64", raw),)))
    assert_structural_equal(got.body, want)


def test_not_hoisted_past_a_loop_that_may_not_run_or_writes_what_it_reads():
    X, Idx, Out = _buffers()
    i, j, n = Var("i"), Var("j"), Var("n")
    raw = Idx[i]
    c = checked(raw, LT(raw, 4), MSG, raw)
    zero_trip = For(j, 0, n, ForKind.SERIAL, BufferStore(Out, X[c, j], (i, j)))
    got = lower_checks(_func(For(i, 0, 3, ForKind.SERIAL, zero_trip), X, Idx, Out))
    assert isinstance(got.body.body, For)  # the assert stays under the loop over n
    writes_index = For(j, 0, 8, ForKind.SERIAL, BufferStore(Idx, c, (i,)))
    got = lower_checks(_func(For(i, 0, 3, ForKind.SERIAL, writes_index), X, Idx, Out))
    assert isinstance(got.body.body, For)


def test_a_check_under_a_lazy_branch_holds_only_when_it_is_taken():
    X, Idx, Out = _buffers()
    i = Var("i")
    raw = Idx[i]
    guard = LT(i, 2)
    value = if_then_else(guard, X[checked(raw, LT(raw, 4), MSG, raw), 0], 0.0)
    got = lower_checks(_func(BufferStore(Out, value, (i, 0)), X, Idx, Out))
    want = AssertStmt(Or(Not(guard), LT(raw, 4)), MSG,
                      BufferStore(Out, if_then_else(guard, X[raw, 0], 0.0), (i, 0)), (Cast("int64", raw),))
    assert_structural_equal(got.body, want)


def test_messages_args_are_int64_and_funcs_without_checks_are_unchanged():
    X, Idx, Out = _buffers()
    c = checked(IntImm("int32", 1), True, "m %lld", Idx[0])
    assert c.args[3].dtype == "int64" and c.dtype == "int32"
    f = _func(BufferStore(Out, X[0, 0], (0, 0)), X, Idx, Out)
    assert lower_checks(f) is f


def test_an_outer_check_is_asserted_before_the_checks_in_its_value():
    """An operator's own check (index range) fails before a guard inside its value (a
    division by the axis size) would."""
    X, Idx, Out = _buffers()
    i = Var("i")
    raw = Idx[i]
    inner = checked(raw, LT(raw, 3), "inner")
    outer = checked(inner, LT(raw, 4), "outer")
    got = lower_checks(_func(For(i, 0, 3, ForKind.SERIAL,
                                 BufferStore(Out, X[outer, 0], (i, 0))), X, Idx, Out))
    first = got.body.body
    assert isinstance(first, AssertStmt) and str(first.message) == "outer"
    assert isinstance(first.body, AssertStmt) and str(first.body.message) == "inner"
