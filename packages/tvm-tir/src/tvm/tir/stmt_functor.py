"""Small traversal utilities: substitution, post-order visiting, free variables."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from tvm.ffi import Object

from .buffer import Buffer
from .expr import PrimExpr, Var, convert
from .functor import StmtExprMutator, StmtExprVisitor

__all__ = ["substitute", "post_order_visit", "pre_order_visit", "free_vars", "ir_transform",
           "uses_var"]


class _Substitute(StmtExprMutator):
    def __init__(self, vmap: Mapping[Var, Any]):
        self.vmap = {k: convert(v) if not isinstance(v, Object) else v for k, v in vmap.items()}

    def visit_var_(self, v: Var) -> Any:
        return self.vmap.get(v, v)

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        # Substitute inside buffer shapes too (symbolic shapes specialised away).
        new_shape = tuple(self.visit_expr(s) for s in buffer.shape)
        new_strides = tuple(self.visit_expr(s) for s in buffer.strides)
        if all(a is b for a, b in zip(new_shape, buffer.shape)) and all(
            a is b for a, b in zip(new_strides, buffer.strides)
        ):
            return buffer
        key = id(buffer)
        cache = self.__dict__.setdefault("_buffers", {})
        if key not in cache:
            cache[key] = buffer.with_fields(shape=new_shape, strides=new_strides)
        return cache[key]


def substitute(node: Any, vmap: Mapping[Var, Any]) -> Any:
    """Replace variables by expressions in an expression or statement."""
    if not vmap:
        return node
    return _Substitute(vmap).visit(node)


class _Walker(StmtExprVisitor):
    def __init__(self, fvisit: Callable[[Any], Any], pre: bool):
        self.fvisit = fvisit
        self.pre = pre

    def visit_expr(self, expr: PrimExpr) -> None:
        if self.pre:
            if self.fvisit(expr) is False:
                return
            self.generic_visit(expr)
        else:
            self.generic_visit(expr)
            self.fvisit(expr)

    def visit_stmt(self, stmt: Any) -> None:
        if self.pre:
            if self.fvisit(stmt) is False:
                return
            self.generic_visit(stmt)
        else:
            self.generic_visit(stmt)
            self.fvisit(stmt)


def post_order_visit(node: Any, fvisit: Callable[[Any], None]) -> None:
    """Call ``fvisit`` on every expression and statement, children first."""
    _Walker(fvisit, pre=False).visit(node)


def pre_order_visit(node: Any, fvisit: Callable[[Any], Any]) -> None:
    """Call ``fvisit`` on every expression and statement, parents first; returning
    ``False`` skips the children."""
    _Walker(fvisit, pre=True).visit(node)


def free_vars(node: Any) -> list[Var]:
    """Variables used in ``node`` that are not bound inside it, in first-use order."""
    bound: set[int] = set()
    seen: set[int] = set()
    out: list[Var] = []

    def visit(obj: Any, defining: bool) -> None:
        if isinstance(obj, Var):
            if defining:
                bound.add(id(obj))
            elif id(obj) not in bound and id(obj) not in seen:
                seen.add(id(obj))
                out.append(obj)
            return
        if isinstance(obj, Buffer):
            visit(obj.data, defining)
            for s in obj.shape:
                visit(s, False)
            return
        if isinstance(obj, Object):
            for info in obj._field_infos:
                if info.kind != "ignore":
                    visit(getattr(obj, info.name), defining or info.kind == "def")
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                visit(item, defining)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                visit(k, defining)
                visit(v, defining)

    visit(node, False)
    return out


def uses_var(node: Any, pred: Callable[[Var], bool]) -> bool:
    """Whether any variable in ``node`` satisfies ``pred``."""
    found = False

    def f(x: Any) -> Any:
        nonlocal found
        if found:
            return False
        if isinstance(x, Var) and pred(x):
            found = True
            return False
        return None

    pre_order_visit(node, f)
    return found


class _Transform(StmtExprMutator):
    def __init__(self, preorder, postorder, only):
        self.preorder = preorder
        self.postorder = postorder
        self.only = only

    def _apply(self, node: Any) -> Any:
        if self.preorder is not None and (self.only is None or isinstance(node, self.only)):
            res = self.preorder(node)
            if res is not None:
                return res
        new = self.generic_mutate(node)
        if self.postorder is not None and (self.only is None or isinstance(new, self.only)):
            res = self.postorder(new)
            if res is not None:
                return res
        return new

    def visit_expr(self, expr: PrimExpr) -> Any:
        return self._apply(expr)

    def visit_stmt(self, stmt: Any) -> Any:
        return self._apply(stmt)


def ir_transform(node: Any, preorder=None, postorder=None, only_enable: tuple = None) -> Any:
    """Rewrite ``node``: ``preorder(n)`` may return a replacement (children then not visited);
    ``postorder(n)`` sees the node with rewritten children and may return a replacement."""
    return _Transform(preorder, postorder, only_enable).visit(node)
