"""TVMScript printer for Relax functions, expressions and StructInfo.

The text parses back (``R.parse`` / ``@I.ir_module``) to a structurally equal function.
Choices that make the round trip exact:

* every binding is annotated with its variable's StructInfo
  (``lv: R.Tensor((128, 512), dtype="float32") = R.matmul(a, b, out_dtype="void")``);
* an operator call prints as ``R.<op>(args..., attr=value...)`` with every attribute, when
  the operator's builder takes them so; otherwise the general ``R.call_op`` form;
* symbolic variables print as strings in the signature (``R.Tensor(("n", 4))`` introduces
  ``n``) and are declared at the top of the body (``n = T.int64()``) when the body uses them;
* in a module, global functions are ``cls.name`` (with ``cls = Module`` in the function);
* small constants print inline (``R.const([1, 2], "int32")``), larger ones as
  ``metadata["relax.expr.Constant"][i]`` with a metadata block after the definition.
"""

from __future__ import annotations

import inspect
from typing import Any, Optional

from tvm.ffi import Object, structural_equal
from tvm.ffi.object import generic_repr
from tvm.ir.base import GlobalVar
from tvm.ir.op import Op
from tvm.relax.expr import (
    Binding, BindingBlock, Call, Constant, DataflowBlock, DataflowVar, DataTypeImm, Expr,
    ExternFunc, Function, If, MatchCast, PrimValue, SeqExpr, ShapeExpr, StringImm, Tuple,
    TupleGetItem, Var, VarBinding,
)
from tvm.relax.op.base import Attrs
from tvm.relax.struct_info import (
    FuncStructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo,
    TensorStructInfo, TupleStructInfo,
)
from tvm.script.ir.printer import ScriptContext
from tvm.script.parser_core import (
    PREC, DocBuilder, NameTable, deep_recursion, float_literal, python_value, sanitize_name,
    str_literal,
)
from tvm.script.tir.printer_expr import ExprPrinter
from tvm.tir.expr import IntImm, PrimExpr, SizeVar, Var as TirVar
from tvm.tir.stmt_functor import free_vars

__all__ = ["FunctionPrinter", "print_function", "script", "safe_repr"]

_RESERVED = ("R", "T", "I", "cls", "metadata", "float", "np", "tvm", "_")
_ATOM = PREC["atom"]
_INLINE_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                  "uint64", "float16", "float32", "float64"}
_INLINE_MAX = 16


class _PrimPrinter(ExprPrinter):
    """TIR expressions inside Relax text: shape dimensions are int64, so int64 constants
    print as plain ints (``n * 2``); variables are named by the function printer."""

    def __init__(self, owner: FunctionPrinter):
        self.owner = owner
        self.typed = False

    def var_ref(self, v: TirVar) -> str:
        return self.owner.sym_ref(v)

    def let_var(self, v: TirVar) -> str:
        return self.owner.sym_ref(v)

    def buffer_ref(self, b: Any) -> str:
        return f"<buffer {getattr(b, 'name', '?')}>"

    def expr(self, e: Any) -> tuple[str, int]:
        if isinstance(e, IntImm) and e.dtype == "int64" and not self.typed:
            return str(e.value), (PREC["unary"] if e.value < 0 else _ATOM)
        if not self.typed and _constant_operands(e):
            # Python would fold `1 + 2`: keep the node with typed constants
            self.typed = True
            try:
                return super().expr(e)
            finally:
                self.typed = False
        return super().expr(e)

    def prints_whole(self, e: Any) -> bool:
        return super().prints_whole(e) or (not self.typed and _constant_operands(e))


def _constant_operands(e: Any) -> bool:
    a, b = getattr(e, "a", None), getattr(e, "b", None)
    return isinstance(a, IntImm) and (b is None or isinstance(b, IntImm))


def _is_default_extern(f: Any) -> bool:
    return isinstance(f, ExternFunc) and structural_equal(f.struct_info_,
                                                          FuncStructInfo.opaque_func())


