"""TIR -> Metal Shading Language for the ``metal`` target.

:class:`MetalPrinter` is the shared :class:`~tvm.tir.codegen.gpu.GPUPrinter` with MSL's
spellings: ``kernel void`` functions whose buffers are ``device T* [[buffer(i)]]`` and
scalars ``constant T& [[buffer(i)]]``, thread indices from ``[[threadgroup_position_in_grid]]``
and ``[[thread_position_in_threadgroup]]`` (named ``blockIdx``/``threadIdx``), the
``device``/``threadgroup`` address spaces, ``threadgroup_barrier(mem_flags::...)``, SIMD-group
shuffles (``simd_shuffle_down``), ``float4(...)`` vectors, ``half`` and ``bfloat``.
"""

from __future__ import annotations

import struct
from typing import Any, Optional, Union

from tvm.tir import PrimFunc, Var
from tvm.tir.codegen import CodegenError, DType, dtype_of
from tvm.tir.codegen.c_types import float_to_bf16_bits
from tvm.tir.codegen.gpu import ERROR_RECORD_PARAM, DeviceCode, GPUPrinter, generate_device_code

__all__ = ["MetalPrinter", "generate_source", "generate_device_code_metal"]

_LANES = "xyzw"


class MetalPrinter(GPUPrinter):
    """Metal Shading Language kernels (see the module docstring)."""

    language = "metal"
    kernel_qualifier = "kernel "
    helper_qualifier = "static inline"
    restrict_keyword = ""
    float32_math_suffix = ""
    math_function_renames = {"round": "rint", "nearbyint": "rint"}
    scalar_type_names = {
        "bool": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
        "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
        "float16": "half", "float32": "float", "bfloat16": "bfloat",
    }
    vector_element_names = {
        "int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int",
        "uint32": "uint", "int64": "long", "uint64": "ulong", "float16": "half",
        "float32": "float", "bool": "bool",
    }
    vector_ops_native = True
    vector_math_native = True
    warp_size = 32

    # ------------------------------------------------------------------ memory & threads
    def address_space_qualifier(self, scope: str) -> str:
        if scope == "shared":
            return "threadgroup "
        if scope in ("local", "private"):
            return "thread "
        return "device "

    def storage_scope_qualifier(self, scope: str) -> str:
        if scope == "shared":
            return "threadgroup "
        if scope in ("local", "global", ""):
            return ""
        raise CodegenError(f"metal codegen: storage scope {scope!r} is not supported (use "
                           "'shared' or 'local')")

    def thread_index(self, tag: str) -> str:
        if tag.split(".")[0] not in ("threadIdx", "blockIdx") or tag[-1] not in "xyz":
            raise CodegenError(f"metal codegen: unknown thread index {tag!r}")
        return tag

    def barrier(self, scope: str) -> str:
        flags = "mem_flags::mem_device | mem_flags::mem_threadgroup" if scope == "global" \
            else "mem_flags::mem_threadgroup"
        return f"threadgroup_barrier({flags})"

    def kernel_param_decl(self, var: Var, name: str, index: int, func: PrimFunc) -> str:
        d = dtype_of(var.dtype)
        if d.is_handle:
            return f"{self.var_type(var)} {name} [[buffer({index})]]"
        return f"constant {self.type_name(d)}& {name} [[buffer({index})]]"

    def error_param_decl(self, index: int) -> str:
        return f"device int* {ERROR_RECORD_PARAM} [[buffer({index})]]"

    def error_claim(self, record: str, number: int) -> str:
        # Metal has only the weak compare-exchange: retry while it fails spuriously
        first, seen = self.declare_name("first_error"), self.declare_name("seen_error")
        self.emit(f"int {seen} = 0;")
        self.emit(f"bool {first} = false;")
        self.emit(f"while (!({first} = atomic_compare_exchange_weak_explicit((device "
                  f"atomic_int*){record}, &{seen}, {number}, memory_order_relaxed, "
                  f"memory_order_relaxed)) && {seen} == 0) {{}}")
        return first

    def kernel_header(self, func: PrimFunc, name: str, params: list[str]) -> str:
        tags = [t for t, _ in func.attrs.get("thread_extent", [])]
        extra = []
        if any(t.startswith("blockIdx") for t in tags):
            extra.append("uint3 blockIdx [[threadgroup_position_in_grid]]")
        if any(t.startswith("threadIdx") for t in tags):
            extra.append("uint3 threadIdx [[thread_position_in_threadgroup]]")
        return f"{self.kernel_qualifier}void {name}({', '.join(params + extra) or 'void'})"

    # ------------------------------------------------------------------ SIMD-group shuffles
    def intrin_tvm_warp_activemask(self, e: Any, lane: Any) -> str:
        return "0u"  # simd_shuffle* need no mask

    def intrin_tvm_warp_shuffle_down(self, e: Any, lane: Any) -> str:
        value, offset = self.expr(e.args[1]), self.expr(e.args[2])
        return f"simd_shuffle_down({value}, (ushort)({offset}))"

    def intrin_tvm_warp_shuffle(self, e: Any, lane: Any) -> str:
        value, src = self.expr(e.args[1]), self.expr(e.args[2])
        return f"simd_shuffle({value}, (ushort)({src}))"

    # ------------------------------------------------------------------ vectors & types
    def vector_type_name(self, d: DType) -> str:
        if d.lanes > 4:
            raise CodegenError(f"metal codegen: no vector type for {d.text} (Metal vectors "
                               "have 2-4 lanes); vectorize by at most 4")
        return super().vector_type_name(d)

    def make_vector(self, d: DType, lanes: list[str]) -> str:
        return f"{self.type_name(d)}({', '.join(lanes)})"

    def broadcast_vector(self, d: DType, value: str) -> str:
        return f"{self.type_name(d)}({value})"

    def vector_lane(self, value: str, d: DType, lane: Union[int, str]) -> str:
        return f"{value}.{_LANES[lane]}" if isinstance(lane, int) else f"{value}[{lane}]"

    def type_name(self, d: Any) -> str:
        d = dtype_of(d) if isinstance(d, str) else d
        if d.element.text == "float64":
            raise CodegenError("metal codegen: Metal has no double precision (float64); use "
                               "float32")
        return super().type_name(d)

    def half_to_float(self, value: str, d: DType) -> str:
        if value in self._half_literals:
            return self._half_literals[value]
        return f"((float)({value}))" if d.is_half_like else value

    def float_to_half(self, value: str, d: DType) -> str:
        if d.is_half_like:
            return f"(({self.type_name(d)})({value}))"
        return value

    def float_literal(self, value: float, d: DType) -> str:
        if d.is_bf16:
            bits = float_to_bf16_bits(value)
            exact = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
            f32 = self.float_literal(exact, dtype_of("float32"))
            text = self.float_to_half(f32, d)
            self._half_literals[text] = f32
            return text
        return super().float_literal(value, d)

    def reinterpret(self, value: str, src: DType, dst: DType) -> str:
        return f"as_type<{self.type_name(dst)}>({value})"

    def popcount(self, value: str, d: DType) -> str:
        return f"((int)popcount({value}))"

    def preamble_lines(self) -> list[str]:
        return [f"// Generated by tvm-target-metal for target {self.target!r}.",
                "#include <metal_stdlib>", "using namespace metal;", *super().preamble_lines()]


def generate_device_code_metal(mod: Any, target: Any = "metal") -> DeviceCode:
    """Kernels, kernel descriptions and host programs of ``mod`` for Metal."""
    return generate_device_code(mod, MetalPrinter(str(target)), target)


def generate_source(mod: Any, target: Optional[Any] = "metal") -> str:
    """The Metal Shading Language source of the kernels of ``mod``."""
    return generate_device_code_metal(mod, target).source
