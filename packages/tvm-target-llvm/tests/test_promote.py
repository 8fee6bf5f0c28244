"""promote_loop_accumulators: loop-invariant accumulators move to small local buffers."""

from __future__ import annotations

import numpy as np
from llvm_test_utils import prim_func
from tvm import te, tir
from tvm.ir.module import IRModule
from tvm.target.llvm import build
from tvm.target.llvm.promote import promote_loop_accumulators
from tvm.target.llvm.schedule_rules import schedule_prim_func
from tvm.target.llvm.unswitch import unswitch_invariant_guards
from tvm.tir import For, ForKind, IfThenElse, Ramp, SeqStmt, SizeVar, Var, decl_buffer
from tvm.tir.expr import BufferLoad
from tvm.tir.stmt import Allocate, BufferStore
from tvm.tir.stmt_functor import post_order_visit


def _rows(rows: int = 3, lanes: int = 4, guard: bool = False, overlap: bool = False):
    """``for k: C[r*L : r*L+L] += A[r*4 + k] * B[k*L : k*L+L]`` for each row r (n rows of C
    when ``guard``: ``if r < n``)."""
    n = SizeVar("n", "int32")
    A = decl_buffer((rows * 4,), "float32", "A")
    B = decl_buffer((4 * lanes,), "float32", "B")
    C = decl_buffer((rows * lanes,), "float32", "C")
    k = Var("k", "int32")
    stmts = []
    for r in range(rows):
        base = r * (lanes // 2 if overlap else lanes)
        idx = Ramp(tir.const(base, "int32"), 1, lanes)
        upd = BufferStore(C, C[idx] + tir.Broadcast(A[r * 4 + k], lanes) *
                          B[Ramp(k * lanes, 1, lanes)], (idx,))
        stmts.append(IfThenElse(tir.const(r, "int32") < n, upd) if guard else upd)
    body = For(k, 0, 4, ForKind.SERIAL, SeqStmt(tuple(stmts)))
    return prim_func("rows", [n, A, B, C], body)


def _stores_in_loops(func) -> set[str]:
    names: set[str] = set()

    def visit(node):
        if isinstance(node, For):
            post_order_visit(node.body, lambda m: names.add(m.buffer.name)
                             if isinstance(m, BufferStore) else None)

    post_order_visit(func.body, visit)
    return names


def _run(func, n: int = 3, rows: int = 3, lanes: int = 4, overlap: bool = False):
    a = np.arange(rows * 4, dtype="float32")
    b = np.linspace(-1, 1, 4 * lanes).astype("float32")
    c = np.ones(rows * lanes, "float32")
    build(func)["rows"](n, a, b, c)
    ref = np.ones(rows * lanes, "float32")
    step = lanes // 2 if overlap else lanes
    for k in range(4):  # the kernel's order: rows inside k
        for r in range(min(n, rows)):
            ref[r * step:r * step + lanes] += a[r * 4 + k] * b[k * lanes:(k + 1) * lanes]
    return c, ref


def test_accumulators_leave_memory():
    f = _rows()
    out = promote_loop_accumulators(f)
    assert isinstance(out.body, Allocate) and out.body.scope == "local"
    assert _stores_in_loops(out) == {"C_acc"}  # the loop only updates the local copy
    got, ref = _run(f)
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_invariant_guards_guard_the_copies():
    f = _rows(guard=True)
    out = promote_loop_accumulators(f)
    assert _stores_in_loops(out) == {"C_acc"}
    for n in (0, 1, 2, 3):
        got, ref = _run(f, n=n)
        np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_overlapping_slots_stay_in_memory():
    f = _rows(overlap=True)
    assert promote_loop_accumulators(f) is f
    got, ref = _run(f, overlap=True)
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_loop_variant_index_is_not_promoted():
    n = SizeVar("n", "int32")
    C = decl_buffer((n,), "float32", "C")
    k = Var("k", "int32")
    body = For(k, 0, n, ForKind.SERIAL, BufferStore(C, C[k] + 1.0, (k,)))
    f = prim_func("f", [C], body)
    assert promote_loop_accumulators(f) is f


def test_aliasing_params_are_left_alone():
    f = _rows().with_attr("tir.noalias", False)
    assert promote_loop_accumulators(f) is f


def _matmul_epilogue(m):
    A = te.placeholder((m, 64), name="A")
    B = te.placeholder((64, 96), name="B")
    r = te.reduce_axis((0, 64), name="k")
    C = te.compute((m, 96), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((m, 96), lambda i, j: te.max(C[i, j], 0.0), name="T_relu")
    return te.create_prim_func([A, B, D])


def _lowered(func):
    from tvm.tir.build import lower

    low = lower(IRModule({"main": schedule_prim_func(func)}), target="llvm")
    return next(f for _, f in low.items() if isinstance(f, tir.PrimFunc))


def _reduction_loop_stores(func) -> list[set[str]]:
    """For each serial loop that holds an FMA-like update: the buffers it stores to."""
    out = []

    def visit(node):
        if isinstance(node, For) and node.kind == ForKind.SERIAL:
            stores: set[str] = set()
            reads_self = []

            def inner(m):
                if isinstance(m, BufferStore):
                    stores.add(m.buffer.name)
                    post_order_visit(m.value, lambda e: reads_self.append(True) if isinstance(
                        e, BufferLoad) and e.buffer.data is m.buffer.data else None)
            post_order_visit(node.body, inner)
            if reads_self and not any(isinstance(x, For) for x in _children(node.body)):
                out.append(stores)

    post_order_visit(func.body, visit)
    return out


def _children(stmt):
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, For) else None)
    return found