_SIGNATURES: dict[str, Optional[inspect.Signature]] = {}


def _builder_signature(op: Op) -> Optional[inspect.Signature]:
    if op.name not in _SIGNATURES:
        from .ops import resolve_op

        builder = resolve_op(op.name[len("relax."):])
        sig = None
        if builder is not None and _resolves_from_r(op.name[len("relax."):], builder):
            try:
                sig = inspect.signature(builder)
            except (TypeError, ValueError):
                sig = None
        _SIGNATURES[op.name] = sig
    return _SIGNATURES[op.name]


def _builder(op: Op) -> Any:
    from .ops import resolve_op

    return resolve_op(op.name[len("relax."):])


def _resolves_from_r(path: str, builder: Any) -> bool:
    """Whether ``R.<path>`` reaches the operator (no R helper of that name hides it)."""
    import tvm.script.relax as R  # noqa: N812

    node: Any = R
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            return False
    return node is builder


class FunctionPrinter:
    """Prints one Relax function (or expression) with unique names."""

    def __init__(self, ctx: Optional[ScriptContext] = None):
        self.ctx = ctx or ScriptContext()
        self.names = NameTable(_RESERVED)
        self.prim = _PrimPrinter(self)
        self.signature = False
        self.body_syms: dict[int, TirVar] = {}
        self.sig_syms: dict[int, TirVar] = {}
        self.uses_cls = False

    # -- names -----------------------------------------------------------------------------
    def sym_ref(self, v: TirVar) -> str:
        name = self.names.get(v)
        if name is None:
            name = self.names.define(v, v.name, "n")
        (self.sig_syms if self.signature else self.body_syms).setdefault(id(v), v)
        return name

    def define_var(self, v: Var) -> str:
        return self.names.define(v, v.name_hint, "v")

    def var_ref(self, v: Var) -> str:
        name = self.names.get(v)
        return name if name is not None else self.define_var(v)

    @staticmethod
    def _sym_decl(v: TirVar) -> str:
        size = ", is_size_var=True" if isinstance(v, SizeVar) else ""
        if v.dtype.replace("_", "").isalnum():
            return f"T.{v.dtype}({size[2:]})"
        return f"T.var({str_literal(v.dtype)}{size})"

    # -- functions -------------------------------------------------------------------------
    def print_function(self, func: Function, name: Optional[str] = None) -> str:
        attrs = dict(func.attrs or {})
        symbol = attrs.get("global_symbol")
        fname = sanitize_name(name or (symbol if isinstance(symbol, str) else None) or "main",
                              "main")
        private = symbol is None
        if symbol == fname:
            del attrs["global_symbol"]
        options = []
        if private:
            options.append("private=True")
        if not func.is_pure:
            options.append("pure=False")
        self.signature = True
        params = []
        for p in func.params:
            pname = self.define_var(p)
            params.append(f"{pname}: {self.sinfo(p.struct_info_)}")
        ret = "" if func.ret_struct_info is None else f" -> {self.sinfo(func.ret_struct_info)}"
        self.signature = False
        attr_line = f"R.func_attr({self.value(attrs)})" if attrs else None
        body = DocBuilder(depth=1)
        self.seq_body(func.body, body, None)
        lines = ["@R.function" + (f"({', '.join(options)})" if options else ""),
                 f"def {fname}({', '.join(params)}){ret}:"]
        head = []
        if attr_line:
            head.append(attr_line)
        if self.uses_cls and self.ctx.class_name:
            head.append(f"cls = {self.ctx.class_name}")
        used = [v for k, v in self.sig_syms.items() if k in self.body_syms]
        used += [v for k, v in self.body_syms.items() if k not in self.sig_syms]
        for v in used:
            head.append(f"{self.names.get(v)} = {self._sym_decl(v)}")
        lines.extend("    " + h for h in head)
        lines.extend(body.lines)
        return "\n".join(lines) + "\n"

    # -- blocks ----------------------------------------------------------------------------
    def seq_body(self, seq: Any, doc: DocBuilder, final: Optional[tuple[str, str]]) -> None:
        """The blocks of ``seq`` then ``return body`` (or ``name: sinfo = body`` for a branch)."""
        blocks, body = (seq.blocks, seq.body) if isinstance(seq, SeqExpr) else ((), seq)
        for block in blocks:
            self.block(block, doc)
        value = self.expr(body)
        if final is None:
            doc.line(f"return {value}")
        else:
            doc.line(f"{final[0]}: {final[1]} = {value}")

    def block(self, block: BindingBlock, doc: DocBuilder) -> None:
        if not isinstance(block, DataflowBlock):
            for b in block.bindings:
                self.binding(b, doc)
            return
        doc.line("with R.dataflow():")
        with doc.indent():
            outputs = []
            for b in block.bindings:
                self.binding(b, doc)
                if not isinstance(b.var, DataflowVar):
                    outputs.append(self.var_ref(b.var))
            doc.line(f"R.output({', '.join(outputs)})")

    def binding(self, b: Binding, doc: DocBuilder) -> None:
        if isinstance(b, MatchCast):
            value = self.expr(b.value)
            target = self.sinfo(b.struct_info)
            ann = self.sinfo(b.var.struct_info_)
            doc.line(f"{self.define_var(b.var)}: {ann} = R.match_cast({value}, {target})")
            return
        if isinstance(b.value, If):
            self.if_binding(b, doc)
            return
        if isinstance(b.value, Function):
            self.local_function(b.value, self.define_var(b.var), doc)
            return
        value = self.expr(b.value)
        ann = self.sinfo(b.var.struct_info_)
        doc.line(f"{self.define_var(b.var)}: {ann} = {value}")

    def local_function(self, func: Function, name: str, doc: DocBuilder) -> None:
        """A function bound inside a function: ``@R.function def name(...)`` in place."""
        saved, self.signature = self.signature, True
        params = [f"{self.define_var(p)}: {self.sinfo(p.struct_info_)}" for p in func.params]
        ret = "" if func.ret_struct_info is None else f" -> {self.sinfo(func.ret_struct_info)}"
        self.signature = saved
        doc.line("@R.function" + ("" if func.is_pure else "(pure=False)"))
        doc.line(f"def {name}({', '.join(params)}){ret}:")
        with doc.indent():
            if func.attrs:
                doc.line(f"R.func_attr({self.value(dict(func.attrs))})")
            self.seq_body(func.body, doc, None)

    def if_binding(self, b: Binding, doc: DocBuilder) -> None:
        node = b.value
        cond = self.expr(node.cond)
        name = self.define_var(b.var)
        ann = self.sinfo(b.var.struct_info_)
        doc.line(f"if {cond}:")
        with doc.indent():
            self.seq_body(node.true_branch, doc, (name, ann))
        doc.line("else:")
        with doc.indent():
            self.seq_body(node.false_branch, doc, (name, ann))

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        if isinstance(e, Var):
            return self.var_ref(e)
        if isinstance(e, GlobalVar):
            if self.ctx.class_name is not None:
                self.uses_cls = True
                return f"cls.{e.name_hint}"
            return f"I.GlobalVar({str_literal(e.name_hint)})"
        if isinstance(e, Constant):
            return self.constant(e)
        if isinstance(e, Tuple):
            if not e.fields:
                return "R.tuple()"
            items = [self.expr(f) for f in e.fields]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(e, TupleGetItem):
            inner = e.tuple_value
            base = (f"R.tuple({', '.join(self.expr(f) for f in inner.fields)})"
                    if isinstance(inner, Tuple) else self.expr(inner))
            return f"{base}[{e.index}]"
        if isinstance(e, ShapeExpr):
            return f"R.shape([{', '.join(self.dim(v) for v in e.values)}])"
        if isinstance(e, PrimValue):
            v = e.value
            if isinstance(v, IntImm) and v.dtype not in ("int64", "bool"):
                return f"R.prim_value(T.{v.dtype}({v.value}))"  # a bare int reads as int64
            return f"R.prim_value({self.dim(v)})"
        if isinstance(e, StringImm):
            return f"R.str({str_literal(e.value)})"
        if isinstance(e, DataTypeImm):
            return f"R.dtype({str_literal(e.value)})"
        if isinstance(e, ExternFunc):
            if _is_default_extern(e):
                return f"R.ExternFunc({str_literal(e.global_symbol)})"
            return f"R.ExternFunc({str_literal(e.global_symbol)}, {self.sinfo(e.struct_info_)})"
        if isinstance(e, Call):
            return self.call(e)
        return _opaque(e)

    def args(self, items: Any) -> list[str]:
        return [self.expr(a) for a in items]

    def constant(self, c: Constant) -> str:
        data = c.data
        dtype = c.dtype
        if dtype in _INLINE_DTYPES and data.size <= _INLINE_MAX and all(d > 0 for d in data.shape):
            return f"R.const({_literal(data.tolist())}, {str_literal(dtype)})"
        return self.ctx.metadata.ref(c)

    # -- calls -------------------------------------------------------------------------------
    def call(self, e: Call) -> str:
        op = e.op
        if isinstance(op, Op):
            special = _SPECIAL_CALLS.get(op.name)
            text = special(self, e) if special is not None else None
            if text is None and op.name.startswith("relax."):
                text = self.op_call(e)
            return text if text is not None else self.general_call(e, str_literal(op.name))
        if _is_default_extern(op) and e.attrs is None:
            parts = [str_literal(op.global_symbol), *self.args(e.args)]
            if e.sinfo_args:
                parts.append(f"sinfo_args={self.sinfo_args(e.sinfo_args)}")
            return f"R.call_packed({', '.join(parts)})"
        callee = self.expr(op)
        if not e.sinfo_args and e.attrs is None:
            return f"{callee}({', '.join(self.args(e.args))})"
        return self.general_call(e, callee)

    def op_call(self, e: Call) -> Optional[str]:
        """``R.<op>(args..., attrs...)`` when the operator's builder reads it back."""
        op = e.op
        if e.sinfo_args:
            return None
        sig = _builder_signature(op)
        if sig is None:
            return None
        kwargs: dict[str, Any] = {}
        if e.attrs is not None:
            if not isinstance(e.attrs, Attrs) or type(e.attrs) is not op.get_attr("attrs_type"):
                return None
            kwargs = {info.name: getattr(e.attrs, info.name) for info in e.attrs._field_infos}
        try:
            sig.bind(*e.args, **kwargs)
            rebuilt = _builder(op)(*e.args, **kwargs)
        except Exception:  # noqa: BLE001 - the builder does not take this form
            return None
        if not (isinstance(rebuilt, Call) and rebuilt.op is op and not rebuilt.sinfo_args
                and structural_equal(rebuilt.args, e.args)
                and structural_equal(rebuilt.attrs, e.attrs)):
            return None
        parts = self.args(e.args) + [f"{k}={self.value(v)}" for k, v in kwargs.items()]
        return f"R.{op.name[len('relax.'):]}({', '.join(parts)})"

    def general_call(self, e: Call, callee: str) -> str:
        parts = [callee, *self.args(e.args)]
        if e.attrs is not None:
            parts.append(f"attrs={self.attrs_value(e.attrs)}")
        if e.sinfo_args:
            parts.append(f"sinfo_args={self.sinfo_args(e.sinfo_args)}")
        return f"R.call_op({', '.join(parts)})"

    def attrs_value(self, attrs: Any) -> str:
        if isinstance(attrs, Attrs):
            parts = [str_literal(attrs._type_key)]
            parts += [f"{info.name}={self.value(getattr(attrs, info.name))}"
                      for info in attrs._field_infos]
            return f"R.attrs({', '.join(parts)})"
        return self.value(attrs)

    def sinfo_args(self, sinfos: Any) -> str:
        if len(sinfos) == 1:
            return self.sinfo(sinfos[0])
        return "(" + ", ".join(self.sinfo(s) for s in sinfos) + ")"

    def out_sinfo(self, s: StructInfo) -> str:
        if isinstance(s, TupleStructInfo) and len(s.fields) > 1 and all(
            isinstance(f, TensorStructInfo) for f in s.fields
        ):
            return "[" + ", ".join(self.sinfo(f) for f in s.fields) + "]"
        return self.sinfo(s)

    def args_tuple(self, e: Any) -> str:
        if isinstance(e, Tuple):
            items = self.args(e.fields)
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        return self.expr(e)

    def _call_tir(self, e: Call) -> Optional[str]:
        a = e.args
        if len(a) not in (2, 3) or not isinstance(a[0], GlobalVar) or len(e.sinfo_args) != 1 or (
            e.attrs is not None
        ):
            return None
        text = (f"R.call_tir({self.expr(a[0])}, {self.args_tuple(a[1])}, "
                f"out_sinfo={self.out_sinfo(e.sinfo_args[0])}")
        if len(a) == 3:
            text += f", tir_vars={self.expr(a[2])}"
        return text + ")"

    def _callee(self, f: Any) -> str:
        return str_literal(f.global_symbol) if _is_default_extern(f) else self.expr(f)

    def _call_dps_packed(self, e: Call) -> Optional[str]:
        a = e.args
        if len(a) != 2 or len(e.sinfo_args) != 1 or e.attrs is not None:
            return None
        return (f"R.call_dps_packed({self._callee(a[0])}, {self.args_tuple(a[1])}, "
                f"out_sinfo={self.out_sinfo(e.sinfo_args[0])})")

    def _call_pure_packed(self, e: Call) -> Optional[str]:
        if not e.args or e.attrs is not None:
            return None
        parts = [self._callee(e.args[0]), *self.args(e.args[1:])]
        if e.sinfo_args:
            parts.append(f"sinfo_args={self.sinfo_args(e.sinfo_args)}")
        return f"R.call_pure_packed({', '.join(parts)})"

    # -- StructInfo and values ----------------------------------------------------------------
    def dim(self, v: PrimExpr) -> str:
        """A dimension or prim value; in the signature, symbolic ones are strings."""
        text = self.prim.ex(v)
        if self.signature and not isinstance(v, IntImm) and free_vars(v):
            return str_literal(text)
        return text

    def sinfo(self, s: Any) -> str:
        if s is None or isinstance(s, ObjectStructInfo):
            return "R.Object"
        if isinstance(s, TensorStructInfo):
            parts = []
            if s.shape is not None:
                values = s.shape_values
                if isinstance(s.shape, ShapeExpr) or (self.signature and values is not None):
                    dims = [self.dim(v) for v in values]
                    parts.append(f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})")
                elif self.signature:
                    parts.append(f"ndim={s.ndim}")
                else:
                    parts.append(self.expr(s.shape))
            elif s.ndim != -1:
                parts.append(f"ndim={s.ndim}")
            if not s.is_unknown_dtype:
                parts.append(f"dtype={str_literal(s.dtype)}")
            return f"R.Tensor({', '.join(parts)})" if parts else "R.Tensor"
        if isinstance(s, ShapeStructInfo):
            if s.values is not None:
                return f"R.Shape([{', '.join(self.dim(v) for v in s.values)}])"
            return "R.Shape" if s.ndim == -1 else f"R.Shape(ndim={s.ndim})"
        if isinstance(s, PrimStructInfo):
            if s.value is None:
                return f"R.Prim({str_literal(s.dtype)})"
            if s.dtype == "int64":
                return f"R.Prim(value={self.dim(s.value)})"
            return f"R.Prim({str_literal(s.dtype)}, value={self.dim(s.value)})"
        if isinstance(s, TupleStructInfo):
            if not s.fields:
                return "R.Tuple"
            return f"R.Tuple({', '.join(self.sinfo(f) for f in s.fields)})"
        if isinstance(s, FuncStructInfo):
            parts = []
            if s.params is not None:
                ps = [self.sinfo(p) for p in s.params]
                parts.append(f"({ps[0]},)" if len(ps) == 1 else f"({', '.join(ps)})")
                parts.append(self.sinfo(s.ret))
            else:
                parts.append(f"ret={self.sinfo(s.ret)}")
            if not s.purity:
                parts.append("purity=False")
            if s.derive_func:
                parts.append(f"derive_func={str_literal(s.derive_func)}")
            return f"R.Callable({', '.join(parts)})"
        return _opaque(s)

    def value(self, v: Any) -> str:
        """An attribute value (function attributes, operator attributes)."""
        text = python_value(v, self.value)
        if text is not None:
            return text
        if isinstance(v, StructInfo):
            return self.sinfo(v)
        if isinstance(v, (Expr, GlobalVar)):
            return self.expr(v)
        if isinstance(v, Attrs):
            return self.attrs_value(v)
        return self.prim.value(v)


