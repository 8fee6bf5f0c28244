"""LowerThreadAllreduce: ``tir.tvm_thread_allreduce`` as warp shuffles or a shared-memory tree.

Runs inside kernels (after LowerThreadBinding).  The reducing threads are the threadIdx
axes named by the call; the other threadIdx axes of the block form independent *groups*.
With ``n`` reducing threads, ``rid`` a thread's linear index among them and ``gid`` its
group:

* **warp shuffles** (``warp_size > 1``, e.g. CUDA's ``__shfl_down_sync`` or Metal's
  ``simd_shuffle_down``), when the reducing axes are the fastest-varying ones (so a group
  is a contiguous run of lanes) and either ``n`` is a power of two dividing the warp size
  or a multiple of the warp size with at most ``warp_size`` warps: each warp reduces with
  ``log2`` shuffle-down steps; with several warps, lane 0 of each warp stores its partial
  result in shared memory and the first warp reduces those; the result is broadcast to
  the whole group;
* **shared-memory tree** otherwise (and for targets without shuffles, e.g. OpenCL, whose
  ``thread_warp_size`` is 1): the values go to a ``__shared__``/``__local`` array, which is
  halved ``log2(n)`` times with a barrier after each step (a non-power-of-two ``n`` is
  folded to a power of two first).

The call must be reached by every thread of the block: one under a condition on a thread
index is an error.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.transform import FunctionPass

from ..buffer import Buffer, decl_buffer
from ..expr import (
    EQ, LT, BufferLoad, Call, Div, IntImm, IterVar, Mod, PrimExpr, StringImm, Var,
    const,
)
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..op import if_then_else
from ..stmt import (
    Allocate, AttrStmt, BufferStore, DeclBuffer, Evaluate, IfThenElse, LetStmt, Stmt, stmt_seq,
)
from ..stmt_functor import free_vars
from ._common import prim_func_pass
from ..expr_util import const_int
from ._gpu import call_op, gpu_limits, is_thread_tag, storage_sync
from .lower_cross_thread_reduction import combine, reducer_identity

__all__ = ["LowerThreadAllreduce", "lower_thread_allreduce"]


class _Seq:
    """Builds ``let``-nested statement sequences in program order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def let(self, name: str, value: PrimExpr) -> Var:
        var = Var(name, value.dtype)
        self.items.append(("let", (var, value)))
        return var

    def add(self, stmt: Stmt) -> None:
        self.items.append(("stmt", stmt))

    def build(self) -> Stmt:
        body: Optional[Stmt] = None
        pending: list[Stmt] = []
        for kind, item in reversed(self.items):
            if kind == "stmt":
                pending.insert(0, item)
                continue
            inner = stmt_seq(*pending) if pending else Evaluate(IntImm("int32", 0))
            body = LetStmt(item[0], item[1], inner)
            pending = [body]
        return stmt_seq(*pending)


def _offset(base: Optional[PrimExpr], x: PrimExpr) -> PrimExpr:
    return x if base is None else base + x


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


