"""Visitors and mutators over TIR, dispatching on node type.

A subclass handles a node kind by defining ``visit_<snake_case_type>_`` (``visit_add_``,
``visit_buffer_load_``, ``visit_for_``); every other node is walked generically through its
declared fields.  Mutators return the *same* object when nothing underneath changed, so
callers can test ``new is old``.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from tvm.ffi import Object

from .buffer import Buffer
from .expr import PrimExpr
from .stmt import Stmt

__all__ = ["StmtExprVisitor", "StmtExprMutator", "ExprVisitor", "ExprMutator", "StmtVisitor",
           "StmtMutator", "snake_name"]

_SNAKE_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_SNAKE_2 = re.compile(r"([a-z0-9])([A-Z])")


def snake_name(cls: type) -> str:
    """``BufferLoad`` -> ``buffer_load``, ``EQ`` -> ``eq``, ``IfThenElse`` -> ``if_then_else``."""
    name = _SNAKE_1.sub(r"\1_\2", cls.__name__)
    return _SNAKE_2.sub(r"\1_\2", name).lower()


def _dispatch_table(visitor_cls: type) -> dict[type, Callable | None]:
    table = visitor_cls.__dict__.get("_tir_dispatch")
    if table is None:
        table = {}
        visitor_cls._tir_dispatch = table  # type: ignore[attr-defined]
    return table


def _find_handler(visitor: Any, node_type: type) -> Callable | None:
    table = _dispatch_table(type(visitor))
    if node_type in table:
        return table[node_type]
    handler = None
    for cls in node_type.__mro__:
        if cls is Object or cls is object:
            break
        fn = getattr(type(visitor), f"visit_{snake_name(cls)}_", None)
        if fn is not None:
            handler = fn
            break
    table[node_type] = handler
    return handler


def _handler(visitor: Any, node_type: type) -> Callable | None:
    """:func:`_find_handler` through a reference to the class's table kept on the visitor
    (one attribute and one dict lookup per node: visitors walk millions of nodes)."""
    try:
        return visitor._tir_table[node_type]
    except KeyError:
        return _find_handler(visitor, node_type)
    except AttributeError:
        handler = _find_handler(visitor, node_type)
        try:
            visitor._tir_table = _dispatch_table(type(visitor))
        except AttributeError:  # a visitor with __slots__: no cache
            pass
        return handler


# What ``visit`` does with a value, by its type: computed once per type.
_LEAF, _EXPR, _STMT, _BUFFER, _OBJECT, _TUPLE, _LIST, _DICT = range(8)
_CATEGORY: dict[type, int] = {t: _LEAF for t in (str, int, float, bool, type(None))}
#: the fields of an Object type that visitors walk (every field but ``ignore`` ones)
_WALKED: dict[type, tuple[str, ...]] = {}


def _category(t: type) -> int:
    c = _CATEGORY.get(t)
    if c is None:
        c = (_EXPR if issubclass(t, PrimExpr) else _STMT if issubclass(t, Stmt)
             else _BUFFER if issubclass(t, Buffer) else _OBJECT if issubclass(t, Object)
             else _TUPLE if issubclass(t, tuple) else _LIST if issubclass(t, list)
             else _DICT if issubclass(t, dict) else _LEAF)
        _CATEGORY[t] = c
    return c


def _walked_fields(t: type) -> tuple[str, ...]:
    names = _WALKED.get(t)
    if names is None:
        names = tuple(info.name for info in t._field_infos if info.kind != "ignore")
        _WALKED[t] = names
    return names


class StmtExprVisitor:
    """Walks statements and expressions; override ``visit_<kind>_`` to act on a kind."""

    def visit_expr(self, expr: PrimExpr) -> None:
        handler = _handler(self, type(expr))
        if handler is not None:
            handler(self, expr)
        else:
            self.generic_visit(expr)

    def visit_stmt(self, stmt: Stmt) -> None:
        handler = _handler(self, type(stmt))
        if handler is not None:
            handler(self, stmt)
        else:
            self.generic_visit(stmt)

    def visit_buffer(self, buffer: Buffer) -> None:
        """Called on each buffer use; buffers' own fields are not walked by default."""

    def visit(self, node: Any) -> None:
        t = type(node)
        c = _CATEGORY.get(t)
        if c is None:
            c = _category(t)
        if c == _LEAF:
            return
        if c == _EXPR:
            self.visit_expr(node)
        elif c == _STMT:
            self.visit_stmt(node)
        elif c == _BUFFER:
            self.visit_buffer(node)
        elif c == _OBJECT:
            handler = _handler(self, t)
            if handler is not None:
                handler(self, node)
            else:
                self.generic_visit(node)
        elif c == _DICT:
            for value in node.values():
                self.visit(value)
        else:
            for item in node:
                self.visit(item)

    def generic_visit(self, node: Object) -> None:
        t = type(node)
        names = _WALKED.get(t)
        if names is None:
            names = _walked_fields(t)
        visit = self.visit
        for name in names:
            value = getattr(node, name)
            if _CATEGORY.get(type(value)) != _LEAF:
                visit(value)


class StmtExprMutator:
    """Rebuilds statements and expressions; unchanged subtrees are returned as is."""

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        handler = _handler(self, type(expr))
        if handler is not None:
            return handler(self, expr)
        return self.generic_mutate(expr)

    def visit_stmt(self, stmt: Stmt) -> Stmt:
        handler = _handler(self, type(stmt))
        if handler is not None:
            return handler(self, stmt)
        return self.generic_mutate(stmt)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        """Called on each buffer reference; return a replacement buffer to swap it."""
        return buffer

    def visit(self, node: Any) -> Any:
        t = type(node)
        c = _CATEGORY.get(t)
        if c is None:
            c = _category(t)
        if c == _LEAF:
            return node
        if c == _EXPR:
            return self.visit_expr(node)
        if c == _STMT:
            return self.visit_stmt(node)
        if c == _BUFFER:
            return self.visit_buffer(node)
        if c == _OBJECT:
            handler = _handler(self, t)
            if handler is not None:
                return handler(self, node)
            return self.generic_mutate(node)
        if c == _TUPLE:
            visit = self.visit
            new = [visit(item) for item in node]
            for a, b in zip(new, node):
                if a is not b:
                    return tuple(new)
            return node
        if c == _LIST:
            return self.visit(tuple(node))
        changed = False
        out = {}
        for k, v in node.items():
            nk = self.visit(k) if isinstance(k, Object) else k
            nv = self.visit(v)
            changed = changed or nk is not k or nv is not v
            out[nk] = nv
        return out if changed else node

    def generic_mutate(self, node: Object) -> Any:
        t = type(node)
        names = _WALKED.get(t)
        if names is None:
            names = _walked_fields(t)
        visit = self.visit
        changes = None
        for name in names:
            old = getattr(node, name)
            if _CATEGORY.get(type(old)) == _LEAF:
                continue
            new = visit(old)
            if new is not old:
                if changes is None:
                    changes = {}
                changes[name] = new
        return node.with_fields(**changes) if changes else node


# Names kept for readers coming from TVM: one visitor and one mutator serve both worlds.
ExprVisitor = StmtVisitor = StmtExprVisitor
ExprMutator = StmtMutator = StmtExprMutator
