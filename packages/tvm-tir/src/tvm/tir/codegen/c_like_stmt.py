"""Statements of the C-like printer (mixed into :class:`~.c_like.CLikePrinter`).

Each statement kind is printed by ``_s_<kind>(stmt)``, emitting lines into the current
function.  Two statements are *outlined* into separate C functions:

* a ``PARALLEL`` loop becomes a lambda ``int32_t f(int32_t task_id, int32_t num_task,
  void* cdata)`` that runs one contiguous chunk of the iterations; the variables it uses
  travel in a closure struct, and the loop is launched through the runtime's
  ``__TVMBackendParallelLaunch`` (``docs/abi.md``), serially when no runtime filled it;
* with ``outline_compute_scope``, the ``compute_scope`` of a packed function (everything
  after the argument checks) becomes a static function whose pointer parameters are
  ``restrict`` when the PrimFunc has ``tir.noalias``.
"""

from __future__ import annotations

from typing import Any, Optional

from ..buffer import Buffer
from ..expr import (
    Add, BufferLoad, Call, Cast, FloatImm, IntImm, IterVar, Mul, PrimExpr, Ramp, StringImm,
    Sub, Var,
)
from ..functor import StmtExprVisitor, snake_name
from ..stmt import (
    Allocate, AssertStmt, AttrStmt, BufferStore, DeclBuffer, Evaluate, For, ForKind,
    IfThenElse, LetStmt, SeqStmt, Stmt, While,
)
from ..stmt_functor import pre_order_visit
from .c_types import CodegenError, count_printf_conversions, dtype_of

__all__ = ["StmtPrinterMixin", "captured_vars", "negate", "unparen"]


