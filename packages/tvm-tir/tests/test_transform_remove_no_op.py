"""RemoveNoOp: statements that do nothing are dropped."""

from lowering_helpers import func_of, mod_of
from tvm.ffi import assert_structural_equal
from tvm.tir import (
    LT, Allocate, AttrStmt, BufferStore, DeclBuffer, Evaluate, FloatImm, For, IfThenElse, IntImm,
    LetStmt, Not, SeqStmt, StringImm, Var, While, call_extern, convert, decl_buffer,
)
from tvm.tir.transform import RemoveNoOp, remove_no_op


def _with(body_fn):
    a = Var("a", "handle")
    A = decl_buffer((8,), "float32", "A")
    return func_of([a], body_fn(A), {a: A}), A


def _store(A, k=0, v=1.0):
    return BufferStore(A, FloatImm("float32", v), (k,))


def _zero():
    return Evaluate(IntImm("int32", 0))


def test_constant_evaluates_and_empty_seq_elements_are_dropped():
    func, A = _with(lambda A: SeqStmt((Evaluate(convert(3)), _store(A), Evaluate(FloatImm("float32", 1.0)))))
    assert_structural_equal(remove_no_op(func).body, _store(A))


def test_pure_expression_evaluate_is_dropped_side_effect_kept():
    x = Var("x")
    call = call_extern("int32", "log_it", x)
    func, A = _with(lambda A: SeqStmt((Evaluate(x + 1), Evaluate(call))))
    func = func.with_fields(params=(*func.params, x))
    assert_structural_equal(remove_no_op(func).body, Evaluate(call))


def test_all_no_ops_become_evaluate_zero():
    func, _ = _with(lambda A: SeqStmt((Evaluate(convert(0)), Evaluate(convert(1)))))
    assert_structural_equal(remove_no_op(func).body, _zero())


def test_zero_extent_and_empty_body_loops_are_dropped():
    i, j = Var("i"), Var("j")
    func, A = _with(lambda A: SeqStmt((
        For(i, 0, 0, body=_store(A)),
        For(j, 0, 4, body=Evaluate(convert(0))),
        _store(A, 1),
    )))
    assert_structural_equal(remove_no_op(func).body, _store(A, 1))


def test_if_with_constant_condition_keeps_taken_branch():
    func, A = _with(lambda A: SeqStmt((
        IfThenElse(convert(True), _store(A, 1), _store(A, 2)),
        IfThenElse(convert(False), _store(A, 3)),
        IfThenElse(convert(False), _store(A, 4), _store(A, 5)),
    )))
    assert_structural_equal(remove_no_op(func).body, SeqStmt((_store(A, 1), _store(A, 5))))


def test_if_with_empty_then_branch_is_negated():
    n = Var("n")
    func, A = _with(lambda A: IfThenElse(LT(n, 4), Evaluate(convert(0)), _store(A)))
    func = func.with_fields(params=(*func.params, n))
    assert_structural_equal(remove_no_op(func).body, IfThenElse(Not(LT(n, 4)), _store(A)))


def test_if_with_only_empty_branches_is_dropped():
    n = Var("n")
    func, _ = _with(lambda A: IfThenElse(LT(n, 4), Evaluate(convert(0)), Evaluate(convert(0))))
    func = func.with_fields(params=(*func.params, n))
    assert_structural_equal(remove_no_op(func).body, _zero())


def test_store_of_a_location_to_itself_is_dropped():
    i = Var("i")
    func, A = _with(lambda A: For(i, 0, 8, body=SeqStmt((BufferStore(A, A[i], (i,)), BufferStore(A, A[i], (i + 1,))))))
    out = remove_no_op(func)
    assert_structural_equal(out.body, For(i, 0, 8, body=BufferStore(A, A[i], (i + 1,))))


def test_wrappers_around_nothing_are_dropped():
    x, t = Var("x"), Var("T", "handle")
    T = decl_buffer((4,), "float32", "T", data=t)
    func, _ = _with(lambda A: SeqStmt((
        LetStmt(x, convert(1), Evaluate(convert(0))),
        AttrStmt(StringImm("b"), "pragma_x", convert(1), Evaluate(convert(0))),
        Allocate(t, "float32", (4,), convert(True), DeclBuffer(T, Evaluate(convert(0)))),
        While(convert(False), Evaluate(call_extern("int32", "spin"))),
    )))
    assert_structural_equal(remove_no_op(func).body, _zero())


def test_let_with_side_effect_value_is_kept():
    x = Var("x")
    func, _ = _with(lambda A: LetStmt(x, call_extern("int32", "f"), Evaluate(convert(0))))
    assert isinstance(remove_no_op(func).body, LetStmt)


def test_pass_form_and_unchanged_function_identity():
    func, A = _with(lambda A: _store(A))
    assert remove_no_op(func) is func
    mod = mod_of(func)
    assert RemoveNoOp()(mod) is mod
