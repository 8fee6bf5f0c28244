"""LowerCrossThreadReduction: reduction blocks whose reduction loop is bound to threadIdx.

Runs on blocks (before LowerInitBlock).  A reduction block is *cross-thread* when a loop
driving one of its reduction iteration variables is bound to a ``threadIdx`` axis::

    for bx in T.thread_binding(128, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            for k0 in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(128, bx)
                    vk = T.axis.reduce(256, k0 * 32 + tx)
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]

Each thread first reduces its own iterations (the serial reduction loops) into a local
``in_thread`` value, then the threads combine their values with
``tir.tvm_thread_allreduce`` (lowered per target by LowerThreadAllreduce: warp shuffles
or a shared-memory tree), and thread 0 writes the result::

    for bx, tx (bound as before):
        with T.block("B_cross_thread"):            # allocates B_in_thread, B_red (local)
            B_in_thread[0] = 0
            for k0 in range(8):
                B_in_thread[0] = B_in_thread[0] + A[bx, k0 * 32 + tx]
            T.tvm_thread_allreduce("sum", B_in_thread[0], B_red[0], tx)
            if tx == 0:
                B[bx] = B_red[0]          # combined with the old value when there is no init

The block body must be one ``BufferStore`` ``B[idx] = B[idx] op x`` with ``op`` one of
``+``, ``*``, ``max``, ``min`` (the init, if any, stores into the same element).  The loops
from the outermost reduction loop down to the block must form a perfect nest; thread-bound
loops of the nest stay outermost, serial data-parallel loops go next and the serial
reduction loops innermost.  A ``local`` result buffer is written by every thread.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.transform import FunctionPass

from ..buffer import Buffer, decl_buffer
from ..expr import (
    EQ, Add, And, BufferLoad, IntImm, IterVarType, Max, Min, Mul, PrimExpr, StringImm,
)
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..op import max_value, min_value
from ..stmt import (
    Block, BlockRealize, BufferStore, Evaluate, For, ForKind, IfThenElse, Stmt, stmt_seq,
)
from ..stmt_functor import free_vars, post_order_visit, substitute
from ._common import prim_func_pass
from ._gpu import call_op
from .lower_thread_binding import loop_thread_tag

__all__ = ["LowerCrossThreadReduction", "lower_cross_thread_reduction", "REDUCER_KINDS",
           "reducer_identity", "combine", "match_reduction_update", "CrossThreadReductionError"]

#: TIR node of each supported combiner.
REDUCER_KINDS = {"sum": Add, "prod": Mul, "max": Max, "min": Min}


def reducer_identity(kind: str, dtype: str) -> PrimExpr:
    """The identity element of reduction ``kind`` on ``dtype``."""
    from ..expr import const

    if kind == "sum":
        return const(0, dtype)
    if kind == "prod":
        return const(1, dtype)
    if kind == "max":
        return min_value(dtype)
    if kind == "min":
        return max_value(dtype)
    raise ValueError(f"unknown reduction kind {kind!r}; expected one of {sorted(REDUCER_KINDS)}")


def combine(kind: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a op b`` for reduction ``kind``."""
    return REDUCER_KINDS[kind](a, b)


class CrossThreadReductionError(ValueError):
    """A reduction bound to threads that this pass cannot lower."""


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _and_all(items: list[PrimExpr]) -> Optional[PrimExpr]:
    out: Optional[PrimExpr] = None
    for c in items:
        if isinstance(c, IntImm) and c.value:
            continue
        out = c if out is None else And(out, c)
    return out


def _reads_buffer(e: PrimExpr, buffer: Buffer) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(1)
                     if isinstance(n, BufferLoad) and n.buffer.data is buffer.data else None)
    return bool(found)


