"""Rewrite a PrimFunc so that its index arithmetic uses one wider integer type (``int64``).

Index positions — loop bounds, block iteration domains and bindings, buffer indices and
buffer dimensions, integer comparisons — are computed in the target type: narrower integer
constants are widened, loop and block variables are re-declared in the target type, other
narrower integer values are cast.  Elsewhere (stored values, arithmetic on data) every
expression keeps its type: a re-declared variable used there is cast back.  Symbolic shape
variables keep their own type so that the buffer map still binds them.
"""

from __future__ import annotations

from tvm.ffi.dtype import DTypeCode, parse_dtype
from tvm.tir.buffer import Buffer
from tvm.tir.expr import (
    BinaryOp, BufferLoad, Call, Cast, CmpOp, IntImm, IterVar, PrimExpr, Range, Select, Var,
)
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprMutator
from tvm.tir.stmt import Block, BlockRealize, BufferStore, For

__all__ = ["normalize_index_dtype"]


def normalize_index_dtype(func: PrimFunc, dtype: str) -> PrimFunc:
    """``func`` with its index arithmetic in ``dtype`` (a scalar integer type)."""
    return _Normalizer(dtype).visit(func)


class _Normalizer(StmtExprMutator):
    def __init__(self, dtype: str):
        code, bits, lanes = parse_dtype(dtype)
        if code not in (DTypeCode.INT, DTypeCode.UINT) or lanes != 1:
            raise ValueError(f"index dtype must be a scalar integer type, got {dtype!r}")
        self.dtype = dtype
        self.bits = bits
        self.var_map: dict[int, Var] = {}
        self.buffers: dict[int, Buffer] = {}
        self.in_index = False

    # -- helpers -------------------------------------------------------------------------
    def _narrow(self, dtype: str) -> bool:
        code, bits, lanes = parse_dtype(dtype)
        return code in (DTypeCode.INT, DTypeCode.UINT) and lanes == 1 and bits < self.bits

    def _mode(self, expr: PrimExpr, index: bool) -> PrimExpr:
        old = self.in_index
        self.in_index = index
        try:
            return self.visit_expr(expr)
        finally:
            self.in_index = old

    def index(self, expr: PrimExpr) -> PrimExpr:
        out = self._mode(expr, True)
        return Cast(self.dtype, out) if self._narrow(out.dtype) else out

    def value(self, expr: PrimExpr) -> PrimExpr:
        return self._mode(expr, False)

    def _redeclare(self, v: Var) -> Var:
        if not self._narrow(v.dtype):
            return v
        new = Var(v.name, self.dtype)
        self.var_map[id(v)] = new
        return new

    # -- expressions ---------------------------------------------------------------------
    def visit_var_(self, v: Var) -> PrimExpr:
        new = self.var_map.get(id(v))
        if new is None:
            return v
        return new if self.in_index else Cast(v.dtype, new)

    def visit_int_imm_(self, imm: IntImm) -> PrimExpr:
        if self.in_index and self._narrow(imm.dtype):
            return IntImm(self.dtype, imm.value)
        return imm

    def visit_binary_op_(self, op: BinaryOp) -> PrimExpr:
        a, b = self.visit_expr(op.a), self.visit_expr(op.b)
        return op if a is op.a and b is op.b else type(op)(a, b)

    def visit_cmp_op_(self, op: CmpOp) -> PrimExpr:
        # A comparison of integers has the same truth in the wider type.
        index = self.in_index or parse_dtype(op.a.dtype)[0] in (DTypeCode.INT, DTypeCode.UINT)
        a, b = self._mode(op.a, index), self._mode(op.b, index)
        return op if a is op.a and b is op.b else type(op)(a, b)

    def visit_select_(self, op: Select) -> PrimExpr:
        cond = self._mode(op.condition, False)
        t, f = self.visit_expr(op.true_value), self.visit_expr(op.false_value)
        if cond is op.condition and t is op.true_value and f is op.false_value:
            return op
        return Select(cond, t, f)

    def visit_cast_(self, op: Cast) -> PrimExpr:
        inner = self.visit_expr(op.value)
        if self.in_index and self._narrow(op.dtype):
            return Cast(self.dtype, inner)
        return op if inner is op.value else Cast(op.dtype, inner)

    def visit_call_(self, op: Call) -> PrimExpr:
        args = tuple(self._mode(a, False) for a in op.args)
        return op.with_fields(args=args) if any(a is not b for a, b in zip(args, op.args)) else op

    def visit_buffer_load_(self, op: BufferLoad) -> PrimExpr:
        buffer = self.visit_buffer(op.buffer)
        indices = tuple(self.index(i) for i in op.indices)
        if buffer is op.buffer and all(a is b for a, b in zip(indices, op.indices)):
            return op
        return BufferLoad(buffer, indices)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        cached = self.buffers.get(id(buffer))
        if cached is not None:
            return cached
        shape = tuple(self._dim(d) for d in buffer.shape)
        strides = tuple(self._dim(d) for d in buffer.strides)
        same = all(a is b for a, b in zip(shape, buffer.shape)) and all(
            a is b for a, b in zip(strides, buffer.strides)
        )
        new = buffer if same else buffer.with_fields(shape=shape, strides=strides)
        self.buffers[id(buffer)] = new
        return new

    def _dim(self, dim: PrimExpr) -> PrimExpr:
        if isinstance(dim, Var):  # keeps binding symbolic shapes through the buffer map
            return dim
        return self.index(dim)

    # -- statements ----------------------------------------------------------------------
    def visit_for_(self, op: For) -> For:
        lo, extent = self.index(op.min), self.index(op.extent)
        loop_var = self._redeclare(op.loop_var)
        body = self.visit_stmt(op.body)
        return op.with_fields(loop_var=loop_var, min=lo, extent=extent, body=body)

    def visit_block_realize_(self, op: BlockRealize) -> BlockRealize:
        values = tuple(self.index(v) for v in op.iter_values)
        predicate = self.value(op.predicate)
        block = self.visit_block_(op.block)
        return op.with_fields(iter_values=values, predicate=predicate, block=block)

    def visit_block_(self, op: Block) -> Block:
        iter_vars = tuple(self._iter_var(iv) for iv in op.iter_vars)
        allocs = tuple(self.visit_buffer(b) for b in op.alloc_buffers)
        init = None if op.init is None else self.visit_stmt(op.init)
        body = self.visit_stmt(op.body)
        return op.with_fields(iter_vars=iter_vars, alloc_buffers=allocs, init=init, body=body)

    def _iter_var(self, iv: IterVar) -> IterVar:
        dom = None if iv.dom is None else Range(self.index(iv.dom.min), self.index(iv.dom.extent))
        return iv.with_fields(dom=dom, var=self._redeclare(iv.var))

    def visit_buffer_store_(self, op: BufferStore) -> BufferStore:
        buffer = self.visit_buffer(op.buffer)
        value = self.value(op.value)
        indices = tuple(self.index(i) for i in op.indices)
        return op.with_fields(buffer=buffer, value=value, indices=indices)