def unparen(text: str) -> str:
    """``(a < b)`` -> ``a < b`` when the outer parentheses enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return text
    return text[1:-1]


class _VarUses(StmtExprVisitor):
    """Variables a statement reads, in first-use order, and those it binds itself."""

    def __init__(self) -> None:
        self.used: dict[int, Var] = {}
        self.bound: set[int] = set()

    def visit_var_(self, v: Var) -> None:
        self.used.setdefault(id(v), v)

    def visit_size_var_(self, v: Var) -> None:
        self.used.setdefault(id(v), v)

    def visit_buffer(self, buffer: Buffer) -> None:
        self.visit_var_(buffer.data)
        for e in (*buffer.shape, *buffer.strides):
            self.visit_expr(e)
        if buffer.elem_offset is not None:
            self.visit_expr(buffer.elem_offset)

    def visit_for_(self, s: For) -> None:
        self.bound.add(id(s.loop_var))
        self.generic_visit(s)

    def visit_let_stmt_(self, s: LetStmt) -> None:
        self.bound.add(id(s.var))
        self.generic_visit(s)

    def visit_let_(self, e: Any) -> None:
        self.bound.add(id(e.var))
        self.generic_visit(e)

    def visit_allocate_(self, s: Allocate) -> None:
        self.bound.add(id(s.buffer_var))
        self.generic_visit(s)

    def visit_attr_stmt_(self, s: AttrStmt) -> None:
        if isinstance(s.node, IterVar):
            self.bound.add(id(s.node.var))
        self.generic_visit(s)


def captured_vars(node: Any, exclude: tuple = ()) -> list[Var]:
    """Variables ``node`` uses without binding them (loop, let and allocation variables
    bound inside are excluded), in first-use order."""
    uses = _VarUses()
    uses.visit(node)
    skip = uses.bound | {id(v) for v in exclude}
    return [v for k, v in uses.used.items() if k not in skip]


def negate(cond: str) -> str:
    """``!cond`` with the parentheses the text needs."""
    return f"!{cond}" if unparen(cond) != cond else f"!({cond})"


def _is_simple(e: PrimExpr, depth: int = 0) -> bool:
    """Cheap, side-effect-free expressions that may be re-evaluated (loop bounds)."""
    if isinstance(e, (IntImm, FloatImm, Var)):
        return True
    if depth < 3 and isinstance(e, (Add, Sub, Mul)):
        return _is_simple(e.a, depth + 1) and _is_simple(e.b, depth + 1)
    if depth < 3 and isinstance(e, Cast):
        return _is_simple(e.value, depth + 1)
    return False


def _reads(node: Any, data: Var) -> bool:
    found = False

    def f(x: Any) -> Any:
        nonlocal found
        if found:
            return False
        if isinstance(x, BufferLoad) and x.buffer.data is data:
            found = True
            return False
        return None

    pre_order_visit(node, f)
    return found


class StmtPrinterMixin:
    """Statement printing; relies on the state and hooks of :class:`CLikePrinter`."""

    def stmt(self, s: Stmt) -> None:
        """Emit the lines of statement ``s`` into the current function."""
        fn = getattr(self, f"_s_{snake_name(type(s))}", None)
        if fn is None:
            for cls in type(s).__mro__[1:]:
                fn = getattr(self, f"_s_{snake_name(cls)}", None)
                if fn is not None:
                    break
        if fn is None:
            raise CodegenError(f"{self.language} codegen: cannot print statement "
                               f"{type(s).__name__}")
        fn(s)

    # ------------------------------------------------------------------ simple statements
    def _s_seq_stmt(self, s: SeqStmt) -> None:
        for item in s.seq:
            self.stmt(item)

    def _s_evaluate(self, s: Evaluate) -> None:
        v = s.value
        if not isinstance(v, Call):
            return  # constants and variables have no effect
        name = getattr(v.op, "name", "")
        if name == "tir.ret":
            self.emit(f"return {self.expr(v.args[0])};")
            return
        if name == "tir.assume":
            return
        if dtype_of(v.dtype).lanes > 1 and self.vector_mode != "native":
            lv = self.st.names.fresh("l")
            text = self.lane(v, lv)
            self.emit(f"for (int32_t {lv} = 0; {lv} < {dtype_of(v.dtype).lanes}; ++{lv}) "
                      f"{{ (void)({text}); }}")
            self.st.names.release(lv)
            return
        self.emit(f"{self.expr(v)};")

    def _s_let_stmt(self, s: LetStmt) -> None:
        self.bind_value(s.var, s.value)
        self.stmt(s.body)
        self.unbind_var(s.var)

    def _s_decl_buffer(self, s: DeclBuffer) -> None:
        self.stmt(s.body)

    def _s_block(self, s: Any) -> None:
        raise CodegenError(f"{self.language} codegen: block {s.name_hint!r} is still in the "
                           "function; lower it first (tir.lower / LowerOpaqueBlock)")

    def _s_block_realize(self, s: Any) -> None:
        self._s_block(s.block)

    # ------------------------------------------------------------------ control flow
    def _s_if_then_else(self, s: IfThenElse) -> None:
        cond = self.expr(s.condition)
        self.open_block(f"if ({unparen(cond)}) {{")
        self.stmt(s.then_case)
        if s.else_case is not None:
            self.reopen_block("} else {")
            self.stmt(s.else_case)
        self.close_block()

    def _s_while(self, s: While) -> None:
        header = self.open_block("while (1) {")
        before = len(self.st.lines)
        cond = self.expr(s.condition)
        if len(self.st.lines) == before:  # nothing hoisted: a plain while loop
            self.st.lines[header] = self.st.lines[header].replace(
                "while (1) {", f"while ({unparen(cond)}) {{")
        else:
            self.emit(f"if ({negate(cond)}) break;")
        self.stmt(s.body)
        self.close_block()

    def assert_message(self, s: AssertStmt) -> tuple[str, tuple]:
        """The printf format of ``s``'s message (``%`` escaped when it has no arguments)
        and its arguments; a CodegenError when their counts disagree."""
        args = tuple(s.message_args)
        wanted = count_printf_conversions(s.message)
        if args and wanted != len(args):
            raise CodegenError(
                f"{self.language} codegen: assert message {s.message!r} has {wanted} printf "
                f"conversions but {len(args)} message_args"
            )
        return (s.message if args else s.message.replace("%", "%%")), args

    def _s_assert_stmt(self, s: AssertStmt) -> None:
        if not self.supports_error_reporting:
            self.stmt(s.body)
            return
        fmt, args = self.assert_message(s)
        self.open_block(f"if ({negate(self.expr(s.condition))}) {{")
        parts = [self.string_literal(fmt)]
        parts += [f"(long long)({unparen(self.expr(a))})" for a in args]
        self.emit(self.fail_return(f"{self.helper_report_error()}({', '.join(parts)})"))
        self.close_block()
        self.stmt(s.body)

    def _s_attr_stmt(self, s: AttrStmt) -> None:
        key = s.attr_key
        if key == "compute_scope":
            self.print_compute_scope(s)
        elif key == "thread_extent" and isinstance(s.node, IterVar):
            iv = s.node
            name = self.declare_var(iv.var)
            t = self.type_name(dtype_of(iv.var.dtype))
            self.emit(self.declaration(t, name,
                                       unparen(self.c_cast(t, self.thread_index(iv.thread_tag)))))
            self.stmt(s.body)
            self.unbind_var(iv.var)
        elif key == "virtual_thread":
            raise CodegenError(f"{self.language} codegen: virtual threads must be lowered "
                               "before code generation")
        else:
            self.stmt(s.body)

    # ------------------------------------------------------------------ loops
    def _s_for(self, s: For) -> None:
        if s.kind == ForKind.PARALLEL and self.supports_parallel_launch:
            self.print_parallel_for(s)
        elif s.kind == ForKind.THREAD_BINDING:
            self.print_thread_binding_for(s)
        else:
            pragma = None
            if s.kind == ForKind.UNROLLED:
                ext = s.extent.value if isinstance(s.extent, IntImm) else None
                pragma = self.unroll_pragma(ext)
            self.print_serial_for(s, pragma)

    def loop_end(self, s: For) -> tuple[str, str]:
        """C texts of the loop's first value and (exclusive) end, hoisting complex ones."""
        d = dtype_of(s.loop_var.dtype)
        start = self.expr(s.min)
        if isinstance(s.min, IntImm) and s.min.value == 0:
            end = self.expr(s.extent)
            simple = _is_simple(s.extent)
        else:
            end = self.binop("+", start, self.expr(s.extent), d)
            simple = _is_simple(s.min) and _is_simple(s.extent)
        if not simple:
            name = self.declare_name(f"{s.loop_var.name}_end")
            self.emit(self.declaration(self.type_name(d), name, end))
            end = name
            if not _is_simple(s.min):
                sname = self.declare_name(f"{s.loop_var.name}_start")
                self.emit(self.declaration(self.type_name(d), sname, start))
                start = sname
        return start, end

    def print_serial_for(self, s: For, pragma: Optional[str] = None) -> None:
        d = dtype_of(s.loop_var.dtype)
        start, end = self.loop_end(s)
        if pragma:
            self.emit(pragma)
        name = self.st.names.fresh(s.loop_var.name)
        self.open_block(self.for_header(self.type_name(d), name, unparen(start), unparen(end)))
        self.st.scopes[-1].append(name)
        self.map_var(s.loop_var, name)
        self.stmt(s.body)
        self.unbind_var(s.loop_var)
        self.close_block()

    def print_thread_binding_for(self, s: For) -> None:
        iv = s.thread_binding
        tag = iv.thread_tag if iv is not None else s.annotations.get("thread_tag", "")
        if not tag:
            raise CodegenError(f"{self.language} codegen: loop {s.loop_var.name!r} is bound to "
                               "a thread but names no thread tag")
        d = dtype_of(s.loop_var.dtype)
        self.open_block("{")
        name = self.declare_var(s.loop_var)
        value = unparen(self.c_cast(self.type_name(d), self.thread_index(tag)))
        if not (isinstance(s.min, IntImm) and s.min.value == 0):
            value = self.binop("+", self.expr(s.min), value, d)
        self.emit(self.declaration(self.type_name(d), name, value))
        self.stmt(s.body)
        self.unbind_var(s.loop_var)
        self.close_block()

    # ------------------------------------------------------------------ memory
    def _s_buffer_store(self, s: BufferStore) -> None:
        buf = s.buffer
        index = self.flat_index(buf, s.indices)
        self.note_buffer_use(buf)
        vd = dtype_of(s.value.dtype)
        lanes = max(vd.lanes, dtype_of(index.dtype).lanes * dtype_of(buf.dtype).lanes)
        if lanes == 1:
            self.emit(f"{self.buffer_ptr(buf)}[{unparen(self.expr(index))}] = "
                      f"{unparen(self.expr(s.value))};")
            return
        if self.vector_mode == "native":
            self._native_vector_store(s, buf, index, vd)
            return
        ptr = self.buffer_ptr(buf)
        lv = self.st.names.fresh("l")
        value = self.lane(s.value, lv)
        idx = unparen(self.element_index(buf, index, lv))
        loop = f"for (int32_t {lv} = 0; {lv} < {lanes}; ++{lv})"
        if _reads(s.value, buf.data):  # all lanes are read before any is written
            tmp = self.declare_name("vtmp")
            self.emit(f"{self.type_name(vd.element)} {tmp}[{lanes}];")
            self.emit(f"{loop} {{ {tmp}[{lv}] = {unparen(value)}; }}")
            self.emit(f"{loop} {{ {ptr}[{idx}] = {tmp}[{lv}]; }}")
        else:
            self.emit(f"{loop} {{ {ptr}[{idx}] = {unparen(value)}; }}")
        self.st.names.release(lv)

    def _native_vector_store(self, s: BufferStore, buf: Buffer, index: PrimExpr, vd: Any) -> None:
        if (dtype_of(buf.dtype).lanes == 1 and isinstance(index, Ramp)
                and isinstance(index.stride, IntImm) and index.stride.value == 1):
            self.emit(self.vector_store(buf, self.expr(index.base), self.expr(s.value), vd) + ";")
            return
        tmp = self.declare_name("vtmp")
        self.emit(self.declaration(self.type_name(vd), tmp, self.expr(s.value)))
        ptr = self.buffer_ptr(buf)
        for i in range(vd.lanes):
            idx = unparen(self.element_index(buf, index, i))
            self.emit(f"{ptr}[{idx}] = {self.vector_lane(tmp, vd, i)};")

    def _s_allocate(self, s: Allocate) -> None:
        d = dtype_of(s.dtype)
        elem = d.element
        ctype = self.type_name(elem)
        count: Optional[int] = d.lanes
        for e in s.extents:
            count = count * e.value if (count is not None and isinstance(e, IntImm)) else None
        qualifier = self.storage_scope_qualifier(s.scope)
        self.st.ptr_elem[s.buffer_var] = elem
        self.st.ptr_scope[s.buffer_var] = s.scope
        name = self.declare_var(s.buffer_var)
        storage = (s.annotations or {}).get("storage")  # set by LowerAllocation
        if count is None:
            on_stack = False
        elif qualifier or storage == "stack":
            on_stack = True
        elif storage == "heap":
            on_stack = False
        else:
            on_stack = count * elem.nbytes <= self.max_stack_alloc_bytes
        if on_stack:
            self.emit(f"{qualifier}{ctype} {name}[{max(count, 1)}]{self.array_alignment};")
            self.stmt(s.body)
        else:
            if s.scope not in ("global", "local", ""):
                raise CodegenError(
                    f"{self.language} codegen: allocation {s.buffer_var.name!r} in scope "
                    f"{s.scope!r} needs a constant size, got extents {tuple(s.extents)}")
            size = self.int_literal(d.lanes, dtype_of("int64"))
            for e in s.extents:
                size = f"{size} * (int64_t)({self.expr(e)})"
            ptr_t = self.pointer_type(elem, s.scope)
            nbytes = self.declare_name(f"{s.buffer_var.name}_nbytes")
            self.emit(f"int64_t {nbytes} = {size} * (int64_t)sizeof({ctype});")
            self.emit(f"{ptr_t} {name} = ({ptr_t}){self.helper_alloc()}((size_t){nbytes});")
            if self.supports_error_reporting:
                msg = self.string_literal(f"{self.st.name}: cannot allocate %lld bytes for "
                                          f"{s.buffer_var.name}")
                self.open_block(f"if ({name} == {self.null_pointer}) {{")
                self.emit(self.fail_return(f"{self.helper_report_error()}({msg}, "
                                           f"(long long){nbytes})"))
                self.close_block()
            self.stmt(s.body)
            self.emit(f"free({name});")
        self.unbind_var(s.buffer_var)

    # ------------------------------------------------------------------ outlining
    def capture_field_type(self, v: Var) -> str:
        """C type of a captured variable in a closure struct or outlined parameter list."""
        d = dtype_of(v.dtype)
        if v in self.st.vector_arrays:
            return self.pointer_type(d.element, "local")
        return self.var_type(v)

    def _visible_captures(self, node: Any, exclude: tuple = ()) -> list[Var]:
        caps = captured_vars(node, exclude)
        if self.st.lenient:  # debugging printouts: free variables get names here
            for v in caps:
                self.var_name(v)
        return [v for v in caps if self.is_bound(v)]

    def print_parallel_for(self, s: For) -> None:
        """Outline ``s`` into a parallel lambda launched through the runtime's pool."""
        parent = self.st
        caps = self._visible_captures(s, (s.loop_var,))
        fname = self.global_names.fresh(f"{parent.name}_parallel")
        closure_t = self.global_names.fresh(f"{fname}_closure") if caps else None
        fields = [(self.capture_field_type(v), parent.current_name(v)) for v in caps]
        st = self.push_function(fname, "int32", parent.restrict, seed=[(v, n) for v, n in
                                                                       zip(caps, (f[1] for f in fields))])
        try:
            task, ntask, cdata = (st.names.fresh(n) for n in ("task_id", "num_task", "cdata"))
            for v in caps:
                if v in parent.vector_arrays:
                    st.vector_arrays.add(v)
            if caps:
                cl = st.names.fresh("closure")
                self.emit(f"{closure_t}* {cl} = ({closure_t}*){cdata};")
                for (ftype, fname_), v in zip(fields, caps):
                    ltype = self.restrict_type(ftype, v)
                    self.emit(f"{ltype} {fname_} = {cl}->{fname_};")
            else:
                self.emit(f"(void){cdata};")
            d = dtype_of(s.loop_var.dtype)
            t = self.type_name(d)
            ext, chunk, begin, end = (st.names.fresh(n) for n in ("extent", "chunk", "begin",
                                                                   "end"))
            self.emit(f"{t} {ext} = {unparen(self.expr(s.extent))};")
            self.emit(f"{t} {chunk} = ({ext} + {ntask} - 1) / {ntask};")
            self.emit(f"{t} {begin} = ({t}){task} * {chunk};")
            self.emit(f"{t} {end} = {begin} + {chunk} < {ext} ? {begin} + {chunk} : {ext};")
            zero_min = isinstance(s.min, IntImm) and s.min.value == 0
            k = st.names.fresh(s.loop_var.name if zero_min else "k")
            self.open_block(f"for ({t} {k} = {begin}; {k} < {end}; ++{k}) {{")
            if zero_min:
                self.map_var(s.loop_var, k)
            else:
                name = self.declare_var(s.loop_var)
                self.emit(f"{t} {name} = {self.binop('+', self.expr(s.min), k, d)};")
            self.stmt(s.body)
            self.unbind_var(s.loop_var)
            self.close_block()
            self.emit("return 0;")
            body = st.lines
        finally:
            self.pop_function()
        if caps:
            members = "".join(f"  {ftype} {fname_};\n" for ftype, fname_ in fields)
            self.add_aux(f"typedef struct {{\n{members}}} {closure_t};")
        header = (f"{self.static_qualifier} int32_t {fname}(int32_t {task}, int32_t {ntask}, "
                  f"void* {cdata})")
        self.add_aux(header + " {\n" + "\n".join(body) + "\n}")
        launch = self.helper_parallel_launch()
        self.open_block("{")
        arg = "NULL"
        if caps:
            cl = self.declare_name("closure")
            self.emit(f"{closure_t} {cl} = {{{', '.join(f[1] for f in fields)}}};")
            arg = f"&{cl}"
        rc = self.declare_name("rc")
        self.emit(f"int32_t {rc} = {launch}({fname}, {arg});")
        self.emit(f"if ({rc} != 0) {self.fail_return(rc)}")
        self.close_block()

    def print_compute_scope(self, s: AttrStmt) -> None:
        """The body of a packed function after its argument checks (``compute_scope``)."""
        if not self.outline_compute_scope:
            self.stmt(s.body)
            return
        parent = self.st
        hint = s.value.value if isinstance(s.value, StringImm) else f"{parent.name}_compute_"
        caps = self._visible_captures(s.body)
        fname = self.global_names.fresh(hint)
        params = [(self.capture_field_type(v), parent.current_name(v)) for v in caps]
        st = self.push_function(fname, "int32", parent.restrict,
                                seed=[(v, p[1]) for v, p in zip(caps, params)])
        try:
            for v in caps:
                if v in parent.vector_arrays:
                    st.vector_arrays.add(v)
            self.stmt(s.body)
            self.emit("return 0;")
            body = st.lines
        finally:
            self.pop_function()
        plist = ", ".join(f"{self.restrict_type(t, v)} {n}" for (t, n), v in zip(params, caps))
        header = f"{self.static_qualifier} int32_t {fname}({plist or 'void'})"
        self.add_aux(header + " {\n" + "\n".join(body) + "\n}")
        rc = self.declare_name("rc")
        self.emit(f"int32_t {rc} = {fname}({', '.join(p[1] for p in params)});")
        self.emit(f"if ({rc} != 0) {self.fail_return(rc)}")
