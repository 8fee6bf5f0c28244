"""``CLikePrinter``: lowered TIR as C-family source, shared by the C, CUDA, OpenCL and Metal
targets.

The printer takes *lowered* PrimFuncs (flattened 1-D buffers, no blocks; usually after
MakePackedAPI) and prints them as C functions, collecting the helpers they need.  What
differs between C-family languages is a class attribute or a small overridable method,
in the spirit of tinygrad's ``CStyleLanguage``; a new language is a subclass::

    class OpenCLPrinter(CLikePrinter):
        language = "opencl"
        includes = ()
        vector_mode = "native"
        kernel_qualifier = "__kernel "
        def address_space_qualifier(self, scope):
            return {"global": "__global ", "shared": "__local "}.get(scope, "")
        def thread_index(self, tag):
            return {"threadIdx.x": "get_local_id(0)", "blockIdx.x": "get_group_id(0)"}[tag]
        def barrier(self, scope):
            return "barrier(CLK_LOCAL_MEM_FENCE)"

Usage::

    p = CLikePrinter(target="c")
    p.add_function(packed_func)          # one C function (+ outlined helpers)
    source = p.finish()                  # the whole translation unit

The default language is C99 (GCC/Clang), with vector values scalarized lane by lane.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable, Sequence
from typing import Any, Optional, Union

from ..buffer import Buffer
from ..expr import PrimExpr, Var
from ..function import PrimFunc
from ..functor import StmtExprVisitor
from ..stmt import Allocate, Stmt
from .c_like_call import CallPrinterMixin
from .c_like_expr import ExprPrinterMixin
from .c_like_stmt import StmtPrinterMixin
from .c_types import (
    CodegenError, DType, NameTable, c_string_literal, dtype_of, float_to_bf16_bits,
)

__all__ = ["CLikePrinter", "FunctionState", "pointer_element_types"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class FunctionState:
    """What the printer tracks while printing one C function."""

    def __init__(self, name: str, ret_type: Any, restrict: bool, names: NameTable,
                 ptr_elem: dict, ptr_scope: dict, indent: int = 1) -> None:
        self.name = name
        self.ret = dtype_of(str(ret_type) if ret_type is not None else "void")
        self.restrict = restrict
        self.names = names
        self.var_stack: dict[Var, list[str]] = {}
        self.lines: list[str] = []
        self.indent = indent
        self.scopes: list[list[str]] = [[]]
        self.ptr_elem: dict[Var, DType] = ptr_elem
        self.ptr_scope: dict[Var, str] = ptr_scope
        self.vector_arrays: set[Var] = set()
        self.lenient = False

    def current_name(self, var: Var) -> str:
        return self.var_stack[var][-1]


class _PointerTypes(StmtExprVisitor):
    def __init__(self) -> None:
        self.elems: dict[Var, set[str]] = {}
        self.scopes: dict[Var, str] = {}

    def note(self, var: Var, elem: str, scope: str) -> None:
        self.elems.setdefault(var, set()).add(elem)
        self.scopes.setdefault(var, scope)

    def visit_buffer(self, buffer: Buffer) -> None:
        self.note(buffer.data, dtype_of(buffer.dtype).element.text, buffer.scope)

    def visit_allocate_(self, s: Allocate) -> None:
        self.note(s.buffer_var, dtype_of(s.dtype).element.text, s.scope)
        self.generic_visit(s)


def pointer_element_types(func: PrimFunc) -> tuple[dict[Var, DType], dict[Var, str]]:
    """Element type and storage scope of every handle variable used as a buffer's data.

    A handle accessed through buffers of one element type becomes a typed pointer in C; one
    used with several element types stays ``void*`` and is cast at each access.
    """
    walker = _PointerTypes()
    for buf in func.buffer_map.values():
        walker.visit_buffer(buf)
    walker.visit(func.body)
    elems = {v: dtype_of(next(iter(s))) for v, s in walker.elems.items() if len(s) == 1}
    return elems, walker.scopes


class CLikePrinter(ExprPrinterMixin, CallPrinterMixin, StmtPrinterMixin):
    """Prints lowered PrimFuncs as one C-family translation unit (see the module docstring)."""

    # ------------------------------------------------------------------ the language
    language: str = "c"
    #: headers included at the top (``<...>`` names); a GPU language sets ()
    includes: Sequence[str] = ("stdint.h", "stdbool.h", "stddef.h", "stdlib.h", "string.h",
                               "stdio.h", "stdarg.h", "math.h")
    scalar_type_names: dict[str, str] = {
        "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
        "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
        "uint64": "uint64_t", "float16": "_Float16", "float32": "float", "float64": "double",
        "bfloat16": "uint16_t",
    }
    #: memory may be read through a pointer of another element type (False: GLSL / WGSL
    #: storage buffers, whose element type is fixed, so such a read is refused)
    pointer_casts: bool = True
    #: storage type of bfloat16 values (arithmetic goes through float32)
    bfloat16_storage: str = "uint16_t"
    #: compute float16/bfloat16 arithmetic and math in float32, rounding back each time
    half_via_float: bool = True
    #: element names of native vector types (``float`` -> ``float4``)
    vector_element_names: dict[str, str] = {
        "int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int",
        "uint32": "uint", "int64": "long", "uint64": "ulong", "float16": "half",
        "float32": "float", "float64": "double", "bool": "bool",
    }
    #: "scalarize" (vector values printed lane by lane) or "native" (vector types)
    vector_mode: str = "scalarize"
    #: native vector types support + - * / directly
    vector_ops_native: bool = False
    restrict_keyword: str = "restrict"
    #: qualifiers in front of an exported function (``__global__ `` / ``__kernel `` / ...)
    kernel_qualifier: str = ""
    static_qualifier: str = "static"
    helper_qualifier: str = "static inline"
    float32_math_suffix: str = "f"
    math_function_renames: dict[str, str] = {"round": "nearbyint"}
    null_pointer: str = "NULL"
    bool_literals: tuple[str, str] = ("false", "true")
    indent_unit: str = "  "
    #: constant-size local allocations up to this many bytes live on the stack
    max_stack_alloc_bytes: int = 65536
    alloc_alignment: int = 64
    #: text after a stack array's declarator (e.g. ``__attribute__((aligned(64)))``)
    array_alignment: str = ""
    #: assertions report through ``__TVMAPISetLastError`` and return -1
    supports_error_reporting: bool = True
    #: PARALLEL loops are outlined and launched through ``__TVMBackendParallelLaunch``
    supports_parallel_launch: bool = True
    #: the ``num_task`` argument of a parallel launch (0: the runtime's thread count)
    parallel_num_tasks: int = 0
    #: outline a packed function's ``compute_scope`` into a static function
    outline_compute_scope: bool = False

    RUNTIME_SLOTS = {
        "error": ("__TVMAPISetLastError", "void (*__TVMAPISetLastError)(const char* msg) = NULL;"),
        "parallel": ("__TVMBackendParallelLaunch",
                     "int32_t (*__TVMBackendParallelLaunch)(FTVMParallelLambda f, void* cdata, "
                     "int32_t num_task) = NULL;"),
    }

    def __init__(self, target: str = "") -> None:
        self.target = str(target) if target is not None else ""
        self.global_names = NameTable()
        for name, _ in self.RUNTIME_SLOTS.values():
            self.global_names.reserve(name)
        self._helpers: dict[str, Optional[str]] = {}
        self._aux: list[str] = []
        self._functions: list[tuple[str, str]] = []
        self._slots: list[str] = []
        self._typedefs: dict[str, str] = {}
        self._half_literals: dict[str, str] = {}
        self._stack: list[FunctionState] = []
        self.st: Optional[FunctionState] = None

    # ------------------------------------------------------------------ types & literals
    def type_name(self, d: Union[str, DType]) -> str:
        """The C type of a scalar dtype (a native vector type in ``native`` mode)."""
        d = dtype_of(d) if isinstance(d, str) else d
        if d.is_void:
            return "void"
        if d.lanes > 1:
            if self.vector_mode == "native":
                return self.vector_type_name(d)
            raise CodegenError(f"{self.language} codegen: no C type for the vector dtype "
                               f"{d.text} (vectors are scalarized)")
        if d.is_handle:
            return self.pointer_type(None)
        name = self.scalar_type_names.get(d.text)
        if name is None:
            raise CodegenError(f"{self.language} codegen: dtype {d.text} is not supported by "
                               f"this target (supported: {', '.join(self.scalar_type_names)})")
        return name

    def vector_type_name(self, d: DType) -> str:
        """Native vector type (``float4``); override for languages that spell them otherwise."""
        base = self.vector_element_names.get(d.element.text)
        if base is None:
            raise CodegenError(f"{self.language} codegen: no vector type for {d.text}")
        return f"{base}{d.lanes}"

    def address_space_qualifier(self, scope: str) -> str:
        """Qualifier of pointers into storage scope ``scope`` (``__global `` in OpenCL)."""
        return ""

    def storage_scope_qualifier(self, scope: str) -> str:
        """Qualifier of a local array allocated in ``scope`` (``__shared__ `` in CUDA)."""
        if scope in ("global", "local", ""):
            return ""
        raise CodegenError(f"{self.language} codegen: storage scope {scope!r} is not "
                           "supported by this target")

    def pointer_type(self, elem: Optional[DType], scope: str = "global") -> str:
        """Pointer to ``elem`` (``void*`` for None) in storage scope ``scope``."""
        inner = "void" if elem is None else self.type_name(elem)
        return f"{self.address_space_qualifier(scope)}{inner}*"

    def restrict_type(self, ctype: str, var: Optional[Var] = None) -> str:
        """``ctype`` with ``restrict`` when it is a pointer of a ``tir.noalias`` function."""
        if self.st is not None and self.st.restrict and ctype.endswith("*") \
                and self.restrict_keyword:
            return f"{ctype} {self.restrict_keyword}"
        return ctype

    def literal(self, value: Any, d: DType) -> str:
        """A constant of scalar dtype ``d``."""
        if d.is_bool:
            return self.bool_literals[1 if value else 0]
        if d.is_float:
            return self.float_literal(float(value), d)
        if d.is_handle:
            if value:
                raise CodegenError(f"{self.language} codegen: non-null handle constant {value!r}")
            return self.null_pointer
        return self.int_literal(int(value), d)

    def int_literal(self, value: int, d: DType) -> str:
        if not d.is_int:
            return self.literal(value, d)
        t = self.type_name(d)
        if d.is_unsigned:
            if d.bits == 32:
                return f"{value}U"
            if d.bits == 64:
                return f"(({t}){value}ULL)"
            return f"(({t}){value}U)"
        if d.bits == 32:
            if value == -(2 ** 31):
                return "(-2147483647 - 1)"
            return str(value) if value >= 0 else f"({value})"
        if d.bits == 64:
            if value == -(2 ** 63):
                return f"(({t})(-9223372036854775807LL - 1))"
            return f"(({t}){value}LL)"
        return f"(({t}){value})"

    def float_literal(self, value: float, d: DType) -> str:
        if d.is_bf16:
            bits = float_to_bf16_bits(value)
            text = f"(({self.bfloat16_storage})0x{bits:04X})"
            exact = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
            self._half_literals[text] = self.float_literal(exact, dtype_of("float32"))
            return text
        if d.is_f16:
            try:
                value = struct.unpack("<e", struct.pack("<e", value))[0]
            except OverflowError:
                value = math.copysign(math.inf, value)
            f32 = self.float_literal(value, dtype_of("float32"))
            text = self.float_to_half(f32, d)
            self._half_literals[text] = f32
            return text
        t = self.type_name(d)
        if math.isnan(value):
            return "NAN" if d.bits == 32 else f"(({t})NAN)"
        if math.isinf(value):
            text = "INFINITY" if d.bits == 32 else f"(({t})INFINITY)"
            return text if value > 0 else f"(-{text})"
        if d.bits == 32:
            try:
                value = struct.unpack("<f", struct.pack("<f", value))[0]
            except OverflowError:
                return "INFINITY" if value > 0 else "(-INFINITY)"
        text = repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        if d.bits == 32:
            text += "f"
        return f"({text})" if text.startswith("-") else text

    def string_literal(self, text: str) -> str:
        return c_string_literal(text)

    def c_cast(self, ctype: str, value: str) -> str:
        """``value`` converted to the type spelled ``ctype`` (``((int32_t)(x))``; a language
        without C casts, such as GLSL, spells a constructor)."""
        return f"(({ctype})({value}))"

    def half_to_float(self, value: str, d: DType) -> str:
        """A float16/bfloat16 value as float32."""
        if value in self._half_literals:  # a constant: its float32 spelling is exact
            return self._half_literals[value]
        if d.is_bf16:
            return f"{self.helper_bf16()[0]}({value})"
        if d.is_f16:
            return self.c_cast(self.type_name(dtype_of("float32")), value)
        return value

    def float_to_half(self, value: str, d: DType) -> str:
        """A float32 value rounded to float16/bfloat16."""
        if d.is_bf16:
            return f"{self.helper_bf16()[1]}({value})"
        if d.is_f16:
            return self.c_cast(self.type_name(d), value)
        return value

    def math_function(self, name: str, d: DType) -> str:
        """The function computing float math ``name`` on dtype ``d`` (``expf`` for float32)."""
        name = self.math_function_renames.get(name, name)
        if d.bits == 32 and not d.is_half_like:
            return name + self.float32_math_suffix
        return name

    def likely(self, cond: str) -> str:
        return cond

    # ------------------------------------------------------------------ statement spellings
    def declaration(self, ctype: str, name: str, value: str) -> str:
        """The statement declaring the local ``name`` of type ``ctype`` holding ``value``
        (``int32_t x = v;``; WGSL spells ``var x: i32 = v;``)."""
        return f"{ctype} {name} = {value};"

    def for_header(self, ctype: str, name: str, start: str, end: str) -> str:
        """The header (ending in ``{``) of a loop of ``name`` from ``start`` up to ``end``."""
        return f"for ({ctype} {name} = {start}; {name} < {end}; ++{name}) {{"

    def conditional(self, cond: str, true_value: str, false_value: str) -> str:
        """``cond ? true_value : false_value`` (WGSL, which has no ``?:``, spells
        ``select``)."""
        return f"({cond} ? {true_value} : {false_value})"

    def reinterpret(self, value: str, src: DType, dst: DType) -> str:
        """The bits of ``value`` (of ``src``) read as ``dst`` (same size)."""
        return f"{self.helper_reinterpret(src, dst)}({value})"

    # ------------------------------------------------------------------ GPU hooks
    def thread_index(self, tag: str) -> str:
        """The C expression of thread index ``tag`` (``threadIdx.x``, ``blockIdx.y``)."""
        raise CodegenError(
            f"{self.language} codegen: thread index {tag!r} is not available: this target has "
            "no GPU threads (bind loops to threads only for GPU targets)"
        )

    def barrier(self, scope: str) -> str:
        """A barrier over storage scope ``scope`` (``__syncthreads()``)."""
        raise CodegenError(f"{self.language} codegen: tir.tvm_storage_sync({scope!r}) needs a "
                           "GPU target")

    def unroll_pragma(self, extent: Optional[int]) -> Optional[str]:
        """A pragma line in front of an UNROLLED loop, or None."""
        return None

    # native vectors ---------------------------------------------------------------------
    def make_vector(self, d: DType, lanes: list[str]) -> str:
        return f"(({self.type_name(d)})({', '.join(lanes)}))"

    def broadcast_vector(self, d: DType, value: str) -> str:
        return f"(({self.type_name(d)})({value}))"

    def vector_lane(self, value: str, d: DType, lane: Union[int, str]) -> str:
        return f"{value}[{lane}]"

    def vector_load(self, buffer: Buffer, base: str, d: DType) -> str:
        return f"(*({self.pointer_type(d, buffer.scope)})({self.buffer_ptr(buffer)} + {base}))"

    def vector_store(self, buffer: Buffer, base: str, value: str, d: DType) -> str:
        return f"*({self.pointer_type(d, buffer.scope)})({self.buffer_ptr(buffer)} + {base}) = {value}"

    def note_buffer_use(self, buffer: Buffer) -> None:
        """Called on each buffer access (a language may track the buffers a kernel uses)."""

    def function_symbol(self, name: str) -> str:
        return name

    # ------------------------------------------------------------------ function state
    def emit(self, line: str) -> None:
        """Append one line at the current indentation to the function being printed."""
        self.st.lines.append(self.indent_unit * self.st.indent + line)

    def open_block(self, header: str) -> int:
        """Emit ``header`` (ending in ``{``) and indent; returns the header's line index."""
        self.emit(header)
        self.st.indent += 1
        self.st.scopes.append([])
        return len(self.st.lines) - 1

    def close_block(self, trailer: str = "}") -> None:
        for name in self.st.scopes.pop():
            self.st.names.release(name)
        self.st.indent -= 1
        self.emit(trailer)

    def reopen_block(self, text: str) -> None:
        """Close the current block and open a sibling (``} else {``)."""
        for name in self.st.scopes[-1]:
            self.st.names.release(name)
        self.st.scopes[-1] = []
        self.st.indent -= 1
        self.emit(text)
        self.st.indent += 1

    def declare_name(self, hint: str) -> str:
        """A fresh C name living until the current block closes."""
        name = self.st.names.fresh(hint)
        self.st.scopes[-1].append(name)
        return name

    def declare_var(self, var: Var) -> str:
        """Bind ``var`` to a fresh C name in the current block."""
        name = self.declare_name(var.name)
        self.map_var(var, name)
        return name

    def map_var(self, var: Var, name: str) -> None:
        self.st.var_stack.setdefault(var, []).append(name)

    def unbind_var(self, var: Var, name: Optional[str] = None) -> None:
        """End the binding of ``var`` (its C name stays reserved until its block closes)."""
        stack = self.st.var_stack.get(var)
        if stack:
            stack.pop()
            if not stack:
                del self.st.var_stack[var]
        if var in self.st.vector_arrays and var not in self.st.var_stack:
            self.st.vector_arrays.discard(var)

    def is_bound(self, var: Var) -> bool:
        return bool(self.st.var_stack.get(var))

    def var_name(self, var: Var) -> str:
        stack = self.st.var_stack.get(var) if self.st is not None else None
        if stack:
            return stack[-1]
        if self.st is not None and self.st.lenient:
            name = self.st.names.fresh(var.name)
            self.map_var(var, name)
            return name
        raise CodegenError(
            f"{self.language} codegen: variable {var.name!r} ({var.dtype}) is used in "
            f"{self.st.name if self.st else '?'} but never defined (a free variable; was the "
            "function lowered and run through MakePackedAPI?)"
        )

    def var_type(self, var: Var) -> str:
        """C type of a variable: typed pointers for buffer data handles."""
        d = dtype_of(var.dtype)
        if d.is_handle:
            elem = self.st.ptr_elem.get(var) if self.st is not None else None
            scope = self.st.ptr_scope.get(var, "global") if self.st is not None else "global"
            return self.pointer_type(elem, scope)
        if d.lanes > 1 and self.vector_mode != "native":
            return self.type_name(d.element)
        return self.type_name(d)

    def fail_return(self, code: str) -> str:
        """A statement leaving the current function with failure ``code``."""
        if self.st.ret.is_void:
            return f"{{ (void)({code}); return; }}"
        return f"return {code};"

    def push_function(self, name: str, ret_type: Any, restrict: bool,
                      seed: Iterable[tuple[Var, str]] = ()) -> FunctionState:
        """Start printing a (possibly outlined) function; ``seed`` pre-binds variables."""
        parent = self.st
        names = NameTable(parent=self.global_names)
        ptr_elem = parent.ptr_elem if parent is not None else {}
        ptr_scope = parent.ptr_scope if parent is not None else {}
        st = FunctionState(name, ret_type, restrict, names, ptr_elem, ptr_scope)
        for var, vname in seed:
            names.reserve(vname)
            st.var_stack[var] = [vname]
        if parent is not None:
            self._stack.append(parent)
        self.st = st
        return st

    def pop_function(self) -> None:
        self.st = self._stack.pop() if self._stack else None

    def add_aux(self, text: str) -> None:
        """A definition (closure struct, outlined function) placed before the functions."""
        self._aux.append(text)

    def use_runtime_slot(self, kind: str) -> str:
        """Declare the runtime slot ``kind`` (``error``/``parallel``); returns its name."""
        if kind not in self.RUNTIME_SLOTS:
            raise KeyError(f"unknown runtime slot {kind!r}")
        if kind not in self._slots:
            self._slots.append(kind)
        return self.RUNTIME_SLOTS[kind][0]

    # ------------------------------------------------------------------ functions
    def param_decl(self, var: Var, name: str, func: PrimFunc) -> str:
        """One parameter of a printed function."""
        return f"{self.restrict_type(self.var_type(var), var)} {name}"

    def function_header(self, func: PrimFunc, name: str, params: list[str]) -> str:
        ret = self.type_name(dtype_of(str(func.ret_type or "void")))
        return f"{self.kernel_qualifier}{ret} {name}({', '.join(params) or 'void'})"

    def add_function(self, func: PrimFunc, name: Optional[str] = None) -> str:
        """Print ``func`` (named ``name``, else its ``global_symbol``); returns the C name."""
        if not isinstance(func, PrimFunc):
            raise TypeError(f"{self.language} codegen expects a tir.PrimFunc, got "
                            f"{type(func).__name__}")
        name = name or func.attrs.get("global_symbol")
        if not name:
            raise CodegenError(f"{self.language} codegen: the function has no global_symbol "
                               "and no name was given")
        if not _IDENT.match(name):
            raise CodegenError(f"{self.language} codegen: function name {name!r} is not a C "
                               "identifier")
        if any(n == name for n, _ in self._functions) or self.global_names.is_used(name):
            raise CodegenError(f"{self.language} codegen: function name {name!r} is already "
                               "used in this module")
        self.global_names.reserve(name)
        ptr_elem, ptr_scope = pointer_element_types(func)
        st = self.push_function(name, func.ret_type, bool(func.attrs.get("tir.noalias")))
        try:
            st.ptr_elem.update(ptr_elem)
            st.ptr_scope.update(ptr_scope)
            params = [self.param_decl(p, self.declare_var(p), func) for p in func.params]
            for p, buf in func.buffer_map.items():
                if buf.data is not p and not self.is_bound(buf.data):
                    t = self.var_type(buf.data)
                    self.emit(f"{self.restrict_type(t)} {self.declare_var(buf.data)} = "
                              f"({t}){self.var_name(p)};")
            self.stmt(func.body)
            if not st.ret.is_void:
                self.emit("return 0;")
            text = self.function_header(func, name, params) + " {\n" + "\n".join(st.lines) + "\n}"
        finally:
            self.pop_function()
        self._functions.append((name, text))
        return name

    @property
    def function_names(self) -> list[str]:
        return [n for n, _ in self._functions]

    # ------------------------------------------------------------------ the module
    def preamble_lines(self) -> list[str]:
        """Includes and type definitions at the top of the source."""
        lines = [f"#include <{h}>" for h in self.includes]
        if "parallel" in self._slots:
            lines.append("typedef int32_t (*FTVMParallelLambda)(int32_t task_id, int32_t "
                         "num_task, void* cdata);")
        lines.extend(self._typedefs.values())
        return lines

    def epilogue_lines(self) -> list[str]:
        """Definitions after the functions (module metadata)."""
        return []

    def finish(self) -> str:
        """The whole translation unit printed so far."""
        sections = ["\n".join(self.preamble_lines())]
        if self._slots:
            sections.append("\n".join(self.RUNTIME_SLOTS[k][1] for k in self._slots))
        helpers = [t for t in self._helpers.values() if t]
        sections.extend(helpers)
        sections.extend(self._aux)
        sections.extend(t for _, t in self._functions)
        sections.extend(self.epilogue_lines())
        return "\n\n".join(s for s in sections if s) + "\n"

    # ------------------------------------------------------------------ debugging helpers
    def _scratch(self, node: Any) -> FunctionState:
        st = self.push_function("scratch", "int32", False)
        st.indent = 0
        st.lenient = True
        walker = _PointerTypes()
        walker.visit(node)
        st.ptr_elem.update({v: dtype_of(next(iter(s))) for v, s in walker.elems.items()
                            if len(s) == 1})
        st.ptr_scope.update(walker.scopes)
        return st

    def print_expr(self, e: PrimExpr) -> str:
        """C text of one expression (free variables get names; hoisted lines come first)."""
        st = self._scratch(e)
        try:
            text = self.expr(e)
            return "\n".join([*st.lines, text])
        finally:
            self.pop_function()

    def print_stmt(self, s: Stmt) -> str:
        """C lines of one statement (free variables get names)."""
        st = self._scratch(s)
        try:
            self.stmt(s)
            return "\n".join(st.lines)
        finally:
            self.pop_function()
