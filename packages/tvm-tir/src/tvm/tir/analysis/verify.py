"""VerifyWellFormed: structural invariants every PrimFunc must satisfy between passes.

Checked, per PrimFunc:

* every variable used is defined and in scope: a parameter, a variable of a ``buffer_map``
  buffer (its data and the shape/stride/offset variables standing alone), a loop, ``let``
  or allocation variable, a block iteration variable, a matched buffer's variables or the
  thread variable of a ``thread_extent`` attribute;
* every variable is defined once (thread variables may be re-bound by several attributes);
* every buffer accessed is declared or views memory that is (its ``data`` is in scope), and
  is accessed with one index per dimension, of integer type;
* operand dtypes agree: both sides of arithmetic and comparisons, ``Select`` branches,
  ``let`` values and variables, loop bounds and loop variables, stored values and the
  buffer's dtype (with the lanes of the index), conditions are bool;
* no ``Block`` is left once the function is marked ``tir.blocks_lowered`` (set by
  LowerOpaqueBlock), or when ``allow_blocks=False`` is asked.

:func:`verify_well_formed` raises :class:`WellFormedError` listing the problems (with the
offending node), or returns False with ``assert_mode=False``.  The verifier is registered
with :func:`tvm.ir.transform.register_verifier`, so
``PassContext(config={"ir.verify_after_each_pass": True})`` runs it after every pass and
names the pass that broke the IR.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from tvm.ffi import TVMError
from tvm.ffi.dtype import DTypeCode, parse_dtype
from tvm.ir.module import IRModule
from tvm.ir.transform import FunctionPass, function_pass, register_verifier

from ..buffer import Buffer
from ..expr import (
    And, BinaryOp, Broadcast, BufferLoad, Cast, CmpOp, IterVar, Let, Not, Or, PrimExpr, Ramp,
    Select, Var, lanes_of, with_lanes,
)
from ..function import PrimFunc
from ..functor import StmtExprVisitor
from ..stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferStore, DeclBuffer, For,
    IfThenElse, LetStmt, While,
)

__all__ = ["WellFormedError", "verify_well_formed", "VerifyWellFormed", "BLOCKS_LOWERED_ATTR"]

BLOCKS_LOWERED_ATTR = "tir.blocks_lowered"
_MAX_REPORTED = 8


class WellFormedError(TVMError, ValueError):
    """A PrimFunc breaks an invariant of TIR; the message lists each problem and its node."""


def _brief(node: Any, limit: int = 120) -> str:
    try:
        text = repr(node)
    except Exception:  # a broken printer must not hide the verifier's message
        from tvm.ffi.object import generic_repr

        text = generic_repr(node) if hasattr(node, "_field_infos") else object.__repr__(node)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _code(dtype: str) -> int:
    return parse_dtype(dtype)[0]


def _is_bool(dtype: str) -> bool:
    return _code(dtype) == DTypeCode.BOOL


def _is_int(dtype: str) -> bool:
    return _code(dtype) in (DTypeCode.INT, DTypeCode.UINT)


class _Checker(StmtExprVisitor):
    def __init__(self, allow_blocks: bool) -> None:
        self.allow_blocks = allow_blocks
        self.errors: list[str] = []
        self.in_scope: dict[Var, int] = {}  # var -> nesting count
        self.defined: dict[Var, str] = {}  # every definition so far -> where
        self.thread_vars: set[Var] = set()
        self.stmts: list[Any] = []  # enclosing statements, innermost last

    # -- reporting -----------------------------------------------------------------------
    def error(self, message: str, node: Any) -> None:
        if len(self.errors) < _MAX_REPORTED:
            text = f"{message}\n      at: {_brief(node)}"
            if self.stmts and self.stmts[-1] is not node:
                text += f"\n      in statement: {_brief(self.stmts[-1])}"
            self.errors.append(text)
        elif len(self.errors) == _MAX_REPORTED:
            self.errors.append("... (more problems not shown)")

    def visit_stmt(self, stmt: Any) -> None:
        self.stmts.append(stmt)
        try:
            super().visit_stmt(stmt)
        finally:
            self.stmts.pop()

    # -- scopes --------------------------------------------------------------------------
    def define(self, var: Var, where: str, node: Any) -> None:
        if not isinstance(var, Var):
            self.error(f"{where} must define a variable, got {type(var).__name__}", node)
            return
        if var in self.defined:
            self.error(
                f"variable {var.name!r} is defined twice: by {self.defined[var]} and by {where}",
                node,
            )
        self.defined[var] = where
        self.in_scope[var] = self.in_scope.get(var, 0) + 1

    def undefine(self, var: Var) -> None:
        count = self.in_scope.get(var, 0)
        if count <= 1:
            self.in_scope.pop(var, None)
        else:
            self.in_scope[var] = count - 1

    def define_buffer_vars(self, buffer: Buffer, where: str, node: Any,
                           bind_shape: bool = True) -> list[Var]:
        """Define ``buffer.data`` and (with ``bind_shape``) the lone-variable shape, stride
        and offset entries not yet defined; check the other entries.  Returns what it
        defined."""
        new: list[Var] = []
        bindable = (buffer.data, *buffer.shape, *buffer.strides, buffer.elem_offset) \
            if bind_shape else (buffer.data,)
        for expr in bindable:
            if isinstance(expr, Var) and expr not in self.in_scope and expr not in new:
                self.define(expr, where, node)
                new.append(expr)
        for expr in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if expr is not None and not (bind_shape and isinstance(expr, Var)):
                self.visit_expr(expr)
        return new

    def check_buffer_decl(self, buffer: Buffer, node: Any) -> None:
        if buffer.data not in self.in_scope:
            self.error(
                f"buffer {buffer.name!r} is declared over {buffer.data.name!r}, which is not "
                "defined here",
                node,
            )
        for expr in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if expr is not None:
                self.visit_expr(expr)

    # -- expressions ---------------------------------------------------------------------
    def visit_var_(self, v: Var) -> None:
        if v not in self.in_scope:
            where = self.defined.get(v)
            if where is not None:
                self.error(f"variable {v.name!r} is used outside the scope of its {where}", v)
            else:
                self.error(f"variable {v.name!r} ({v.dtype}) is used but never defined", v)

    def visit_buffer(self, buffer: Buffer) -> None:
        if buffer.data not in self.in_scope:
            self.error(
                f"buffer {buffer.name!r} is used but neither declared nor backed by a defined "
                f"data variable ({buffer.data.name!r})",
                buffer,
            )

    def visit_binary_op_(self, e: BinaryOp) -> None:
        self.generic_visit(e)
        if not (e.a.dtype == e.b.dtype == e.dtype):
            self.error(
                f"{type(e).__name__} operands have dtypes {e.a.dtype} and {e.b.dtype} but the "
                f"node has {e.dtype}",
                e,
            )

    def visit_cmp_op_(self, e: CmpOp) -> None:
        self.generic_visit(e)
        if e.a.dtype != e.b.dtype:
            self.error(f"{type(e).__name__} compares {e.a.dtype} with {e.b.dtype}", e)
        elif e.dtype != with_lanes("bool", lanes_of(e.a.dtype)):
            self.error(f"{type(e).__name__} of {e.a.dtype} has dtype {e.dtype}", e)

    def _logical(self, e: Any) -> None:
        self.generic_visit(e)
        operands = [e.a] if isinstance(e, Not) else [e.a, e.b]
        for x in operands:
            if not _is_bool(x.dtype) or x.dtype != e.dtype:
                self.error(
                    f"{type(e).__name__} needs bool operands of its dtype {e.dtype}, got {x.dtype}",
                    e,
                )

    def visit_and_(self, e: And) -> None:
        self._logical(e)

    def visit_or_(self, e: Or) -> None:
        self._logical(e)

    def visit_not_(self, e: Not) -> None:
        self._logical(e)

    def visit_select_(self, e: Select) -> None:
        self.generic_visit(e)
        if not (e.true_value.dtype == e.false_value.dtype == e.dtype):
            self.error(
                f"Select branches have dtypes {e.true_value.dtype} and {e.false_value.dtype}, "
                f"the node {e.dtype}",
                e,
            )
        c = e.condition.dtype
        if not _is_bool(c) or lanes_of(c) not in (1, lanes_of(e.dtype)):
            self.error(f"Select condition has dtype {c}, expected bool for {e.dtype}", e)

    def visit_cast_(self, e: Cast) -> None:
        self.generic_visit(e)
        if lanes_of(e.value.dtype) != lanes_of(e.dtype):
            self.error(f"Cast from {e.value.dtype} to {e.dtype} changes the number of lanes", e)

    def visit_ramp_(self, e: Ramp) -> None:
        self.generic_visit(e)
        if e.base.dtype != e.stride.dtype or lanes_of(e.base.dtype) != 1:
            self.error(f"Ramp base/stride dtypes {e.base.dtype}/{e.stride.dtype} must be one scalar type", e)
        elif e.dtype != with_lanes(e.base.dtype, e.lanes):
            self.error(f"Ramp of {e.lanes} lanes over {e.base.dtype} has dtype {e.dtype}", e)

    def visit_broadcast_(self, e: Broadcast) -> None:
        self.generic_visit(e)
        if lanes_of(e.value.dtype) != 1 or e.dtype != with_lanes(e.value.dtype, e.lanes):
            self.error(f"Broadcast of {e.value.dtype} to {e.lanes} lanes has dtype {e.dtype}", e)

    def visit_let_(self, e: Let) -> None:
        self.visit_expr(e.value)
        if e.value.dtype != e.var.dtype:
            self.error(f"let {e.var.name!r} ({e.var.dtype}) is bound to a {e.value.dtype} value", e)
        self.define(e.var, f"let {e.var.name!r}", e)
        self.visit_expr(e.body)
        self.undefine(e.var)

    def _indices(self, node: Any, buffer: Buffer, indices: tuple) -> int:
        self.visit_buffer(buffer)
        if len(indices) != len(buffer.shape):
            self.error(
                f"buffer {buffer.name!r} has {len(buffer.shape)} dimensions but is accessed "
                f"with {len(indices)} indices",
                node,
            )
        lanes = 1
        for i in indices:
            self.visit_expr(i)
            if not _is_int(i.dtype):
                self.error(f"index {_brief(i, 60)} of buffer {buffer.name!r} has dtype {i.dtype}", node)
            lanes = max(lanes, lanes_of(i.dtype))
        return lanes

    def visit_buffer_load_(self, e: BufferLoad) -> None:
        lanes = self._indices(e, e.buffer, e.indices)
        expected = with_lanes(e.buffer.dtype, lanes * lanes_of(e.buffer.dtype))
        if e.dtype != expected:
            self.error(f"load from {e.buffer.name!r} has dtype {e.dtype}, expected {expected}", e)

    # -- statements ----------------------------------------------------------------------
    def visit_buffer_store_(self, s: BufferStore) -> None:
        lanes = self._indices(s, s.buffer, s.indices)
        self.visit_expr(s.value)
        expected = with_lanes(s.buffer.dtype, lanes * lanes_of(s.buffer.dtype))
        if s.value.dtype != expected:
            self.error(
                f"store to {s.buffer.name!r} ({s.buffer.dtype}) of a {s.value.dtype} value; "
                f"expected {expected}",
                s,
            )

    def visit_for_(self, s: For) -> None:
        self.visit_expr(s.min)
        self.visit_expr(s.extent)
        v = s.loop_var
        if s.min.dtype != v.dtype or s.extent.dtype != v.dtype:
            self.error(
                f"loop {v.name!r} ({v.dtype}) has min {s.min.dtype} and extent {s.extent.dtype}",
                s,
            )
        self.define(v, f"loop {v.name!r}", s)
        self.visit_stmt(s.body)
        self.undefine(v)

    def visit_let_stmt_(self, s: LetStmt) -> None:
        self.visit_expr(s.value)
        if s.value.dtype != s.var.dtype:
            self.error(f"let {s.var.name!r} ({s.var.dtype}) is bound to a {s.value.dtype} value", s)
        self.define(s.var, f"let {s.var.name!r}", s)
        self.visit_stmt(s.body)
        self.undefine(s.var)

    def visit_allocate_(self, s: Allocate) -> None:
        for e in s.extents:
            self.visit_expr(e)
        self.visit_expr(s.condition)
        self.define(s.buffer_var, f"allocation {s.buffer_var.name!r}", s)
        self.visit_stmt(s.body)
        self.undefine(s.buffer_var)

    def visit_decl_buffer_(self, s: DeclBuffer) -> None:
        self.check_buffer_decl(s.buffer, s)
        self.visit_stmt(s.body)

    def visit_attr_stmt_(self, s: AttrStmt) -> None:
        self.visit_expr(s.value)
        node = s.node
        bound: Optional[Var] = None
        if isinstance(node, IterVar) and s.attr_key in ("thread_extent", "virtual_thread"):
            var = node.var
            if var in self.defined and var not in self.thread_vars:
                self.error(f"thread variable {var.name!r} is also defined by {self.defined[var]}", s)
            if var not in self.in_scope:
                self.thread_vars.add(var)
                self.defined[var] = f"thread attribute {s.attr_key!r}"
                self.in_scope[var] = 1
                bound = var
        elif isinstance(node, PrimExpr) and not isinstance(node, Var):
            self.visit_expr(node)
        self.visit_stmt(s.body)
        if bound is not None:
            self.undefine(bound)

    def _condition(self, cond: PrimExpr, what: str, node: Any) -> None:
        self.visit_expr(cond)
        if cond.dtype != "bool":
            self.error(f"{what} condition has dtype {cond.dtype}, expected bool", node)

    def visit_if_then_else_(self, s: IfThenElse) -> None:
        self._condition(s.condition, "if", s)
        self.visit_stmt(s.then_case)
        if s.else_case is not None:
            self.visit_stmt(s.else_case)

    def visit_while_(self, s: While) -> None:
        self._condition(s.condition, "while", s)
        self.visit_stmt(s.body)

    def visit_assert_stmt_(self, s: AssertStmt) -> None:
        self._condition(s.condition, "assert", s)
        for a in s.message_args:
            self.visit_expr(a)
        self.visit_stmt(s.body)

    def visit_block_realize_(self, s: BlockRealize) -> None:
        if not self.allow_blocks:
            self.error(
                f"block {s.block.name_hint!r} is present after blocks were lowered "
                "(tir.blocks_lowered)",
                s,
            )
        for iv, value in zip(s.block.iter_vars, s.iter_values):
            self.visit_expr(value)
            if value.dtype != iv.var.dtype:
                self.error(
                    f"block {s.block.name_hint!r} binds {iv.var.name!r} ({iv.var.dtype}) to a "
                    f"{value.dtype} value",
                    s,
                )
        self._condition(s.predicate, "block predicate", s)
        self._block(s.block)

    def visit_block_(self, s: Block) -> None:
        if not self.allow_blocks:
            self.error(f"block {s.name_hint!r} is present after blocks were lowered", s)
        self._block(s)

    def _block(self, b: Block) -> None:
        where = f"block {b.name_hint!r}"
        defined: list[Var] = []
        for iv in b.iter_vars:
            if iv.dom is not None:
                self.visit_expr(iv.dom.min)
                self.visit_expr(iv.dom.extent)
            self.define(iv.var, f"iter var of {where}", b)
            defined.append(iv.var)
        for buf in b.alloc_buffers:
            defined.extend(self.define_buffer_vars(
                buf, f"alloc_buffer {buf.name!r} of {where}", b, bind_shape=False
            ))
        for match in b.match_buffers:
            src = match.source
            self.visit_buffer(src.buffer)
            for rng in src.region:
                self.visit_expr(rng.min)
                self.visit_expr(rng.extent)
            defined.extend(
                self.define_buffer_vars(match.buffer, f"match_buffer {match.buffer.name!r}", b)
            )
        for region in (*b.reads, *b.writes):
            self.visit_buffer(region.buffer)
            for rng in region.region:
                self.visit_expr(rng.min)
                self.visit_expr(rng.extent)
        if b.init is not None:
            self.visit_stmt(b.init)
        self.visit_stmt(b.body)
        for var in reversed(defined):
            self.undefine(var)

    # -- functions -----------------------------------------------------------------------
    def check_function(self, func: PrimFunc) -> None:
        for p in func.params:
            self.define(p, f"parameter {p.name!r}", func)
        for param, buffer in func.buffer_map.items():
            if param not in self.in_scope:
                self.error(f"buffer_map binds {param.name!r}, which is not a parameter", func)
            self.define_buffer_vars(buffer, f"buffer_map entry {buffer.name!r}", func)
        if func.body is None:
            self.error("the function has no body", func)
            return
        self.visit_stmt(func.body)


def _check(func: PrimFunc, allow_blocks: Optional[bool]) -> list[str]:
    if allow_blocks is None:
        allow_blocks = not func.attrs.get(BLOCKS_LOWERED_ATTR, False)
    checker = _Checker(allow_blocks)
    checker.check_function(func)
    return checker.errors


def verify_well_formed(
    obj: Union[PrimFunc, IRModule],
    assert_mode: bool = True,
    allow_blocks: Optional[bool] = None,
) -> bool:
    """Check a PrimFunc, or every PrimFunc of a module (see the module docstring).

    Returns True when well formed.  Otherwise raises :class:`WellFormedError` naming the
    function and each problem with its node, or returns False when ``assert_mode`` is off.
    ``allow_blocks`` None follows the function's ``tir.blocks_lowered`` attribute.
    """
    if isinstance(obj, PrimFunc):
        items = [(obj.attrs.get("global_symbol") or "<PrimFunc>", obj)]
    elif isinstance(obj, IRModule):
        items = [(gv.name_hint, f) for gv, f in obj.items() if isinstance(f, PrimFunc)]
    else:
        raise TypeError(f"verify_well_formed expects a PrimFunc or IRModule, got {type(obj).__name__}")
    problems: list[str] = []
    for name, func in items:
        errors = _check(func, allow_blocks)
        if errors:
            problems.append(f"PrimFunc {name!r} is not well formed:\n" + "\n".join(
                f"  - {e}" for e in errors
            ))
    if problems and assert_mode:
        raise WellFormedError("\n".join(problems))
    return not problems


def VerifyWellFormed(allow_blocks: Optional[bool] = None) -> FunctionPass:  # noqa: N802
    """A pass that checks every PrimFunc and returns the module unchanged."""

    def run(func: PrimFunc, mod: Any, ctx: Any) -> PrimFunc:
        verify_well_formed(func, True, allow_blocks)
        return func

    return function_pass(run, opt_level=0, name="tir.VerifyWellFormed", func_type=PrimFunc)


def _verify_module(mod: IRModule) -> None:
    verify_well_formed(mod, assert_mode=True)


register_verifier("tir.VerifyWellFormed", _verify_module)
