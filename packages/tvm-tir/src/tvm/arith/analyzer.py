"""The :class:`Analyzer`: one object holding what is known about variables, and the
simplifiers and bound analyses that use it.

    ana = Analyzer()
    ana.bind(i, Range(0, 16))               # a loop variable
    ana.simplify((i * 4 + 3) // 4)          # -> i
    ana.can_prove(i < 16)                   # -> True
    with ana.constraint_scope(n > 4):       # inside `if n > 4:`
        ana.can_prove(n >= 5)               # -> True

Knowledge comes from :meth:`Analyzer.bind` (a variable's range, or its value), from
:meth:`Analyzer.update` (a constant bound) and from :meth:`Analyzer.constraint_scope`
(conditions assumed inside a block).  A condition's integer comparisons become facts
``F >= 0`` over canonical sums: those on one variable tighten its bound, the others help to
decide comparisons whose difference to a fact is bounded (``x < n`` proves ``x < n + 1``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tvm.tir.expr import (
    And, Broadcast, IntImm, Not, PrimExpr, Range, Var, convert,
)

from . import const_fold as F
from .bound import ConstIntBound, ConstIntBoundAnalyzer
from .canonical import _VAR, CanonicalSimplifier, Poly
from .int_set import IntervalSet, eval_set
from .rewrite_simplify import RewriteSimplifier

__all__ = ["Analyzer"]


def _as_expr(value: Any, what: str) -> PrimExpr:
    try:
        return convert(value)
    except TypeError:
        raise TypeError(
            f"Analyzer.{what} expects a PrimExpr (or Python number), "
            f"got {type(value).__name__}: {value!r}"
        ) from None


class Analyzer:
    """Arithmetic analysis and simplification under known variable ranges and facts."""

    def __init__(self) -> None:
        self._const_int_bound = ConstIntBoundAnalyzer()
        self._subst: dict[Var, PrimExpr] = {}
        self._var_ranges: dict[Var, IntervalSet] = {}
        self._facts: list[Poly] = []
        self._literals: dict[Any, bool] = {}
        self._canonical = CanonicalSimplifier(self)
        self._rewrite = RewriteSimplifier(self)

    # -- simplification --------------------------------------------------------------------
    def simplify(self, expr: Any, steps: int = 2) -> PrimExpr:
        """Simplify ``expr``: canonical sums for integer arithmetic, rewrite rules and bound
        reasoning for the rest; floats only fold constants and exact identities.
        ``steps`` bounds how many passes run while the result keeps changing."""
        expr = _as_expr(expr, "simplify")
        out = self._canonical(expr)
        for _ in range(steps - 1):
            if out is expr:
                break
            expr, out = out, self._canonical(out)
        return out

    def canonical_simplify(self, expr: Any) -> PrimExpr:
        """One pass of the canonical-form simplifier."""
        return self._canonical(_as_expr(expr, "canonical_simplify"))

    def rewrite_simplify(self, expr: Any) -> PrimExpr:
        """One pass of the rewrite-rule simplifier (integer sums are not reordered)."""
        return self._rewrite(_as_expr(expr, "rewrite_simplify"))

    # -- bounds and sets ----------------------------------------------------------------
    def const_int_bound(self, expr: Any) -> ConstIntBound:
        """The constant ``[min, max]`` of an integer expression."""
        return self._const_int_bound(_as_expr(expr, "const_int_bound"))

    def int_set(self, expr: Any, dom_map: Mapping[Var, Any] | None = None) -> IntervalSet:
        """The set of values of ``expr`` with variables ranging over ``dom_map`` (Range or
        IntervalSet per variable); without ``dom_map``, over the ranges given to ``bind``."""
        expr = _as_expr(expr, "int_set")
        return eval_set(expr, self._var_ranges if dom_map is None else dom_map, self)

    # -- proofs ------------------------------------------------------------------------------
    def can_prove(self, cond: Any) -> bool:
        """Whether ``cond`` is provably true (``False`` means "not proven", not "false")."""
        cond = _as_expr(cond, "can_prove")
        out = self.simplify(cond)
        if isinstance(out, Broadcast):
            out = out.value
        return isinstance(out, IntImm) and out.value != 0

    def can_prove_equal(self, a: Any, b: Any) -> bool:
        """Whether ``a == b`` for every value of the variables."""
        a, b = _as_expr(a, "can_prove_equal"), _as_expr(b, "can_prove_equal")
        if F.is_int_like(a.dtype) and F.is_int_like(b.dtype):
            return self.can_prove(a == b)
        from tvm.ffi import structural_equal

        return structural_equal(self.simplify(a), self.simplify(b))

    def can_prove_greater_equal(self, expr: Any, lower: int) -> bool:
        return self.can_prove(_as_expr(expr, "can_prove_greater_equal") >= lower)

    def can_prove_less(self, expr: Any, upper: int) -> bool:
        return self.can_prove(_as_expr(expr, "can_prove_less") < upper)

    # -- knowledge ---------------------------------------------------------------------------
    def bind(self, var: Var, value: Any, allow_override: bool = False) -> None:
        """Bind ``var`` to a ``Range`` (its iteration domain), an ``IntervalSet``, or an
        expression (its value, substituted by the simplifiers)."""
        if not isinstance(var, Var):
            raise TypeError(f"Analyzer.bind expects a tir.Var, got {type(var).__name__}")
        if isinstance(value, Range):
            lo = self.simplify(value.min)
            hi = self.simplify(F.sub(F.add(lo, value.extent), 1))
            self._bind_interval(var, lo, hi, allow_override)
        elif isinstance(value, IntervalSet):
            self._bind_interval(var, value.min_value, value.max_value, allow_override)
        else:
            expr = self.simplify(_as_expr(value, "bind"))
            from tvm.tir.stmt_functor import uses_var

            if uses_var(expr, lambda v: v is var):
                raise ValueError(
                    f"Analyzer.bind: the value {expr!r} of {var.name!r} uses {var.name!r} itself"
                )
            old = self._subst.get(var)
            if old is not None and not allow_override and not self.can_prove_equal(old, expr):
                raise ValueError(
                    f"Analyzer.bind: variable {var.name!r} is already bound to {old!r}; "
                    f"pass allow_override=True to rebind it to {expr!r}"
                )
            self._subst[var] = expr
            if F.is_int_like(expr.dtype):
                self._const_int_bound.update(var, self._const_int_bound.bound(expr), True)
        self._changed()

    def _bind_interval(self, var: Var, lo: Any, hi: Any, allow_override: bool) -> None:
        from .int_set import NEG_INF, POS_INF

        bound_lo = self._const_int_bound.bound(lo)[0] if lo is not NEG_INF else -(1 << 63) + 1
        bound_hi = self._const_int_bound.bound(hi)[1] if hi is not POS_INF else (1 << 63) - 1
        self._const_int_bound.update(var, (bound_lo, bound_hi), allow_override)
        self._var_ranges[var] = IntervalSet(lo, hi)
        if F.is_signed_int(var.dtype):
            # Symbolic ends become facts: var - lo >= 0 and hi - var >= 0.
            for a, b in ((var, lo), (hi, var)):
                if isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and \
                        not (isinstance(lo, IntImm) and isinstance(hi, IntImm)):
                    fact = self._canonical.diff_poly(a, b)
                    if fact.terms and not self._single_var_fact(fact):
                        self._facts.append(fact)

    @staticmethod
    def _single_var_fact(fact: Poly) -> bool:
        return len(fact.terms) == 1 and all(
            len(m) == 1 and m[0].kind == _VAR for m in fact.terms
        )

    def update(self, var: Var, info: ConstIntBound, override: bool = False) -> None:
        """Record a constant bound for ``var``."""
        if not isinstance(info, ConstIntBound):
            raise TypeError(f"Analyzer.update expects a ConstIntBound, got {type(info).__name__}")
        self._const_int_bound.update(var, (info.min_value, info.max_value), override)
        self._changed()

    @contextmanager
    def constraint_scope(self, cond: Any) -> Iterator[None]:
        """Assume ``cond`` inside the ``with`` block (the body of ``if cond:``)."""
        cond = self.simplify(_as_expr(cond, "constraint_scope"))
        restores = []
        n_facts = len(self._facts)
        added_literals: list[Any] = []
        for part in _conjuncts(cond):
            facts = self._canonical.facts_of(part)
            if facts is None:
                if isinstance(part, IntImm):
                    continue
                key = self._canonical.key(part)
                if key not in self._literals:
                    self._literals[key] = True
                    added_literals.append(key)
                if isinstance(part, Not):
                    nkey = self._canonical.key(part.a)
                    if nkey not in self._literals:
                        self._literals[nkey] = False
                        added_literals.append(nkey)
                continue
            for fact in facts:
                if self._single_var_fact(fact):
                    restores.append(self._tighten(fact))
                elif fact.terms:
                    self._facts.append(fact)
        self._changed()
        try:
            yield
        finally:
            del self._facts[n_facts:]
            for key in added_literals:
                self._literals.pop(key, None)
            for restore in reversed(restores):
                restore()
            self._changed()

    def _tighten(self, fact: Poly) -> Any:
        """``k*v + c >= 0`` as a bound of ``v``; returns the undo function."""
        (mono, k), = fact.terms.items()
        var, c = mono[0].expr, fact.const
        if k > 0:
            bound = (-(c // k), (1 << 63) - 1)  # v >= ceil(-c/k)
        else:
            bound = (-(1 << 63) + 1, c // -k)  # v <= floor(c/|k|)
        return self._const_int_bound.enter_constraint(var, bound)

    def _changed(self) -> None:
        self._const_int_bound.clear_cache()
        self._canonical.clear()
        self._rewrite.clear()


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]
