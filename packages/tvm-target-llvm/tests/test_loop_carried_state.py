"""Regression: a value the loop itself writes is not loop-invariant.

``unswitch_invariant_guards`` and ``promote_loop_accumulators`` treated an expression as
invariant when it used no variable bound inside the loop, so a guard on a flag or an index
through a counter that the loop updates (``out[count[0]] = ...; count[0] += ...``, the
compaction loops of nonzero/unique) was hoisted out of the loop and the kernel computed
garbage (or, once LLVM saw the resulting undefined reads, never terminated).
"""

from __future__ import annotations

import numpy as np
from llvm_test_utils import prim_func
from tvm.target.llvm import build
from tvm.target.llvm.promote import promote_loop_accumulators
from tvm.target.llvm.unswitch import unswitch_invariant_guards
from tvm.tir import For, ForKind, IfThenElse, SeqStmt, SizeVar, Var, decl_buffer
from tvm.tir.expr import EQ, NE, Cast, IntImm
from tvm.tir.stmt import Allocate, BufferStore, DeclBuffer
from tvm.tir.stmt_functor import post_order_visit


def _as_int(cond):
    return Cast("int32", cond)


def _local_scalar(name: str, dtype: str = "int32"):
    return decl_buffer((1,), dtype, name, scope="local")


def _with_locals(body, *buffers):
    for buf in reversed(buffers):
        body = Allocate(buf.data, buf.dtype, (1,), IntImm("bool", 1), DeclBuffer(buf, body),
                        scope="local")
    return body


def _count_runs():
    """``runs`` = the number of runs of equal neighbours in ``A``, tracked by a flag that the
    loop rewrites before the guard reads it."""
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    runs = decl_buffer((1,), "int32", "runs")
    same = _local_scalar("same")
    p = Var("p", "int32")
    body = For(p, 0, n, ForKind.SERIAL, SeqStmt((
        BufferStore(same, 0, (0,)),
        IfThenElse(p > 0, BufferStore(same, _as_int(EQ(A[p], A[p - 1])), (0,))),
        IfThenElse(EQ(same[0], 0), BufferStore(runs, runs[0] + 1, (0,))),
    )))
    return prim_func("count_runs", [A, runs], _with_locals(body, same))


def test_a_guard_on_a_flag_the_loop_writes_stays_inside():
    f = _count_runs()
    assert unswitch_invariant_guards(f) is f
    mod = build(f)
    a = np.array([3, 3, 1, 2, 2, 2, 3], "int32")
    runs = np.zeros(1, "int32")
    mod["count_runs"](a, runs)
    assert runs[0] == 4


def _compact():
    """``out[count[0]] = i; count[0] += A[i] != 0``: the store's index reads a counter
    the loop updates, so ``out`` must not be promoted to a loop-invariant slot."""
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    out = decl_buffer((n,), "int32", "out")
    count = decl_buffer((1,), "int32", "count")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.SERIAL, SeqStmt((
        BufferStore(out, i, (count[0],)),
        BufferStore(count, count[0] + _as_int(NE(A[i], 0)), (0,)),
    )))
    return prim_func("compact", [A, out, count], body)


def test_an_index_through_a_counter_the_loop_writes_is_not_promoted():
    f = _compact()
    promoted = promote_loop_accumulators(f)
    stored = set()
    post_order_visit(promoted.body, lambda m: stored.add(m.buffer.name)
                     if isinstance(m, BufferStore) else None)
    assert "out" in stored  # still stored directly, through the counter
    a = np.array([0, 5, 0, 7, 1, 0], "int32")
    got = np.full(6, -1, "int32")
    count = np.zeros(1, "int32")
    build(f)["compact"](a, got, count)
    assert count[0] == 3
    np.testing.assert_array_equal(got[:3], np.nonzero(a)[0])
