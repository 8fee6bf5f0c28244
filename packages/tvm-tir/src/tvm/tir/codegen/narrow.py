"""Index arithmetic of a kernel in int32 where it provably fits (shared by the GPU printers
whose languages address buffers with 32-bit indices: vulkan, webgpu).

Relax shapes are int64, so a legalized kernel computes its loop counters and buffer indices
in int64.  GPUs (and lavapipe, whose 64-bit multiplies and divisions are emulated) run
32-bit integer arithmetic several times faster, and Vulkan addresses storage buffers with
32-bit indices anyway.  :func:`narrow_index_math` rewrites every int64 expression built
from constants, int32 values and loop/let variables with ``+ - * / % floordiv floormod min
max`` into int32 when the arithmetic analyzer bounds it (and each of its parts) within
int32; loop and let variables with such bounds become int32.  Values read from memory and
int64 scalar parameters stay int64, so the rewrite never changes a result: whatever it
cannot bound keeps its 64-bit arithmetic.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.arith import Analyzer
from tvm.tir.expr import (
    Add, BufferLoad, Cast, CmpOp, Div, FloorDiv, FloorMod, IntImm, IterVar, Max, Min, Mod,
    Mul, PrimExpr, Range, Sub, Var,
)
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprMutator
from tvm.tir.stmt import AttrStmt, BufferStore, For, ForKind, LetStmt

__all__ = ["narrow_index_math"]

_ARITH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
_LO, _HI = -(2 ** 31), 2 ** 31 - 1


class _Narrow(StmtExprMutator):
    def __init__(self) -> None:
        self.az = Analyzer()
        self.vars: dict[Var, Var] = {}

    def _fits(self, e: PrimExpr) -> bool:
        b = self.az.const_int_bound(e)
        return _LO <= b.min_value and b.max_value <= _HI

    def narrow(self, e: PrimExpr) -> Optional[PrimExpr]:
        """An int32 expression equal to the int64 ``e``, or None."""
        if str(e.dtype) != "int64":
            return None
        if isinstance(e, IntImm):
            return IntImm("int32", e.value) if _LO <= e.value <= _HI else None
        if isinstance(e, Var):
            return self.vars.get(e)
        if isinstance(e, Cast):
            return self.visit(e.value) if str(e.value.dtype) == "int32" else None
        if isinstance(e, _ARITH):
            a = self.narrow(e.a)
            if a is None:
                return None
            b = self.narrow(e.b)
            if b is None or not self._fits(e):
                return None
            return type(e)(a, b)
        return None

    # ------------------------------------------------------------------ expressions
    def visit_expr(self, e: PrimExpr) -> PrimExpr:
        if isinstance(e, CmpOp) and str(e.a.dtype) == "int64":
            a, b = self.narrow(e.a), self.narrow(e.b)
            if a is not None and b is not None:
                return type(e)(a, b)
        elif str(e.dtype) == "int64" and not isinstance(e, IntImm):
            n = self.narrow(e)
            if n is not None:
                return Cast("int64", n)
        return super().visit_expr(e)

    def _indices(self, indices: Any) -> Any:
        new = []
        for i in indices:
            n = self.narrow(i)
            new.append(self.visit(i) if n is None else n)
        return indices if all(a is b for a, b in zip(new, indices)) else type(indices)(new)

    def visit_buffer_load_(self, e: BufferLoad) -> PrimExpr:
        indices = self._indices(e.indices)
        return e if indices is e.indices else e.with_fields(indices=indices)

    def visit_buffer_store_(self, s: BufferStore) -> Any:
        value, indices = self.visit(s.value), self._indices(s.indices)
        if value is s.value and indices is s.indices:
            return s
        return s.with_fields(value=value, indices=indices)

    # ------------------------------------------------------------------ binders
    def visit_attr_stmt_(self, s: AttrStmt) -> Any:
        if s.attr_key == "thread_extent" and isinstance(s.node, IterVar) and \
                isinstance(s.value, IntImm):
            self.az.bind(s.node.var, Range.from_min_extent(0, s.value.value))
        return self.generic_mutate(s)

    def visit_for_(self, s: For) -> Any:
        self.az.bind(s.loop_var, Range.from_min_extent(s.min, s.extent), allow_override=True)
        if str(s.loop_var.dtype) == "int64" and s.kind != ForKind.THREAD_BINDING:
            lo, ext = self.narrow(s.min), self.narrow(s.extent)
            if lo is not None and ext is not None and self._fits(s.min + s.extent):
                new = Var(s.loop_var.name, "int32")
                self.vars[s.loop_var] = new
                return s.with_fields(loop_var=new, min=lo, extent=ext, body=self.visit(s.body))
        return self.generic_mutate(s)

    def visit_let_stmt_(self, s: LetStmt) -> Any:
        if str(s.var.dtype) == "int64":
            value = self.narrow(s.value)
            if value is not None:
                b = self.az.const_int_bound(s.value)
                self.az.bind(s.var, Range.from_min_extent(b.min_value,
                                                          b.max_value - b.min_value + 1),
                             allow_override=True)
                new = Var(s.var.name, "int32")
                self.vars[s.var] = new
                return s.with_fields(var=new, value=value, body=self.visit(s.body))
        return self.generic_mutate(s)


def narrow_index_math(func: PrimFunc) -> PrimFunc:
    """``func`` with its provably 32-bit int64 index arithmetic in int32 (see the module
    docstring); the parameters are unchanged."""
    body = _Narrow().visit(func.body)
    return func if body is func.body else func.with_fields(body=body)