class _Lowerer(StmtExprMutator):
    def __init__(self, fname: str, warp_size: int) -> None:
        self.fname = fname
        self.warp = warp_size
        self.threads: dict[str, tuple[Var, int]] = {}
        self.divergent: list[PrimExpr] = []
        self.count = 0

    def visit_attr_stmt_(self, op: AttrStmt) -> Any:
        if op.attr_key == "thread_extent" and isinstance(op.node, IterVar) \
                and is_thread_tag(op.node.thread_tag):
            ext = const_int(op.value)
            tag = op.node.thread_tag
            self.threads[tag] = (op.node.var, ext if ext is not None else -1)
            try:
                return self.generic_mutate(op)
            finally:
                del self.threads[tag]
        return self.generic_mutate(op)

    def _thread_vars(self) -> set[Var]:
        return {v for v, _ in self.threads.values()}

    def visit_if_then_else_(self, op: IfThenElse) -> Any:
        tvars = self._thread_vars()
        divergent = any(v in tvars for v in free_vars(op.condition))
        if divergent:
            self.divergent.append(op.condition)
        try:
            return self.generic_mutate(op)
        finally:
            if divergent:
                self.divergent.pop()

    def visit_evaluate_(self, op: Evaluate) -> Any:
        call = op.value
        if isinstance(call, Call) and getattr(call.op, "name", "") == "tir.tvm_thread_allreduce":
            return self._lower(call)
        return op

    # ------------------------------------------------------------------ the lowering
    def _lower(self, call: Call) -> Stmt:
        if len(call.args) < 4 or not isinstance(call.args[0], StringImm):
            raise ValueError(f"LowerThreadAllreduce: malformed tvm_thread_allreduce {call}")
        kind = call.args[0].value
        value, dest = call.args[1], call.args[2]
        if not isinstance(dest, BufferLoad):
            raise ValueError("LowerThreadAllreduce: the destination of tvm_thread_allreduce "
                             f"must be a BufferLoad, got {type(dest).__name__}")
        if self.divergent:
            raise ValueError(
                f"LowerThreadAllreduce: in {self.fname}, the cross-thread reduction into "
                f"{dest.buffer.name!r} is under the condition {self.divergent[-1]}, which "
                "depends on a thread index; every thread of the block must reach it (use "
                "thread extents that match the loop extents)"
            )
        by_var = {v: tag for tag, (v, _) in self.threads.items()}
        rtags: list[str] = []
        for arg in call.args[3:]:
            tags = {by_var[v] for v in free_vars(arg) if v in by_var}
            if len(tags) != 1:
                raise ValueError(f"LowerThreadAllreduce: {arg} in a tvm_thread_allreduce of "
                                 f"{self.fname} is not a thread index of the enclosing kernel")
            rtags.append(tags.pop())
        for tag in rtags:
            if self.threads[tag][1] < 0:
                raise ValueError(f"LowerThreadAllreduce: {tag} has a symbolic extent in "
                                 f"{self.fname}; a reduction needs a constant thread count")
        axes = [t for t in ("threadIdx.x", "threadIdx.y", "threadIdx.z")
                if t in self.threads and self.threads[t][1] > 1]
        red_axes = [t for t in axes if t in rtags]
        other_axes = [t for t in axes if t not in rtags]
        rid, n = self._linear(red_axes)
        gid, groups = self._linear(other_axes)

        def store_dest(v: PrimExpr) -> Stmt:
            return BufferStore(dest.buffer, v, dest.indices)

        if n == 1:
            return store_dest(value)
        contiguous = axes[:len(red_axes)] == red_axes
        w = self.warp
        self.count += 1
        if w > 1 and contiguous and ((n <= w and w % n == 0 and n & (n - 1) == 0)
                                     or (n % w == 0 and n // w <= w)):
            return self._warp(kind, value, store_dest, rid, gid, n, groups)
        return self._tree(kind, value, store_dest, rid, gid, n, groups)

    def _linear(self, tags: list[str]) -> tuple[PrimExpr, int]:
        index: PrimExpr = IntImm("int32", 0)
        size = 1
        for tag in tags:
            var, ext = self.threads[tag]
            term = var if size == 1 else var * size
            index = term if size == 1 else index + term
            size *= ext
        return index, size

    def _shared(self, dtype: str, count: int) -> Buffer:
        return decl_buffer((count,), dtype, f"red_buf{self.count}", scope="shared")

    @staticmethod
    def _alloc(buf: Buffer, body: Stmt) -> Stmt:
        return Allocate(buf.data, buf.dtype, buf.shape, const(True), DeclBuffer(buf, body),
                        "shared")

    def _tree(self, kind: str, value: PrimExpr, store_dest: Any, rid: PrimExpr, gid: PrimExpr,
              n: int, groups: int) -> Stmt:
        dtype = value.dtype
        buf = self._shared(dtype, n * groups)
        base = gid * n if groups > 1 else None

        def at(offset: Any) -> PrimExpr:
            return BufferLoad(buf, (_offset(base, offset),))

        def step(width: int, active: PrimExpr) -> Stmt:
            new = combine(kind, at(rid), at(rid + width))
            return IfThenElse(LT(rid, active), BufferStore(buf, new, (_offset(base, rid),)))

        stmts: list[Stmt] = [BufferStore(buf, value, (_offset(base, rid),)), storage_sync()]
        p = _pow2_floor(n)
        if p < n:
            stmts += [step(p, IntImm("int32", n - p)), storage_sync()]
        s = p // 2
        while s >= 1:
            stmts += [step(s, IntImm("int32", s)), storage_sync()]
            s //= 2
        stmts += [store_dest(at(IntImm("int32", 0))), storage_sync()]
        return self._alloc(buf, stmt_seq(*stmts))

    def _shuffle_tree(self, seq: _Seq, kind: str, mask: Var, value: PrimExpr, width: int,
                      name: str) -> PrimExpr:
        cur: PrimExpr = seq.let(f"{name}0", value)
        off, k = width // 2, 1
        while off >= 1:
            other = call_op(value.dtype, "tir.tvm_warp_shuffle_down", mask, cur,
                            IntImm("int32", off), IntImm("int32", self.warp))
            cur = seq.let(f"{name}{k}", combine(kind, cur, other))
            off //= 2
            k += 1
        return cur

    def _warp(self, kind: str, value: PrimExpr, store_dest: Any, rid: PrimExpr, gid: PrimExpr,
              n: int, groups: int) -> Stmt:
        w = self.warp
        seq = _Seq()
        mask = seq.let("mask", call_op("uint32", "tir.tvm_warp_activemask"))
        if n <= w:
            red = self._shuffle_tree(seq, kind, mask, value, n, "red")
            src: PrimExpr = IntImm("int32", 0)
            if groups > 1 and n < w:  # the group's first lane within the warp
                lane = seq.let("lane", Mod(rid + gid * n, w))
                src = Div(lane, n) * n
            seq.add(store_dest(call_op(value.dtype, "tir.tvm_warp_shuffle", mask, red, src,
                                       IntImm("int32", w))))
            return seq.build()
        warps = n // w
        buf = self._shared(value.dtype, warps * groups)
        base = gid * warps if groups > 1 else None
        first = _offset(base, IntImm("int32", 0))
        red = self._shuffle_tree(seq, kind, mask, value, w, "red")
        seq.add(IfThenElse(EQ(Mod(rid, w), 0),
                           BufferStore(buf, red, (_offset(base, Div(rid, w)),))))
        seq.add(storage_sync())
        part = if_then_else(LT(rid, warps), BufferLoad(buf, (_offset(base, rid),)),
                            reducer_identity(kind, value.dtype))
        width = 1
        while width < warps:
            width *= 2
        total = self._shuffle_tree(seq, kind, mask, part, width, "total")
        seq.add(IfThenElse(EQ(rid, 0), BufferStore(buf, total, (first,))))
        seq.add(storage_sync())
        seq.add(store_dest(BufferLoad(buf, (first,))))
        seq.add(storage_sync())
        return self._alloc(buf, seq.build())


def lower_thread_allreduce(func: PrimFunc, warp_size: Optional[int] = None,
                           name: Optional[str] = None) -> PrimFunc:
    """``func`` with every ``tvm_thread_allreduce`` lowered (``warp_size`` 1: no shuffles;
    default: the current target's ``thread_warp_size``)."""
    if warp_size is None:
        warp_size = gpu_limits().thread_warp_size
    fname = name or func.attrs.get("global_symbol") or "main"
    body = _Lowerer(fname, int(warp_size)).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def LowerThreadAllreduce(warp_size: Optional[int] = None) -> FunctionPass:  # noqa: N802
    """The pass form of :func:`lower_thread_allreduce`."""

    def run(func: PrimFunc) -> PrimFunc:
        return lower_thread_allreduce(func, warp_size)

    return prim_func_pass(run, "tir.LowerThreadAllreduce")
