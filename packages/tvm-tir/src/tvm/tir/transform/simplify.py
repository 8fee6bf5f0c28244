"""Simplify: arithmetic simplification of every expression of a PrimFunc.

Indices, conditions, extents and values are simplified with :class:`tvm.arith.Analyzer`
(knowing each loop variable's range and each ``if`` condition inside its branches) when
``tvm.arith`` is available and the PassContext option ``tir.Simplify.use_arith`` is on;
a built-in folder handles constants, exact identities, ramps and integer range reasoning
otherwise (and always for vector expressions).  Statements are simplified too:

* ``if`` with a provable (or provably false) condition keeps only the branch taken;
* a loop of extent 1 (other than a thread binding) becomes its body with the loop variable
  replaced by the loop's ``min``;
* ``let`` of a constant or a variable is inlined;
* ``assert`` of a provable condition is dropped.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np
from tvm.ffi.dtype import DTypeCode, is_float_code, parse_dtype
from tvm.ir.transform import FunctionPass, PassContext, register_config_option

from ..expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Broadcast, Cast, CmpOp, Div, FloatImm,
    FloorDiv, FloorMod, IntImm, Let, Max, Min, Mod, Mul, Not, Or, PrimExpr, Ramp, Range, Select,
    SizeVar, Sub, Var, lanes_of,
)
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import AssertStmt, Block, For, ForKind, IfThenElse, LetStmt
from ..stmt_functor import substitute
from ._common import (
    _fits, const_int, has_side_effect, no_op, prim_func_pass, vadd, vmul,
    vsub,
)

__all__ = ["Simplify", "simplify", "simplify_expr", "USE_ARITH_KEY"]

USE_ARITH_KEY = "tir.Simplify.use_arith"
register_config_option(
    USE_ARITH_KEY, bool, True,
    "Simplify with tvm.arith.Analyzer when it is installed (otherwise, or when off, only "
    "the built-in constant folder of tvm.tir.transform.simplify is used).",
)

logger = logging.getLogger("tvm.tir.transform")

_INF = math.inf
_Bound = tuple[float, float]  # (lo, hi); +-inf for unbounded sides


def _new_analyzer() -> Any:
    try:
        from tvm.arith import Analyzer  # written alongside; optional here
    except Exception:  # missing or half-installed: the built-in folder takes over
        return None
    return Analyzer()


def _is_int(dtype: str) -> bool:
    code, _, lanes = parse_dtype(dtype)
    return lanes == 1 and code in (DTypeCode.INT, DTypeCode.UINT)


def _is_float(dtype: str) -> bool:
    return is_float_code(parse_dtype(dtype)[0])


_NP_FLOATS = {16: np.float16, 32: np.float32, 64: np.float64}


def _float_const(dtype: str, value: float) -> Optional[FloatImm]:
    code, bits, _ = parse_dtype(dtype)
    if code != DTypeCode.FLOAT or bits not in _NP_FLOATS:
        return None
    with np.errstate(all="ignore"):
        return FloatImm(dtype, float(_NP_FLOATS[bits](value)))


def _bool(value: bool, lanes: int = 1) -> PrimExpr:
    imm = IntImm("bool", int(value))
    return imm if lanes == 1 else Broadcast(imm, lanes)


class _Folder(StmtExprMutator):
    """Bottom-up constant folding, exact identities and range reasoning on integers."""

    def __init__(self, bounds: dict[Var, _Bound]) -> None:
        self.bounds = bounds

    # -- integer ranges ------------------------------------------------------------------
    def bound(self, e: PrimExpr) -> _Bound:
        if isinstance(e, IntImm):
            return (e.value, e.value)
        if not _is_int(e.dtype):
            return (-_INF, _INF)
        if isinstance(e, Var):
            return self.bounds.get(e, (0, _INF) if isinstance(e, SizeVar) else (-_INF, _INF))
        if isinstance(e, (Add, Sub, Mul, Min, Max)):
            a, b = self.bound(e.a), self.bound(e.b)
            if isinstance(e, Add):
                return (a[0] + b[0], a[1] + b[1])
            if isinstance(e, Sub):
                return (a[0] - b[1], a[1] - b[0])
            if isinstance(e, Min):
                return (min(a[0], b[0]), min(a[1], b[1]))
            if isinstance(e, Max):
                return (max(a[0], b[0]), max(a[1], b[1]))
            corners = [x * y for x in a for y in b if not (math.isinf(x) or math.isinf(y))]
            if len(corners) == 4:
                return (min(corners), max(corners))
            return (-_INF, _INF)
        c = const_int(getattr(e, "b", None))
        if isinstance(e, FloorDiv) and c is not None and c > 0:
            a = self.bound(e.a)
            return (math.floor(a[0] / c) if a[0] > -_INF else -_INF,
                    math.floor(a[1] / c) if a[1] < _INF else _INF)
        if isinstance(e, FloorMod) and c is not None and c > 0:
            return (0, c - 1)
        if isinstance(e, Cast) and _is_int(e.value.dtype):
            return self.bound(e.value)
        return (-_INF, _INF)

    # -- expressions ---------------------------------------------------------------------
    def visit_binary_op_(self, e: BinaryOp) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        ca, cb = const_int(a), const_int(b)
        if isinstance(a, FloatImm) and isinstance(b, FloatImm):
            folded = _fold_float(type(e), a.dtype, a.value, b.value)
            if folded is not None:
                return folded
        if isinstance(e, Add):
            return vadd(a, b)
        if isinstance(e, Sub):
            if _is_int(a.dtype) and _same(a, b):
                return IntImm(a.dtype, 0)
            return vsub(a, b)
        if isinstance(e, Mul):
            return vmul(a, b)
        if ca is not None and cb is not None:
            folded = _fold_int(type(e), a.dtype, ca, cb)
            if folded is not None:
                return folded
        if _is_int(a.dtype):
            ba, bb = self.bound(a), self.bound(b)
            if isinstance(e, (FloorDiv, FloorMod, Div, Mod)) and cb is not None and cb > 0:
                if cb == 1:
                    return a if isinstance(e, (FloorDiv, Div)) else IntImm(a.dtype, 0)
                if 0 <= ba[0] and ba[1] < cb:
                    return IntImm(a.dtype, 0) if isinstance(e, (FloorDiv, Div)) else a
            if isinstance(e, Min):
                if ba[1] <= bb[0]:
                    return a
                if bb[1] <= ba[0]:
                    return b
            if isinstance(e, Max):
                if ba[0] >= bb[1]:
                    return a
                if bb[0] >= ba[1]:
                    return b
        if isinstance(e, (Min, Max)) and _same(a, b):
            return a
        if a is e.a and b is e.b:
            return e
        return type(e)(a, b, span=e.span)

    def visit_cmp_op_(self, e: CmpOp) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        lanes = lanes_of(a.dtype)
        decided = self._decide(type(e), a, b)
        if decided is not None:
            return _bool(decided, lanes)
        if a is e.a and b is e.b:
            return e
        return type(e)(a, b, span=e.span)

    def _decide(self, cls: type, a: PrimExpr, b: PrimExpr) -> Optional[bool]:
        if isinstance(a, FloatImm) and isinstance(b, FloatImm):
            x, y = a.value, b.value
        elif _is_int(a.dtype) or a.dtype == "bool":
            if _same(a, b):
                return cls in (EQ, LE, GE)
            lo_a, hi_a = self.bound(a) if a.dtype != "bool" else _bool_bound(a)
            lo_b, hi_b = self.bound(b) if b.dtype != "bool" else _bool_bound(b)
            if lo_a == hi_a and lo_b == hi_b:
                x, y = lo_a, lo_b
            else:
                if cls is LT:
                    return True if hi_a < lo_b else False if lo_a >= hi_b else None
                if cls is LE:
                    return True if hi_a <= lo_b else False if lo_a > hi_b else None
                if cls is GT:
                    return True if lo_a > hi_b else False if hi_a <= lo_b else None
                if cls is GE:
                    return True if lo_a >= hi_b else False if hi_a < lo_b else None
                if hi_a < lo_b or lo_a > hi_b:
                    return cls is NE
                return None
        else:
            return None
        return {EQ: x == y, NE: x != y, LT: x < y, LE: x <= y, GT: x > y, GE: x >= y}[cls]

    def visit_and_(self, e: And) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                return y if x.value else x
        return e if a is e.a and b is e.b else And(a, b, span=e.span)

    def visit_or_(self, e: Or) -> Any:
        a, b = self.visit_expr(e.a), self.visit_expr(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                return x if x.value else y
        return e if a is e.a and b is e.b else Or(a, b, span=e.span)

    def visit_not_(self, e: Not) -> Any:
        a = self.visit_expr(e.a)
        if isinstance(a, IntImm):
            return _bool(not a.value)
        if isinstance(a, Not):
            return a.a
        return e if a is e.a else Not(a, span=e.span)

    def visit_select_(self, e: Select) -> Any:
        c = self.visit_expr(e.condition)
        t, f = self.visit_expr(e.true_value), self.visit_expr(e.false_value)
        if isinstance(c, IntImm):
            return t if c.value else f
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return Select(c, t, f, span=e.span)

    def visit_cast_(self, e: Cast) -> Any:
        v = self.visit_expr(e.value)
        if v.dtype == e.dtype:
            return v
        code = parse_dtype(e.dtype)[0]
        if isinstance(v, IntImm) and code in (DTypeCode.INT, DTypeCode.UINT) and _fits(
            e.dtype, v.value
        ):
            return IntImm(e.dtype, v.value)
        if isinstance(v, (IntImm, FloatImm)) and _is_float(e.dtype):
            folded = _float_const(e.dtype, float(v.value))
            if folded is not None:
                return folded
        return e if v is e.value else Cast(e.dtype, v, span=e.span)

    def visit_ramp_(self, e: Ramp) -> Any:
        base, stride = self.visit_expr(e.base), self.visit_expr(e.stride)
        if const_int(stride) == 0:
            return Broadcast(base, e.lanes)
        return e if base is e.base and stride is e.stride else Ramp(base, stride, e.lanes)

    def visit_let_(self, e: Let) -> Any:
        value = self.visit_expr(e.value)
        if isinstance(value, (IntImm, FloatImm, Var)):
            return self.visit_expr(substitute(e.body, {e.var: value}))
        body = self.visit_expr(e.body)
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body, span=e.span)


def _bool_bound(e: PrimExpr) -> _Bound:
    return (e.value, e.value) if isinstance(e, IntImm) else (0, 1)


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    from tvm.ffi import structural_equal

    return a is b or (not has_side_effect(a) and structural_equal(a, b))


def _fold_int(cls: type, dtype: str, x: int, y: int) -> Optional[PrimExpr]:
    if cls in (Div, Mod, FloorDiv, FloorMod) and y == 0:
        return None
    if cls is FloorDiv:
        r = x // y
    elif cls is FloorMod:
        r = x % y
    elif cls is Div:
        r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
    elif cls is Mod:
        r = x - y * (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1))
    elif cls is Min:
        r = min(x, y)
    elif cls is Max:
        r = max(x, y)
    else:
        return None
    return IntImm(dtype, r) if _fits(dtype, r) else None


def _fold_float(cls: type, dtype: str, x: float, y: float) -> Optional[PrimExpr]:
    if cls is Add:
        return _float_const(dtype, x + y)
    if cls is Sub:
        return _float_const(dtype, x - y)
    if cls is Mul:
        return _float_const(dtype, x * y)
    if cls is Div and y != 0:
        return _float_const(dtype, x / y)
    if cls is Min and not (math.isnan(x) or math.isnan(y)):
        return _float_const(dtype, min(x, y))
    if cls is Max and not (math.isnan(x) or math.isnan(y)):
        return _float_const(dtype, max(x, y))
    return None


class _Simplifier(StmtExprMutator):
    def __init__(self, use_arith: bool) -> None:
        self.analyzer = _new_analyzer() if use_arith else None
        self.bounds: dict[Var, _Bound] = {}
        self.folder = _Folder(self.bounds)

    # -- analyzer bridge -----------------------------------------------------------------
    def simplify(self, e: PrimExpr) -> PrimExpr:
        out = self.folder.visit_expr(e)
        if self.analyzer is not None and lanes_of(out.dtype) == 1 and not isinstance(
            out, (IntImm, FloatImm, Var)
        ):
            try:
                out = self.analyzer.simplify(out)
            except Exception:  # an analyzer gap must not break lowering: keep the folded form
                logger.debug("tvm.arith could not simplify %r", out, exc_info=True)
        return out

    def can_prove(self, cond: PrimExpr) -> bool:
        folded = self.simplify(cond)
        if isinstance(folded, IntImm):
            return bool(folded.value)
        if self.analyzer is not None and hasattr(self.analyzer, "can_prove"):
            try:
                return bool(self.analyzer.can_prove(folded))
            except Exception:
                logger.debug("tvm.arith could not decide %r", folded, exc_info=True)
        return False

    def bind_range(self, var: Var, lo: PrimExpr, extent: PrimExpr) -> None:
        clo, cext = const_int(lo), const_int(extent)
        if clo is not None and cext is not None and cext > 0:
            self.bounds[var] = (clo, clo + cext - 1)
        if self.analyzer is not None and hasattr(self.analyzer, "bind"):
            try:
                self.analyzer.bind(var, Range(lo, extent))
            except Exception:
                logger.debug("tvm.arith could not bind %r", var, exc_info=True)

    @contextlib.contextmanager
    def constraint(self, cond: PrimExpr) -> Iterator[None]:
        scope = getattr(self.analyzer, "constraint_scope", None)
        if scope is None:
            yield
            return
        try:
            ctx = scope(cond)
            ctx.__enter__()
        except Exception:
            logger.debug("tvm.arith could not assume %r", cond, exc_info=True)
            yield
            return
        try:
            yield
        finally:
            ctx.__exit__(None, None, None)

    # -- expressions and statements ------------------------------------------------------
    def visit_expr(self, e: PrimExpr) -> PrimExpr:
        return self.simplify(e)

    def visit_for_(self, op: For) -> Any:
        lo, extent = self.simplify(op.min), self.simplify(op.extent)
        if const_int(extent) == 1 and op.kind != ForKind.THREAD_BINDING:
            return self.visit_stmt(substitute(op.body, {op.loop_var: lo}))
        if const_int(lo) is not None and const_int(extent) is not None:
            self.bind_range(op.loop_var, lo, extent)
            body = self.visit_stmt(op.body)
        else:
            # A symbolic range holds inside the body only: bound as a scoped constraint, the
            # fact ``lo + extent - 1 >= var`` cannot leak out (after a loop of extent g,
            # ``g > 0`` is not known).
            var = op.loop_var
            with self.constraint(And(GE(var, lo), LT(var, lo + extent))):
                body = self.visit_stmt(op.body)
        if lo is op.min and extent is op.extent and body is op.body:
            return op
        return op.with_fields(min=lo, extent=extent, body=body)

    def visit_if_then_else_(self, op: IfThenElse) -> Any:
        cond = self.simplify(op.condition)
        if self.can_prove(cond):
            return self.visit_stmt(op.then_case)
        if self.can_prove(Not(cond)):
            return no_op() if op.else_case is None else self.visit_stmt(op.else_case)
        with self.constraint(cond):
            then_case = self.visit_stmt(op.then_case)
        else_case = op.else_case
        if else_case is not None:
            with self.constraint(Not(cond)):
                else_case = self.visit_stmt(else_case)
        if cond is op.condition and then_case is op.then_case and else_case is op.else_case:
            return op
        return IfThenElse(cond, then_case, else_case, span=op.span)

    def visit_let_stmt_(self, op: LetStmt) -> Any:
        value = self.simplify(op.value)
        if isinstance(value, (IntImm, FloatImm, Var)):
            return self.visit_stmt(substitute(op.body, {op.var: value}))
        if _is_int(value.dtype):
            lo, hi = self.folder.bound(value)
            if lo > -_INF or hi < _INF:
                self.bounds[op.var] = (lo, hi)
            # Only the value's range is recorded: binding the value itself would let the
            # analyzer substitute it into later expressions, moving loads past stores.
            if self.analyzer is not None and hasattr(self.analyzer, "update"):
                try:
                    self.analyzer.update(op.var, self.analyzer.const_int_bound(value))
                except Exception:
                    logger.debug("tvm.arith could not bound %r", op.var, exc_info=True)
        body = self.visit_stmt(op.body)
        if value is op.value and body is op.body:
            return op
        return op.with_fields(value=value, body=body)

    def visit_assert_stmt_(self, op: AssertStmt) -> Any:
        cond = self.simplify(op.condition)
        if self.can_prove(cond):
            return self.visit_stmt(op.body)
        return self.generic_mutate(op)

    def visit_block_(self, op: Block) -> Any:
        for iv in op.iter_vars:
            if iv.dom is not None:
                self.bind_range(iv.var, self.simplify(iv.dom.min), self.simplify(iv.dom.extent))
        return self.generic_mutate(op)


def simplify_expr(expr: PrimExpr, use_arith: bool = True) -> PrimExpr:
    """One expression simplified as the Simplify pass would (no variable ranges known)."""
    return _Simplifier(use_arith).simplify(expr)


def simplify(func: PrimFunc, use_arith: Optional[bool] = None) -> PrimFunc:
    """``func`` with its expressions and statements simplified (see the module docstring).

    ``use_arith`` defaults to the PassContext option ``tir.Simplify.use_arith``.
    """
    if use_arith is None:
        use_arith = bool(PassContext.current().get_config(USE_ARITH_KEY, True))
    body = _Simplifier(use_arith).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def Simplify() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`simplify`."""
    return prim_func_pass(simplify, "tir.Simplify")
