"""Rewrite-rule simplification of TIR expressions.

The simplifier walks an expression bottom-up: operands first, then constant folding, then
the first rule of :mod:`tvm.arith.rewrite_rules` that applies, and the result is simplified
again.  What is decided with the analyzer lives here in code:

* integer comparisons are decided from the bound of ``a - b`` (in canonical form, refined by
  the facts of enclosing constraint scopes) and otherwise normalised, e.g.
  ``x + 1 < y -> x < y - 1``, ``x*4 < 10 -> x < 3``, ``x*2 == 3 -> false``;
* ``min``/``max`` whose operands are ordered by bounds are decided;
* ``a and b`` / ``a or b`` drop a side implied by the other (``x < 4 and x < 8 -> x < 4``) and
  detect contradictions (``x < 4 and 5 < x -> false``);
* ``select`` and ``if_then_else`` with a decided condition pick their branch.

Floats only get constant folding and exact identities; nothing is reassociated.
Results are memoised per node until the analyzer's state changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tvm.ffi import Object
from tvm.ffi.dtype import is_float_code, parse_dtype
from tvm.ir.op import Op
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Broadcast, BufferLoad, Call, Cast, CmpOp, Div,
    FloatImm, FloorDiv, FloorMod, IntImm, Let, Max, Min, Mod, Mul, Not, Or, PrimExpr, Ramp,
    Select, SizeVar, StringImm, Sub, Var,
)

from tvm.tir.expr_util import const_value

from . import const_fold as F

__all__ = ["RewriteSimplifier"]

_ARITH = (Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod)
_SWAP = {GT: LT, GE: LE, LT: LT, LE: LE, EQ: EQ, NE: NE}
_NEGATE = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}


def _lanes(dtype: str) -> int:
    return parse_dtype(dtype)[2]


def _is_float(dtype: str) -> bool:
    return is_float_code(parse_dtype(dtype)[0])


class RewriteSimplifier:
    """Pattern-rule simplifier; see the module docstring.  Use through ``Analyzer``."""

    mode = "rewrite"
    _MEMO_LIMIT = 50000
    _MAX_DEPTH = 48

    def __init__(self, analyzer: Any):
        self.analyzer = analyzer
        self._memo: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self._depth = 0

    def clear(self) -> None:
        """Forget memoised results (the analyzer's state changed)."""
        self._memo.clear()

    def __call__(self, expr: PrimExpr) -> PrimExpr:
        if not isinstance(expr, PrimExpr):
            raise TypeError(
                f"{self.mode}_simplify expects a PrimExpr, got {type(expr).__name__}: {expr!r}"
            )
        return self.visit(expr)

    def visit(self, expr: PrimExpr) -> PrimExpr:
        hit = self._memo.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1]
        handler = _HANDLERS.get(type(expr))
        if handler is None:
            handler = _find_handler(type(expr))
        out = handler(self, expr)
        if self.analyzer._literals and out.dtype == "bool":
            known = self.analyzer._literals.get(self.analyzer._canonical.key(out))
            if known is not None:
                out = F.make_int(int(known), "bool")
        if len(self._memo) > self._MEMO_LIMIT:
            self._memo.clear()
        self._memo[id(expr)] = (expr, out)
        return out

    # -- helpers used by rules -----------------------------------------------------------
    def prove_ge_zero(self, e: PrimExpr) -> bool:
        if not F.is_signed_int(e.dtype):
            return self.analyzer._const_int_bound.bound(e)[0] >= 0
        eng = self.analyzer._canonical
        return eng.diff_bound(eng.to_poly(e))[0] >= 0

    def prove_gt_zero(self, e: PrimExpr) -> bool:
        if not F.is_signed_int(e.dtype):
            return self.analyzer._const_int_bound.bound(e)[0] > 0
        eng = self.analyzer._canonical
        return eng.diff_bound(eng.to_poly(e))[0] > 0

    def prove_lt(self, a: PrimExpr, b: PrimExpr) -> bool:
        if not F.is_signed_int(a.dtype):
            return self.analyzer._const_int_bound.bound(a)[1] < \
                self.analyzer._const_int_bound.bound(b)[0]
        eng = self.analyzer._canonical
        return eng.diff_bound(eng.diff_poly(a, b))[1] < 0

    def _rewrite(self, node: PrimExpr) -> PrimExpr:
        """Apply the first matching rule and simplify its result again."""
        from .rewrite_rules import FLOAT_RULES, INT_RULES, LOGIC_RULES

        if self._depth > self._MAX_DEPTH:
            return node
        if isinstance(node, (And, Or, Not)):
            table = LOGIC_RULES
        elif _is_float(node.dtype):
            table = FLOAT_RULES
        else:
            table = INT_RULES
        out = table.apply(node, self)
        if out is None:
            return node
        self._depth += 1
        try:
            return self.visit(out)
        finally:
            self._depth -= 1

    # -- handlers --------------------------------------------------------------------------
    def _leaf(self, e: PrimExpr) -> PrimExpr:
        return e

    def _var(self, v: Var) -> PrimExpr:
        sub = self.analyzer._subst.get(v)
        if sub is not None:
            return self.visit(sub)
        return v

    def _arith(self, e: BinaryOp) -> PrimExpr:
        if F.is_signed_int(e.dtype):
            return self._visit_int_arith(e)
        return self._visit_binary_default(e)

    def _visit_int_arith(self, e: BinaryOp) -> PrimExpr:
        return self._visit_binary_default(e)

    def _visit_binary_default(self, e: BinaryOp) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        node = e if (a is e.a and b is e.b) else type(e)(a, b)
        out = F.fold(node)
        if out is not node:
            return out
        if _lanes(node.dtype) > 1:
            vec = _vector_divmod(self, node)
            return node if vec is None else self.visit(vec)
        if type(node) in (Div, Mod) and not _is_float(node.dtype):
            # Truncation equals floor division for a non-negative numerator and divisor.
            if self.prove_ge_zero(node.a) and self.prove_gt_zero(node.b):
                cls = FloorDiv if type(node) is Div else FloorMod
                return self.visit(cls(node.a, node.b))
        if type(node) in (Min, Max) and not _is_float(node.dtype):
            decided = self._decide_minmax(node)
            if decided is not None:
                return decided
        return self._rewrite(node)

    def _decide_minmax(self, node: BinaryOp) -> PrimExpr | None:
        a, b = node.a, node.b
        if F.is_signed_int(node.dtype):
            eng = self.analyzer._canonical
            lo, hi = eng.diff_bound(eng.diff_poly(a, b))
        else:
            ba = self.analyzer._const_int_bound.bound(a)
            bb = self.analyzer._const_int_bound.bound(b)
            lo, hi = ba[0] - bb[1], ba[1] - bb[0]
        if hi <= 0:
            return a if type(node) is Min else b
        if lo >= 0:
            return b if type(node) is Min else a
        return None

    def _cmp(self, e: CmpOp) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        node = e if (a is e.a and b is e.b) else type(e)(a, b)
        out = F.fold(node)
        if out is not node:
            return self.visit(out) if isinstance(out, Broadcast) else out
        cls, dtype = type(node), a.dtype
        if _lanes(dtype) > 1:
            return node
        floating = _is_float(dtype)
        if a is b or self.analyzer._canonical.key(a) == self.analyzer._canonical.key(b):
            if cls in (LT, GT) or (cls is NE and not floating):
                return F.make_int(0, "bool")
            if not floating:
                return F.make_int(1, "bool")
        if floating or not F.is_int_like(dtype):
            return node
        if F.is_signed_int(dtype):
            return self._cmp_signed(node)
        return self._cmp_by_bounds(node)

    def _cmp_signed(self, node: CmpOp) -> PrimExpr:
        cls, a, b = type(node), node.a, node.b
        if cls in (GT, GE):
            cls, a, b = _SWAP[cls], b, a
        eng = self.analyzer._canonical
        diff = eng.diff_poly(a, b)
        lo, hi = eng.diff_bound(diff)
        decided = _decide(cls, lo, hi)
        if decided is None and cls in (EQ, NE) and not eng.eq_possible(diff):
            decided = cls is NE
        if decided is not None:
            return F.make_int(int(decided), "bool")
        if isinstance(a, (Min, Max)) or isinstance(b, (Min, Max)):
            from .rewrite_rules import CMP_RULES

            swapped = node if cls is type(node) else cls(a, b)
            ruled = CMP_RULES.apply(swapped, self)
            if ruled is not None and self._depth <= self._MAX_DEPTH:
                self._depth += 1
                try:
                    return self.visit(ruled)
                finally:
                    self._depth -= 1
        out = eng.cmp_from_poly(cls, diff, a.dtype)
        if eng.key(out) == eng.key(node):
            return node
        return out

    def _cmp_by_bounds(self, node: CmpOp) -> PrimExpr:
        ba = self.analyzer._const_int_bound.bound(node.a)
        bb = self.analyzer._const_int_bound.bound(node.b)
        cls = type(node)
        if cls in (GT, GE):
            cls, ba, bb = _SWAP[cls], bb, ba
        decided = _decide(cls, ba[0] - bb[1], ba[1] - bb[0])
        return node if decided is None else F.make_int(int(decided), "bool")

    def _logic(self, e: PrimExpr) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        node = e if (a is e.a and b is e.b) else type(e)(a, b)
        out = F.fold(node)
        if out is not node:
            return out
        if _lanes(node.dtype) == 1:
            decided = self._implication(node)
            if decided is not None:
                return decided
        return self._rewrite(node)

    def _implication(self, node: PrimExpr) -> PrimExpr | None:
        eng = self.analyzer._canonical
        fa, fb = eng.facts_of(node.a), eng.facts_of(node.b)
        if fa is None or fb is None:
            return None
        if type(node) is And:
            if eng.implies(fa, fb):
                return node.a
            if eng.implies(fb, fa):
                return node.b
            if eng.contradicts(fa, fb):
                return F.make_int(0, "bool")
        else:
            if eng.implies(fa, fb):
                return node.b
            if eng.implies(fb, fa):
                return node.a
            if eng.covers(fa, fb):
                return F.make_int(1, "bool")
        return None

    def _not(self, e: Not) -> PrimExpr:
        a = self.visit(e.a)
        node = e if a is e.a else Not(a)
        out = F.fold(node)
        if out is not node:
            return out
        inner = node.a
        if isinstance(inner, CmpOp) and (
            type(inner) in (EQ, NE) or not _is_float(inner.a.dtype)
        ):
            return self.visit(_NEGATE[type(inner)](inner.a, inner.b))
        return self._rewrite(node)

    def _select(self, e: Select) -> PrimExpr:
        cond = self.visit(e.condition)
        if isinstance(cond, IntImm):
            return self.visit(e.true_value if cond.value else e.false_value)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        if t is e.true_value and f is e.false_value and cond is e.condition:
            node = e
        else:
            node = Select(cond, t, f)
        out = F.fold(node)
        if out is not node:
            return out
        return self._rewrite(node)

    def _cast(self, e: Cast) -> PrimExpr:
        value = self.visit(e.value)
        out = F.cast(e.dtype, value)
        if isinstance(out, Cast) and out.value is e.value:
            return e
        return out

    def _call(self, e: Call) -> PrimExpr:
        op = e.op
        name = op.name if isinstance(op, Op) else ""
        if name == "tir.if_then_else" and len(e.args) == 3:
            cond = self.visit(e.args[0])
            if isinstance(cond, IntImm):
                return self.visit(e.args[1] if cond.value else e.args[2])
        args = tuple(self.visit(a) for a in e.args)
        if name == "tir.likely" and len(args) == 1 and isinstance(args[0], IntImm):
            return args[0]
        if name == "tir.if_then_else" and len(args) == 3:
            if self.analyzer._canonical.key(args[1]) == self.analyzer._canonical.key(args[2]):
                return args[1]
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return e.with_fields(args=args)

    def _let(self, e: Let) -> PrimExpr:
        from tvm.tir.stmt_functor import substitute, uses_var

        value = self.visit(e.value)
        if isinstance(value, (IntImm, FloatImm, Var, StringImm)):
            return self.visit(substitute(e.body, {e.var: value}))
        body = self.visit(e.body)
        if not uses_var(body, lambda v: v is e.var):
            return body
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body)

    def _ramp(self, e: Ramp) -> PrimExpr:
        base, stride = self.visit(e.base), self.visit(e.stride)
        if base is e.base and stride is e.stride and const_value(stride) != 0:
            return e
        return F.ramp(base, stride, e.lanes)

    def _broadcast(self, e: Broadcast) -> PrimExpr:
        value = self.visit(e.value)
        return e if value is e.value else Broadcast(value, e.lanes)

    def _buffer_load(self, e: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in e.indices)
        if all(x is y for x, y in zip(indices, e.indices)):
            return e
        return e.with_fields(indices=indices)

    def _generic(self, e: PrimExpr) -> PrimExpr:
        changes = {}
        for info in e._field_infos:
            if info.kind != "tree":
                continue
            old = getattr(e, info.name)
            new = self._visit_field(old)
            if new is not old:
                changes[info.name] = new
        return e.with_fields(**changes) if changes else e

    def _visit_field(self, value: Any) -> Any:
        if isinstance(value, PrimExpr):
            return self.visit(value)
        if isinstance(value, tuple) and value and all(isinstance(v, PrimExpr) for v in value):
            new = tuple(self.visit(v) for v in value)
            return value if all(a is b for a, b in zip(new, value)) else new
        return value


