"""TIR -> C source for the ``c`` target.

:class:`CSourcePrinter` is the shared :class:`~tvm.tir.codegen.CLikePrinter` with what a
host C translation unit adds: the DLPack/TVMValue definitions of ``docs/abi.md``, the
``tir.tvm_struct_get``/``tvm_struct_set`` intrinsics of MakePackedAPI printed as struct
accesses, packed functions with the ABI signature, the compute scope outlined into a
``restrict``-qualified static function, and the ``__tvm_module_meta`` JSON string.

:func:`generate_source` prints a whole IRModule (PrimFuncs not yet packed go through
MakePackedAPI first).
"""

from __future__ import annotations

import json
from typing import Any, Optional

from tvm.ir.module import IRModule
from tvm.tir import Call, PrimFunc, Var
from tvm.tir.codegen import CLikePrinter, CodegenError, dtype_of
from tvm.tir.codegen.c_like_stmt import unparen
from tvm.tir.transform.make_packed_api import (
    PACKED_PARAM_NAMES, PACKED_PARAMS_ATTR, StructFieldKind, make_packed_api,
)

__all__ = ["CSourcePrinter", "generate_source", "prim_functions", "ABI_DEFINITIONS"]

#: The C definitions of docs/abi.md every generated source starts with.
ABI_DEFINITIONS = """\
typedef union { int64_t v_int64; double v_float64; void* v_handle; } TVMValue;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;"""

# StructFieldKind -> (C member of DLTensor, its C type)
_ARRAY_FIELDS = {
    StructFieldKind.ARR_DATA: ("data", "handle"),
    StructFieldKind.ARR_SHAPE: ("shape", "handle"),
    StructFieldKind.ARR_STRIDES: ("strides", "handle"),
    StructFieldKind.ARR_NDIM: ("ndim", "int32"),
    StructFieldKind.ARR_TYPE_CODE: ("dtype.code", "uint8"),
    StructFieldKind.ARR_TYPE_BITS: ("dtype.bits", "uint8"),
    StructFieldKind.ARR_TYPE_LANES: ("dtype.lanes", "uint16"),
    StructFieldKind.ARR_BYTE_OFFSET: ("byte_offset", "uint64"),
    StructFieldKind.ARR_DEVICE_ID: ("device.device_id", "int32"),
    StructFieldKind.ARR_DEVICE_TYPE: ("device.device_type", "int32"),
}
_VALUE_MEMBERS = {"int64": "v_int64", "float64": "v_float64", "handle": "v_handle"}
_ABI_PARAM_TYPES = ("TVMValue*", "int32_t*", "int32_t", "TVMValue*", "int32_t*", "void*")


