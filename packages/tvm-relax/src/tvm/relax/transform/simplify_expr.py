"""SimplifyExpr (alias AlgebraicSimplify): local algebraic rewrites, as one rule table.

::

    mod = relax.transform.SimplifyExpr()(mod)

=====================================  ===================================================
pattern                                replacement
=====================================  ===================================================
``reshape(r(x, ...), s)``              ``reshape(x, s)``; ``r`` any of reshape, squeeze,
                                       expand_dims, flatten (so is the outer op, when the
                                       result's shape is known)
``reshape(x, s)`` with s = shape(x)    ``x`` (also squeeze / flatten / broadcast_to that
                                       keep the shape)
``permute_dims(permute_dims(x, a), b)`` ``permute_dims(x, a∘b)`` (``x`` if the identity)
``permute_dims(x, identity)``          ``x``
``x + 0``, ``0 + x``, ``x - 0``        ``x``
``x * 1``, ``1 * x``, ``x / 1``        ``x``
``astype(x, dtype(x))``                ``x``
``negative(negative(x))``              ``x``
=====================================  ===================================================

The identity rules fire only when the result provably has ``x``'s shape and dtype (the
constant must not broadcast ``x`` to something larger, nor change its dtype); the driver
(:mod:`tvm.relax.dpl.rewrite`) also rejects any replacement whose StructInfo does not fit
the original.  Rules for operators that are not registered are left out of the table.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm.ir.op import Op

from ..analysis.struct_info_analysis import prim_equal
from ..dpl import CallPattern, Match, RewriteRule, is_const, is_op, rewrite_pass, wildcard
from ..expr import Call, Expr, ShapeExpr
from ..struct_info import TensorStructInfo

__all__ = ["SimplifyExpr", "AlgebraicSimplify", "simplify_rules", "same_tensor_shape"]

RESHAPE_LIKE = ("relax.reshape", "relax.squeeze", "relax.expand_dims", "relax.flatten")
SHAPE_KEEPING = ("relax.reshape", "relax.squeeze", "relax.flatten", "relax.broadcast_to")


def op_exists(name: str) -> bool:
    try:
        Op.get(name)
    except ValueError:
        return False
    return True


def _existing(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(n for n in names if op_exists(n))


def _tensor(expr: Any) -> Optional[TensorStructInfo]:
    sinfo = getattr(expr, "struct_info_", None)
    return sinfo if isinstance(sinfo, TensorStructInfo) else None


def same_tensor_shape(a: Any, b: Any, analyzer: Any = None) -> bool:
    """Whether two tensor expressions provably have the same shape and dtype."""
    sa, sb = _tensor(a), _tensor(b)
    if sa is None or sb is None or sa.dtype != sb.dtype or sa.is_unknown_dtype:
        return False
    va, vb = sa.shape_values, sb.shape_values
    if va is None or vb is None:
        return sa.shape is not None and sa.shape is sb.shape
    return len(va) == len(vb) and all(prim_equal(x, y, analyzer) is True for x, y in zip(va, vb))


# -- reshape chains ---------------------------------------------------------------------------
def _reshape_chain(names: tuple[str, ...]) -> RewriteRule:
    inner = CallPattern(is_op(*names), None)
    pattern = is_op(*names)(inner, ...)

    def rewrite(call: Call, m: Match) -> Optional[Expr]:
        from ..op import reshape

        values = call.struct_info.shape_values if _tensor(call) else None
        if values is None:
            return None
        return reshape(m.value(inner).args[0], ShapeExpr(values))

    return RewriteRule(pattern, rewrite, "reshape-chain")


def _shape_identity(names: tuple[str, ...]) -> RewriteRule:
    pattern = CallPattern(is_op(*names), None)

    def rewrite(call: Call, m: Match) -> Optional[Expr]:
        x = call.args[0]
        return x if same_tensor_shape(x, call, m.ctx.analyzer) else None

    return RewriteRule(pattern, rewrite, "shape-identity")


# -- permute_dims -----------------------------------------------------------------------------
def _axes(call: Call, ndim: int) -> Optional[list[int]]:
    axes = call.attrs.axes
    if axes is None:
        return list(reversed(range(ndim)))
    return [int(a) % ndim for a in axes]


def _permute_rules() -> list[RewriteRule]:
    x = wildcard()
    inner = is_op("relax.permute_dims")(x)
    outer = is_op("relax.permute_dims")(inner)

    def compose(call: Call, m: Match) -> Optional[Expr]:
        from ..op import permute_dims

        src = _tensor(m[x])
        if src is None or src.ndim < 0:
            return None
        a = _axes(m.value(inner), src.ndim)
        b = _axes(call, src.ndim)
        axes = [a[i] for i in b]
        if axes == list(range(src.ndim)):
            return m[x]
        return permute_dims(m[x], axes)

    y = wildcard()

    def identity(call: Call, m: Match) -> Optional[Expr]:
        src = _tensor(m[y])
        if src is None or src.ndim < 0:
            return None
        return m[y] if _axes(call, src.ndim) == list(range(src.ndim)) else None

    return [
        RewriteRule(outer, compose, "permute-compose"),
        RewriteRule(is_op("relax.permute_dims")(y), identity, "permute-identity"),
    ]


# -- arithmetic identities --------------------------------------------------------------------
def _identity_rule(op: str, const: float, const_first: bool, name: str) -> RewriteRule:
    x, c = wildcard(), is_const(const)
    pattern = is_op(op)(c, x) if const_first else is_op(op)(x, c)

    def rewrite(call: Call, m: Match) -> Optional[Expr]:
        return m[x] if same_tensor_shape(m[x], call, m.ctx.analyzer) else None

    return RewriteRule(pattern, rewrite, name)


def _astype_rule() -> RewriteRule:
    x = wildcard()

    def rewrite(call: Call, m: Match) -> Optional[Expr]:
        src = _tensor(m[x])
        return m[x] if src is not None and src.dtype == call.attrs.dtype else None

    return RewriteRule(is_op("relax.astype")(x), rewrite, "astype-identity")


def _double_negation() -> RewriteRule:
    x = wildcard()
    return RewriteRule(is_op("relax.negative")(is_op("relax.negative")(x)),
                       lambda call, m: m[x], "double-negation")


def simplify_rules() -> list[RewriteRule]:
    """The rule table of :func:`SimplifyExpr` (for the operators registered now)."""
    rules: list[RewriteRule] = []
    reshape_like = _existing(RESHAPE_LIKE)
    if "relax.reshape" in reshape_like:
        rules.append(_reshape_chain(reshape_like))
    keeping = _existing(SHAPE_KEEPING)
    if keeping:
        rules.append(_shape_identity(keeping))
    rules.extend(_permute_rules())
    rules += [
        _identity_rule("relax.add", 0, False, "add-zero"),
        _identity_rule("relax.add", 0, True, "zero-add"),
        _identity_rule("relax.subtract", 0, False, "subtract-zero"),
        _identity_rule("relax.multiply", 1, False, "multiply-one"),
        _identity_rule("relax.multiply", 1, True, "one-multiply"),
        _identity_rule("relax.divide", 1, False, "divide-one"),
        _astype_rule(),
        _double_negation(),
    ]
    return rules


def SimplifyExpr() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass applying :func:`simplify_rules` to every Relax function."""
    return rewrite_pass(simplify_rules, "SimplifyExpr", opt_level=2)


AlgebraicSimplify = SimplifyExpr
