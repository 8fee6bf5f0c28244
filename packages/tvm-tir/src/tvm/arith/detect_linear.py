"""Linear-form detection: the coefficients of an index expression in given variables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tvm.tir.expr import PrimExpr, Var, convert
from tvm.tir.stmt_functor import uses_var

from .canonical import _EXPR, _VAR, Atom, Poly, p_add

if TYPE_CHECKING:
    from .analyzer import Analyzer

__all__ = ["detect_linear_equation"]


def detect_linear_equation(expr: Any, vars: Sequence[Var],  # noqa: A002
                           analyzer: Analyzer | None = None) -> list[PrimExpr]:
    """``[a_1, ..., a_n, b]`` with ``expr == a_1*v_1 + ... + a_n*v_n + b``, where no ``a_i`` or
    ``b`` uses any of ``vars`` (coefficients may be symbolic), or ``[]`` if ``expr`` is not
    linear in ``vars`` (a product of two of them, a division of one, ...)."""
    from . import const_fold as F
    from .analyzer import Analyzer

    expr = convert(expr)
    for v in vars:
        if not isinstance(v, Var):
            raise TypeError(f"detect_linear_equation: expected tir.Var, got {type(v).__name__}")
    if not F.is_signed_int(expr.dtype):
        return []
    ana = analyzer if analyzer is not None else Analyzer()
    eng = ana._canonical
    targets = {id(v): i for i, v in enumerate(vars)}
    coeffs = [Poly() for _ in vars]
    base = Poly({}, eng.to_poly(expr).const)
    memo: dict[Atom, bool] = {}

    def depends(atom: Atom) -> bool:
        hit = memo.get(atom)
        if hit is None:
            if atom.kind == _VAR:
                hit = id(atom.expr) in targets
            elif atom.kind == _EXPR:
                hit = uses_var(atom.expr, lambda v: id(v) in targets)
            else:
                hit = any(depends(a) for m in atom.poly.terms for a in m)
            memo[atom] = hit
        return hit

    for mono, k in eng.to_poly(expr).terms.items():
        hits = [a for a in mono if depends(a)]
        if not hits:
            base = p_add(base, Poly({mono: k}))
            continue
        if len(hits) > 1 or hits[0].kind != _VAR:
            return []
        rest = tuple(a for a in mono if a is not hits[0])
        index = targets[id(hits[0].expr)]
        term = Poly({rest: k}) if rest else Poly({}, k)
        coeffs[index] = p_add(coeffs[index], term)
    return [eng.from_poly(c, expr.dtype) for c in coeffs] + [eng.from_poly(base, expr.dtype)]