class CSourcePrinter(CLikePrinter):
    """C99 (GCC/Clang) source of packed TIR functions, per ``docs/abi.md``."""

    language = "c"
    RUNTIME_SLOTS = {
        kind: (name, "TVM_DLL " + text) for kind, (name, text) in CLikePrinter.RUNTIME_SLOTS.items()
    }
    array_alignment = " __attribute__((aligned(64)))"
    outline_compute_scope = True

    def __init__(self, target: str = "c", num_tasks: int = 0) -> None:
        super().__init__(target)
        self.parallel_num_tasks = int(num_tasks)
        self._abi_types: dict[Var, str] = {}
        self._meta: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ language tweaks
    def likely(self, cond: str) -> str:
        return f"__builtin_expect(!!({unparen(cond)}), 1)"

    def unroll_pragma(self, extent: Optional[int]) -> Optional[str]:
        if extent is None or extent < 1:
            return None
        return f"#pragma GCC unroll {min(extent, 65534)}"

    def var_type(self, var: Var) -> str:
        fixed = self._abi_types.get(var)
        return fixed if fixed is not None else super().var_type(var)

    # ------------------------------------------------------------------ packed functions
    def param_decl(self, var: Var, name: str, func: PrimFunc) -> str:
        if var in self._abi_types:
            return f"{self._abi_types[var]} {name}"
        return super().param_decl(var, name, func)

    def add_function(self, func: PrimFunc, name: Optional[str] = None) -> str:
        """Print a packed PrimFunc (``calling_conv = "packed"``) or any lowered one."""
        packed = func.attrs.get("calling_conv") == "packed"
        if packed:
            if len(func.params) != len(PACKED_PARAM_NAMES):
                raise CodegenError(f"c codegen: packed function {name or '?'} has "
                                   f"{len(func.params)} parameters, expected 6 (docs/abi.md)")
            for var, ctype in zip(func.params, _ABI_PARAM_TYPES):
                self._abi_types[var] = ctype
        public = name or func.attrs.get("global_symbol")
        symbol_hint = public
        if public and self.global_names.is_used(public) and all(n != public for n, _ in self._functions):
            # A C keyword or libc name (``main``): export under another symbol; the module
            # metadata maps the public name to it (docs/abi.md).
            symbol_hint = f"__tvm_fn_{public}"
        symbol = super().add_function(func, symbol_hint)
        if packed:
            params = json.loads(func.attrs.get(PACKED_PARAMS_ATTR) or "[]")
            self._meta.append({"name": public or symbol, "symbol": symbol, "params": params})
        return symbol

    def function_header(self, func: PrimFunc, name: str, params: list[str]) -> str:
        header = super().function_header(func, name, params)
        if func.attrs.get("calling_conv") == "packed":
            return "TVM_DLL " + header
        return header

    # ------------------------------------------------------------------ struct access
    def intrin_tvm_struct_get(self, e: Call, lane: Any) -> str:
        ptr, index, kind = e.args
        access, ctype = self._struct_field(ptr, index, kind, dtype_of(e.dtype).text)
        want = dtype_of(e.dtype)
        if ctype == want.text:
            return access
        if kind.value == StructFieldKind.ARR_ADDR:
            return access
        return f"(({self.type_name(want)})({access}))"

    def intrin_tvm_struct_set(self, e: Call, lane: Any) -> str:
        ptr, index, kind, value = e.args
        access, ctype = self._struct_field(ptr, index, kind, dtype_of(value.dtype).text)
        if kind.value == StructFieldKind.ARR_ADDR:
            raise CodegenError("c codegen: tvm_struct_set cannot write ARR_ADDR")
        cast = self.type_name(dtype_of(ctype)) if ctype != "handle" else "void*"
        return f"({access} = ({cast})({self.expr(value)}))"

    def _struct_field(self, ptr: Any, index: Any, kind: Any, value_dtype: str) -> tuple[str, str]:
        try:
            field = StructFieldKind(int(kind.value))
        except (AttributeError, ValueError):
            raise CodegenError(f"c codegen: tvm_struct_get/set with unknown field kind "
                               f"{kind!r}") from None
        base, idx = self.expr(ptr), unparen(self.expr(index))
        if field == StructFieldKind.TVM_VALUE_CONTENT:
            member = _VALUE_MEMBERS.get(value_dtype)
            if member is None:
                d = dtype_of(value_dtype)
                member = "v_float64" if d.is_float else "v_int64"
                value_dtype = "float64" if d.is_float else "int64"
            values = base if self.var_type_of_expr(ptr) == "TVMValue*" else f"((TVMValue*){base})"
            return f"{values}[{idx}].{member}", value_dtype
        tensor = f"((DLTensor*){base})[{idx}]"
        if field == StructFieldKind.ARR_ADDR:
            return f"((void*)&{tensor})", "handle"
        member, ctype = _ARRAY_FIELDS[field]
        return f"{tensor}.{member}", ctype

    def var_type_of_expr(self, e: Any) -> Optional[str]:
        return self.var_type(e) if isinstance(e, Var) else None

    # ------------------------------------------------------------------ module text
    def preamble_lines(self) -> list[str]:
        head = [f"/* Generated by tvm-target-c for target {json.dumps(self.target)}. */"]
        lines = super().preamble_lines()
        return head + lines + [
            "#if defined(_WIN32)\n#define TVM_DLL __declspec(dllexport)\n#else\n"
            "#define TVM_DLL __attribute__((visibility(\"default\")))\n#endif",
            ABI_DEFINITIONS,
        ]

    def module_meta(self) -> dict[str, Any]:
        """The ``__tvm_module_meta`` object of the functions printed so far."""
        return {"version": 1, "target": self.target, "functions": list(self._meta)}

    def epilogue_lines(self) -> list[str]:
        text = json.dumps(self.module_meta(), separators=(",", ":"))
        literal = self.string_literal_chunked(text)
        return [f"TVM_DLL const char __tvm_module_meta[] =\n  {literal};"]

    def string_literal_chunked(self, text: str) -> str:
        from tvm.tir.codegen import c_string_literal

        return c_string_literal(text, max_chunk=96)

    def finish(self) -> str:
        # the slots are part of the ABI: define the error slot even when nothing asserts
        self.use_runtime_slot("error")
        return super().finish()


def prim_functions(mod: Any) -> list[tuple[str, PrimFunc]]:
    """``(name, PrimFunc)`` pairs of an IRModule (or of a single PrimFunc)."""
    if isinstance(mod, PrimFunc):
        return [(mod.attrs.get("global_symbol") or "main", mod)]
    if not isinstance(mod, IRModule):
        raise TypeError(f"c target: expected an IRModule or a PrimFunc, got {type(mod).__name__}")
    out = []
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc):
            raise TypeError(f"c target: function {gv.name_hint!r} is a {type(func).__name__}; "
                            "only TIR PrimFuncs compile to C")
        out.append((func.attrs.get("global_symbol") or gv.name_hint, func))
    return out


def generate_source(mod: Any, target: Any = "c", num_tasks: int = 0) -> str:
    """The C source of every PrimFunc of ``mod`` (packed through MakePackedAPI if needed)."""
    printer = CSourcePrinter(str(target) if target is not None else "c", num_tasks)
    for name, func in prim_functions(mod):
        if func.attrs.get("calling_conv") != "packed":
            func = make_packed_api(func, name)
        printer.add_function(func, name)
    return printer.finish()
