"""A toy IR for the tvm.ffi tests, plus hypothesis strategies that build random programs.

Nodes (type keys ``ffitest.*`` so they never clash with a real IR):

    Span(file, line)                          a source location
    Expr                                      abstract base; ``span`` is an ignored field
    Var(name: ignored, dtype)                 a variable (``_is_var``)
    Const(value, dtype)
    Add(a, b)
    Call(op, args, attrs: dict)               ``attrs`` is a dict field
    Let(var: def_field, value, body)          binds ``var`` in ``body``
    Seq(seq)
    Func(params: def_field, body, name: ignored)
    Tensor(data: numpy array)

Random programs are described by *recipes*: nested tuples in which a bound variable is named
by its position in the scope (``("var", i)``) and a free variable by its index in a pool
(``("free", i)``).  Two recipes are equal exactly when the programs built from them are
alpha-equivalent, which makes recipes an independent oracle for structural equality.
Recipe forms::

    ("const", int)   ("var", i)   ("free", i)   ("add", a, b)
    ("call", op, (arg, ...), ((key, int), ...))   ("let", value, body)   ("seq", (item, ...))
    ("func", n_params, body)                      # the root
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
from hypothesis import strategies as st
from tvm.ffi import Object, def_field, ignore_field, register_object, tree_field


@register_object("ffitest.Span")
class Span(Object):
    file: str
    line: int


@register_object()
class Expr(Object):
    span: Span | None = ignore_field(default=None, kw_only=True)


@register_object("ffitest.Var")
class Var(Expr):
    _is_var = True

    name: str = ignore_field()
    dtype: str = "int32"


@register_object("ffitest.Const")
class Const(Expr):
    value: Any
    dtype: str = "int32"


@register_object("ffitest.Add")
class Add(Expr):
    a: Expr
    b: Expr


@register_object("ffitest.Call")
class Call(Expr):
    op: str
    args: tuple[Expr, ...]
    attrs: dict[Any, Any] = tree_field(default_factory=dict)


@register_object("ffitest.Let")
class Let(Expr):
    var: Var = def_field()
    value: Expr = tree_field()
    body: Expr = tree_field()


@register_object("ffitest.Seq")
class Seq(Expr):
    seq: tuple[Expr, ...]


@register_object("ffitest.Func")
class Func(Object):
    params: tuple[Var, ...] = def_field()
    body: Expr = tree_field()
    name: str | None = ignore_field(default=None)


@register_object("ffitest.Tensor")
class Tensor(Expr):
    data: np.ndarray


# ---------------------------------------------------------------------------------------
# Recipes: random programs with an independent notion of equality

OPS = ("max", "min", "mul", "sub")
ATTR_KEYS = ("axis", "keepdims", "mode")
N_FREE = 2


@cache  # rebuilding the nested strategies costs more than drawing from them
def expr_recipes(depth: int, scope: int, allow_free: bool = True) -> st.SearchStrategy:
    """Recipes of expressions over ``scope`` bound variables, nested at most ``depth`` deep."""
    leaves: list[st.SearchStrategy] = [st.tuples(st.just("const"), st.integers(-3, 3))]
    if scope:
        leaves.append(st.tuples(st.just("var"), st.integers(0, scope - 1)))
    if allow_free:
        leaves.append(st.tuples(st.just("free"), st.integers(0, N_FREE - 1)))
    leaf = st.one_of(leaves)
    if depth <= 0:
        return leaf
    sub = expr_recipes(depth - 1, scope, allow_free)
    attrs = st.lists(
        st.tuples(st.sampled_from(ATTR_KEYS), st.integers(0, 2)), max_size=2, unique_by=lambda kv: kv[0]
    ).map(tuple)
    return st.one_of(
        leaf,
        st.tuples(st.just("add"), sub, sub),
        st.tuples(st.just("call"), st.sampled_from(OPS), st.lists(sub, max_size=3).map(tuple), attrs),
        st.tuples(st.just("let"), sub, expr_recipes(depth - 1, scope + 1, allow_free)),
        st.tuples(st.just("seq"), st.lists(sub, min_size=1, max_size=3).map(tuple)),
    )


def func_recipes(depth: int = 3, allow_free: bool = True) -> st.SearchStrategy:
    """Recipes of whole functions with 0-3 parameters."""
    return st.integers(0, 3).flatmap(
        lambda n: st.tuples(st.just("func"), st.just(n), expr_recipes(depth, n, allow_free))
    )


def free_pool(prefix: str = "g") -> list[Var]:
    """A fresh pool of free variables for :func:`build`."""
    return [Var(f"{prefix}{i}") for i in range(N_FREE)]


def build(recipe: tuple, pool: list[Var], prefix: str = "v") -> Any:
    """The program of ``recipe``: fresh bound variables named ``prefix<k>``, free ones from ``pool``."""
    counter = iter(range(10**9))

    def fresh() -> Var:
        return Var(f"{prefix}{next(counter)}")

    def go(r: tuple, scope: list[Var]) -> Any:
        kind = r[0]
        if kind == "func":
            params = [fresh() for _ in range(r[1])]
            return Func(params, go(r[2], params), name=f"{prefix}_func")
        if kind == "const":
            return Const(r[1])
        if kind == "var":
            return scope[r[1]]
        if kind == "free":
            return pool[r[1]]
        if kind == "add":
            return Add(go(r[1], scope), go(r[2], scope), span=Span(prefix, len(scope)))
        if kind == "call":
            return Call(r[1], [go(a, scope) for a in r[2]], dict(r[3]))
        if kind == "let":
            var = fresh()
            return Let(var, go(r[1], scope), go(r[2], [*scope, var]))
        if kind == "seq":
            return Seq([go(x, scope) for x in r[1]])
        raise AssertionError(f"bad recipe {r!r}")

    return go(recipe, [])


def uses_free(recipe: Any) -> bool:
    """Whether a recipe mentions a free variable."""
    if isinstance(recipe, tuple):
        if recipe and recipe[0] == "free":
            return True
        return any(uses_free(x) for x in recipe)
    return False


def first_diff(a: tuple, b: tuple) -> str:
    """The access path, below a common position, of the first difference of two recipes.

    Both are read in the same scope; this mirrors the documented traversal order (fields in
    declaration order, sequence items in order, string-keyed dict items by sorted key).
    """
    if a[0] != b[0]:
        return ""
    kind = a[0]
    if kind in ("const",):
        return "" if a == b else ".value"
    if kind in ("var", "free"):
        return "" if a == b else ""
    if kind == "add":
        if a[1] != b[1]:
            return ".a" + first_diff(a[1], b[1])
        return ".b" + first_diff(a[2], b[2])
    if kind == "call":
        if a[1] != b[1]:
            return ".op"
        if a[2] != b[2]:
            return ".args" + _first_diff_seq(a[2], b[2])
        da, db = dict(a[3]), dict(b[3])
        if set(da) != set(db):
            return ".attrs"
        for key in sorted(da):
            if da[key] != db[key]:
                return f".attrs[{key!r}]"
        raise AssertionError("recipes are equal")
    if kind == "let":
        if a[1] != b[1]:
            return ".value" + first_diff(a[1], b[1])
        return ".body" + first_diff(a[2], b[2])
    if kind == "seq":
        return ".seq" + _first_diff_seq(a[1], b[1])
    raise AssertionError(f"bad recipe {a!r}")


def _first_diff_seq(a: tuple, b: tuple) -> str:
    if len(a) != len(b):
        return ""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"[{i}]" + first_diff(x, y)
    raise AssertionError("sequences are equal")


def mutations(recipe: tuple) -> Iterator[tuple[str, tuple]]:
    """Every one-field change of a function recipe, with the mismatch path it must cause.

    Changes: a constant's value, a call's op, an attribute value, a variable reference
    (to another variable in scope), and swapping the operands of an ``add`` whose operands
    differ (the path then points into ``.a`` at the first difference of the operands).
    """
    assert recipe[0] == "func"
    n_params = recipe[1]
    for path, body in _expr_mutations(recipe[2], ".body", n_params):
        yield path, ("func", n_params, body)


def _expr_mutations(r: tuple, path: str, scope: int) -> Iterator[tuple[str, tuple]]:
    kind = r[0]
    if kind == "const":
        yield path + ".value", ("const", r[1] + 1)
    elif kind == "var":
        if scope > 1:
            yield path, ("var", (r[1] + 1) % scope)
    elif kind == "free":
        yield path, ("free", (r[1] + 1) % N_FREE)
    elif kind == "add":
        a, b = r[1], r[2]
        if a != b:
            yield path + ".a" + first_diff(a, b), ("add", b, a)
        for p, m in _expr_mutations(a, path + ".a", scope):
            yield p, ("add", m, b)
        for p, m in _expr_mutations(b, path + ".b", scope):
            yield p, ("add", a, m)
    elif kind == "call":
        op, args, attrs = r[1], r[2], r[3]
        yield path + ".op", ("call", OPS[(OPS.index(op) + 1) % len(OPS)], args, attrs)
        for i, arg in enumerate(args):
            for p, m in _expr_mutations(arg, f"{path}.args[{i}]", scope):
                yield p, ("call", op, args[:i] + (m,) + args[i + 1 :], attrs)
        for i, (key, value) in enumerate(attrs):
            changed = attrs[:i] + ((key, value + 1),) + attrs[i + 1 :]
            yield f"{path}.attrs[{key!r}]", ("call", op, args, changed)
    elif kind == "let":
        value, body = r[1], r[2]
        for p, m in _expr_mutations(value, path + ".value", scope):
            yield p, ("let", m, body)
        for p, m in _expr_mutations(body, path + ".body", scope + 1):
            yield p, ("let", value, m)
    elif kind == "seq":
        items = r[1]
        for i, item in enumerate(items):
            for p, m in _expr_mutations(item, f"{path}.seq[{i}]", scope):
                yield p, ("seq", items[:i] + (m,) + items[i + 1 :])
    else:
        raise AssertionError(f"bad recipe {r!r}")