_SPECIAL_CALLS = {
    "relax.call_tir": FunctionPrinter._call_tir,
    "relax.call_dps_packed": FunctionPrinter._call_dps_packed,
    "relax.call_pure_packed": FunctionPrinter._call_pure_packed,
}


def _literal(value: Any) -> str:
    """A nested list of Python numbers as source text that reads back exactly."""
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, bool) or isinstance(value, int):
        return repr(value)
    text = float_literal(float(value))
    return f"float({text})" if text.startswith('"') else text


def _opaque(obj: Any) -> str:
    """Text for what TVMScript has no syntax for (does not parse back)."""
    if isinstance(obj, Object):
        return f"<{generic_repr(obj, 1)}>"
    return f"<{obj!r}>"


def _header(text: str) -> str:
    lines = ["# from tvm.script import relax as R"]
    if "I." in text:
        lines.insert(0, "# from tvm.script import ir as I")
    if "T." in text:
        lines.append("# from tvm.script import tir as T")
    return "\n".join(lines) + "\n\n"


def print_function(
    func: Function, name: Optional[str] = None, header: bool = True, show_meta: bool = True
) -> str:
    """The TVMScript of a lone Relax function, with its metadata block if it needs one (a
    one-line note in its place with ``show_meta=False``)."""
    ctx = ScriptContext()
    with deep_recursion():
        text = FunctionPrinter(ctx).print_function(func, name)
    if ctx.metadata:
        text += "\n" + ctx.metadata.text(show_meta)
    return (_header(text) if header else "") + text