def _decide(cls: type, lo: int, hi: int) -> bool | None:
    """Decide ``d <op> 0`` from the bound ``[lo, hi]`` of ``d``."""
    if cls is LT:
        return True if hi < 0 else False if lo >= 0 else None
    if cls is LE:
        return True if hi <= 0 else False if lo > 0 else None
    if cls is EQ:
        return True if lo == hi == 0 else False if lo > 0 or hi < 0 else None
    if cls is NE:
        return False if lo == hi == 0 else True if lo > 0 or hi < 0 else None
    return None


def _vector_divmod(s: RewriteSimplifier, node: BinaryOp) -> PrimExpr | None:
    """``ramp // c`` and ``ramp % c`` whose lanes stay in one block of ``c`` (the other vector
    forms are built by :mod:`~tvm.arith.const_fold`)."""
    cls, a, b = type(node), node.a, node.b
    if cls in (FloorDiv, FloorMod) and isinstance(a, Ramp) and isinstance(b, Broadcast):
        c, stride = const_value(b.value), const_value(a.stride)
        if isinstance(c, int) and isinstance(stride, int) and c > 0 and stride >= 0 \
                and F.is_signed_int(a.base.dtype):
            # All lanes stay in one block of c when (base % c) + stride*(lanes-1) < c.
            span = stride * (a.lanes - 1)
            eng = s.analyzer._canonical
            base_mod = eng.poly_bound(eng.floormod(eng.to_poly(a.base), c, a.base.dtype))
            if base_mod[1] + span < c:
                if cls is FloorDiv:
                    return Broadcast(F.floordiv(a.base, b.value), a.lanes)
                return Ramp(F.floormod(a.base, b.value), a.stride, a.lanes)
    return None


