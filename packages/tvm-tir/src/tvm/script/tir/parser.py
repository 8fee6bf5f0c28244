"""TVMScript parser for TIR: a ``def`` (Python ``ast``) becomes a :class:`~tvm.tir.PrimFunc`.

Expressions are evaluated in the function's environment (closure, caller locals, globals)
by :class:`_Evaluator`, which gives Python operators their TIR meaning.  Statements are
built here.  Conventions follow TVMScript:

* ``x = T.allocate(...)``, ``A = T.decl_buffer(...)``, ``x = expr`` (a ``LetStmt``),
  ``assert c, "msg"`` and ``tx = T.launch_thread(...)`` take the rest of the statement list
  as their body; the ``with`` forms take the ``with`` body;
* a body containing blocks (or allocating buffers at function level) is wrapped in a root
  block;
* blocks without ``T.reads``/``T.writes`` get their regions inferred
  (:func:`tvm.tir.analysis.block_region.infer_block_access_regions`);
* a non-private function gets ``global_symbol`` = its name.

:func:`parse_prim_func` works on an ``ast.FunctionDef`` and an environment, so a module
parser can reuse it for methods of an ``@I.ir_module`` class; the decorator and text entry
points are in :mod:`tvm.script.tir.entry`.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from tvm.ffi.dtype import DTypeCode, parse_dtype
from tvm.ir.diagnostics import DiagnosticError
from tvm.script.parser_core import ExprEvaluator, Source, VarTable, deep_recursion
from tvm.tir import op as tir_op
from tvm.tir.analysis.block_region import infer_block_access_regions
from tvm.tir.buffer import Buffer
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, And, BufferLoad, IntImm, IterVar, IterVarType, Not, Or, PrimExpr,
    Ramp, Range, Var, _match_types, const, convert, element_of, lanes_of, with_lanes,
)
from tvm.tir.function import PrimFunc
from tvm.tir.stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer,
    Evaluate, For, ForKind, IfThenElse, LetStmt, MatchBufferRegion, Stmt, While, stmt_seq,
)

from . import ir

__all__ = ["parse_prim_func"]

_COMPARE = {ast.Eq: EQ, ast.NotEq: NE, ast.Lt: LT, ast.LtE: LE, ast.Gt: GT, ast.GtE: GE}
_BITWISE = {ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
            ast.LShift: "shift_left", ast.RShift: "shift_right"}
_STMT_NAMES = {
    "Try": "try statement", "TryStar": "try statement", "Raise": "raise statement",
    "Return": "return statement", "Delete": "del statement", "Global": "global statement",
    "Nonlocal": "nonlocal statement", "Import": "import statement",
    "ImportFrom": "import statement", "ClassDef": "class definition",
    "FunctionDef": "nested function definition", "AsyncFunctionDef": "async function",
    "AsyncFor": "async for", "AsyncWith": "async with", "Match": "match statement",
    "Break": "break statement", "Continue": "continue statement",
}


def _is_bool(dtype: str) -> bool:
    return parse_dtype(dtype)[0] == DTypeCode.BOOL


class _Evaluator(ExprEvaluator):
    """Python operators with TIR meaning: ``and``/``not`` on conditions, comparisons that
    keep operand order, ``&``/``<<`` on integers as bitwise intrinsics, buffer indexing."""

    def __init__(self, parser: _Parser):
        super().__init__(parser.source, parser.vars)
        self.parser = parser

    def binary(self, op: type, a: Any, b: Any) -> Any:
        if isinstance(a, PrimExpr) or isinstance(b, PrimExpr):
            if op in (ast.BitAnd, ast.BitOr):
                x, y = _match_types(a, b)
                if _is_bool(x.dtype):
                    return And(x, y) if op is ast.BitAnd else Or(x, y)
            if op in _BITWISE:
                return getattr(tir_op, _BITWISE[op])(a, b)
            if op is ast.Pow:
                return tir_op.power(a, b)
        return super().binary(op, a, b)

    def unary(self, op: type, a: Any) -> Any:
        if isinstance(a, PrimExpr):
            if op is ast.Not or (op is ast.Invert and _is_bool(a.dtype)):
                return Not(a)
            if op is ast.Invert:
                return tir_op.bitwise_not(a)
        return super().unary(op, a)

    def bool_op(self, op: type, values: list) -> Any:
        if not any(isinstance(v, PrimExpr) for v in values):
            return super().bool_op(op, values)
        node = And if op is ast.And else Or
        out = convert(values[0])
        for v in values[1:]:
            out = node(out, convert(v))
        return out

    def compare(self, op: type, a: Any, b: Any) -> Any:
        if (isinstance(a, PrimExpr) or isinstance(b, PrimExpr)) and op in _COMPARE:
            return _COMPARE[op](a, b)
        return super().compare(op, a, b)

    def subscript(self, obj: Any, node: ast.Subscript) -> Any:
        if isinstance(obj, Buffer):
            return self.parser.buffer_access(obj, node, store=False)
        return super().subscript(obj, node)


class _Scoped:
    """A statement waiting for its body (the rest of the statement list, or a with-body)."""

    __slots__ = ("make",)

    def __init__(self, make: Any):
        self.make = make


class _BlockFrame:
    __slots__ = ("name", "is_root", "no_realize", "iter_vars", "iter_values", "reads",
                 "writes", "predicate", "annotations", "alloc_buffers", "match_buffers", "init")

    def __init__(self, name: str, is_root: bool = False, no_realize: bool = False):
        self.name = name
        self.is_root = is_root
        self.no_realize = no_realize
        self.iter_vars: list[IterVar] = []
        self.iter_values: list[PrimExpr] = []
        self.reads: Optional[list] = None
        self.writes: Optional[list] = None
        self.predicate: Optional[PrimExpr] = None
        self.annotations: dict = {}
        self.alloc_buffers: list[Buffer] = []
        self.match_buffers: list[MatchBufferRegion] = []
        self.init: Optional[Stmt] = None


class _Parser:
    def __init__(self, source: Source, env: Sequence[Mapping[str, Any]]):
        self.source = source
        self.vars = VarTable(env, source.trusted)
        self.eval = _Evaluator(self)
        self.known: set[int] = set()
        self.loop_doms: dict[int, Range] = {}
        self.env_threads: dict[int, str] = {}
        self.blocks: list[_BlockFrame] = []
        self.direct: Optional[_BlockFrame] = None  # the block whose statement list we are in
        self.contains_block = False
        self.params: list[Var] = []
        self.buffer_map: dict[Var, Buffer] = {}
        self.attrs: dict[str, Any] = {}

    def error(self, message: str, node: ast.AST) -> DiagnosticError:
        return self.source.error(message, node)

    def span(self, node: ast.AST) -> Any:
        return self.source.span(node)

    # -- function ----------------------------------------------------------------------------
    def parse_function(self, node: ast.FunctionDef, private: bool) -> PrimFunc:
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.kw_defaults:
            raise self.error("a prim_func takes plain positional parameters only", node)
        root = _BlockFrame("root", is_root=True)
        self.blocks.append(root)
        self.direct = root
        for arg in (*args.posonlyargs, *args.args):
            self._param(arg)
        ret_type = "void"
        if node.returns is not None:
            ret = self.eval.eval(node.returns)
            if isinstance(ret, ir.DTypeConstructor):
                ret_type = ret.dtype
            elif ret is not None:
                raise self.error(f"return annotation must be a dtype such as T.int32, got {ret!r}",
                                 node.returns)
        stmts = node.body
        first = stmts[0] if stmts else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
            first.value.value, str
        ):
            stmts = stmts[1:]  # the docstring
        with self.vars.scope():
            body = self._seq(stmts, 0)
        body = self._wrap_root(body, root)
        attrs = dict(self.attrs)
        if private:
            if "global_symbol" in attrs:
                raise self.error("a private prim_func cannot set global_symbol", node)
        else:
            attrs.setdefault("global_symbol", node.name)
        order = {id(p): k for k, p in enumerate(self.params)}
        buffer_map = dict(sorted(self.buffer_map.items(), key=lambda kv: order[id(kv[0])]))
        return PrimFunc(self.params, body, ret_type, buffer_map, attrs, span=self.span(node))

    def _param(self, arg: ast.arg) -> None:
        if arg.annotation is None:
            raise self.error(
                f"parameter {arg.arg!r} needs a type annotation: T.handle, a dtype such as "
                "T.int32, or T.Buffer(shape, dtype)", arg)
        value, named = self._eval_named(arg.annotation, arg.arg)
        if isinstance(value, Buffer):
            param = Var(arg.arg, "handle")
            self.buffer_map[param] = value
            self.known.add(id(value.data))
            self.vars.add(arg.arg, value)
        elif isinstance(value, ir.DTypeConstructor):
            param = Var(arg.arg, value.dtype)
            self.vars.add(arg.arg, param)
        elif isinstance(value, Var) and named:
            param = value
            self.vars.add(arg.arg, param)
        else:
            raise self.error(
                f"parameter {arg.arg!r}: expected T.handle, a dtype or T.Buffer(...), "
                f"got {value!r}", arg.annotation)
        self.known.add(id(param))
        self.params.append(param)

    def _wrap_root(self, body: Stmt, root: _BlockFrame) -> Stmt:
        has_root = (not root.alloc_buffers and isinstance(body, BlockRealize)
                    and not body.block.iter_vars)
        if (self.contains_block or root.alloc_buffers) and not has_root:
            block = Block((), (), (), "root", body, None, tuple(root.alloc_buffers))
            return BlockRealize((), True, block)
        return body

    # -- statement lists ---------------------------------------------------------------------
    def _seq(self, stmts: list[ast.stmt], start: int) -> Stmt:
        out: list[Stmt] = []
        for k in range(start, len(stmts)):
            result = self._stmt(stmts[k])
            if result is None:
                continue
            if isinstance(result, _Scoped):
                out.append(result.make(self._seq(stmts, k + 1)))
                break
            out.append(result)
        return stmt_seq(*out)

    def _nested(self, stmts: list[ast.stmt], direct: Optional[_BlockFrame] = None) -> Stmt:
        """A nested statement list in its own scope (not directly inside a block header)."""
        saved = self.direct
        self.direct = direct
        try:
            with self.vars.scope():
                return self._seq(stmts, 0)
        finally:
            self.direct = saved

    def _stmt(self, node: ast.stmt) -> Any:
        method = getattr(self, "_stmt_" + type(node).__name__, None)
        if method is None:
            what = _STMT_NAMES.get(type(node).__name__, type(node).__name__)
            raise self.error(f"unsupported Python syntax in TVMScript: {what}", node)
        return method(node)

    def _stmt_Pass(self, node: ast.Pass) -> None:  # noqa: N802
        return None

    def _stmt_Expr(self, node: ast.Expr) -> Any:  # noqa: N802
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring or string comment
        value = self.eval.eval(node.value)
        return self._effect(value, node)

    def _effect(self, value: Any, node: ast.stmt) -> Any:
        if value is None:
            return None
        if isinstance(value, Stmt):
            return value
        if isinstance(value, ir.Frame):
            return self._frame(value, node)
        if isinstance(value, PrimExpr):
            return Evaluate(value, span=self.span(node))
        if isinstance(value, (ir.Reads, ir.Writes, ir.Where, ir.BlockAttr)):
            self._block_directive(value, node)
            return None
        if isinstance(value, ir.FuncAttr):
            if self.direct is None or not self.direct.is_root or len(self.blocks) != 1:
                raise self.error("T.func_attr must be at the top level of the function body", node)
            self.attrs.update(value.attrs)
            return None
        if isinstance(value, ir.AllocBuffer):
            self._alloc_buffer(value.buffer)
            return None
        if isinstance(value, ir.MatchBuffer):
            self._match_buffer(value, node)
            return None
        if isinstance(value, ir.EnvThread):
            self._env_thread(value)
            return None
        if isinstance(value, ir.AxisSpec) or _axis_list(value):
            raise self.error("T.axis.* must be assigned to names: vi = T.axis.spatial(...)", node)
        raise self.error(
            f"this expression statement has no effect (it evaluates to {type(value).__name__}); "
            "use T.evaluate(...) for a call", node)

    # -- assignments ---------------------------------------------------------------------------
    def _eval_named(self, expr: ast.expr, name: Optional[str]) -> tuple[Any, bool]:
        """Evaluate ``expr``; a call to a ``T.xxx`` that takes ``name=`` gets the target name."""
        if name is not None and isinstance(expr, ast.Call) and not any(
            kw.arg == "name" for kw in expr.keywords
        ):
            fn = self.eval.eval(expr.func)
            args, kwargs = self.eval.eval_arguments(expr)
            accepts = getattr(fn, "__tvmscript_named__", False) is True
            if accepts:
                kwargs["name"] = name
            return self.eval.call_node(expr, fn, args, kwargs), accepts
        return self.eval.eval(expr), False

    def _stmt_Assign(self, node: ast.Assign) -> Any:  # noqa: N802
        if len(node.targets) != 1:
            raise self.error("chained assignment (a = b = ...) is not supported", node)
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self._store(target, node.value, node, None)
        name = target.id if isinstance(target, ast.Name) else None
        value, named = self._eval_named(node.value, name)
        return self._bind(target, value, named, node, None)

    def _stmt_AnnAssign(self, node: ast.AnnAssign) -> Any:  # noqa: N802
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.error("an annotated assignment must be `name: T.dtype = value`", node)
        ann = self.eval.eval(node.annotation)
        if not isinstance(ann, ir.DTypeConstructor):
            raise self.error(f"the annotation must be a dtype such as T.int32, got {ann!r}",
                             node.annotation)
        value = self.eval.eval(node.value)
        return self._bind(node.target, value, False, node, ann.dtype)

    def _stmt_AugAssign(self, node: ast.AugAssign) -> Any:  # noqa: N802
        if isinstance(node.target, ast.Subscript):
            return self._store(node.target, node.value, node, type(node.op))
        raise self.error(
            f"cannot update {self.source.segment(node.target)!r} in place: TIR variables are "
            "immutable (store into a buffer, or bind a new name)", node)

    def _bind(self, target: ast.expr, value: Any, named: bool, node: ast.stmt,
              dtype: Optional[str]) -> Any:
        if isinstance(value, ir.AxisSpec) or _axis_list(value):
            self._axes(target, [value] if isinstance(value, ir.AxisSpec) else value, node)
            return None
        if isinstance(target, (ast.Tuple, ast.List)):
            names = [self._target_name(t) for t in target.elts]
            if not isinstance(value, (tuple, list)) or len(value) != len(names):
                raise self.error(f"cannot unpack {value!r} into {len(names)} names", node)
            for name, item in zip(names, value):
                if isinstance(item, PrimExpr) and not (isinstance(item, Var)):
                    raise self.error("unpacking expressions into let-bindings is not supported; "
                                     "assign them one by one", node)
                self.vars.add(name, item)
            return None
        name = self._target_name(target)
        return self._bind_name(name, value, named, node, dtype)

    def _target_name(self, target: ast.expr) -> str:
        if not isinstance(target, ast.Name):
            raise self.error(
                f"unsupported assignment target {self.source.segment(target)!r}: assign to a "
                "name or to a buffer element", target)
        return target.id

    def _bind_name(self, name: str, value: Any, named: bool, node: ast.stmt,
                   dtype: Optional[str]) -> Any:
        if isinstance(value, (ir.AllocateFrame, ir.DeclBufferFrame, ir.LetFrame,
                              ir.LaunchThreadFrame)):
            scoped = self._frame(value, node)
            product = value.buffer if isinstance(value, ir.DeclBufferFrame) else value.var
            self.vars.add(name, product)
            return scoped
        if isinstance(value, ir.Frame):
            raise self.error(f"{type(value).__name__} does not produce a value to assign", node)
        if isinstance(value, ir.AllocBuffer):
            self._alloc_buffer(value.buffer)
            self.vars.add(name, value.buffer)
            return None
        if isinstance(value, ir.MatchBuffer):
            self._match_buffer(value, node)
            self.vars.add(name, value.buffer)
            return None
        if isinstance(value, ir.EnvThread):
            self._env_thread(value)
            self.vars.add(name, value.var)
            return None
        if isinstance(value, Buffer):
            self.known.add(id(value.data))
            self.vars.add(name, value)
            return None
        if isinstance(value, Var) and dtype is None and (named or id(value) not in self.known):
            self.known.add(id(value))  # a declaration (n = T.int64()) or an outside variable
            self.vars.add(name, value)
            return None
        if isinstance(value, (PrimExpr, bool, int, float)) or dtype is not None:
            return self._let(name, value, node, dtype)
        self.vars.add(name, value)  # a Python value for meta-programming
        return None

    def _let(self, name: str, value: Any, node: ast.stmt, dtype: Optional[str]) -> _Scoped:
        if isinstance(value, PrimExpr):
            if dtype is not None and value.dtype != dtype:
                raise self.error(
                    f"cannot bind a {value.dtype} value to {name}: {dtype}; cast it with "
                    f"T.Cast({dtype!r}, ...)", node)
        elif isinstance(value, (bool, int, float)):
            value = const(value, dtype) if dtype is not None else convert(value)
        elif isinstance(value, str):
            value = ir.expr_arg(value)
        else:
            raise self.error(f"cannot bind {value!r} to a TIR variable", node)
        var = Var(name, dtype or value.dtype)
        self.known.add(id(var))
        self.vars.add(name, var)
        span = self.span(node)
        return _Scoped(lambda body: LetStmt(var, value, body, span=span))

    # -- buffer stores and loads ------------------------------------------------------------
    def buffer_access(self, buf: Buffer, node: ast.Subscript, store: bool) -> Any:
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        values = [self.eval.eval(e) for e in elts]
        if len(values) != len(buf.shape):
            raise self.error(
                f"buffer {buf.name} has {len(buf.shape)} dimension(s) but is indexed with "
                f"{len(values)} index(es)", node)
        return self.eval.guard(node, self._indices, buf, values, store)

    @staticmethod
    def _indices(buf: Buffer, values: list, store: bool) -> Any:
        slices = [v for v in values if isinstance(v, slice)]
        if not slices:  # converted here, so a bad index is reported at the access
            return [convert(v) for v in values] if store else BufferLoad(buf, values)
        if not store and all(s.step is None for s in slices):
            region = []
            for dim, v in enumerate(values):
                if isinstance(v, slice):
                    start = 0 if v.start is None else v.start
                    stop = buf.shape[dim] if v.stop is None else v.stop
                    region.append(Range(*ir.extent_of(start, stop)))
                else:
                    region.append(Range(v, 1))
            return BufferRegion(buf, tuple(region))
        indices = []
        for dim, v in enumerate(values):
            if not isinstance(v, slice):
                indices.append(v)
                continue
            start = 0 if v.start is None else v.start
            stop = buf.shape[dim] if v.stop is None else v.stop
            step = 1 if v.step is None else int(v.step)
            start, extent = ir.extent_of(start, stop)
            if not isinstance(extent, IntImm):
                raise ValueError(f"a vector slice needs a constant length, got {extent!r}")
            lanes = (extent.value + step - 1) // step
            indices.append(start if lanes == 1 else Ramp(start, step, lanes))
        return indices if store else BufferLoad(buf, indices)

    def _store(self, target: ast.Subscript, value_node: ast.expr, node: ast.stmt,
               aug: Optional[type]) -> BufferStore:
        buf = self.eval.eval(target.value)
        if not isinstance(buf, Buffer):
            raise self.error(
                f"can only assign to elements of a buffer; {self.source.segment(target.value)!r} "
                f"is a {type(buf).__name__}", target)
        indices = self.buffer_access(buf, target, store=True)
        value = self.eval.eval(value_node)
        if aug is not None:
            value = self.eval.guard(node, self.eval.binary, aug, BufferLoad(buf, indices), value)
        lanes = 1
        for i in indices:
            lanes = max(lanes, lanes_of(convert(i).dtype))
        expected = with_lanes(buf.dtype, lanes) if lanes > 1 else buf.dtype
        if isinstance(value, (bool, int, float)):
            value = self.eval.guard(value_node, const, value, expected)
        elif not isinstance(value, PrimExpr):
            raise self.error(f"cannot store {value!r} into buffer {buf.name}", value_node)
        if value.dtype != expected:
            if element_of(value.dtype) == element_of(expected):
                raise self.error(f"cannot store a {value.dtype} value into {lanes} lane(s) of "
                                 f"buffer {buf.name}", value_node)
            raise self.error(
                f"cannot store a {value.dtype} value into buffer {buf.name} of {buf.dtype}; "
                f"convert it with T.Cast({buf.dtype!r}, ...)", value_node)
        return self.eval.guard(node, lambda: BufferStore(buf, value, tuple(indices),
                                                         span=self.span(node)))

    # -- control flow --------------------------------------------------------------------------
    def _cond(self, value: Any, node: ast.expr, what: str) -> PrimExpr:
        if isinstance(value, bool):
            return const(value)
        if not isinstance(value, PrimExpr) or not _is_bool(value.dtype):
            got = value.dtype if isinstance(value, PrimExpr) else type(value).__name__
            raise self.error(
                f"{what} must be a bool expression, got {got} ({self.source.segment(node)})", node)
        return value

    def _stmt_If(self, node: ast.If) -> Stmt:  # noqa: N802
        cond = self._cond(self.eval.eval(node.test), node.test, "an if condition")
        then = self._nested(node.body)
        other = self._nested(node.orelse) if node.orelse else None
        return IfThenElse(cond, then, other, span=self.span(node))

    def _stmt_While(self, node: ast.While) -> Stmt:  # noqa: N802
        if node.orelse:
            raise self.error("while-else is not supported in TVMScript", node)
        cond = self._cond(self.eval.eval(node.test), node.test, "a while condition")
        return While(cond, self._nested(node.body), span=self.span(node))

    def _stmt_Assert(self, node: ast.Assert) -> _Scoped:  # noqa: N802
        cond = self._cond(self.eval.eval(node.test), node.test, "an assert condition")
        message = self.source.segment(node.test) if node.msg is None else self.eval.eval(node.msg)
        if not isinstance(message, str):
            raise self.error(f"the assert message must be a str, got {message!r}", node.msg)
        return self._frame(ir.AssertFrame(cond, message, ()), node)

    def _stmt_For(self, node: ast.For) -> Stmt:  # noqa: N802
        if node.orelse:
            raise self.error("for-else is not supported in TVMScript", node)
        spec = self._loop_spec(node.iter)
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        names = [self._target_name(t) for t in targets]
        if len(names) != len(spec.stops):
            raise self.error(
                f"the loop makes {len(spec.stops)} loop variable(s) but {len(names)} name(s) "
                "are given", node.target)
        loops = []
        for name, start, stop in zip(names, spec.starts, spec.stops):
            begin, extent = self.eval.guard(node.iter, ir.extent_of, start, stop)
            var = Var(name, extent.dtype)
            loops.append((var, begin, extent))
        saved = self.direct
        self.direct = None
        try:
            with self.vars.scope():
                for name, (var, begin, extent) in zip(names, loops):
                    self.vars.add(name, var)
                    self.known.add(id(var))
                    self.loop_doms[id(var)] = Range(begin, extent)
                body = self._seq(node.body, 0)
        finally:
            self.direct = saved
        span = self.span(node)
        for var, begin, extent in reversed(loops):
            thread = None
            if spec.kind == ForKind.THREAD_BINDING:
                thread = spec.thread if isinstance(spec.thread, IterVar) else IterVar(
                    None, Var("iter", var.dtype), IterVarType.THREAD_INDEX, spec.thread)
            body = For(var, begin, extent, spec.kind, body, thread, dict(spec.annotations or {}),
                       span=span)
        return body

    def _loop_spec(self, node: ast.expr) -> ir.LoopSpec:
        if isinstance(node, ast.Call):
            fn = self.eval.eval(node.func)
            args, kwargs = self.eval.eval_arguments(node)
            if fn is builtins.range:
                if kwargs or not 1 <= len(args) <= 3 or (len(args) == 3 and args[2] != 1):
                    raise self.error("range(...) in TVMScript takes (stop) or (start, stop)", node)
                return ir.serial(*args[:2])
            value = self.eval.call_node(node, fn, args, kwargs)
        else:
            value = self.eval.eval(node)
        if not isinstance(value, ir.LoopSpec):
            raise self.error(
                "a for loop iterates over range(...), T.serial/parallel/vectorized/unroll/"
                f"thread_binding(...) or T.grid(...), got {type(value).__name__}", node)
        return value

    # -- with ------------------------------------------------------------------------------
    def _stmt_With(self, node: ast.With) -> Any:  # noqa: N802
        return self._with(node, 0)

    def _with(self, node: ast.With, k: int) -> Any:
        item = node.items[k]
        name = None
        if item.optional_vars is not None:
            name = self._target_name(item.optional_vars)
        value, _ = self._eval_named(item.context_expr, name)
        if isinstance(value, ir.BlockSpec):
            if name is not None or k + 1 < len(node.items):
                raise self.error("`with T.block(...)` takes no `as` and no other items", item)
            return self._block(value, node)
        if isinstance(value, ir.InitSpec):
            self._init(node)
            return None
        if not isinstance(value, ir.Frame):
            raise self.error(
                "a with statement takes T.block, T.init, T.allocate, T.decl_buffer, "
                f"T.LetStmt, T.launch_thread, T.attr or T.Assert, got {type(value).__name__}",
                item.context_expr)
        with self.vars.scope():
            scoped = self._frame(value, node)
            if name is not None:
                product = value.buffer if isinstance(value, ir.DeclBufferFrame) else getattr(
                    value, "var", None)
                if product is None:
                    raise self.error(f"{type(value).__name__} has no value for `as {name}`", item)
                self.vars.add(name, product)
            if k + 1 < len(node.items):
                body = self._with(node, k + 1)
                body = body if isinstance(body, Stmt) else stmt_seq()
            else:
                body = self._nested(node.body)
        return scoped.make(body)

    def _frame(self, frame: ir.Frame, node: ast.AST) -> _Scoped:
        span = self.span(node)
        if isinstance(frame, ir.AllocateFrame):
            self.known.add(id(frame.var))
            f = frame
            return _Scoped(lambda body: Allocate(f.var, f.dtype, f.extents, f.condition, body,
                                                 f.scope, f.annotations, span=span))
        if isinstance(frame, ir.DeclBufferFrame):
            buf = frame.buffer
            self.known.add(id(buf.data))
            if frame.allocate:
                return _Scoped(lambda body: Allocate(
                    buf.data, buf.dtype, buf.shape, const(True), DeclBuffer(buf, body, span=span),
                    buf.scope, span=span))
            return _Scoped(lambda body: DeclBuffer(buf, body, span=span))
        if isinstance(frame, ir.LetFrame):
            self.known.add(id(frame.var))
            var, value = frame.var, frame.value
            return _Scoped(lambda body: LetStmt(var, value, body, span=span))
        if isinstance(frame, ir.LaunchThreadFrame):
            return self._launch(frame, node)
        if isinstance(frame, ir.AttrFrame):
            a = frame
            return _Scoped(lambda body: AttrStmt(a.node, a.key, a.value, body, span=span))
        if isinstance(frame, ir.AssertFrame):
            a = frame
            return _Scoped(lambda body: AssertStmt(a.condition, a.message, body, a.args,
                                                   span=span))
        raise self.error(f"unknown frame {frame!r}", node)

    def _launch(self, frame: ir.LaunchThreadFrame, node: ast.AST) -> _Scoped:
        tag = frame.tag
        if tag is None:
            tag = self.env_threads.get(id(frame.var))
            if tag is None:
                raise self.error(
                    f"T.launch_thread({frame.var.name}, ...): the variable was not made by "
                    "T.env_thread; pass a tag such as \"threadIdx.x\"", node)
        self.known.add(id(frame.var))
        extent = frame.extent
        iv = IterVar(Range(0, extent), frame.var, IterVarType.THREAD_INDEX, tag)
        key = "virtual_thread" if tag.startswith("vthread") else "thread_extent"
        span = self.span(node)
        return _Scoped(lambda body: AttrStmt(iv, key, extent, body, span=span))

    def _env_thread(self, value: ir.EnvThread) -> None:
        self.known.add(id(value.var))
        self.env_threads[id(value.var)] = value.tag

    # -- blocks ----------------------------------------------------------------------------
    def _block(self, spec: ir.BlockSpec, node: ast.With) -> Stmt:
        frame = _BlockFrame(spec.name, no_realize=spec.no_realize)
        at_top = len(self.blocks) == 1 and self.direct is self.blocks[0]
        self.contains_block = True
        self.blocks.append(frame)
        try:
            body = self._nested(node.body, direct=frame)
        finally:
            self.blocks.pop()
        span = self.span(node)
        block = Block(tuple(frame.iter_vars), tuple(frame.reads or ()), tuple(frame.writes or ()),
                      spec.name, body, frame.init, tuple(frame.alloc_buffers),
                      tuple(frame.match_buffers), dict(frame.annotations), span=span)
        explicit_root = at_top and spec.name == "root" and not frame.iter_vars
        if (frame.reads is None or frame.writes is None) and not explicit_root:
            reads, writes = self.eval.guard(node, infer_block_access_regions, block)
            block = block.with_fields(
                reads=tuple(frame.reads) if frame.reads is not None else reads,
                writes=tuple(frame.writes) if frame.writes is not None else writes)
        if spec.no_realize:
            return block
        predicate = frame.predicate if frame.predicate is not None else const(True)
        return BlockRealize(tuple(frame.iter_values), predicate, block, span=span)

    def _block_frame(self, what: str, node: ast.AST) -> _BlockFrame:
        frame = self.direct
        if frame is None or frame.is_root:
            raise self.error(f"{what} must be used directly inside a `with T.block(...)` body",
                             node)
        return frame

    def _block_directive(self, value: Any, node: ast.stmt) -> None:
        if isinstance(value, ir.Reads):
            frame = self._block_frame("T.reads", node)
            frame.reads = list(value.regions)
        elif isinstance(value, ir.Writes):
            frame = self._block_frame("T.writes", node)
            frame.writes = list(value.regions)
        elif isinstance(value, ir.Where):
            frame = self._block_frame("T.where", node)
            frame.predicate = self._cond(value.predicate, node, "T.where")
        else:
            frame = self._block_frame("T.block_attr", node)
            frame.annotations.update(value.attrs)

    def _init(self, node: ast.With) -> None:
        frame = self._block_frame("T.init()", node)
        if frame.init is not None:
            raise self.error(f"block {frame.name!r} has two T.init() bodies", node)
        frame.init = self._nested(node.body)

    def _alloc_buffer(self, buf: Buffer) -> None:
        self.known.add(id(buf.data))
        self.blocks[-1].alloc_buffers.append(buf)

    def _match_buffer(self, value: ir.MatchBuffer, node: ast.stmt) -> None:
        buf = value.buffer
        self.known.add(id(buf.data))
        source = value.source
        frame = self.direct
        if frame is not None and frame.is_root and len(self.blocks) == 1:
            if not isinstance(source, Var) or not any(source is p for p in self.params):
                raise self.error(
                    "T.match_buffer at function level binds a handle parameter, got "
                    f"{source!r}", node)
            if source in self.buffer_map:
                raise self.error(f"parameter {source.name} is matched to a buffer twice", node)
            self.buffer_map[source] = buf
            return
        frame = self._block_frame("T.match_buffer of a region", node)
        region = self.eval.guard(node, ir.as_region, source)
        frame.match_buffers.append(MatchBufferRegion(buf, region))

    def _axes(self, target: ast.expr, specs: list, node: ast.stmt) -> None:
        frame = self._block_frame("T.axis", node)
        targets = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        names = [self._target_name(t) for t in targets]
        if len(names) != len(specs):
            raise self.error(f"{len(specs)} block axes assigned to {len(names)} name(s)", node)
        for name, spec in zip(names, specs):
            binding = spec.binding
            dtype = binding.dtype if isinstance(binding, PrimExpr) else spec.dtype
            if spec.dom is None:
                dom = self.loop_doms.get(id(binding))
                if dom is None:
                    raise self.error(
                        f"T.axis.remap binds {name} to {binding!r}, which is not the variable of "
                        "an enclosing loop", node)
            else:
                dom = self.eval.guard(node, _make_dom, spec.dom, dtype)
            if binding is None and not frame.no_realize:
                raise self.error(
                    f"block axis {name} needs a binding: T.axis.spatial(extent, value)", node)
            var = Var(name, dtype)
            self.known.add(id(var))
            self.vars.add(name, var)
            frame.iter_vars.append(IterVar(dom, var, spec.kind, span=self.span(node)))
            if binding is not None:
                value = const(binding, dtype) if isinstance(binding, int) else convert(binding)
                frame.iter_values.append(value)


def _axis_list(value: Any) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(v, ir.AxisSpec) for v in value))


def _make_dom(dom: Any, dtype: str) -> Range:
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, (tuple, list)):
        if len(dom) != 2:
            raise ValueError(f"a block axis domain is an extent or (begin, end), got {dom!r}")
        lo, hi = (const(x, dtype) if isinstance(x, int) else x for x in dom)
        return Range(*ir.extent_of(lo, hi))
    extent = const(dom, dtype) if isinstance(dom, int) else convert(dom)
    return Range(const(0, extent.dtype), extent)


# ---------------------------------------------------------------------------------------
# entry points


def parse_prim_func(
    node: ast.FunctionDef,
    source: Source,
    env: Sequence[Mapping[str, Any]],
    private: bool = False,
) -> PrimFunc:
    """Parse one ``def`` into a PrimFunc (the hook a module parser reuses for methods)."""
    if not isinstance(node, ast.FunctionDef):
        raise source.error("@T.prim_func decorates a function definition", node)
    with deep_recursion():
        return _Parser(source, env).parse_function(node, private)
