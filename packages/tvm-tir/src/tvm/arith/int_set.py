"""Integer sets with symbolic bounds, for region inference.

An :class:`IntervalSet` is the closed interval ``[min_value, max_value]`` whose ends are
expressions (``[i*4, i*4 + 3]``) or the infinities :data:`POS_INF`/:data:`NEG_INF`.
:func:`eval_set` maps an expression and sets of some of its variables to the set of values it
takes: ``eval_set(i*4 + j, {j: IntervalSet(0, 3)}) -> [i*4, i*4 + 3]``.  Variables without a
set stand for themselves (a single point).  The result over-approximates: every value the
expression takes lies inside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tvm.ffi import Object, register_object
from tvm.tir.expr import (
    Add, Broadcast, Cast, Div, FloorDiv, FloorMod, IntImm, Let, Max, Min, Mod, Mul, PrimExpr,
    Ramp, Range, Select, Sub, Var, convert,
)
from tvm.tir.expr_util import const_value, is_const_int

from . import const_fold as F

if TYPE_CHECKING:
    from .analyzer import Analyzer

__all__ = ["IntervalSet", "POS_INF", "NEG_INF", "eval_set", "union", "intersect", "is_pos_inf",
           "is_neg_inf"]

POS_INF = Var("pos_inf", "handle")
NEG_INF = Var("neg_inf", "handle")


def is_pos_inf(e: Any) -> bool:
    return e is POS_INF


def is_neg_inf(e: Any) -> bool:
    return e is NEG_INF


@register_object("arith.IntervalSet")
class IntervalSet(Object):
    """``[min_value, max_value]``; ends may be :data:`NEG_INF` / :data:`POS_INF`."""

    min_value: PrimExpr
    max_value: PrimExpr

    def __init__(self, min_value: Any, max_value: Any):
        lo = min_value if min_value is NEG_INF or min_value is POS_INF else convert(min_value)
        hi = max_value if max_value is NEG_INF or max_value is POS_INF else convert(max_value)
        if isinstance(lo, PrimExpr) and isinstance(hi, PrimExpr) and lo.dtype != hi.dtype \
                and lo.dtype != "handle" and hi.dtype != "handle":
            if isinstance(lo, IntImm):
                lo = F.make_int(lo.value, hi.dtype)
            elif isinstance(hi, IntImm):
                hi = F.make_int(hi.value, lo.dtype)
        object.__setattr__(self, "min_value", lo)
        object.__setattr__(self, "max_value", hi)

    # -- constructors ----------------------------------------------------------------------
    @staticmethod
    def everything() -> IntervalSet:
        return IntervalSet(NEG_INF, POS_INF)

    @staticmethod
    def empty() -> IntervalSet:
        return IntervalSet(POS_INF, NEG_INF)

    @staticmethod
    def single_point(value: Any) -> IntervalSet:
        value = convert(value)
        return IntervalSet(value, value)

    @staticmethod
    def from_range(rng: Range) -> IntervalSet:
        """``[min, min + extent - 1]`` of a Range."""
        return IntervalSet(rng.min, F.sub(F.add(rng.min, rng.extent), 1))

    # -- queries ---------------------------------------------------------------------------
    def is_empty(self) -> bool:
        if self.min_value is POS_INF or self.max_value is NEG_INF:
            return True
        lo, hi = const_value(self.min_value), const_value(self.max_value)
        return lo is not None and hi is not None and lo > hi

    def is_everything(self) -> bool:
        return self.min_value is NEG_INF and self.max_value is POS_INF

    def has_lower_bound(self) -> bool:
        return self.min_value is not NEG_INF and self.min_value is not POS_INF

    def has_upper_bound(self) -> bool:
        return self.max_value is not POS_INF and self.max_value is not NEG_INF

    def is_bounded(self) -> bool:
        return self.has_lower_bound() and self.has_upper_bound()

    def is_single_point(self) -> bool:
        if not self.is_bounded():
            return False
        if self.min_value is self.max_value:
            return True
        from tvm.ffi import structural_equal

        return structural_equal(self.min_value, self.max_value)

    def to_range(self, analyzer: Analyzer | None = None) -> Range:
        """``Range(min, max - min + 1)``; raises for an unbounded set."""
        if not self.is_bounded():
            raise ValueError(f"cannot turn the unbounded set {self!r} into a Range")
        extent = F.add(F.sub(self.max_value, self.min_value), 1)
        if analyzer is not None:
            extent = analyzer.simplify(extent)
        return Range(self.min_value, extent)

    def __repr__(self) -> str:
        def show(e: Any) -> str:
            if e is POS_INF:
                return "+inf"
            if e is NEG_INF:
                return "-inf"

            value = const_value(e)
            if value is not None:
                return str(value)
            return e.name if isinstance(e, Var) else repr(e)

        return f"IntervalSet[{show(self.min_value)}, {show(self.max_value)}]"


# -- set arithmetic on (lo, hi) pairs; None stands for the infinity on that side -------------

_Pair = tuple[Any, Any]
_E = object()  # marks the empty set in a pair
_EMPTY: _Pair = (_E, _E)


def _pair(s: IntervalSet) -> _Pair:
    if s.min_value is POS_INF or s.max_value is NEG_INF:
        return _EMPTY
    return (None if s.min_value is NEG_INF else s.min_value,
            None if s.max_value is POS_INF else s.max_value)


def _lift(fn: Any, a: Any, b: Any) -> Any:
    return None if a is None or b is None else fn(a, b)


def _sign(ana: Analyzer, e: PrimExpr) -> int:
    """1 if provably >= 0, -1 if provably <= 0, 0 if unknown."""
    if not F.is_int_like(e.dtype):
        v = const_value(e)
        return 0 if v is None else (1 if v >= 0 else -1)
    lo, hi = ana._const_int_bound.bound(e)
    return 1 if lo >= 0 else -1 if hi <= 0 else 0


def _min_e(ana: Analyzer, a: Any, b: Any, low: bool) -> Any:
    """min of two ends; ``low`` says ``None`` means -inf (else +inf)."""
    if a is None or b is None:
        return None if low else (b if a is None else a)
    return ana.simplify(F.min_(a, b))


def _max_e(ana: Analyzer, a: Any, b: Any, low: bool) -> Any:
    if a is None or b is None:
        return (b if a is None else a) if low else None
    return ana.simplify(F.max_(a, b))


class _Evaluator:
    def __init__(self, analyzer: Analyzer, dom_map: Mapping[Var, Any]):
        self.ana = analyzer
        self.dom: dict[Var, _Pair] = {}
        for var, dom in dom_map.items():
            if isinstance(dom, Range):
                dom = IntervalSet.from_range(dom)
            elif not isinstance(dom, IntervalSet):
                raise TypeError(
                    f"eval_set: the domain of {getattr(var, 'name', var)!r} must be an IntervalSet "
                    f"or a Range, got {type(dom).__name__}"
                )
            self.dom[var] = _pair(dom)
        self.memo: dict[int, tuple[PrimExpr, _Pair]] = {}

    def eval(self, e: PrimExpr) -> _Pair:
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = self._eval(e)
        self.memo[id(e)] = (e, out)
        return out

    def _point(self, p: _Pair) -> Any:
        if p[0] is not None and p[0] is p[1] and p[0] is not _E:
            return p[0]
        return None

    def _eval(self, e: PrimExpr) -> _Pair:
        t = type(e)
        if isinstance(e, Var):
            return self.dom.get(e, (e, e))
        if t in (Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod, Min, Max):
            a, b = self.eval(e.a), self.eval(e.b)
            if a[0] is _E or b[0] is _E:
                return _EMPTY
            pa, pb = self._point(a), self._point(b)
            if pa is not None and pb is not None:
                out = e if (pa is e.a and pb is e.b) else t(pa, pb)
                return (out, out)
            return getattr(self, "_" + t.__name__.lower())(e, a, b, pb)
        if t is Select:
            tv, fv = self.eval(e.true_value), self.eval(e.false_value)
            if tv[0] is _E or fv[0] is _E:
                return fv if tv[0] is _E else tv
            return (_min_e(self.ana, tv[0], fv[0], True), _max_e(self.ana, tv[1], fv[1], False))
        if t is Cast and F.is_int_like(e.dtype) and F.is_int_like(e.value.dtype):
            lo, hi = self.eval(e.value)
            if lo is _E:
                return _EMPTY
            return (None if lo is None else F.cast(e.dtype, lo),
                    None if hi is None else F.cast(e.dtype, hi))
        if t is Let:
            self.dom[e.var] = self.eval(e.value)
            return self.eval(e.body)
        if t is Broadcast:
            return self.eval(e.value)
        if t is Ramp:
            base, stride = self.eval(e.base), self._point(self.eval(e.stride))
            if stride is not None:
                span = F.mul(stride, e.lanes - 1)
                s = _sign(self.ana, stride)
                if s > 0:
                    return (base[0], _lift(F.add, base[1], span))
                if s < 0:
                    return (_lift(F.add, base[0], span), base[1])
            return (None, None)
        return self._opaque(e)

    def _opaque(self, e: PrimExpr) -> _Pair:
        """A node without set rules: a point if no operand varies, else everything."""
        for info in e._field_infos:
            if info.kind == "ignore":
                continue
            value = getattr(e, info.name)
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                if isinstance(item, PrimExpr) and self._point(self.eval(item)) is not item:
                    return self._everything(e)
        return (e, e)

    def _everything(self, e: PrimExpr) -> _Pair:
        if e.dtype.startswith("bool"):
            return (F.make_int(0, "bool"), F.make_int(1, "bool"))
        return (None, None)

    # -- arithmetic rules (operands not both points) -------------------------------------
    def _add(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        return (_lift(F.add, a[0], b[0]), _lift(F.add, a[1], b[1]))

    def _sub(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        return (_lift(F.sub, a[0], b[1]), _lift(F.sub, a[1], b[0]))

    def _scale(self, a: _Pair, k: PrimExpr, fn: Any) -> _Pair:
        s = _sign(self.ana, k)
        if s > 0:
            return (_lift(fn, a[0], k), _lift(fn, a[1], k))
        if s < 0:
            return (_lift(fn, a[1], k), _lift(fn, a[0], k))
        return (None, None)

    def _mul(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        if const_value(pb) == 0 or const_value(self._point(a)) == 0:
            zero = F.make_const(0, e.dtype)
            return (zero, zero)
        if pb is not None:
            return self._scale(a, pb, F.mul)
        pa = self._point(a)
        if pa is not None:
            return self._scale(b, pa, lambda x, k: F.mul(k, x))
        return (None, None)

    def _floordiv(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        if pb is None or const_value(pb) == 0:
            return (None, None)
        return self._scale(a, pb, F.floordiv)

    def _div(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        if pb is not None and a[0] is not None and _sign(self.ana, a[0]) > 0 and \
                self.ana._const_int_bound.bound(pb)[0] > 0:
            return self._scale(a, pb, F.truncdiv)
        return (None, None)

    def _floormod(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        if pb is None or self.ana._const_int_bound.bound(pb)[0] <= 0:
            return (None, None)
        if a[0] is not None and a[1] is not None:
            # Within one block of pb the remainder is monotonic.
            same = self.ana.simplify(F.sub(F.floordiv(a[1], pb), F.floordiv(a[0], pb)))
            if is_const_int(same, 0):
                return (self.ana.simplify(F.floormod(a[0], pb)),
                        self.ana.simplify(F.floormod(a[1], pb)))
        zero = F.make_int(0, e.dtype)
        return (zero, self.ana.simplify(F.sub(pb, 1)))

    def _mod(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        if a[0] is not None and _sign(self.ana, a[0]) > 0:
            return self._floormod(e, a, b, pb)
        return (None, None)

    def _min(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        return (_min_e(self.ana, a[0], b[0], True), _min_e(self.ana, a[1], b[1], False))

    def _max(self, e: Any, a: _Pair, b: _Pair, pb: Any) -> _Pair:
        return (_max_e(self.ana, a[0], b[0], True), _max_e(self.ana, a[1], b[1], False))


def _to_set(ana: Analyzer, p: _Pair) -> IntervalSet:
    if p[0] is _E:
        return IntervalSet.empty()
    lo = NEG_INF if p[0] is None else ana.simplify(p[0])
    hi = POS_INF if p[1] is None else ana.simplify(p[1])
    return IntervalSet(lo, hi)


def eval_set(expr: Any, dom_map: Mapping[Var, Any] | None = None,
             analyzer: Analyzer | None = None) -> IntervalSet:
    """The set of values of ``expr`` when each variable of ``dom_map`` ranges over its
    IntervalSet (or Range); other variables are fixed."""
    from .analyzer import Analyzer

    ana = analyzer if analyzer is not None else Analyzer()
    expr = convert(expr)
    if not isinstance(expr, PrimExpr):
        raise TypeError(f"eval_set expects a PrimExpr, got {type(expr).__name__}")
    ev = _Evaluator(ana, dom_map or {})
    return _to_set(ana, ev.eval(ana.simplify(expr)))


def union(sets: list[IntervalSet], analyzer: Analyzer | None = None) -> IntervalSet:
    """The smallest interval containing all ``sets``."""
    from .analyzer import Analyzer

    ana = analyzer if analyzer is not None else Analyzer()
    pairs = [_pair(s) for s in sets if not s.is_empty()]
    if not pairs:
        return IntervalSet.empty()
    lo, hi = pairs[0]
    for p in pairs[1:]:
        lo, hi = _min_e(ana, lo, p[0], True), _max_e(ana, hi, p[1], False)
    return _to_set(ana, (lo, hi))


def intersect(sets: list[IntervalSet], analyzer: Analyzer | None = None) -> IntervalSet:
    """The intersection of ``sets`` (symbolic ends are combined with max/min)."""
    from .analyzer import Analyzer

    ana = analyzer if analyzer is not None else Analyzer()
    if not sets:
        return IntervalSet.everything()
    if any(s.is_empty() for s in sets):
        return IntervalSet.empty()
    lo, hi = _pair(sets[0])
    for s in sets[1:]:
        p = _pair(s)
        lo, hi = _max_e(ana, lo, p[0], True), _min_e(ana, hi, p[1], False)
    out = _to_set(ana, (lo, hi))
    return IntervalSet.empty() if out.is_empty() else out