_HANDLERS: dict[type, Callable[[RewriteSimplifier, Any], PrimExpr]] = {
    IntImm: RewriteSimplifier._leaf,
    FloatImm: RewriteSimplifier._leaf,
    StringImm: RewriteSimplifier._leaf,
    Var: RewriteSimplifier._var,
    SizeVar: RewriteSimplifier._var,
    Min: RewriteSimplifier._visit_binary_default,
    Max: RewriteSimplifier._visit_binary_default,
    And: RewriteSimplifier._logic,
    Or: RewriteSimplifier._logic,
    Not: RewriteSimplifier._not,
    Select: RewriteSimplifier._select,
    Cast: RewriteSimplifier._cast,
    Call: RewriteSimplifier._call,
    Let: RewriteSimplifier._let,
    Ramp: RewriteSimplifier._ramp,
    Broadcast: RewriteSimplifier._broadcast,
    BufferLoad: RewriteSimplifier._buffer_load,
}
for _cls in _ARITH:
    _HANDLERS[_cls] = RewriteSimplifier._arith
for _cls in (EQ, NE, LT, LE, GT, GE):
    _HANDLERS[_cls] = RewriteSimplifier._cmp


def _find_handler(cls: type) -> Callable[[RewriteSimplifier, Any], PrimExpr]:
    for base in cls.__mro__:
        if base in _HANDLERS:
            handler = _HANDLERS[base]
            break
        if base is Object:
            handler = RewriteSimplifier._generic
            break
    else:  # pragma: no cover - every node derives from Object
        handler = RewriteSimplifier._generic
    _HANDLERS[cls] = handler
    return handler
