"""A small pattern language for rewrite rules over TIR expressions.

Patterns are built with Python operators from pattern variables and constants::

    x, y = PVar("x"), PVar("y")
    c1, c2 = PConst("c1"), PConst("c2")
    Rule((x + c1) + c2, x + (c1 + c2))               # constants fold while building
    Rule(x * c1 // c2, x * (c1 // c2), lambda m, s: m.v("c1") % m.v("c2") == 0)

A :class:`PVar` matches any expression (a second occurrence must be structurally equal to
the first, and free of side effects); :class:`PConst` matches an integer or float immediate; a plain Python number in
a pattern is a literal that matches a constant of that value.  The right-hand side is a
pattern (built with the folding constructors of :mod:`tvm.arith.const_fold`) or a function
``(match, simplifier) -> PrimExpr | None``.  :class:`RuleTable` keeps the rules per node class
and is the one driver that applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Div, FloatImm, FloorDiv, FloorMod, IntImm, Max, Min, Mod,
    Mul, Not, Or, PrimExpr, Select, Sub,
)
from tvm.tir.expr_util import same_expr

from . import const_fold as F

__all__ = ["Pat", "PVar", "PConst", "PLit", "PNode", "Match", "Rule", "RuleTable", "pmin", "pmax",
           "pselect", "peq", "pne", "pnot", "pand", "por"]

_FIELDS: dict[type, tuple[str, ...]] = {Not: ("a",), Select: ("condition", "true_value",
                                                            "false_value")}
_BUILD: dict[type, Callable[..., PrimExpr]] = {
    Add: F.add, Sub: F.sub, Mul: F.mul, FloorDiv: F.floordiv, FloorMod: F.floormod,
    Div: F.truncdiv, Mod: F.truncmod, Min: F.min_, Max: F.max_, And: F.logical_and,
    Or: F.logical_or, Not: F.logical_not, Select: F.select,
}
for _cmp in (EQ, NE, LT, LE, GT, GE):
    _BUILD[_cmp] = (lambda cls: lambda a, b: F.compare(cls, a, b))(_cmp)


class Match(dict):
    """The bindings of a successful match; ``m.x`` is the expression bound to ``x``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def v(self, name: str) -> Any:
        """The Python value of the constant bound to ``name``."""
        return self[name].value


class Pat:
    """Base of patterns; operators build :class:`PNode` patterns."""

    __slots__ = ()

    def match(self, expr: PrimExpr, m: Match) -> bool:
        raise NotImplementedError

    def build(self, m: Match, dtype: str) -> PrimExpr:
        raise NotImplementedError

    def __add__(self, o: Any) -> PNode:
        return PNode(Add, self, o)

    def __radd__(self, o: Any) -> PNode:
        return PNode(Add, o, self)

    def __sub__(self, o: Any) -> PNode:
        return PNode(Sub, self, o)

    def __rsub__(self, o: Any) -> PNode:
        return PNode(Sub, o, self)

    def __mul__(self, o: Any) -> PNode:
        return PNode(Mul, self, o)

    def __rmul__(self, o: Any) -> PNode:
        return PNode(Mul, o, self)

    def __floordiv__(self, o: Any) -> PNode:
        return PNode(FloorDiv, self, o)

    def __mod__(self, o: Any) -> PNode:
        return PNode(FloorMod, self, o)

    def __lt__(self, o: Any) -> PNode:
        return PNode(LT, self, o)

    def __le__(self, o: Any) -> PNode:
        return PNode(LE, self, o)

    def __gt__(self, o: Any) -> PNode:
        return PNode(GT, self, o)

    def __ge__(self, o: Any) -> PNode:
        return PNode(GE, self, o)

    def __and__(self, o: Any) -> PNode:
        return PNode(And, self, o)

    def __or__(self, o: Any) -> PNode:
        return PNode(Or, self, o)

    def __invert__(self) -> PNode:
        return PNode(Not, self)

    __hash__ = object.__hash__