def match_reduction_update(block: Block) -> tuple[str, BufferStore, PrimExpr]:
    """``(kind, store, contribution)`` of a block whose body is ``B[idx] = B[idx] op x``;
    :class:`CrossThreadReductionError` when threads could not combine its partial results."""
    st = block.body
    name = block.name_hint
    if not isinstance(st, BufferStore):
        raise CrossThreadReductionError(
            f"LowerCrossThreadReduction: block {name!r} is reduced across threads, so its body "
            f"must be one BufferStore 'B[...] = B[...] op x'; got {type(st).__name__}"
        )
    v = st.value
    for kind, cls in REDUCER_KINDS.items():
        if type(v) is not cls:
            continue
        for acc, x in ((v.a, v.b), (v.b, v.a)):
            if (isinstance(acc, BufferLoad) and acc.buffer.data is st.buffer.data
                    and structural_equal(tuple(acc.indices), tuple(st.indices))
                    and not _reads_buffer(x, st.buffer)):
                return kind, st, x
    raise CrossThreadReductionError(
        f"LowerCrossThreadReduction: block {name!r} is reduced across threads but its update "
        f"{st.buffer.name}[...] = {v} is not 'acc + x', 'acc * x', max(acc, x) or min(acc, x) "
        f"of {st.buffer.name}[...] itself"
    )