def test_symbolic_row_matmul_full_tiles_accumulate_locally():
    """Rows symbolic: the full-tile path of the register tile has no guard and updates
    only a local accumulator; the result stays right for row counts around the tile."""
    n = te.var("n")
    f = _matmul_epilogue(n)
    low = unswitch_invariant_guards(_lowered(f))
    promoted = promote_loop_accumulators(low)
    loops = _reduction_loop_stores(promoted)
    assert loops and any(s == {"C_acc"} for s in loops)
    mod = tir.build(f, target="llvm")
    rng = np.random.default_rng(0)
    for m in (1, 5, 6, 7, 37):
        a = rng.standard_normal((m, 64)).astype("float32")
        b = rng.standard_normal((64, 96)).astype("float32")
        d = np.zeros((m, 96), "float32")
        mod["main"](a, b, d)
        np.testing.assert_allclose(d, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_buffer_allocated_inside_the_loop_stays():
    A = decl_buffer((8,), "float32", "A")
    C = decl_buffer((1,), "float32", "C")
    tmp = decl_buffer((1,), "float32", "tmp", scope="local")
    k = Var("k", "int32")
    inner = SeqStmt((BufferStore(tmp, A[k], (0,)), BufferStore(C, C[0] + tmp[0], (0,))))
    from tvm.tir.stmt import DeclBuffer

    alloc = Allocate(tmp.data, "float32", (1,), tir.const(True, "bool"), DeclBuffer(tmp, inner),
                     scope="local")
    f = prim_func("acc", [A, C], For(k, 0, 8, ForKind.SERIAL, alloc))
    out = promote_loop_accumulators(f)
    created = []
    post_order_visit(out.body, lambda n: created.append(n.buffer_var.name)
                     if isinstance(n, Allocate) else None)
    assert sorted(created) == ["C_acc", "tmp"]
    a = np.arange(8, dtype="float32")
    c = np.full(1, 2.0, "float32")
    build(f)["acc"](a, c)
    assert c[0] == 2.0 + a.sum()


def test_guard_reading_memory_the_loop_writes_is_not_invariant():
    """``if flag[0] == 0: C[0] += 1; flag[0] = k`` must keep its per-iteration test."""
    C = decl_buffer((1,), "float32", "C")
    flag = decl_buffer((1,), "int32", "flag")
    k = Var("k", "int32")
    body = SeqStmt((IfThenElse(flag[0] == 0, BufferStore(C, C[0] + 1.0, (0,))),
                    BufferStore(flag, k, (0,))))
    f = prim_func("flag", [C, flag], For(k, 0, 4, ForKind.SERIAL, body))
    out = promote_loop_accumulators(f)
    made = []
    post_order_visit(out.body, lambda n: made.append(n.buffer_var.name)
                     if isinstance(n, Allocate) else None)
    assert made == ["flag_acc"]  # flag itself may move to a register; C stays guarded
    for func in (f, out):
        c, fl = np.zeros(1, "float32"), np.zeros(1, "int32")
        build(func)["flag"](c, fl)
        assert c[0] == 2.0 and fl[0] == 3  # k = 0 and k = 1 see flag == 0