class PVar(Pat):
    """Matches any expression; repeated uses must match equal expressions."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def match(self, expr: PrimExpr, m: Match) -> bool:
        bound = m.get(self.name)
        if bound is None:
            m[self.name] = expr
            return True
        # Rules drop or merge the repeated operand, so it must be free of side effects.
        return same_expr(bound, expr, pure=True)

    def build(self, m: Match, dtype: str) -> PrimExpr:
        return m[self.name]

    def __repr__(self) -> str:
        return self.name


class PConst(Pat):
    """Matches an IntImm or FloatImm (``kind="int"``/``"float"`` to restrict)."""

    __slots__ = ("name", "kind")

    def __init__(self, name: str, kind: str = "any"):
        self.name = name
        self.kind = kind

    def match(self, expr: PrimExpr, m: Match) -> bool:
        t = type(expr)
        if t is IntImm:
            if self.kind == "float":
                return False
        elif t is FloatImm:
            if self.kind == "int":
                return False
        else:
            return False
        bound = m.get(self.name)
        if bound is None:
            m[self.name] = expr
            return True
        return bound.value == expr.value

    def build(self, m: Match, dtype: str) -> PrimExpr:
        return m[self.name]

    def __repr__(self) -> str:
        return self.name


class PLit(Pat):
    """A literal constant: matches an immediate of that value, builds one of the context dtype."""

    __slots__ = ("value",)

    def __init__(self, value: int | float | bool):
        self.value = value

    def match(self, expr: PrimExpr, m: Match) -> bool:
        return type(expr) in (IntImm, FloatImm) and expr.value == self.value

    def build(self, m: Match, dtype: str) -> PrimExpr:
        return F.make_const(self.value, dtype)

    def __repr__(self) -> str:
        return repr(self.value)


def _p(value: Any) -> Pat:
    if isinstance(value, Pat):
        return value
    if isinstance(value, (bool, int, float)):
        return PLit(value)
    raise TypeError(f"cannot use {value!r} in a rewrite pattern")


class PNode(Pat):
    """Matches a node of class ``cls`` whose operands match ``args``."""

    __slots__ = ("cls", "args", "fields")

    def __init__(self, cls: type, *args: Any):
        self.cls = cls
        self.args = tuple(_p(a) for a in args)
        self.fields = _FIELDS.get(cls, ("a", "b"))

    def match(self, expr: PrimExpr, m: Match) -> bool:
        if type(expr) is not self.cls:
            return False
        for name, pat in zip(self.fields, self.args):
            if not pat.match(getattr(expr, name), m):
                return False
        return True

    def build(self, m: Match, dtype: str) -> PrimExpr:
        built: list[PrimExpr | None] = [
            None if isinstance(a, PLit) else a.build(m, dtype) for a in self.args
        ]
        # A literal takes the dtype of its sibling operand (bool inside logic and conditions).
        def lit_dtype(i: int) -> str:
            if self.cls in (And, Or, Not) or (self.cls is Select and i == 0):
                return "bool"
            others = [b for j, b in enumerate(built) if j != i and b is not None
                      and not (self.cls is Select and j == 0)]
            return others[0].dtype if others else dtype

        args = [b if b is not None else a.build(m, lit_dtype(i))
                for i, (a, b) in enumerate(zip(self.args, built))]
        return _BUILD[self.cls](*args)

    def __repr__(self) -> str:
        return f"{self.cls.__name__}({', '.join(map(repr, self.args))})"


def pmin(a: Any, b: Any) -> PNode:
    return PNode(Min, a, b)


def pmax(a: Any, b: Any) -> PNode:
    return PNode(Max, a, b)


def pselect(c: Any, t: Any, f: Any) -> PNode:
    return PNode(Select, c, t, f)


def peq(a: Any, b: Any) -> PNode:
    return PNode(EQ, a, b)


def pne(a: Any, b: Any) -> PNode:
    return PNode(NE, a, b)


def pnot(a: Any) -> PNode:
    return PNode(Not, a)


def pand(a: Any, b: Any) -> PNode:
    return PNode(And, a, b)


def por(a: Any, b: Any) -> PNode:
    return PNode(Or, a, b)


Cond = Callable[[Match, Any], bool]
Rhs = Callable[[Match, Any], "PrimExpr | None"]


class Rule:
    """``lhs -> rhs`` when ``cond(match, simplifier)`` holds."""

    __slots__ = ("lhs", "rhs", "cond", "name")

    def __init__(self, lhs: Pat, rhs: Pat | Rhs | int | float | bool, cond: Cond | None = None,
                 name: str = ""):
        if not isinstance(lhs, PNode):
            raise TypeError(f"a rule's left side must be a node pattern, got {lhs!r}")
        self.lhs = lhs
        self.rhs = rhs if callable(rhs) and not isinstance(rhs, Pat) else _p(rhs)
        self.cond = cond
        self.name = name or repr(lhs)

    def apply(self, expr: PrimExpr, ctx: Any) -> PrimExpr | None:
        m = Match()
        if not self.lhs.match(expr, m):
            return None
        if self.cond is not None and not self.cond(m, ctx):
            return None
        if isinstance(self.rhs, Pat):
            return self.rhs.build(m, expr.dtype)
        return self.rhs(m, ctx)

    def __repr__(self) -> str:
        return f"Rule({self.name})"


class RuleTable:
    """Rules grouped by the node class of their left side, tried in order."""

    def __init__(self) -> None:
        self._rules: dict[type, list[Rule]] = {}

    def add(self, lhs: Pat, rhs: Any, cond: Cond | None = None, name: str = "") -> Rule:
        rule = Rule(lhs, rhs, cond, name)
        self._rules.setdefault(rule.lhs.cls, []).append(rule)
        return rule

    def extend(self, rules: Iterable[Rule]) -> None:
        for rule in rules:
            self._rules.setdefault(rule.lhs.cls, []).append(rule)

    def rules_for(self, cls: type) -> list[Rule]:
        return self._rules.get(cls, [])

    def apply(self, expr: PrimExpr, ctx: Any) -> PrimExpr | None:
        """The result of the first rule that fires on ``expr`` (and differs), or ``None``."""
        for rule in self._rules.get(type(expr), ()):
            out = rule.apply(expr, ctx)
            if out is not None and out is not expr:
                return out
        return None
