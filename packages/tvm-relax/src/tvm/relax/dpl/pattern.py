"""Patterns over Relax expressions and the matcher.

A pattern describes the shape of an expression tree::

    x, s1, s2 = wildcard(), wildcard(), wildcard()
    chain = is_op("relax.reshape")(is_op("relax.reshape")(x, s1), s2)
    m = chain.match(expr, lookup)          # None, or a Match
    m[x]                                   # the expression x matched

Pieces: :func:`wildcard` (anything), :func:`is_op` (an operator; call it with argument
patterns to get a call pattern), :func:`is_const` (a constant tensor or scalar, optionally
with every element equal to a value), :func:`is_tuple`, :func:`is_tuple_get_item`,
:func:`is_expr` (one given expression), ``a | b`` (either), and constraints
``p.has_dtype("float32")``, ``p.has_ndim(4)``, ``p.has_attr(axis=1)``, ``p.where(pred)``.

Relax programs are in A-normal form, so a call's arguments are variables.  The matcher
sees through a variable to the value it is bound to (``lookup(var) -> value or None``,
e.g. the bindings a rewriter has emitted so far) whenever the pattern at that position is
not a wildcard.  ``m[p]`` is the expression as it appears at that position (a variable,
fit to reuse as an argument), ``m.value(p)`` the value behind it (the call, to read its
attributes).  A pattern object used at several positions must match the same expression
there (``is_op("relax.add")(x, x)`` only matches ``a + a``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from tvm.ffi import structural_equal
from tvm.ir.op import Op
from tvm.tir.expr import FloatImm, IntImm

from ..expr import Call, Constant, Expr, PrimValue, Tuple, TupleGetItem, Var
from ..struct_info import TensorStructInfo

__all__ = [
    "Pattern",
    "Match",
    "WildcardPattern",
    "ExprPattern",
    "OpPattern",
    "CallPattern",
    "ConstantPattern",
    "TuplePattern",
    "TupleGetItemPattern",
    "OrPattern",
    "ConstraintPattern",
    "wildcard",
    "is_op",
    "is_const",
    "is_tuple",
    "is_tuple_get_item",
    "is_expr",
    "constant_value",
]

Lookup = Callable[[Var], Optional[Expr]]


class Match:
    """The result of a successful match: pattern -> expression."""

    def __init__(self) -> None:
        self._exprs: dict[int, tuple[Pattern, Any]] = {}
        self._values: dict[int, Any] = {}
        self.ctx: Any = None  # set by the rewrite driver (the PatternRewriter)

    def __getitem__(self, pattern: Pattern) -> Any:
        try:
            return self._exprs[id(pattern)][1]
        except KeyError:
            raise KeyError(f"pattern {pattern!r} is not part of this match") from None

    def __contains__(self, pattern: Pattern) -> bool:
        return id(pattern) in self._exprs

    def get(self, pattern: Pattern, default: Any = None) -> Any:
        entry = self._exprs.get(id(pattern))
        return entry[1] if entry is not None else default

    def value(self, pattern: Pattern) -> Any:
        """The value behind the matched expression (the call a variable is bound to)."""
        if id(pattern) not in self._values:
            raise KeyError(f"pattern {pattern!r} is not part of this match")
        return self._values[id(pattern)]

    def items(self) -> list[tuple[Pattern, Any, Any]]:
        """Every ``(pattern, expression, value)`` of the match (partitioning reads which
        bindings a match covers)."""
        return [(p, e, self._values[k]) for k, (p, e) in self._exprs.items()]

    def _bind(self, pattern: Pattern, expr: Any, value: Any) -> bool:
        old = self._exprs.get(id(pattern))
        if old is not None:
            return old[1] is expr or _same_expr(old[1], expr)
        self._exprs[id(pattern)] = (pattern, expr)
        self._values[id(pattern)] = value
        return True

    def _snapshot(self) -> tuple[dict, dict]:
        return dict(self._exprs), dict(self._values)

    def _restore(self, state: tuple[dict, dict]) -> None:
        self._exprs, self._values = dict(state[0]), dict(state[1])

    def __repr__(self) -> str:
        return f"Match({', '.join(f'{p!r}: {type(e).__name__}' for p, e in self._exprs.values())})"


def _same_expr(a: Any, b: Any) -> bool:
    if isinstance(a, Var) or isinstance(b, Var):
        return a is b
    return structural_equal(a, b)


def _resolve(expr: Any, lookup: Optional[Lookup]) -> Any:
    """Follow variable bindings (through chains of variables) to a value."""
    seen = 0
    while isinstance(expr, Var) and lookup is not None and seen < 64:
        value = lookup(expr)
        if value is None:
            break
        expr = value
        seen += 1
    return expr


class Pattern:
    """Base of patterns; see the module docstring."""

    def match(self, expr: Any, lookup: Optional[Lookup] = None) -> Optional[Match]:
        """A :class:`Match` if ``expr`` matches (seeing through bindings via ``lookup``)."""
        m = Match()
        return m if self._match(expr, lookup, m) else None

    def _match(self, expr: Any, lookup: Optional[Lookup], m: Match) -> bool:
        value = _resolve(expr, lookup)
        if not self._match_value(value, lookup, m):
            return False
        return m._bind(self, expr, value)

    def _match_value(self, value: Any, lookup: Optional[Lookup], m: Match) -> bool:
        raise NotImplementedError

    # -- combinators ----------------------------------------------------------------------------
    def __or__(self, other: Pattern) -> OrPattern:
        return OrPattern(self, _as_pattern(other))

    def where(self, predicate: Callable[[Any], bool], what: str = "") -> ConstraintPattern:
        """This pattern, and ``predicate(value)`` holds for the matched value."""
        return ConstraintPattern(self, predicate, what or getattr(predicate, "__name__", "pred"))

    def has_dtype(self, dtype: str) -> ConstraintPattern:
        def pred(value: Any) -> bool:
            sinfo = getattr(value, "struct_info_", None)
            return isinstance(sinfo, TensorStructInfo) and sinfo.dtype == dtype

        return self.where(pred, f"dtype={dtype}")

    def has_ndim(self, ndim: int) -> ConstraintPattern:
        def pred(value: Any) -> bool:
            sinfo = getattr(value, "struct_info_", None)
            return isinstance(sinfo, TensorStructInfo) and sinfo.ndim == ndim

        return self.where(pred, f"ndim={ndim}")

    def has_shape(self, shape: Sequence[int]) -> ConstraintPattern:
        want = tuple(int(d) for d in shape)

        def pred(value: Any) -> bool:
            from ..analysis.struct_info_analysis import get_static_shape

            sinfo = getattr(value, "struct_info_", None)
            return sinfo is not None and get_static_shape(sinfo) == want

        return self.where(pred, f"shape={want}")

    def has_attr(self, **attrs: Any) -> ConstraintPattern:
        """The matched value is a call whose attributes have these values."""

        def pred(value: Any) -> bool:
            call_attrs = getattr(value, "attrs", None)
            if call_attrs is None:
                return False
            for key, want in attrs.items():
                got = _attr(call_attrs, key)
                if got is _MISSING or not _attr_equal(got, want):
                    return False
            return True

        return self.where(pred, f"attrs={attrs}")

    def __call__(self, *args: Any) -> CallPattern:
        return CallPattern(self, list(args))


_MISSING = object()


def _attr(attrs: Any, key: str) -> Any:
    if isinstance(attrs, Mapping):
        return attrs.get(key, _MISSING)
    return getattr(attrs, key, _MISSING)


def _attr_equal(got: Any, want: Any) -> bool:
    if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(_attr_equal(a, b) for a, b in zip(got, want))
    if isinstance(got, (IntImm, FloatImm)):
        got = got.value
    return bool(got == want)


class WildcardPattern(Pattern):
    """Matches any expression (without looking behind variables)."""

    def _match(self, expr: Any, lookup: Optional[Lookup], m: Match) -> bool:
        return m._bind(self, expr, _resolve(expr, lookup))

    def __repr__(self) -> str:
        return "*"


class ExprPattern(Pattern):
    """Matches one expression: the same variable, or a structurally equal non-variable."""

    def __init__(self, expr: Any):
        self.expr = expr

    def _match(self, expr: Any, lookup: Optional[Lookup], m: Match) -> bool:
        if expr is self.expr or (not isinstance(self.expr, Var) and _same_expr(expr, self.expr)):
            return m._bind(self, expr, _resolve(expr, lookup))
        return super()._match(expr, lookup, m)

    def _match_value(self, value: Any, lookup: Optional[Lookup], m: Match) -> bool:
        return value is self.expr or (not isinstance(self.expr, Var)
                                       and _same_expr(value, self.expr))

    def __repr__(self) -> str:
        return f"is_expr({type(self.expr).__name__})"


class OpPattern(Pattern):
    """Matches the operator(s) named; call it with argument patterns for a call pattern."""

    def __init__(self, names: Union[str, Iterable[str]]):
        names = (names,) if isinstance(names, str) else tuple(names)
        if not names:
            raise ValueError("is_op needs at least one operator name")
        for name in names:
            Op.get(name)  # unknown names fail here, with close matches
        self.names = frozenset(names)

    def _match_value(self, value: Any, lookup: Optional[Lookup], m: Match) -> bool:
        return isinstance(value, Op) and value.name in self.names

    def __repr__(self) -> str:
        return f"is_op({', '.join(sorted(self.names))})"


class CallPattern(Pattern):
    """``op(args...)``; ``args=None`` accepts any arguments, and a trailing ``...`` (Ellipsis)
    any further arguments after the ones given (``is_op("relax.reshape")(x, ...)``)."""

    def __init__(self, op: Pattern, args: Optional[Sequence[Any]] = None):
        self.op = _as_pattern(op)
        self.open_ended = False
        if args is not None and len(args) and args[-1] is Ellipsis:
            self.open_ended = True
            args = args[:-1]
        self.args = None if args is None else [_as_pattern(a) for a in args]

    def _match_value(self, value: Any, lookup: Optional[Lookup], m: Match) -> bool:
        if not isinstance(value, Call):
            return False
        if isinstance(self.op, OpPattern):
            if not self.op._match_value(value.op, lookup, m):
                return False
            m._bind(self.op, value.op, value.op)
        elif not self.op._match(value.op, lookup, m):
            return False
        if self.args is None:
            return True
        if len(value.args) < len(self.args) or (
            len(value.args) != len(self.args) and not self.open_ended
        ):
            return False
        return all(p._match(a, lookup, m) for p, a in zip(self.args, value.args))

    def __repr__(self) -> str:
        args = "..." if self.args is None else ", ".join(
            [*map(repr, self.args), *(["..."] if self.open_ended else [])])
        return f"{self.op!r}({args})"


def constant_value(expr: Any) -> Optional[np.ndarray]:
    """The numpy value of a Constant or of a PrimValue holding an immediate, else None."""
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, PrimValue) and isinstance(expr.value, (IntImm, FloatImm)):
        from tvm.ffi.dtype import to_numpy_dtype

        return np.asarray(expr.value.value, dtype=to_numpy_dtype(expr.value.dtype))
    return None


class ConstantPattern(Pattern):
    """A constant tensor (or immediate scalar); with ``value``, every element equals it."""

    def __init__(self, value: Optional[float] = None):
        self.value = value

    def _match_value(self, value: Any, lookup: Optional[Lookup], m: Match) -> bool:
        data = constant_value(value)
        if data is None:
            return False
        if self.value is None:
            return True
        return data.size > 0 and bool(np.all(data == self.value))

    def __repr__(self) -> str:
        return "is_const()" if self.value is None else f"is_const({self.value})"


class TuplePattern(Pattern):
    """A tuple whose fields match ``fields`` (``None``: any fields)."""

    def __init__(self, fields: Optional[Sequence[Pattern]] = None):
        self.fields = None if fields is None else [_as_pattern(f) for f in fields]

    def _match_value(self, value: Any, lookup: Optional[Lookup], m: Match) -> bool:
        if not isinstance(value, Tuple):
            return False
        if self.fields is None:
            return True
        return len(value.fields) == len(self.fields) and all(
            p._match(f, lookup, m) for p, f in zip(self.fields, value.fields)
        )

    def __repr__(self) -> str:
        return f"is_tuple({self.fields!r})"


class TupleGetItemPattern(Pattern):
    """``tuple[index]`` (``index=None``: any index)."""

    def __init__(self, tuple_value: Pattern, index: Optional[int] = None):
        self.tuple_value = _as_pattern(tuple_value)
        self.index = index

    def _match_value(self, value: Any, lookup: Optional[Lookup], m: Match) -> bool:
        if not isinstance(value, TupleGetItem):
            return False
        if self.index is not None and value.index != self.index:
            return False
        return self.tuple_value._match(value.tuple_value, lookup, m)

    def __repr__(self) -> str:
        return f"{self.tuple_value!r}[{'*' if self.index is None else self.index}]"


class OrPattern(Pattern):
    """Either ``left`` or ``right`` (tried in that order)."""

    def __init__(self, left: Pattern, right: Pattern):
        self.left = left
        self.right = right

    def _match(self, expr: Any, lookup: Optional[Lookup], m: Match) -> bool:
        state = m._snapshot()
        if self.left._match(expr, lookup, m):
            return m._bind(self, expr, _resolve(expr, lookup))
        m._restore(state)
        if self.right._match(expr, lookup, m):
            return m._bind(self, expr, _resolve(expr, lookup))
        m._restore(state)
        return False

    def __repr__(self) -> str:
        return f"({self.left!r} | {self.right!r})"


class ConstraintPattern(Pattern):
    """``base`` and a predicate over the matched value."""

    def __init__(self, base: Pattern, predicate: Callable[[Any], bool], what: str):
        self.base = base
        self.predicate = predicate
        self.what = what

    def _match(self, expr: Any, lookup: Optional[Lookup], m: Match) -> bool:
        if not self.base._match(expr, lookup, m):
            return False
        value = m.value(self.base)
        return bool(self.predicate(value)) and m._bind(self, expr, value)

    def __call__(self, *args: Any) -> CallPattern:
        return CallPattern(self, list(args))

    def __repr__(self) -> str:
        return f"{self.base!r}.where({self.what})"


def _as_pattern(obj: Any) -> Pattern:
    if isinstance(obj, Pattern):
        return obj
    if isinstance(obj, (Expr, Op)):
        return ExprPattern(obj)
    raise TypeError(f"expected a Pattern (or a Relax expression), got {type(obj).__name__} {obj!r}")


# -- constructors ----------------------------------------------------------------------------
def wildcard() -> WildcardPattern:
    """A pattern matching any expression."""
    return WildcardPattern()


def is_op(*names: str) -> OpPattern:
    """The operator(s) ``names`` (``is_op("relax.add", "relax.multiply")``)."""
    return OpPattern(names)


def is_const(value: Optional[float] = None) -> ConstantPattern:
    """A constant; with ``value``, one whose elements all equal ``value``."""
    return ConstantPattern(value)


def is_tuple(fields: Optional[Sequence[Pattern]] = None) -> TuplePattern:
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: Pattern, index: Optional[int] = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, index)


def is_expr(expr: Any) -> ExprPattern:
    return ExprPattern(expr)
