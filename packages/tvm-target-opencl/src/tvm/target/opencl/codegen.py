"""TIR -> OpenCL C for the ``opencl`` target.

:class:`OpenCLPrinter` is the shared :class:`~tvm.tir.codegen.gpu.GPUPrinter` with OpenCL's
spellings: ``__kernel`` functions, ``__global``/``__local`` address spaces, work-item
functions for thread indices, ``barrier(CLK_LOCAL_MEM_FENCE)``, OpenCL's scalar and vector
type names (``int``, ``float4``), ``vloadN``/``vstoreN`` vector accesses, overloaded math
functions (``exp``, not ``expf``) and the ``cl_khr_fp16``/``cl_khr_fp64`` extensions when
``half``/``double`` appear.  Each kernel's description lists the extensions it needs
(``extensions``), so the run side refuses, naming the kernel and the dtype, a kernel whose
device lacks one (pocl's CPU device has no ``cl_khr_fp16``) instead of failing in the
driver's compiler.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from tvm.tir.buffer import Buffer
from tvm.tir.codegen import CodegenError, DType, dtype_of
from tvm.tir.codegen.gpu import DeviceCode, GPUPrinter, generate_device_code

__all__ = ["OpenCLPrinter", "generate_source", "generate_device_code_opencl"]

#: element type -> the OpenCL extension a kernel using it needs
EXTENSIONS = {"float16": "cl_khr_fp16", "float64": "cl_khr_fp64"}

_THREAD_INDEX = {
    "blockIdx.x": "get_group_id(0)", "blockIdx.y": "get_group_id(1)",
    "blockIdx.z": "get_group_id(2)", "threadIdx.x": "get_local_id(0)",
    "threadIdx.y": "get_local_id(1)", "threadIdx.z": "get_local_id(2)",
}


class OpenCLPrinter(GPUPrinter):
    """OpenCL C 1.2 kernels (see the module docstring)."""

    language = "opencl"
    kernel_qualifier = "__kernel "
    helper_qualifier = "static inline"
    restrict_keyword = "restrict"
    float32_math_suffix = ""
    math_function_renames = {"round": "rint", "nearbyint": "rint"}
    scalar_type_names = {
        "bool": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
        "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
        "float16": "half", "float32": "float", "float64": "double", "bfloat16": "ushort",
    }
    bfloat16_storage = "ushort"
    vector_ops_native = True
    warp_size = 1
    vector_math_native = True

    def __init__(self, target: str = "") -> None:
        super().__init__(target)
        #: per kernel: the extensions it needs (:data:`EXTENSIONS`)
        self.kernel_extensions: dict[str, list[str]] = {}

    def add_function(self, func: Any, name: Optional[str] = None) -> str:
        outer, self._printed_types = self._printed_types, set()
        try:
            out = super().add_function(func, name)
            self.kernel_extensions[out] = sorted(EXTENSIONS[t] for t in self._printed_types
                                                 if t in EXTENSIONS)
        finally:
            self._printed_types = outer | self._printed_types
        return out

    def address_space_qualifier(self, scope: str) -> str:
        if scope == "shared":
            return "__local "
        if scope in ("local", "private"):
            return ""
        return "__global "

    def storage_scope_qualifier(self, scope: str) -> str:
        if scope == "shared":
            return "__local "
        if scope in ("local", "global", ""):
            return ""
        raise CodegenError(f"opencl codegen: storage scope {scope!r} is not supported "
                           "(use 'shared' or 'local')")

    def thread_index(self, tag: str) -> str:
        try:
            return _THREAD_INDEX[tag]
        except KeyError:
            raise CodegenError(f"opencl codegen: unknown thread index {tag!r}") from None

    def barrier(self, scope: str) -> str:
        fence = "CLK_GLOBAL_MEM_FENCE" if scope == "global" else "CLK_LOCAL_MEM_FENCE"
        return f"barrier({fence})"

    def error_claim(self, record: str, number: int) -> str:
        return f"atomic_cmpxchg((volatile __global int*){record}, 0, {number}) == 0"

    # ------------------------------------------------------------------ vectors
    def vector_lane(self, value: str, d: DType, lane: Union[int, str]) -> str:
        if isinstance(lane, int):
            return f"{value}.s{lane:X}"
        return f"((({self.type_name(d.element)}*)&({value}))[{lane}])"

    def vector_load(self, buffer: Buffer, base: str, d: DType) -> str:
        return f"vload{d.lanes}(0, {self.buffer_ptr(buffer)} + {base})"

    def vector_store(self, buffer: Buffer, base: str, value: str, d: DType) -> str:
        return f"vstore{d.lanes}({value}, 0, {self.buffer_ptr(buffer)} + {base})"

    # ------------------------------------------------------------------ scalars
    def reinterpret(self, value: str, src: DType, dst: DType) -> str:
        return f"as_{self.type_name(dst)}({value})"

    def popcount(self, value: str, d: DType) -> str:
        return f"((int)popcount({value}))"

    def helper_bf16(self) -> tuple[str, str]:
        def to_f32() -> str:
            return (f"{self.helper_qualifier} float tvm_bf16_to_f32(ushort v) {{ return "
                    "as_float(((uint)v) << 16); }")

        def from_f32() -> str:
            return (f"{self.helper_qualifier} ushort tvm_f32_to_bf16(float f) {{\n"
                    "  uint bits = as_uint(f);\n  if (f != f) return (ushort)0x7FC0;\n"
                    "  bits += ((bits >> 16) & 1u) + 0x7FFFu;\n  return (ushort)(bits >> 16);\n}")
        return (self.require_helper("tvm_bf16_to_f32", to_f32),
                self.require_helper("tvm_f32_to_bf16", from_f32))

    def preamble_lines(self) -> list[str]:
        head = [f"/* Generated by tvm-target-opencl for target {self.target!r}. */"]
        if self.uses_dtype(dtype_of("float16")):
            head.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
        if self.uses_dtype(dtype_of("float64")):
            head.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        return head + super().preamble_lines()


def generate_device_code_opencl(mod: Any, target: Any = "opencl") -> DeviceCode:
    """Kernels, kernel descriptions (with the ``extensions`` each needs) and host programs
    of ``mod`` for OpenCL."""
    printer = OpenCLPrinter(str(target))
    code = generate_device_code(mod, printer, target)
    for k in code.kernels:
        k["extensions"] = printer.kernel_extensions.get(k["name"], [])
    return code


def generate_source(mod: Any, target: Optional[Any] = "opencl") -> str:
    """The OpenCL C source of the kernels of ``mod``."""
    return generate_device_code_opencl(mod, target).source
