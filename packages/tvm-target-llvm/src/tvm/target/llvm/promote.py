"""Keep loop-invariant accumulators in registers: scalar replacement before code generation.

A register tile accumulates into memory at addresses that do not change across the
reduction loop::

    for k in range(K):
        C[i0 + 0, ramp(j, 32)] = C[i0 + 0, ramp(j, 32)] + A[i0 + 0, k] * B[k, ramp(j, 32)]
        ...

LLVM promotes such locations to registers only when it can prove that nothing else in the
loop aliases them, and its alias and promotion limits give up on large tiles (heap
intermediates, many rows).  :func:`promote_loop_accumulators` does the promotion on the
TIR, where distinct buffers are known not to alias (``tir.noalias`` parameters, or buffers
the function allocates itself)::

    acc = local[6 * 32]
    acc[0:32] = C[i0 + 0, ramp(j, 32)]          # once, before the loop
    for k in range(K):
        acc[0:32] = acc[0:32] + A[i0 + 0, k] * B[k, ramp(j, 32)]
    C[i0 + 0, ramp(j, 32)] = acc[0:32]          # once, after it

The small ``acc`` becomes a stack slot with constant offsets, which LLVM splits into
registers.  A buffer qualifies in a serial loop when every access to it there uses indices
that do not depend on variables bound inside the loop nor load memory, is not under a
condition (or under an ``if`` whose condition is loop-invariant in the same sense; the
copies are then guarded by it), and at least one access stores; its data pointer must not
be used otherwise there (calls), and accesses through another buffer sharing its data
must not exist.  Loops are tried from the
outside in, so the copies move out of the whole reduction nest (``rc, ry, rx`` of a
convolution).  A loop whose extent may be zero is guarded by ``extent > 0``.

As a pass: :func:`PromoteLoopAccumulators` (``tir.llvm.PromoteLoopAccumulators``), one of
the llvm kind's lowering passes that ``tvm.tir.build`` runs after MakePackedAPI (and after
``tir.llvm.UnswitchInvariantGuards``, whose unguarded tiles it promotes).
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi.structural import structural_equal
from tvm.tir import PrimFunc
from tvm.tir.buffer import decl_buffer
from tvm.tir.expr import BufferLoad, Call, IntImm, Let, PrimExpr, Ramp, Var, const
from tvm.tir.functor import StmtExprMutator, StmtExprVisitor
from tvm.tir.stmt import (
    Allocate, BufferStore, DeclBuffer, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt, While,
)

from .unswitch import reads_any, stored_inside

__all__ = ["promote_loop_accumulators", "PromoteLoopAccumulators"]

#: most vector slots promoted per loop (registers are the limit; beyond, LLVM would spill)
MAX_SLOTS = 28
#: most distinct buffers promoted per loop
MAX_BUFFERS = 4


class _Slot:
    __slots__ = ("indices", "dtype", "cond", "stored")

    def __init__(self, indices: tuple, dtype: str, cond: Optional[PrimExpr]):
        self.indices = indices
        self.dtype = dtype
        self.cond = cond
        self.stored = False


class _Candidates(StmtExprVisitor):
    """Accesses in a loop body, grouped by data variable, with what disqualifies them."""

    def __init__(self, loop: For, skip: set[int]):
        self.inside: set[int] = {id(loop.loop_var)}
        self.skip = skip
        self.bad: set[int] = set()
        self.slots: dict[int, list[_Slot]] = {}
        self.buffers: dict[int, Any] = {}
        self.conds: list[PrimExpr] = []  # enclosing loop-invariant if conditions
        self.unsafe_depth = 0  # > 0: under a variant condition or an if_then_else arm
        self.stored = stored_inside(loop)  # an index or condition reading these varies

    # binding constructs
    def visit_for_(self, op: For) -> None:
        self.inside.add(id(op.loop_var))
        self.visit_expr(op.min)
        self.visit_expr(op.extent)
        # an inner loop that may run zero times guards its accesses
        runs = isinstance(op.extent, IntImm) and op.extent.value > 0
        self.unsafe_depth += 0 if runs else 1
        self.visit_stmt(op.body)
        self.unsafe_depth -= 0 if runs else 1

    def visit_while_(self, op: While) -> None:
        self.unsafe_depth += 1  # may run zero times
        self.generic_visit(op)
        self.unsafe_depth -= 1

    def visit_let_stmt_(self, op: LetStmt) -> None:
        self.inside.add(id(op.var))
        self.visit_expr(op.value)
        self.visit_stmt(op.body)

    def visit_let_(self, op: Let) -> None:
        self.inside.add(id(op.var))
        self.visit_expr(op.value)
        self.visit_expr(op.body)

    def visit_allocate_(self, op: Allocate) -> None:
        self.inside.add(id(op.buffer_var))
        self.generic_visit(op)

    def visit_if_then_else_(self, op: IfThenElse) -> None:
        self.visit_expr(op.condition)
        invariant = self._invariant(op.condition) and op.else_case is None
        if invariant and self.unsafe_depth == 0:
            self.conds.append(op.condition)
            self.visit_stmt(op.then_case)
            self.conds.pop()
            return
        self.unsafe_depth += 1
        self.visit_stmt(op.then_case)
        if op.else_case is not None:
            self.visit_stmt(op.else_case)
        self.unsafe_depth -= 1

    def visit_call_(self, op: Call) -> None:
        name = getattr(op.op, "name", "")
        if name in ("tir.if_then_else", "tir.likely_select") or name.endswith("if_then_else"):
            self.visit_expr(op.args[0])
            self.unsafe_depth += 1
            for a in op.args[1:]:
                self.visit_expr(a)
            self.unsafe_depth -= 1
            return
        self.generic_visit(op)

    def visit_var_(self, op: Var) -> None:
        self.bad.add(id(op))  # a data pointer used as a value (address_of, extern call)

    # accesses
    def visit_buffer_load_(self, op: BufferLoad) -> None:
        for i in op.indices:
            self.visit_expr(i)
        self._access(op.buffer, op.indices, op.dtype, store=False)

    def visit_buffer_store_(self, op: BufferStore) -> None:
        self.visit_expr(op.value)
        for i in op.indices:
            self.visit_expr(i)
        self._access(op.buffer, op.indices, op.value.dtype, store=True)

    def _access(self, buffer: Any, indices: tuple, dtype: str, store: bool) -> None:
        key = id(buffer.data)
        if key in self.bad:
            return
        known = self.buffers.setdefault(key, buffer)
        if known is not buffer and not _same_view(known, buffer):
            self.bad.add(key)
            return
        if self.unsafe_depth or key in self.skip or key in self.inside or len(indices) != 1 or \
                not self._invariant(indices[0]) or _base(indices[0], _lanes(dtype)) is None:
            self.bad.add(key)
            return
        cond = _conjunction(self.conds)
        slots = self.slots.setdefault(key, [])
        for s in slots:
            if _same_indices(s.indices, indices):
                if s.dtype != dtype or not _same_cond(s.cond, cond):
                    self.bad.add(key)
                    return
                s.stored = s.stored or store
                return
        slot = _Slot(tuple(indices), dtype, cond)
        slot.stored = store
        slots.append(slot)

    def _invariant(self, e: PrimExpr) -> bool:
        """No variable bound in the loop, and no load (memory the loop may write)."""
        from tvm.tir.stmt_functor import free_vars, pre_order_visit

        loads = False

        def visit(n: Any) -> bool:
            nonlocal loads
            loads = loads or isinstance(n, BufferLoad)
            return not loads

        pre_order_visit(e, visit)
        return not loads and not any(id(v) in self.inside for v in free_vars(e)) and \
            not reads_any(e, self.stored)


def _same_view(a: Any, b: Any) -> bool:
    return str(a.dtype) == str(b.dtype) and len(a.shape) == len(b.shape) and \
        all(structural_equal(x, y) for x, y in zip(a.shape, b.shape)) and \
        structural_equal(a.elem_offset, b.elem_offset)


def _base(index: PrimExpr, lanes: int) -> Optional[PrimExpr]:
    """The first element of a flat index: a scalar, or a unit-stride Ramp of ``lanes``."""
    if lanes == 1:
        return index if _lanes(index.dtype) == 1 else None
    if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and \
            index.stride.value == 1 and int(index.lanes) == lanes:
        return index.base
    return None


def _disjoint(slots: list[_Slot]) -> bool:
    """Whether the slots provably cover disjoint elements (constant distances between
    their starts, at least a vector apart)."""
    from tvm.arith import Analyzer

    if len(slots) > 1 and len({_lanes(s.dtype) for s in slots}) != 1:
        return False
    ana = Analyzer()
    bases = [_base(s.indices[0], _lanes(s.dtype)) for s in slots]
    lanes = _lanes(slots[0].dtype)
    for a in range(len(bases)):
        for b in range(a + 1, len(bases)):
            x, y = bases[a], bases[b]
            if x.dtype != y.dtype:
                return False
            d = ana.simplify(x - y)
            if not isinstance(d, IntImm) or abs(d.value) < lanes:
                return False
    return True


def _same_indices(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(structural_equal(x, y, map_free_vars=False)
                                    for x, y in zip(a, b))


def _same_cond(a: Optional[PrimExpr], b: Optional[PrimExpr]) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return structural_equal(a, b)


def _conjunction(conds: list[PrimExpr]) -> Optional[PrimExpr]:
    from tvm.tir.expr import And

    out: Optional[PrimExpr] = None
    for c in conds:
        out = c if out is None else And(out, c)
    return out


def _lanes(dtype: Any) -> int:
    from tvm.ffi.dtype import parse_dtype

    return max(1, int(parse_dtype(str(dtype))[2]))


class _Rewrite(StmtExprMutator):
    """Accesses of the promoted buffers -> accesses of their accumulators."""

    def __init__(self, table: dict[int, tuple[list[_Slot], Any, list[int]]]):
        self.table = table

    def _find(self, buffer: Any, indices: tuple) -> Optional[tuple[Any, PrimExpr]]:
        entry = self.table.get(id(buffer.data))
        if entry is None:
            return None
        slots, acc, offsets = entry
        for s, off in zip(slots, offsets):
            if _same_indices(s.indices, indices):
                lanes = _lanes(s.dtype)
                idx = Ramp(IntImm("int32", off), IntImm("int32", 1), lanes) if lanes > 1 \
                    else IntImm("int32", off)
                return acc, idx
        raise AssertionError("promote: access without a slot")  # pragma: no cover

    def visit_buffer_load_(self, op: BufferLoad) -> PrimExpr:
        found = self._find(op.buffer, op.indices)
        if found is None:
            return self.generic_mutate(op)
        acc, idx = found
        return BufferLoad(acc, (idx,))

    def visit_buffer_store_(self, op: BufferStore) -> Stmt:
        found = self._find(op.buffer, op.indices)
        if found is None:
            return self.generic_mutate(op)
        acc, idx = found
        return BufferStore(acc, self.visit_expr(op.value), (idx,))


class _Promoter(StmtExprMutator):
    def __init__(self) -> None:
        self.created: set[int] = set()  # data variables of the accumulators made so far

    def visit_for_(self, op: For) -> Stmt:
        if op.kind in (ForKind.SERIAL, ForKind.UNROLLED):
            promoted = self._promote(op)
            if promoted is not None:
                return promoted
        return self.generic_mutate(op)

    def _promote(self, loop: For) -> Optional[Stmt]:
        found = _Candidates(loop, self.created)
        found.visit_stmt(loop.body)
        chosen = []
        total = 0
        for key, slots in found.slots.items():
            if key in found.bad or not any(s.stored for s in slots):
                continue
            if total + len(slots) > MAX_SLOTS or len(chosen) == MAX_BUFFERS:
                continue
            if not _disjoint(slots):
                continue
            total += len(slots)
            chosen.append(key)
        if not chosen:
            return None
        table = {}
        before: list[Stmt] = []
        after: list[Stmt] = []
        allocs = []
        for key in chosen:
            slots = found.slots[key]
            buffer = found.buffers[key]
            lanes = _lanes(slots[0].dtype)
            elem = str(buffer.dtype)
            acc = decl_buffer((len(slots) * lanes,), elem, f"{buffer.name}_acc", scope="local")
            self.created.add(id(acc.data))
            offsets = [k * lanes for k in range(len(slots))]
            table[key] = (slots, acc, offsets)
            allocs.append(acc)
            for s, off in zip(slots, offsets):
                idx = Ramp(IntImm("int32", off), IntImm("int32", 1), lanes) if lanes > 1 \
                    else IntImm("int32", off)
                load: Stmt = BufferStore(acc, BufferLoad(buffer, s.indices), (idx,))
                before.append(load if s.cond is None else IfThenElse(s.cond, load))
                if s.stored:
                    store: Stmt = BufferStore(buffer, BufferLoad(acc, (idx,)), s.indices)
                    after.append(store if s.cond is None else IfThenElse(s.cond, store))
        body = _Rewrite(table).visit_stmt(loop.body)
        new_loop = self.visit_stmt(loop.with_fields(body=body))  # inner loops: other buffers
        stmt: Stmt = SeqStmt((*before, new_loop, *after))
        if not (isinstance(loop.extent, IntImm) and loop.extent.value > 0):
            stmt = IfThenElse(loop.extent > const(0, loop.extent.dtype), stmt)
        for acc in reversed(allocs):
            stmt = Allocate(acc.data, acc.dtype, (acc.shape[0],), const(True, "bool"),
                            DeclBuffer(acc, stmt), scope="local")
        return stmt


def promote_loop_accumulators(func: PrimFunc) -> PrimFunc:
    """``func`` with loop-invariant accumulators of its serial loops kept in small local
    buffers (see the module docstring).  Functions without ``tir.noalias`` are unchanged,
    unless every promoted buffer is one the function allocates."""
    noalias = bool(func.attrs.get("tir.noalias", False)) if func.attrs else False
    if not noalias:
        return func
    mutator = _Promoter()
    body = mutator.visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def PromoteLoopAccumulators() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass ``tir.llvm.PromoteLoopAccumulators``: :func:`promote_loop_accumulators` on
    every PrimFunc."""
    from tvm.ir.transform import function_pass

    return function_pass(lambda func, mod, ctx: promote_loop_accumulators(func), opt_level=0,
                         name="tir.llvm.PromoteLoopAccumulators", func_type=PrimFunc)
