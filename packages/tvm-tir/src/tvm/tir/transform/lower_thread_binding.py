"""LowerThreadBinding: loops bound to GPU thread axes become kernel launch dimensions.

A *kernel* is the subtree of an outermost ``THREAD_BINDING`` loop (a loop bound to
``blockIdx.*``/``threadIdx.*`` whose enclosing loops are not bound).  Inside it:

* every loop bound to a launch axis is replaced by that axis's thread variable (one
  variable per axis and kernel, named after the tag): ``for tx in thread_binding(64,
  "threadIdx.x")`` becomes its body with ``tx -> threadIdx.x + min``.  Sibling loops bound
  to the same axis share it; the axis's launch extent is the largest of their extents, and
  a loop with a smaller extent is guarded with ``if threadIdx.x < extent``;
* a loop nested in a loop bound to the same axis (a cooperative copy compute_at'ed under
  the thread loops) uses the same thread variable: the enclosing threads share its work;
  its extent must not exceed the enclosing loop's;
* a loop bound to ``vthread`` (virtual threads) becomes a serial loop: each hardware thread
  runs its virtual threads one after the other;
* the kernel body is wrapped in ``AttrStmt(IterVar(tag), "thread_extent", extent)``, one per
  axis used, ordered blockIdx.x/y/z then threadIdx.x/y/z::

      T.launch_thread("blockIdx.x", 8) { T.launch_thread("threadIdx.x", 128) { ... } }

Errors name the loop: a nested loop larger than the enclosing loop of its axis, an unknown
thread tag, a launch extent that depends on a variable defined inside the kernel.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.transform import FunctionPass

from ..expr import Cast, IntImm, IterVar, IterVarType, LT, Max, PrimExpr, Range, Var
from ..function import PrimFunc
from ..functor import StmtExprMutator, StmtExprVisitor
from ..stmt import AttrStmt, For, ForKind, IfThenElse, Stmt
from ..stmt_functor import substitute
from ._common import prim_func_pass
from ..expr_util import const_int, same_expr
from ._gpu import THREAD_TAG_ORDER, is_launch_tag

__all__ = ["LowerThreadBinding", "lower_thread_binding", "loop_thread_tag"]


def loop_thread_tag(loop: For) -> str:
    """The thread tag a THREAD_BINDING loop is bound to ("" when it names none)."""
    if loop.thread_binding is not None:
        return loop.thread_binding.thread_tag
    return str((loop.annotations or {}).get("thread_tag", ""))


def _uncast(e: PrimExpr) -> PrimExpr:
    """``e`` without integer casts (extents are compared whatever their int type)."""
    while isinstance(e, Cast) and e.dtype.startswith("int") and e.value.dtype.startswith("int"):
        e = e.value
    return e


def _same_extent(a: PrimExpr, b: PrimExpr) -> bool:
    """Equal extents, whatever their integer types (a constant by value)."""
    a, b = _uncast(a), _uncast(b)
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca == cb
    return same_expr(a, b)


def _fits_in(inner: PrimExpr, outer: PrimExpr) -> bool:
    ci, co = const_int(inner), const_int(outer)
    if ci is not None and co is not None:
        return ci <= co
    return _same_extent(inner, outer)


class _Survey(StmtExprVisitor):
    """Extents of every axis in a kernel, checking nesting and tags."""

    def __init__(self, fname: str) -> None:
        self.fname = fname
        self.extents: dict[str, list[PrimExpr]] = {}
        self.dtypes: dict[str, str] = {}
        self.active: dict[str, For] = {}
        self.inner_vars: set[Var] = set()
        self.checks: list[tuple[For, PrimExpr]] = []

    def visit_for_(self, op: For) -> None:
        self.inner_vars.add(op.loop_var)
        if op.kind != ForKind.THREAD_BINDING:
            self.generic_visit(op)
            return
        tag = loop_thread_tag(op)
        if tag.startswith("vthread"):
            self.generic_visit(op)
            return
        if not is_launch_tag(tag):
            raise ValueError(
                f"LowerThreadBinding: loop {op.loop_var.name!r} in {self.fname} is bound to "
                f"{tag!r}; expected one of {', '.join(THREAD_TAG_ORDER)} or vthread"
            )
        outer = self.active.get(tag)
        if outer is not None and not _fits_in(op.extent, outer.extent):
            raise ValueError(
                f"LowerThreadBinding: loop {op.loop_var.name!r} in {self.fname} is bound to "
                f"{tag} with extent {op.extent} inside loop {outer.loop_var.name!r}, which is "
                f"bound to {tag} with extent {outer.extent}; a nested loop on the same axis "
                "(e.g. a cooperative copy) reuses the enclosing threads, so its extent must "
                "not be larger"
            )
        self.extents.setdefault(tag, []).append(op.extent)
        self.dtypes.setdefault(tag, op.loop_var.dtype)
        self.checks.append((op, op.extent))
        self.active[tag] = op
        self.visit(op.min)
        self.visit(op.extent)
        self.visit_stmt(op.body)
        if outer is None:
            del self.active[tag]
        else:
            self.active[tag] = outer

    def visit_let_stmt_(self, op: Any) -> None:
        self.inner_vars.add(op.var)
        self.generic_visit(op)

    def visit_allocate_(self, op: Any) -> None:
        self.inner_vars.add(op.buffer_var)
        self.generic_visit(op)


class _Rewriter(StmtExprMutator):
    def __init__(self, ivs: dict[str, IterVar], extents: dict[str, PrimExpr]) -> None:
        self.ivs = ivs
        self.extents = extents

    def visit_for_(self, op: For) -> Any:
        if op.kind != ForKind.THREAD_BINDING:
            return super().generic_mutate(op)
        body = self.visit_stmt(op.body)
        tag = loop_thread_tag(op)
        if tag.startswith("vthread"):
            return For(op.loop_var, op.min, op.extent, ForKind.SERIAL, body,
                       annotations=dict(op.annotations), span=op.span)
        tvar = self.ivs[tag].var
        value: PrimExpr = tvar if tvar.dtype == op.loop_var.dtype else Cast(op.loop_var.dtype,
                                                                             tvar)
        if const_int(op.min) != 0:
            value = value + op.min
        body = substitute(body, {op.loop_var: value})
        if not _same_extent(op.extent, self.extents[tag]):
            ext = op.extent if op.extent.dtype == tvar.dtype else Cast(tvar.dtype, op.extent)
            body = IfThenElse(LT(tvar, ext), body, span=op.span)
        return body


def _lower_kernel(root: For, fname: str) -> Stmt:
    survey = _Survey(fname)
    survey.visit_stmt(root)
    extents: dict[str, PrimExpr] = {}
    for tag, exts in survey.extents.items():
        consts = [const_int(e) for e in exts]
        if all(c is not None for c in consts):
            best = exts[consts.index(max(consts))]
        else:
            best = exts[0]
            for e in exts[1:]:
                if not _same_extent(best, e):
                    best = Max(best, e)
        if best.dtype != "int32":
            c = const_int(best)
            best = IntImm("int32", c) if c is not None else Cast("int32", best)
        extents[tag] = best
    for loop, ext in survey.checks:
        from ..stmt_functor import free_vars

        inner = [v for v in free_vars(ext) if v in survey.inner_vars]
        if inner:
            raise ValueError(
                f"LowerThreadBinding: the extent {ext} of loop {loop.loop_var.name!r} in "
                f"{fname} (bound to {loop_thread_tag(loop)}) uses {inner[0].name!r}, which is "
                "defined inside the kernel; launch extents must be known when the kernel "
                "starts"
            )
    ivs = {tag: IterVar(Range(0, ext), Var(tag, "int32"), IterVarType.THREAD_INDEX, tag)
           for tag, ext in extents.items()}
    body = _Rewriter(ivs, extents).visit_stmt(root)
    for tag in reversed(THREAD_TAG_ORDER):
        if tag in ivs:
            body = AttrStmt(ivs[tag], "thread_extent", extents[tag], body, span=root.span)
    return body


class _Host(StmtExprMutator):
    def __init__(self, fname: str) -> None:
        self.fname = fname

    def visit_for_(self, op: For) -> Any:
        if op.kind != ForKind.THREAD_BINDING:
            return self.generic_mutate(op)
        if not loop_thread_tag(op).startswith("vthread"):
            return _lower_kernel(op, self.fname)
        # virtual threads outside any kernel: a serial host loop (one launch per iteration)
        return For(op.loop_var, op.min, op.extent, ForKind.SERIAL, self.visit_stmt(op.body),
                   annotations=dict(op.annotations), span=op.span)

    def visit_attr_stmt_(self, op: AttrStmt) -> Any:
        if op.attr_key == "thread_extent":
            return op  # already a kernel (written with T.launch_thread)
        return self.generic_mutate(op)


def lower_thread_binding(func: PrimFunc, name: Optional[str] = None) -> PrimFunc:
    """``func`` with its thread-bound loops turned into kernel launch attributes."""
    fname = name or func.attrs.get("global_symbol") or "main"
    body = _Host(fname).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def LowerThreadBinding() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`lower_thread_binding`."""
    return prim_func_pass(lower_thread_binding, "tir.LowerThreadBinding")
