"""unswitch_invariant_guards: guards that do not depend on a loop move out of it."""

from __future__ import annotations

import numpy as np
from llvm_test_utils import prim_func
from tvm.target.llvm import build
from tvm.target.llvm.unswitch import unswitch_invariant_guards
from tvm.tir import For, ForKind, IfThenElse, SeqStmt, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore


def _guarded_rows(rows: int = 3):
    """``for k: if t*R + r < n: C[t*R + r] += A[(t*R + r) * 4 + k]`` for each row r."""
    n = SizeVar("n", "int32")
    A = decl_buffer((n * 4,), "float32", "A")
    C = decl_buffer((n,), "float32", "C")
    t, k = Var("t", "int32"), Var("k", "int32")
    rows_ = []
    for r in range(rows):
        row = t * rows + r
        rows_.append(IfThenElse(row < n, BufferStore(C, C[row] + A[row * 4 + k], (row,))))
    inner = For(k, 0, 4, ForKind.SERIAL, SeqStmt(tuple(rows_)))
    body = For(t, 0, (n + rows - 1) // rows, ForKind.SERIAL, inner)
    return prim_func("rows", [A, C], body)


def test_invariant_guards_leave_the_loop():
    f = _guarded_rows()
    out = unswitch_invariant_guards(f)
    outer = out.body
    assert isinstance(outer, For)
    split = outer.body
    assert isinstance(split, IfThenElse) and split.else_case is not None
    fast, slow = split.then_case, split.else_case
    assert isinstance(fast, For) and not any(isinstance(s, IfThenElse) for s in fast.body.seq)
    assert slow is f.body.body  # the guarded loop, unchanged, for the last tile
    assert fast.loop_var is not slow.loop_var  # the copy has its own variables


def test_guards_on_the_loop_variable_stay():
    n = SizeVar("n", "int32")
    C = decl_buffer((n,), "float32", "C")
    k = Var("k", "int32")
    body = For(k, 0, n, ForKind.SERIAL, IfThenElse(k < 5, BufferStore(C, 1.0, (k,))))
    f = prim_func("low", [C], body)
    assert unswitch_invariant_guards(f) is f


def test_unswitched_code_keeps_numbers():
    mod = build(_guarded_rows())
    for n in (1, 5, 6, 7):
        a = np.arange(n * 4, dtype="float32")
        c = np.zeros(n, "float32")
        mod["rows"](a, c)
        np.testing.assert_allclose(c, a.reshape(n, 4).sum(1))