class _Lowerer(StmtExprMutator):
    def __init__(self, fname: str) -> None:
        self.fname = fname
        self.loops: list[For] = []
        self.pending: dict[int, Stmt] = {}

    def visit_block_(self, op: Block) -> Any:
        saved, self.loops = self.loops, []
        try:
            return self.generic_mutate(op)
        finally:
            self.loops = saved

    def visit_for_(self, op: For) -> Any:
        self.loops.append(op)
        try:
            new = self.generic_mutate(op)
        finally:
            self.loops.pop()
        return self.pending.pop(id(op), new)

    def visit_block_realize_(self, op: BlockRealize) -> Any:
        block = op.block
        reduce_vals = [v for iv, v in zip(block.iter_vars, op.iter_values)
                       if iv.iter_type == IterVarType.COMM_REDUCE]
        if not reduce_vals:
            return self.generic_mutate(op)
        rvars = {v for val in reduce_vals for v in free_vars(val)}
        rloops = [lp for lp in self.loops if lp.loop_var in rvars]
        threaded = [lp for lp in rloops if lp.kind == ForKind.THREAD_BINDING
                    and loop_thread_tag(lp).startswith("threadIdx")]
        if not threaded:
            return self.generic_mutate(op)
        self._rewrite(op, rloops, threaded)
        return op

    def _fail(self, block: Block, msg: str) -> CrossThreadReductionError:
        return CrossThreadReductionError(
            f"LowerCrossThreadReduction: block {block.name_hint!r} in {self.fname}: {msg}")

    def _rewrite(self, realize: BlockRealize, rloops: list[For], threaded: list[For]) -> None:
        block = realize.block
        for lp in rloops:
            if lp.kind == ForKind.THREAD_BINDING and lp not in threaded:
                raise self._fail(block, f"its reduction loop {lp.loop_var.name!r} is bound to "
                                 f"{loop_thread_tag(lp)}; only threadIdx axes can reduce "
                                 "together (use rfactor for a cross-block reduction)")
            if lp.kind in (ForKind.PARALLEL, ForKind.VECTORIZED):
                raise self._fail(block, f"its reduction loop {lp.loop_var.name!r} is "
                                 f"{lp.kind.name.lower()}")
        dp_vars = {v for iv, val in zip(block.iter_vars, realize.iter_values)
                   if iv.iter_type != IterVarType.COMM_REDUCE for v in free_vars(val)}
        for lp in threaded:
            if lp.loop_var in dp_vars:
                raise self._fail(block, f"loop {lp.loop_var.name!r} drives both spatial and "
                                 "reduction iteration variables")
        start = min(self.loops.index(lp) for lp in rloops)
        nest = self.loops[start:]
        for outer, inner in zip(nest, nest[1:] + [None]):
            if (outer.body is not inner) if inner is not None else (outer.body is not realize):
                raise self._fail(block, f"loop {outer.loop_var.name!r} must contain only the "
                                 "next loop of the reduction nest (or the block itself), so "
                                 "that the threads can combine their values")
        kind, store, contribution = match_reduction_update(block)
        buf = store.buffer
        if block.init is not None and not (
                isinstance(block.init, BufferStore) and block.init.buffer.data is buf.data
                and structural_equal(tuple(block.init.indices), tuple(store.indices))):
            raise self._fail(block, "its init must store into the element it reduces into")
        vmap = {iv.var: val for iv, val in zip(block.iter_vars, realize.iter_values)}
        x = substitute(contribution, vmap)
        indices = tuple(substitute(i, vmap) for i in store.indices)
        dtype = buf.dtype
        red_in = decl_buffer((1,), dtype, f"{buf.name}_in_thread", scope="local")
        red_out = decl_buffer((1,), dtype, f"{buf.name}_red", scope="local")
        zero = IntImm("int32", 0)
        identity = reducer_identity(kind, dtype)

        reduce_loop_vars = {lp.loop_var for lp in rloops}
        pred = realize.predicate
        conj = _conjuncts(pred)
        dp_pred = _and_all([c for c in conj if not any(v in reduce_loop_vars
                                                       for v in free_vars(c))])
        full_pred = _and_all(conj)

        acc: Stmt = BufferStore(red_in, combine(kind, BufferLoad(red_in, (zero,)), x), (zero,))
        if full_pred is not None:
            acc = IfThenElse(full_pred, acc)
        for lp in reversed([lp for lp in nest if lp in rloops and lp not in threaded]):
            acc = lp.with_fields(body=acc)
        allreduce = Evaluate(call_op("handle", "tir.tvm_thread_allreduce", StringImm(kind),
                                     BufferLoad(red_in, (zero,)), BufferLoad(red_out, (zero,)),
                                     *[lp.loop_var for lp in threaded]))
        result: PrimExpr = BufferLoad(red_out, (zero,))
        if block.init is not None:
            old = substitute(block.init.value, vmap)
            if not structural_equal(old, identity):
                result = combine(kind, old, result)
        else:
            result = combine(kind, BufferLoad(buf, indices), result)
        writeback: Stmt = BufferStore(buf, result, indices)
        conds = [] if buf.scope == "local" else [EQ(lp.loop_var, lp.min) for lp in threaded]
        cond = _and_all(conds + ([dp_pred] if dp_pred is not None else []))
        if cond is not None:
            writeback = IfThenElse(cond, writeback)
        body = stmt_seq(BufferStore(red_in, identity, (zero,)), acc, allreduce, writeback)
        new_block = Block((), (), (), f"{block.name_hint}_cross_thread", body,
                          alloc_buffers=(red_in, red_out))
        from ..analysis.block_region import infer_block_access_regions

        reads, writes = infer_block_access_regions(new_block)
        new_block = new_block.with_fields(reads=tuple(reads), writes=tuple(writes))
        out: Stmt = BlockRealize((), IntImm("bool", 1), new_block)
        serial_dp = [lp for lp in nest if lp not in rloops and lp.kind != ForKind.THREAD_BINDING]
        threads = [lp for lp in nest if lp.kind == ForKind.THREAD_BINDING]
        for lp in nest:
            if lp.kind in (ForKind.PARALLEL, ForKind.VECTORIZED):
                raise self._fail(block, f"loop {lp.loop_var.name!r} of the reduction nest is "
                                 f"{lp.kind.name.lower()}")
        for lp in reversed(threads + serial_dp):
            out = lp.with_fields(body=out)
        self.pending[id(nest[0])] = out


def lower_cross_thread_reduction(func: PrimFunc, name: Optional[str] = None) -> PrimFunc:
    """``func`` with its cross-thread reduction blocks rewritten (see the module docstring)."""
    fname = name or func.attrs.get("global_symbol") or "main"
    body = _Lowerer(fname).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def LowerCrossThreadReduction() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`lower_cross_thread_reduction`."""
    return prim_func_pass(lower_cross_thread_reduction, "tir.LowerCrossThreadReduction")
