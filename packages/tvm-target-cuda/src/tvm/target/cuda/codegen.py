"""TIR -> CUDA C for the ``cuda`` target.

:class:`CUDAPrinter` is the shared :class:`~tvm.tir.codegen.gpu.GPUPrinter` with CUDA's
spellings: ``extern "C" __global__`` kernels with ``__launch_bounds__``, ``threadIdx.x``
/``blockIdx.x``, ``__shared__`` arrays, ``__syncthreads()``, warp shuffles
(``__shfl_down_sync``), CUDA's vector types (``float4`` through ``make_float4``, loaded and
stored as one access), ``__half`` (``cuda_fp16.h``) and ``__nv_bfloat16`` (``cuda_bf16.h``)
computed in float, and the device math functions (``expf``, ``__popc``, ``__int_as_float``).
"""

from __future__ import annotations

import math
import struct
from typing import Any, Optional, Union

from tvm.tir.codegen import CodegenError, DType, dtype_of
from tvm.tir.codegen.c_types import float_to_bf16_bits
from tvm.tir.codegen.gpu import DeviceCode, GPUPrinter, generate_device_code

__all__ = ["CUDAPrinter", "generate_source", "generate_device_code_cuda"]

_LANES = "xyzw"
_REINTERPRET = {
    ("float32", "int32"): "__float_as_int", ("int32", "float32"): "__int_as_float",
    ("float32", "uint32"): "__float_as_uint", ("uint32", "float32"): "__uint_as_float",
    ("float64", "int64"): "__double_as_longlong", ("int64", "float64"): "__longlong_as_double",
    ("float16", "int16"): "__half_as_short", ("int16", "float16"): "__short_as_half",
    ("float16", "uint16"): "__half_as_ushort", ("uint16", "float16"): "__ushort_as_half",
    ("bfloat16", "int16"): "__bfloat16_as_short", ("int16", "bfloat16"): "__short_as_bfloat16",
    ("bfloat16", "uint16"): "__bfloat16_as_ushort",
    ("uint16", "bfloat16"): "__ushort_as_bfloat16",
}