def script(node: Any, name: Optional[str] = None, show_meta: bool = True) -> str:
    """TVMScript text of a Relax function, expression, binding, block or StructInfo."""
    if isinstance(node, Function):
        return print_function(node, name, show_meta=show_meta)
    printer = FunctionPrinter()
    with deep_recursion():
        if isinstance(node, StructInfo):
            return printer.sinfo(node)
        if isinstance(node, (SeqExpr, BindingBlock, Binding)):
            doc = DocBuilder()
            if isinstance(node, SeqExpr):
                printer.seq_body(node, doc, ("result", printer.sinfo(node.struct_info_)))
            elif isinstance(node, BindingBlock):
                printer.block(node, doc)
            else:
                printer.binding(node, doc)
            return doc.text().rstrip("\n")
        if isinstance(node, If):
            doc = DocBuilder()
            printer.if_binding(VarBinding(Var("result", node.struct_info_), node), doc)
            return doc.text().rstrip("\n")
        if isinstance(node, Expr):
            return printer.expr(node)
    return _opaque(node)


def safe_repr(node: Any) -> str:
    """TVMScript for ``repr``; falls back to the field dump rather than failing."""
    try:
        return script(node, show_meta=False)
    except Exception:  # noqa: BLE001 - repr must not fail
        return generic_repr(node)
