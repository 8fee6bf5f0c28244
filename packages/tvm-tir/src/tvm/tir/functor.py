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


class StmtExprVisitor:
    """Walks statements and expressions; override ``visit_<kind>_`` to act on a kind."""

    def visit_expr(self, expr: PrimExpr) -> None:
        handler = _find_handler(self, type(expr))
        if handler is not None:
            handler(self, expr)
        else:
            self.generic_visit(expr)

    def visit_stmt(self, stmt: Stmt) -> None:
        handler = _find_handler(self, type(stmt))
        if handler is not None:
            handler(self, stmt)
        else:
            self.generic_visit(stmt)

    def visit_buffer(self, buffer: Buffer) -> None:
        """Called on each buffer use; buffers' own fields are not walked by default."""

    def visit(self, node: Any) -> None:
        if isinstance(node, PrimExpr):
            self.visit_expr(node)
        elif isinstance(node, Stmt):
            self.visit_stmt(node)
        elif isinstance(node, Buffer):
            self.visit_buffer(node)
        elif isinstance(node, Object):
            handler = _find_handler(self, type(node))
            if handler is not None:
                handler(self, node)
            else:
                self.generic_visit(node)
        elif isinstance(node, (list, tuple)):
            for item in node:
                self.visit(item)
        elif isinstance(node, dict):
            for value in node.values():
                self.visit(value)

    def generic_visit(self, node: Object) -> None:
        for info in node._field_infos:
            if info.kind == "ignore":
                continue
            self.visit(getattr(node, info.name))


class StmtExprMutator:
    """Rebuilds statements and expressions; unchanged subtrees are returned as is."""

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        handler = _find_handler(self, type(expr))
        if handler is not None:
            return handler(self, expr)
        return self.generic_mutate(expr)

    def visit_stmt(self, stmt: Stmt) -> Stmt:
        handler = _find_handler(self, type(stmt))
        if handler is not None:
            return handler(self, stmt)
        return self.generic_mutate(stmt)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        """Called on each buffer reference; return a replacement buffer to swap it."""
        return buffer

    def visit(self, node: Any) -> Any:
        if isinstance(node, PrimExpr):
            return self.visit_expr(node)
        if isinstance(node, Stmt):
            return self.visit_stmt(node)
        if isinstance(node, Buffer):
            return self.visit_buffer(node)
        if isinstance(node, Object):
            handler = _find_handler(self, type(node))
            if handler is not None:
                return handler(self, node)
            return self.generic_mutate(node)
        if isinstance(node, tuple):
            new = tuple(self.visit(item) for item in node)
            return node if all(a is b for a, b in zip(new, node)) else new
        if isinstance(node, list):
            return self.visit(tuple(node))
        if isinstance(node, dict):
            changed = False
            out = {}
            for k, v in node.items():
                nk = self.visit(k) if isinstance(k, Object) else k
                nv = self.visit(v)
                changed = changed or nk is not k or nv is not v
                out[nk] = nv
            return out if changed else node
        return node

    def generic_mutate(self, node: Object) -> Any:
        changes = {}
        for info in node._field_infos:
            if info.kind == "ignore":
                continue
            old = getattr(node, info.name)
            new = self.visit(old)
            if new is not old:
                changes[info.name] = new
        return node.with_fields(**changes) if changes else node


# Names kept for readers coming from TVM: one visitor and one mutator serve both worlds.
ExprVisitor = StmtVisitor = StmtExprVisitor
ExprMutator = StmtMutator = StmtExprMutator
