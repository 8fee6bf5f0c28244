"""TVMScript printer for TIR: ``PrimFunc``, statements and expressions.

``print_prim_func(func)`` gives text that :func:`tvm.script.tir.parse` reads back to a
structurally equal function.  Choices that make the round trip exact:

* a parameter buffer prints inline (``A: T.Buffer((128,), "float32")``) when its shape only
  uses earlier parameters, else as a handle with ``T.match_buffer`` (symbolic shapes);
* variables used but never defined are declared at the top (``n = T.int64()``), and so are
  variables of let-expressions and thread variables launched more than once
  (``tx = T.env_thread("threadIdx.x")``);
* a buffer that is used but not declared anywhere (a view sharing another buffer's data)
  prints as ``X = T.Buffer(..., data=...)`` right after its data variable is defined;
* scoped statements (let, allocate, decl_buffer, attr, assert) print in the concise
  assignment form when they end their statement list, else as ``with`` blocks;
* an implicit root block prints as the comment ``# with T.block("root"):``.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.script.parser_core import (
    DocBuilder, NameTable, deep_recursion, sanitize_name, str_literal,
)
from tvm.tir.buffer import Buffer
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Div, FloorDiv, FloorMod, IntImm, IterVar, IterVarType, Max,
    Min, Mod, Mul, Or, PrimExpr, SizeVar, Sub, Var,
)
from tvm.tir.expr_util import is_const_int
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprVisitor
from tvm.tir.stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer,
    Evaluate, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt, While,
)
from tvm.tir.stmt_functor import free_vars

from .printer_expr import ExprPrinter, dtype_text

__all__ = ["print_prim_func", "script", "safe_repr", "TIRPrinter"]

_RESERVED = ("T", "I", "R", "tvm", "range", "float")
_THREAD_KEYS = ("thread_extent", "virtual_thread")
_LOOP_FUNCS = {ForKind.SERIAL: "serial", ForKind.PARALLEL: "parallel",
               ForKind.VECTORIZED: "vectorized", ForKind.UNROLLED: "unroll",
               ForKind.THREAD_BINDING: "thread_binding"}
_AXIS_FUNCS = {IterVarType.DATA_PAR: "spatial", IterVarType.COMM_REDUCE: "reduce",
               IterVarType.ORDERED: "scan", IterVarType.OPAQUE: "opaque"}
_REMAP_KINDS = {IterVarType.DATA_PAR: "S", IterVarType.COMM_REDUCE: "R"}


def _is_true(e: Any) -> bool:
    return isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1


# binary nodes with no fields but ``a`` and ``b`` to scan (dtype and span are not IR)
_CHAIN = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, EQ, NE, LT, LE, GT, GE, And, Or)


class _Scan(StmtExprVisitor):
    """What the printer must know before it starts: undeclared buffers, thread variables
    launched more than once, used variables, whether there are blocks."""

    def __init__(self) -> None:
        self.used_buffers: dict[int, Buffer] = {}
        self.defined: set[int] = set()
        self.used_vars: set[int] = set()
        self.threads: dict[int, list] = {}  # var id -> [var, tag, launches]

    def visit_expr(self, expr: PrimExpr) -> None:
        # the left spine of a binary chain (a + b + c ...) iteratively: any length scans
        while type(expr) in _CHAIN:
            self.visit_expr(expr.b)
            expr = expr.a
        super().visit_expr(expr)

    def visit_buffer(self, buffer: Buffer) -> None:
        self.used_buffers.setdefault(id(buffer), buffer)

    def visit_var_(self, v: Var) -> None:
        self.used_vars.add(id(v))

    def visit_block_(self, op: Block) -> None:
        for buf in op.alloc_buffers:
            self.defined.add(id(buf))
        for match in op.match_buffers:
            self.defined.add(id(match.buffer))
        self.generic_visit(op)

    def visit_decl_buffer_(self, op: DeclBuffer) -> None:
        self.defined.add(id(op.buffer))
        self.generic_visit(op)

    def visit_attr_stmt_(self, op: AttrStmt) -> None:
        node = op.node
        if op.attr_key in _THREAD_KEYS and isinstance(node, IterVar):
            entry = self.threads.setdefault(id(node.var), [node.var, node.thread_tag, 0])
            entry[2] += 1
        self.generic_visit(op)


def _contains_block(stmt: Stmt) -> bool:
    from tvm.tir.stmt_functor import pre_order_visit

    found = False

    def visit(node: Any) -> Any:
        nonlocal found
        if found:
            return False
        if isinstance(node, (Block, BlockRealize)):
            found = True
            return False
        return None

    pre_order_visit(stmt, visit)
    return found


class TIRPrinter(ExprPrinter):
    """Prints one PrimFunc (or a statement/expression) with unique names.

    ``declare_free=False`` (for ``repr`` of a lone statement or expression) names unknown
    variables and buffers by their hints without declaring them.
    """

    def __init__(self, declare_free: bool = True):
        self.names = NameTable(_RESERVED)
        self.declare_free = declare_free
        self.decls: list[str] = []
        self.top_aliases: list[str] = []
        self.pending: dict[int, list[Buffer]] = {}
        self.loops: dict[int, For] = {}
        self.env_threads: set[int] = set()

    # -- names -------------------------------------------------------------------------------
    def var_ref(self, v: Var) -> str:
        name = self.names.get(v)
        if name is None:
            name = self.names.define(v, v.name)
            if self.declare_free:
                self.decls.append(f"{name} = {self._var_ctor(v)}")
        return name

    def let_var(self, v: Var) -> str:
        name = self.names.get(v)
        if name is None:
            name = self.names.define(v, v.name)
            self.decls.append(f"{name} = {self._var_ctor(v)}")
        return name

    @staticmethod
    def _var_ctor(v: Var) -> str:
        size = isinstance(v, SizeVar)
        if v.dtype.replace("_", "").isalnum():
            return f"T.{v.dtype}({'is_size_var=True' if size else ''})"
        return f"T.var({str_literal(v.dtype)}{', is_size_var=True' if size else ''})"

    def define_var(self, v: Var) -> str:
        return self.names.define(v, v.name)

    def buffer_ref(self, b: Buffer) -> str:
        name = self.names.get(b)
        if name is None:
            name = self.names.define(b, b.name, "buf")
            if self.declare_free:
                self.top_aliases.append(f"{name} = T.Buffer({self.buffer_args(b, True)})")
        return name

    def define_buffer(self, b: Buffer, data: Optional[bool] = None) -> tuple[str, str]:
        """Name a buffer being defined; ``(name, constructor arguments)``.

        The buffer owns its data variable (printed as ``name.data``) unless that variable is
        already named, then ``data=`` is spelled out (or when ``data`` forces it).
        """
        own = data is not True and b.data not in self.names
        name = self.names.define(b, b.name, "buf")
        args = self.buffer_args(b, not own)
        if own:
            self.names.alias(b.data, f"{name}.data")
        return name, args

    def shape(self, items: Any) -> str:
        inner = ", ".join(self.ex(s) for s in items)
        return f"({inner},)" if len(items) == 1 else f"({inner})"

    def buffer_args(self, b: Buffer, data: bool) -> str:
        parts = [self.shape(b.shape), str_literal(b.dtype)]
        if data:
            parts.append(f"data={self.var_ref(b.data)}")
        if b.strides:
            parts.append(f"strides={self.shape(b.strides)}")
        if b.elem_offset is not None:
            parts.append(f"elem_offset={self.ex(b.elem_offset)}")
        if b.scope != "global":
            parts.append(f"scope={str_literal(b.scope)}")
        if b.data_alignment != 64:
            parts.append(f"align={b.data_alignment}")
        if b.offset_factor != 1:
            parts.append(f"offset_factor={b.offset_factor}")
        if b.axis_separators:
            parts.append(f"axis_separators=[{', '.join(str(a) for a in b.axis_separators)}]")
        return ", ".join(parts)

    def flush(self, var: Var, doc: DocBuilder) -> None:
        """Declare the views over ``var`` right after its definition."""
        for buf in self.pending.pop(id(var), ()):
            if buf not in self.names:
                name = self.names.define(buf, buf.name, "buf")
                doc.line(f"{name} = T.Buffer({self.buffer_args(buf, True)})")

    # -- functions ---------------------------------------------------------------------------
    def print_func(self, func: PrimFunc, name: Optional[str] = None, header: bool = True) -> str:
        scan = _Scan()
        scan.visit(func.body)
        buffers = list(func.buffer_map.values())
        for buf in buffers:
            scan.visit_buffer(buf)
            scan.defined.add(id(buf))
        for buf in scan.used_buffers.values():
            if id(buf) not in scan.defined:
                self.pending.setdefault(id(buf.data), []).append(buf)

        attrs = dict(func.attrs or {})
        symbol = attrs.get("global_symbol")
        fname = sanitize_name(name or (symbol if isinstance(symbol, str) else None) or "main",
                              "main")
        if symbol == fname:
            del attrs["global_symbol"]

        sig, matched = [], []
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None and self._inline_ok(buf, p, scan):
                bname, args = self.define_buffer(buf)
                sig.append(f"{bname}: T.Buffer({args})")
            elif buf is not None:
                hint = f"var_{p.name}" if p.name == buf.name else p.name
                sig.append(f"{self.names.define(p, hint)}: T.handle")
                matched.append((p, buf))
            else:
                sig.append(f"{self.define_var(p)}: {self._param_annotation(p)}")

        for var, tag, launches in scan.threads.values():
            if launches > 1 and var not in self.names:
                self.env_threads.add(id(var))
                self.decls.append(f"{self.define_var(var)} = T.env_thread({str_literal(tag)})")

        body = DocBuilder(depth=1)
        for p, buf in matched:
            bname, args = self.define_buffer(buf)
            body.line(f"{bname} = T.match_buffer({self.names.get(p)}, {args})")
        for p in func.params:
            self.flush(p, body)
        for buf in buffers:
            self.flush(buf.data, body)
        self._func_body(func.body, body)

        lines = ["# from tvm.script import tir as T", ""] if header else []
        lines.append("@T.prim_func" + ("" if symbol is not None else "(private=True)"))
        ret = "" if func.ret_type == "void" else f" -> {dtype_text(func.ret_type)}"
        lines.append(f"def {fname}({', '.join(sig)}){ret}:")
        top = DocBuilder(depth=1)
        if attrs:
            top.line(f"T.func_attr({self.value(attrs)})")
        top.extend("    " + d for d in self.decls)
        top.extend("    " + a for a in self.top_aliases)
        lines.extend(top.lines)
        lines.extend(body.lines)
        if not top.lines and not body.lines:
            lines.append("    pass")
        return "\n".join(lines) + "\n"

    def _inline_ok(self, buf: Buffer, param: Var, scan: _Scan) -> bool:
        if id(param) in scan.used_vars:
            return False
        exprs = [*buf.shape, *buf.strides]
        if buf.elem_offset is not None:
            exprs.append(buf.elem_offset)
        return all(v in self.names for e in exprs for v in free_vars(e))

    @staticmethod
    def _param_annotation(p: Var) -> str:
        if isinstance(p, SizeVar):
            return TIRPrinter._var_ctor(p)
        return dtype_text(p.dtype)

    def _func_body(self, body: Stmt, doc: DocBuilder) -> None:
        if self._implicit_root(body):
            block = body.block  # type: ignore[attr-defined]
            doc.line('# with T.block("root"):')
            for buf in block.alloc_buffers:
                self._alloc_buffer(buf, doc)
            self.stmt(block.body, doc, True)
        else:
            self.stmt(body, doc, True)

    @staticmethod
    def _implicit_root(body: Stmt) -> bool:
        """Whether the parser would re-create this root block from the elided form."""
        if not isinstance(body, BlockRealize) or body.iter_values or not _is_true(body.predicate):
            return False
        b = body.block
        if (b.iter_vars or b.reads or b.writes or b.init is not None or b.match_buffers
                or b.annotations or b.name_hint != "root"):
            return False
        if not b.alloc_buffers:
            inner = b.body
            if isinstance(inner, BlockRealize) and not inner.block.iter_vars:
                return False
            return _contains_block(inner)
        return True

    # -- statements --------------------------------------------------------------------------
    def stmt(self, s: Stmt, doc: DocBuilder, last: bool) -> None:
        """Print ``s``; ``last`` tells whether it ends its statement list (concise forms)."""
        method = _STMTS.get(type(s))
        if method is None:
            doc.line(f"# TVMScript cannot express {type(s).__name__}: {s!r}")
            doc.line("pass")
            return
        method(self, s, doc, last)

    def _body(self, s: Stmt, doc: DocBuilder) -> None:
        with doc.indent():
            self.stmt(s, doc, True)

    def _scoped(self, s: Any, doc: DocBuilder, last: bool, text: str, name: Optional[str],
                define: Any = None) -> None:
        """A scoped statement: ``name = text`` + body, or ``with text as name:`` + body."""
        if last:
            doc.line(f"{name} = {text}" if name else text)
            if define is not None:
                self.flush(define, doc)
            self.stmt(s.body, doc, True)
        else:
            doc.line(f"with {text} as {name}:" if name else f"with {text}:")
            with doc.indent():
                if define is not None:
                    self.flush(define, doc)
                self.stmt(s.body, doc, True)

    def _seq(self, s: SeqStmt, doc: DocBuilder, last: bool) -> None:
        if not s.seq:
            doc.line("pass")
        for k, child in enumerate(s.seq):
            self.stmt(child, doc, last and k == len(s.seq) - 1)

    def _store(self, s: BufferStore, doc: DocBuilder, last: bool) -> None:
        doc.line(f"{self.buffer_ref(s.buffer)}[{self.indices(s.indices)}] = {self.ex(s.value)}")

    def _evaluate(self, s: Evaluate, doc: DocBuilder, last: bool) -> None:
        doc.line(f"T.evaluate({self.ex(s.value)})")

    def _if(self, s: IfThenElse, doc: DocBuilder, last: bool) -> None:
        doc.line(f"if {self.ex(s.condition)}:")
        self._body(s.then_case, doc)
        other = s.else_case
        while isinstance(other, IfThenElse):
            doc.line(f"elif {self.ex(other.condition)}:")
            self._body(other.then_case, doc)
            other = other.else_case
        if other is not None:
            doc.line("else:")
            self._body(other, doc)

    def _while(self, s: While, doc: DocBuilder, last: bool) -> None:
        doc.line(f"while {self.ex(s.condition)}:")
        self._body(s.body, doc)

    def _let(self, s: LetStmt, doc: DocBuilder, last: bool) -> None:
        value = self.ex(s.value)
        name = self.define_var(s.var)
        if last:
            doc.line(f"{name}: {dtype_text(s.var.dtype)} = {value}")
            self.flush(s.var, doc)
            self.stmt(s.body, doc, True)
        else:
            self._scoped(s, doc, False, f"T.LetStmt({value})", name, s.var)

    def _assert(self, s: AssertStmt, doc: DocBuilder, last: bool) -> None:
        cond, msg = self.ex(s.condition), str_literal(s.message)
        if last and not s.message_args:
            doc.line(f"assert {cond}, {msg}")
            self.stmt(s.body, doc, True)
            return
        extra = f", [{self.args(s.message_args)}]" if s.message_args else ""
        self._scoped(s, doc, last, f"T.Assert({cond}, {msg}{extra})", None)

    def _attr(self, s: AttrStmt, doc: DocBuilder, last: bool) -> None:
        node = s.node
        if self._launch_sugar(s):
            value = self.ex(s.value)
            if id(node.var) in self.env_threads:
                self._scoped(s, doc, last, f"T.launch_thread({self.var_ref(node.var)}, {value})",
                             None)
            else:
                name = self.define_var(node.var)
                text = f"T.launch_thread({str_literal(node.thread_tag)}, {value})"
                self._scoped(s, doc, last, text, name)
            return
        text = f"T.attr({self.value(node)}, {str_literal(s.attr_key)}, {self.ex(s.value)})"
        self._scoped(s, doc, last, text, None)

    def _launch_sugar(self, s: AttrStmt) -> bool:
        node = s.node
        if s.attr_key not in _THREAD_KEYS or not isinstance(node, IterVar):
            return False
        if node.iter_type != IterVarType.THREAD_INDEX or node.dom is None:
            return False
        if (s.attr_key == "virtual_thread") != node.thread_tag.startswith("vthread"):
            return False
        if not is_const_int(node.dom.min, 0) or not structural_equal(node.dom.extent, s.value):
            return False
        if node.var.dtype != s.value.dtype or node.dom.min.dtype != s.value.dtype:
            return False
        return id(node.var) in self.env_threads or node.var not in self.names

    def _allocate(self, s: Allocate, doc: DocBuilder, last: bool) -> None:
        body = s.body
        if self._decl_sugar(s):
            name, args = self.define_buffer(body.buffer)
            self._scoped(body, doc, last, f"T.decl_buffer({args})", name, s.buffer_var)
            return
        parts = [f"[{self.args(s.extents)}]", str_literal(s.dtype), str_literal(s.scope)]
        if not _is_true(s.condition):
            parts.append(f"condition={self.ex(s.condition)}")
        if s.annotations:
            parts.append(f"annotations={self.value(dict(s.annotations))}")
        name = self.define_var(s.buffer_var)
        self._scoped(s, doc, last, f"T.allocate({', '.join(parts)})", name, s.buffer_var)

    def _decl_sugar(self, s: Allocate) -> bool:
        body = s.body
        if not isinstance(body, DeclBuffer) or body.buffer.data is not s.buffer_var:
            return False
        buf = body.buffer
        return (
            buf.dtype == s.dtype and buf.scope == s.scope and _is_true(s.condition)
            and not s.annotations and s.buffer_var not in self.names
            and len(buf.shape) == len(s.extents)
            and all(a is b or structural_equal(a, b) for a, b in zip(buf.shape, s.extents))
        )

    def _decl_buffer(self, s: DeclBuffer, doc: DocBuilder, last: bool) -> None:
        name, args = self.define_buffer(s.buffer, data=True)
        self._scoped(s, doc, last, f"T.decl_buffer({args})", name)

    # -- loops -------------------------------------------------------------------------------
    def _plain(self, loop: For) -> bool:
        return (
            loop.kind == ForKind.SERIAL and isinstance(loop.min, IntImm) and loop.min.value == 0
            and loop.min.dtype == loop.extent.dtype == loop.loop_var.dtype
            and not loop.annotations and loop.thread_binding is None
        )

    def _for(self, loop: For, doc: DocBuilder, last: bool) -> None:
        if self._plain(loop):
            loops = [loop]
            while isinstance(loops[-1].body, For) and self._plain(loops[-1].body):
                inner = loops[-1].body
                outer = {id(x.loop_var) for x in loops}
                if any(id(v) in outer for v in free_vars(inner.extent)):
                    break
                loops.append(inner)
            extents = [self.ex(x.extent) for x in loops]
            names = [self.define_var(x.loop_var) for x in loops]
            if len(loops) == 1:
                doc.line(f"for {names[0]} in range({extents[0]}):")
            else:
                doc.line(f"for {', '.join(names)} in T.grid({', '.join(extents)}):")
        else:
            loops = [loop]
            func = _LOOP_FUNCS[loop.kind]
            if is_const_int(loop.min, 0) and loop.min.dtype == loop.extent.dtype:
                args = [self.ex(loop.extent)]
            else:
                args = [self.ex(loop.min), self.stop(loop.min, loop.extent)]
            if loop.kind == ForKind.THREAD_BINDING:
                args.append(f"thread={self._thread(loop)}")
            if loop.annotations:
                args.append(f"annotations={self.value(dict(loop.annotations))}")
            name = self.define_var(loop.loop_var)
            doc.line(f"for {name} in T.{func}({', '.join(args)}):")
        for x in loops:
            self.loops[id(x.loop_var)] = x
        self._body(loops[-1].body, doc)
        for x in loops:
            self.loops.pop(id(x.loop_var), None)

    def _thread(self, loop: For) -> str:
        iv = loop.thread_binding
        if iv is None:
            return '""'
        if (iv.dom is None and iv.iter_type == IterVarType.THREAD_INDEX
                and iv.var.dtype == loop.loop_var.dtype and iv.var not in self.names):
            return str_literal(iv.thread_tag)
        return self.value(iv)

    # -- blocks ------------------------------------------------------------------------------
    def _block_realize(self, s: BlockRealize, doc: DocBuilder, last: bool) -> None:
        self._block(s.block, s, doc)

    def _bare_block(self, s: Block, doc: DocBuilder, last: bool) -> None:
        self._block(s, None, doc)

    def _block(self, block: Block, realize: Optional[BlockRealize], doc: DocBuilder) -> None:
        extra = "" if realize is not None else ", no_realize=True"
        doc.line(f"with T.block({str_literal(block.name_hint)}{extra}):")
        with doc.indent():
            values = realize.iter_values if realize is not None else [None] * len(block.iter_vars)
            self._axes(block.iter_vars, values, doc)
            if realize is not None and not _is_true(realize.predicate):
                doc.line(f"T.where({self.ex(realize.predicate)})")
            own = {id(b) for b in block.alloc_buffers} | {id(m.buffer) for m in block.match_buffers}
            early = any(id(r.buffer) in own for r in (*block.reads, *block.writes))
            if early:
                self._block_buffers(block, doc)
            doc.line(f"T.reads({', '.join(self.region(r) for r in block.reads)})")
            doc.line(f"T.writes({', '.join(self.region(r) for r in block.writes)})")
            if block.annotations:
                doc.line(f"T.block_attr({self.value(dict(block.annotations))})")
            if not early:
                self._block_buffers(block, doc)
            if block.init is not None:
                doc.line("with T.init():")
                self._body(block.init, doc)
            self.stmt(block.body, doc, True)

    def _block_buffers(self, block: Block, doc: DocBuilder) -> None:
        for buf in block.alloc_buffers:
            self._alloc_buffer(buf, doc)
        for match in block.match_buffers:
            source = self.region(match.source)
            name, args = self.define_buffer(match.buffer)
            doc.line(f"{name} = T.match_buffer({source}, {args})")
            self.flush(match.buffer.data, doc)

    def _alloc_buffer(self, buf: Buffer, doc: DocBuilder) -> None:
        name, args = self.define_buffer(buf)
        doc.line(f"{name} = T.alloc_buffer({args})")
        self.flush(buf.data, doc)

    def _axes(self, iter_vars: Any, values: Any, doc: DocBuilder) -> None:
        k, n = 0, len(iter_vars)
        while k < n:
            run = k
            while run < n and self._remappable(iter_vars[run], values[run]):
                run += 1
            if run - k >= 2:
                bindings = ", ".join(self.ex(values[j]) for j in range(k, run))
                kinds = "".join(_REMAP_KINDS[iter_vars[j].iter_type] for j in range(k, run))
                names = ", ".join(self.define_var(iter_vars[j].var) for j in range(k, run))
                doc.line(f"{names} = T.axis.remap({str_literal(kinds)}, [{bindings}])")
                k = run
                continue
            iv, value = iter_vars[k], values[k]
            args = [self._dom(iv.dom)]
            if value is not None:
                args.append(self.ex(value))
            if iv.var.dtype != (value.dtype if isinstance(value, PrimExpr) else "int32"):
                args.append(f"dtype={str_literal(iv.var.dtype)}")
            func = _AXIS_FUNCS.get(iv.iter_type, "opaque")
            doc.line(f"{self.define_var(iv.var)} = T.axis.{func}({', '.join(args)})")
            k += 1

    def _remappable(self, iv: IterVar, value: Any) -> bool:
        if iv.iter_type not in _REMAP_KINDS or not isinstance(value, Var) or iv.dom is None:
            return False
        loop = self.loops.get(id(value))
        if loop is None or iv.var.dtype != value.dtype or iv.thread_tag:
            return False
        return structural_equal(iv.dom.min, loop.min) and structural_equal(iv.dom.extent,
                                                                           loop.extent)

    def _dom(self, dom: Any) -> str:
        if dom is None:
            return "None"
        if is_const_int(dom.min, 0) and dom.min.dtype == dom.extent.dtype:
            return self.ex(dom.extent)
        return f"({self.ex(dom.min)}, {self.stop(dom.min, dom.extent)})"


_STMTS: dict[type, Any] = {
    SeqStmt: TIRPrinter._seq, BufferStore: TIRPrinter._store, Evaluate: TIRPrinter._evaluate,
    IfThenElse: TIRPrinter._if, While: TIRPrinter._while, LetStmt: TIRPrinter._let,
    AssertStmt: TIRPrinter._assert, AttrStmt: TIRPrinter._attr, Allocate: TIRPrinter._allocate,
    DeclBuffer: TIRPrinter._decl_buffer, For: TIRPrinter._for,
    BlockRealize: TIRPrinter._block_realize, Block: TIRPrinter._bare_block,
}


def print_prim_func(func: PrimFunc, name: Optional[str] = None, header: bool = True) -> str:
    """The TVMScript of ``func`` (``@T.prim_func def name(...): ...``)."""
    with deep_recursion():
        return TIRPrinter().print_func(func, name, header)


def script(node: Any, name: Optional[str] = None) -> str:
    """TVMScript text of a PrimFunc, statement, expression, buffer or region."""
    if isinstance(node, PrimFunc):
        return print_prim_func(node, name)
    printer = TIRPrinter(declare_free=False)
    if isinstance(node, Stmt):
        doc = DocBuilder()
        with deep_recursion():
            printer.stmt(node, doc, True)
        return doc.text().rstrip("\n")
    if isinstance(node, PrimExpr):
        with deep_recursion():
            return printer.ex(node)
    if isinstance(node, Buffer):
        return f"{sanitize_name(node.name, 'buf')}: T.Buffer({printer.buffer_args(node, False)})"
    if isinstance(node, BufferRegion):
        return printer.region(node)
    return printer.value(node)


def safe_repr(node: Any) -> str:
    """TVMScript for ``repr``; falls back to the field dump rather than failing."""
    try:
        return script(node)
    except Exception:  # noqa: BLE001 - repr must not fail
        from tvm.ffi.object import generic_repr

        return generic_repr(node)