class CUDAPrinter(GPUPrinter):
    """CUDA C++ kernels for nvcc/NVRTC (see the module docstring)."""

    language = "cuda"
    kernel_qualifier = 'extern "C" __global__ '
    helper_qualifier = "static __device__ __forceinline__"
    restrict_keyword = "__restrict__"
    scalar_type_names = {
        "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
        "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
        "uint32": "unsigned int", "uint64": "unsigned long long", "float16": "__half",
        "float32": "float", "float64": "double", "bfloat16": "__nv_bfloat16",
    }
    vector_element_names = {
        "int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort",
        "int32": "int", "uint32": "uint", "int64": "longlong", "uint64": "ulonglong",
        "float32": "float", "float64": "double",
    }
    vector_ops_native = False
    warp_size = 32

    # ------------------------------------------------------------------ memory & threads
    def storage_scope_qualifier(self, scope: str) -> str:
        if scope == "shared":
            return "__shared__ "
        if scope in ("local", "global", ""):
            return ""
        raise CodegenError(f"cuda codegen: storage scope {scope!r} is not supported "
                           "(use 'shared' or 'local')")

    def thread_index(self, tag: str) -> str:
        if tag.split(".")[0] not in ("threadIdx", "blockIdx") or tag[-1] not in "xyz":
            raise CodegenError(f"cuda codegen: unknown thread index {tag!r}")
        return tag

    def barrier(self, scope: str) -> str:
        return "__syncthreads()"

    def kernel_header(self, func: Any, name: str, params: list[str]) -> str:
        threads = 1
        for tag, ext in func.attrs.get("thread_extent", []):
            if tag.startswith("threadIdx"):
                threads = threads * ext if isinstance(ext, int) and threads else 0
        bounds = f"__launch_bounds__({threads}) " if threads else ""
        return f"{self.kernel_qualifier}void {bounds}{name}({', '.join(params) or 'void'})"

    # ------------------------------------------------------------------ warp shuffles
    def intrin_tvm_warp_activemask(self, e: Any, lane: Any) -> str:
        return "__activemask()"

    def intrin_tvm_warp_shuffle_down(self, e: Any, lane: Any) -> str:
        mask, value, offset, width = (self.expr(a) for a in e.args)
        return f"__shfl_down_sync({mask}, {value}, {offset}, {width})"

    def intrin_tvm_warp_shuffle(self, e: Any, lane: Any) -> str:
        mask, value, src, width = (self.expr(a) for a in e.args)
        return f"__shfl_sync({mask}, {value}, {src}, {width})"

    # ------------------------------------------------------------------ vectors
    def vector_type_name(self, d: DType) -> str:
        base = self.vector_element_names.get(d.element.text)
        if base is None or d.lanes > 4:
            raise CodegenError(f"cuda codegen: no CUDA vector type for {d.text} (CUDA vectors "
                               "have 1-4 lanes of 8- to 64-bit integers or float/double); "
                               "vectorize by at most 4")
        return f"{base}{d.lanes}"

    def make_vector(self, d: DType, lanes: list[str]) -> str:
        return f"make_{self.type_name(d)}({', '.join(lanes)})"

    def broadcast_vector(self, d: DType, value: str) -> str:
        return self.make_vector(d, [value] * d.lanes)

    def vector_lane(self, value: str, d: DType, lane: Union[int, str]) -> str:
        if isinstance(lane, int):
            return f"{value}.{_LANES[lane]}"
        return f"((({self.type_name(d.element)}*)&({value}))[{lane}])"

    # ------------------------------------------------------------------ half types
    def _note(self, d: DType) -> None:
        self._printed_types.add(d.element.text)

    def half_to_float(self, value: str, d: DType) -> str:
        if value in self._half_literals:
            return self._half_literals[value]
        self._note(d)
        if d.is_bf16:
            return f"__bfloat162float({value})"
        if d.is_f16:
            return f"__half2float({value})"
        return value

    def float_to_half(self, value: str, d: DType) -> str:
        self._note(d)
        if d.is_bf16:
            return f"__float2bfloat16({value})"
        if d.is_f16:
            return f"__float2half({value})"
        return value

    def float_literal(self, value: float, d: DType) -> str:
        if d.is_bf16:
            bits = float_to_bf16_bits(value)
            exact = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
            f32 = self.float_literal(exact, dtype_of("float32"))
            text = self.float_to_half(f32, d)
            self._half_literals[text] = f32
            return text
        if not d.is_half_like and (math.isnan(value) or math.isinf(value)):
            if d.bits == 32:
                bits = 0x7FC00000 if math.isnan(value) else (0x7F800000 if value > 0
                                                              else 0xFF800000)
                return f"__int_as_float(0x{bits:08X})"
            bits = 0x7FF8000000000000 if math.isnan(value) else (
                0x7FF0000000000000 if value > 0 else 0xFFF0000000000000)
            return f"__longlong_as_double(0x{bits:016X}LL)"
        return super().float_literal(value, d)

    # ------------------------------------------------------------------ scalars
    def reinterpret(self, value: str, src: DType, dst: DType) -> str:
        fn = _REINTERPRET.get((src.text, dst.text))
        if fn is None:
            if src.is_int and dst.is_int:
                return f"(({self.type_name(dst)})({value}))"
            raise CodegenError(f"cuda codegen: no reinterpretation of {src.text} as {dst.text}")
        return f"{fn}({value})"

    def popcount(self, value: str, d: DType) -> str:
        if d.bits == 64:
            return f"__popcll((unsigned long long)({value}))"
        return f"__popc((unsigned int)({value}) & {(1 << d.bits) - 1}u)"

    def helper_clz(self, d: DType) -> str:
        t = self.type_name(d.with_lanes(1))
        bits = d.bits

        def text() -> str:
            if bits == 64:
                body = "__clzll((long long)x)"
            else:
                body = f"(__clz((int)((unsigned int)x & {(1 << bits) - 1}u)) - {32 - bits})"
            return (f"{self.helper_qualifier} int tvm_clz_{d.text}({t} x) {{ return x == 0 ? "
                    f"{bits} : {body}; }}")
        return self.require_helper(f"tvm_clz_{d.text}", text)

    def preamble_lines(self) -> list[str]:
        head = [f"// Generated by tvm-target-cuda for target {self.target!r}."]
        if self.uses_dtype(dtype_of("float16")):
            head.append("#include <cuda_fp16.h>")
        if self.uses_dtype(dtype_of("bfloat16")):
            head.append("#include <cuda_bf16.h>")
        return head + super().preamble_lines()


def generate_device_code_cuda(mod: Any, target: Any = "cuda") -> DeviceCode:
    """Kernels, kernel descriptions and host programs of ``mod`` for CUDA."""
    return generate_device_code(mod, CUDAPrinter(str(target)), target)


def generate_source(mod: Any, target: Optional[Any] = "cuda") -> str:
    """The CUDA C source of the kernels of ``mod``."""
    return generate_device_code_cuda(mod, target).source
