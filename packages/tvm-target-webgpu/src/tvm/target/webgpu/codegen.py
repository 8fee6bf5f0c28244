"""TIR -> WGSL compute shaders for the ``webgpu`` target.

:class:`WebGPUPrinter` is the shared :class:`~tvm.tir.codegen.gpu.GPUPrinter` with WGSL's
spellings; what WGSL writes differently from C goes through the printer's hooks
(``declaration``, ``for_header``, ``conditional``, ``c_cast``, literals, helpers):

* each kernel is its own shader module whose entry point is ``main``; the workgroup size
  comes from the launch as the pipeline-overridable constants ``tvm_wg_x/y/z``;
* every tensor parameter is a storage buffer of bind group 0 (bindings in parameter order,
  :mod:`.layout`), ``read`` when the kernel never writes it, holding a runtime-sized array
  named like the parameter, so an access reads as in C (``A[i]``);
* scalar parameters are members of one uniform buffer (``tvm_params.n``);
* ``shared`` allocations are ``var<workgroup>`` arrays at module scope, local ones
  ``var`` arrays; ``tvm_storage_sync`` is ``workgroupBarrier()``;
* thread indices are the ``workgroup_id`` / ``local_invocation_id`` built-ins;
* WGSL has no 64-bit or 8/16-bit integers and no float64: int64 index arithmetic that
  provably fits is narrowed (:func:`tvm.tir.codegen.narrow.narrow_index_math`), the rest of
  a kernel's int64 values are computed as i32 (indices into buffers the runtime limits to
  2 GiB; the wrapping negation ``int64(uint64(0) - uint64(x))`` of the division guards is
  i32 negation, which wraps as well); int64 tensors are ``array<vec2<i32>>`` whose elements are read as i32,
  saturating (a huge index still fails its check), and written sign-extended (a plain
  copy keeps both words).  A kernel that computes int64 tensor values from int64 tensor
  data, or uses float64, int8/16 or uint8/16/64, is refused with a
  :class:`~tvm.tir.codegen.CodegenError` naming the kernel and the dtype;
* bool tensors keep the host's one byte per element, four to an ``array<atomic<u32>>``
  word: read with ``atomicLoad``, written with ``atomicAnd``/``atomicOr`` of the thread's
  own byte (so neighbours in a word never clobber each other);
* ``asin``/``acos`` are ``atan2(x, sqrt((1 - x)(1 + x)))`` and its complement: Mesa's
  (lavapipe, RADV, ANV, under wgpu's Vulkan backend) are cheap approximations off by up to
  4e-4, about 100 times worse than its ``atan``;
* float16 needs ``enable f16;`` and the adapter feature ``shader-f16`` (the kernel's
  ``features`` say so; the runtime refuses the kernel on an adapter without it);
* checks in kernels write the shared error record (``array<atomic<i32>>``) after
  claiming it with ``atomicCompareExchangeWeak``.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Optional, Union

from tvm.tir.buffer import Buffer
from tvm.tir.codegen import CodegenError, DType, dtype_of
from tvm.tir.codegen.c_like_stmt import negate, unparen
from tvm.tir.codegen.gpu import ERROR_RECORD_PARAM, DeviceCode, GPUPrinter, generate_device_code
from tvm.tir.codegen.narrow import narrow_index_math
from tvm.tir.expr import BufferLoad, Cast, IntImm, Sub, Var
from tvm.tir.function import PrimFunc
from tvm.tir.stmt import Allocate, BufferStore, While
from tvm.tir.stmt_functor import pre_order_visit
from tvm.tir.transform.split_host_device import is_device_kernel

from .layout import UNIFORM_TYPES, LayoutError, kernel_layout

__all__ = ["WebGPUPrinter", "generate_source", "generate_device_code_webgpu", "KERNEL_MARK"]

#: the comment in front of each kernel's shader in the module's combined source
KERNEL_MARK = "// ---- webgpu kernel "

_THREAD_INDEX = {
    "blockIdx.x": "i32(tvm_wid.x)", "blockIdx.y": "i32(tvm_wid.y)", "blockIdx.z": "i32(tvm_wid.z)",
    "threadIdx.x": "i32(tvm_lid.x)", "threadIdx.y": "i32(tvm_lid.y)",
    "threadIdx.z": "i32(tvm_lid.z)",
}
_VECTOR_ELEMENTS = ("float32", "int32", "uint32", "bool", "float16", "int64")
#: dtypes WGSL cannot hold -> what to do instead
_NO_WGSL = {
    "float64": "WGSL has no 64-bit floats; compute in float32",
    "uint64": "WGSL has no 64-bit integers; use int32",
    "int8": "WGSL has no 8-bit integers; use int32",
    "uint8": "WGSL has no 8-bit integers; use int32",
    "int16": "WGSL has no 16-bit integers; use int32",
    "uint16": "WGSL has no 16-bit integers; use int32",
    "bfloat16": "WGSL has no bfloat16; use float16 or float32",
}
_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1

#: WGSL keywords, reserved words and built-in functions a TIR name must not take
_WGSL_RESERVED = frozenset("""alias break case const const_assert continue continuing default
diagnostic discard else enable false fn for if let loop override requires return struct
switch true var while bool f16 f32 i32 u32 vec2 vec3 vec4 mat2x2 mat3x3 mat4x4 array atomic
ptr sampler texture_2d NULL Self abstract active alignas alignof as asm asm_fragment async
attribute auto await become binding_array cast catch class co_await co_return co_yield
coherent column_major common compile compile_fragment concept const_cast consteval constexpr
constinit crate debugger decltype delete demote demote_to_helper do dynamic_cast enum
explicit export extends extern external fallthrough filter final finally friend from fxgroup
get goto groupshared highp impl implements import inline instanceof interface layout lowp
macro macro_rules match mediump meta mod module move mut mutable namespace new nil noexcept
noinline nointerpolation noperspective null nullptr of operator package packoffset partition
pass patch pixelfragment precise precision premerge priv protected pub public readonly ref
regardless register reinterpret_cast require resource restrict self set shared sizeof smooth
snorm static static_assert static_cast std subroutine super target template this
thread_local throw trait try type typedef typeid typename typeof union unless unorm unsafe
unsized use using varying virtual volatile wgsl where with writeonly yield read read_write
storage uniform workgroup private function main abs acos acosh all any asin asinh atan
atanh atan2 bitcast ceil clamp cos cosh countLeadingZeros countOneBits countTrailingZeros
cross degrees determinant distance dot exp exp2 extractBits faceForward firstLeadingBit
firstTrailingBit floor fma fract frexp insertBits inverseSqrt ldexp length log log2 max min
mix modf normalize pow quantizeToF16 radians reflect refract reverseBits round saturate sign
sin sinh smoothstep sqrt step tan tanh transpose trunc select arrayLength atomicLoad
atomicStore atomicAdd atomicSub atomicMax atomicMin atomicAnd atomicOr atomicXor
atomicExchange atomicCompareExchangeWeak storageBarrier workgroupBarrier textureBarrier
workgroupUniformLoad""".split())


def _stored_buffers(func: PrimFunc) -> set:
    """The data variables ``func`` stores into."""
    found: set = set()

    def visit(node: Any) -> bool:
        if isinstance(node, BufferStore):
            found.add(node.buffer.data)
        return True

    pre_order_visit(func.body, visit)
    return found


def _wrapping_negation(e: Any) -> Any:
    """``x`` when ``e`` is ``int64(uint64(0) - uint64(x))`` for an int64 ``x`` (the wrapping
    negation of GuardIntegerDivision and the integer division operators), else None."""
    if not (isinstance(e, Cast) and str(e.dtype) == "int64" and isinstance(e.value, Sub)
            and str(e.value.dtype) == "uint64"):
        return None
    zero, x = e.value.a, e.value.b
    while isinstance(zero, Cast):
        zero = zero.value
    if not (isinstance(zero, IntImm) and zero.value == 0 and isinstance(x, Cast)
            and str(x.value.dtype) == "int64"):
        return None
    return x.value


def _reads_int64_tensor(e: Any) -> bool:
    found = []

    def visit(node: Any) -> bool:
        if isinstance(node, BufferLoad) and _is_global(node.buffer) and \
                dtype_of(node.buffer.dtype).element.text == "int64":
            found.append(node)
        return not found

    pre_order_visit(e, visit)
    return bool(found)


def _is_global(buffer: Buffer) -> bool:
    return buffer.scope in ("global", "")


class WebGPUPrinter(GPUPrinter):
    """WGSL compute shaders for WebGPU (see the module docstring)."""

    language = "webgpu"
    pointer_casts = False
    kernel_qualifier = ""
    helper_qualifier = ""
    restrict_keyword = ""
    float32_math_suffix = ""
    math_function_renames = {"round": "round", "nearbyint": "round", "fabs": "abs",
                             "atan2": "atan2"}
    scalar_type_names = {"bool": "bool", "int32": "i32", "uint32": "u32", "float32": "f32",
                         "float16": "f16", "int64": "i32"}
    vector_ops_native = True
    vector_math_native = True
    warp_size = 1

    def __init__(self, target: str = "") -> None:
        super().__init__(target)
        for word in _WGSL_RESERVED:
            self.global_names.reserve(word)
        #: per kernel: its shader text (without the module preamble) and features
        self.kernel_texts: dict[str, str] = {}
        self.kernel_features: dict[str, list[str]] = {}
        #: per kernel: its parameter layout (:class:`.layout.KernelLayout` as JSON)
        self.kernel_layouts: dict[str, dict[str, Any]] = {}
        self._kernel_decls: list[str] = []
        self._kernel_params: list[tuple[Var, str]] = []
        self._stored_vars: set = set()
        self._kernel = "?"

    # ------------------------------------------------------------------ types & literals
    def _refuse(self, what: str, d: DType) -> CodegenError:
        why = _NO_WGSL.get(d.element.text, "WGSL cannot hold it")
        return CodegenError(f"webgpu codegen: kernel {self._kernel} uses {what} of dtype "
                            f"{d.text}; {why}")

    def type_name(self, d: Union[str, DType]) -> str:
        d = dtype_of(d) if isinstance(d, str) else d
        if not d.is_void and not d.is_handle and d.element.text not in self.scalar_type_names:
            raise self._refuse("a value", d)
        return super().type_name(d)

    def c_cast(self, ctype: str, value: str) -> str:
        if "*" in ctype:
            raise CodegenError(f"webgpu codegen: WGSL has no pointers (a cast to {ctype})")
        return f"{ctype}({unparen(value)})"

    def vector_type_name(self, d: DType) -> str:
        if d.element.text not in _VECTOR_ELEMENTS or not 2 <= d.lanes <= 4:
            raise CodegenError(f"webgpu codegen: kernel {self._kernel}: no WGSL vector type "
                               f"for {d.text} (vectors of 2-4 lanes of "
                               f"{', '.join(_VECTOR_ELEMENTS)}); vectorize by at most 4")
        return f"vec{d.lanes}<{self.type_name(d.element)}>"

    def pointer_type(self, elem: Optional[DType], scope: str = "global") -> str:
        raise CodegenError("webgpu codegen: WGSL has no pointers here; a handle can only be a "
                           "kernel's buffer parameter (pointer arithmetic, tvm_access_ptr and "
                           "address_of are not supported)")

    def int_literal(self, value: int, d: DType) -> str:
        if not d.is_int:
            return self.literal(value, d)
        self.type_name(d)
        if d.is_unsigned:
            return f"{value}u"
        if d.bits == 64 and value in (2 ** 63 - 1, -(2 ** 63)):
            # the int64 extremes (identities of min/max/argmax reductions) stand for the
            # extremes of the i32 values int64 is computed with
            value = _INT32_MAX if value > 0 else _INT32_MIN
        if not _INT32_MIN <= value <= _INT32_MAX:
            raise CodegenError(f"webgpu codegen: kernel {self._kernel} uses the {d.text} "
                               f"constant {value}, which does not fit in 32 bits; WGSL has no "
                               "64-bit integers")
        if value == _INT32_MIN:
            return "(-2147483647i - 1i)"
        return f"{value}i" if value >= 0 else f"({value}i)"

    def float_literal(self, value: float, d: DType) -> str:
        if d.is_bf16 or (d.bits == 64 and d.is_float):
            raise self._refuse("a constant", d)
        if d.bits == 32 and not d.is_half_like:
            try:
                value = struct.unpack("<f", struct.pack("<f", value))[0]
            except OverflowError:
                value = math.copysign(math.inf, value)
            if math.isnan(value) or math.isinf(value):
                # WGSL constant expressions may not be infinite or NaN: read the bits from a
                # private variable (a run-time value)
                self.require_helper("tvm_f32_special", lambda: (
                    "var<private> tvm_f32_special: vec3<u32> = "
                    "vec3<u32>(0x7f800000u, 0xff800000u, 0x7fc00000u);"))
                lane = "z" if math.isnan(value) else ("x" if value > 0 else "y")
                return f"bitcast<f32>(tvm_f32_special.{lane})"
            text = repr(float(value))
            if "e" not in text and "." not in text:
                text += ".0"
            text += "f"
            return f"({text})" if text.startswith("-") else text
        return super().float_literal(value, d)

    def helper_bf16(self) -> tuple[str, str]:
        raise self._refuse("a value", dtype_of("bfloat16"))

    def make_vector(self, d: DType, lanes: list[str]) -> str:
        return f"{self.type_name(d)}({', '.join(unparen(x) for x in lanes)})"

    def broadcast_vector(self, d: DType, value: str) -> str:
        return f"{self.type_name(d)}({unparen(value)})"

    def reinterpret(self, value: str, src: DType, dst: DType) -> str:
        return f"bitcast<{self.type_name(dst)}>({unparen(value)})"

    def popcount(self, value: str, d: DType) -> str:
        return f"countOneBits({unparen(value)})"

    def helper_clz(self, d: DType) -> str:
        t = self.type_name(d.with_lanes(1))

        def text() -> str:
            return (f"fn tvm_clz_{d.text}(x: {t}) -> i32 {{ return i32(countLeadingZeros(x)); }}")
        return self.require_helper(f"tvm_clz_{d.text}", text)

    # ------------------------------------------------------------------ statement spellings
    def declaration(self, ctype: str, name: str, value: str) -> str:
        return f"var {name}: {ctype} = {unparen(value)};"

    def for_header(self, ctype: str, name: str, start: str, end: str) -> str:
        return f"for (var {name}: {ctype} = {start}; {name} < {end}; {name}++) {{"

    def conditional(self, cond: str, true_value: str, false_value: str) -> str:
        return f"select({unparen(false_value)}, {unparen(true_value)}, {unparen(cond)})"

    def unroll_pragma(self, extent: Optional[int]) -> Optional[str]:
        return None

    def _s_while(self, s: While) -> None:
        self.open_block("loop {")
        self.emit(f"if ({negate(self.expr(s.condition))}) {{ break; }}")
        self.stmt(s.body)
        self.close_block()

    # ------------------------------------------------------------------ operators & math
    def _p_cast(self, e: Any, lane: Any) -> str:
        x = _wrapping_negation(e)
        if x is not None:  # int64 is computed as i32, whose negation wraps as well
            return f"(0i - {self.sub(x, lane)})"
        return super()._p_cast(e, lane)

    def _shift(self, e: Any, lane: Any, op: str) -> str:
        d = dtype_of(e.dtype).element
        if not d.is_int:
            raise CodegenError(f"webgpu codegen: tir.{e.op.name[4:]} needs integers, got "
                               f"{e.dtype}")
        a, b = self.sub(e.args[0], lane), self.sub(e.args[1], lane)
        return f"({a} {op} u32({unparen(b)}))"

    def intrin_shift_left(self, e: Any, lane: Any) -> str:
        return self._shift(e, lane, "<<")

    def intrin_shift_right(self, e: Any, lane: Any) -> str:
        return self._shift(e, lane, ">>")

    def intrin_ldexp(self, e: Any, lane: Any) -> str:
        d = dtype_of(e.dtype).element
        x = self.to_float(self.sub(e.args[0], lane), d)
        out = f"ldexp({x}, i32({unparen(self.sub(e.args[1], lane))}))"
        return self.float_to_half(out, d) if d.is_half_like else out

    def float_math(self, name: str, args: list[str], d: DType) -> str:
        t = self.type_name(d)
        one = self.literal(1.0, d)
        if name == "fmod":
            a, b = args
            return f"({a} - {b} * trunc({a} / {b}))"
        if name == "log10":
            return f"(log({args[0]}) * {self.literal(0.4342944819032518, d)})"
        if name == "log1p":
            return f"log({one} + {args[0]})"
        if name == "expm1":
            return f"(exp({args[0]}) - {one})"
        if name == "rsqrt":
            return f"inverseSqrt({args[0]})"
        if name == "hypot":
            return f"length(vec2<{t}>({args[0]}, {args[1]}))"
        if name == "copysign":
            a, b = args
            sign = f"(bitcast<u32>({b}) & 0x80000000u)"
            return f"bitcast<{t}>((bitcast<u32>({a}) & 0x7fffffffu) | {sign})" if d.bits == 32 \
                else f"select(abs({a}), -abs({a}), {b} < {self.literal(0.0, d)})"
        if name == "erf":
            return f"{self.helper_erf(d)}({args[0]})"
        if name in ("asin", "acos"):
            return f"{self.helper_arc(name, d)}({unparen(args[0])})"
        if name == "nextafter":
            raise CodegenError("webgpu codegen: tir.nextafter has no WGSL counterpart")
        return super().float_math(name, args, d)

    def helper_sigmoid(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:
            one = self.literal(1.0, d)
            return f"fn tvm_sigmoid_{d.text}(x: {t}) -> {t} {{ return {one} / ({one} + exp(-x)); }}"
        return self.require_helper(f"tvm_sigmoid_{d.text}", text)

    def helper_arc(self, name: str, d: DType) -> str:
        """asin/acos through ``atan2`` (see the module docstring)."""
        t = self.type_name(d)

        def text() -> str:
            one = self.literal(1.0, d)
            root = f"sqrt(({one} - x) * ({one} + x))"
            value = f"atan2(x, {root})" if name == "asin" else f"atan2({root}, x)"
            return f"fn tvm_{name}_{d.text}(x: {t}) -> {t} {{ return {value}; }}"
        return self.require_helper(f"tvm_{name}_{d.text}", text)

    def helper_erf(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:  # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)
            c = [self.literal(v, d) for v in (1.0, 0.3275911, 0.254829592, -0.284496736,
                                               1.421413741, -1.453152027, 1.061405429)]
            return (f"fn tvm_erf_{d.text}(v: {t}) -> {t} {{\n"
                    f"  let s = sign(v); let x = abs(v);\n"
                    f"  let k = {c[0]} / ({c[0]} + {c[1]} * x);\n"
                    f"  let p = k * ({c[2]} + k * ({c[3]} + k * ({c[4]} + k * ({c[5]} + k * "
                    f"{c[6]}))));\n"
                    f"  return s * ({c[0]} - p * exp(-x * x));\n}}")
        return self.require_helper(f"tvm_erf_{d.text}", text)

    def float_predicate(self, name: str, arg: str, d: DType) -> str:
        # WGSL implementations may assume finite math, so test the bits
        if d.bits != 32:
            arg, d = f"f32({arg})", dtype_of("float32")
        bits = f"(bitcast<u32>({unparen(arg)}) & 0x7fffffffu)"
        op = {"isnan": ">", "isinf": "==", "isfinite": "<"}[name]
        return f"{bits} {op} 0x7f800000u"

    def helper_floordiv(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:
            return (f"fn tvm_floordiv_{d.text}(a: {t}, b: {t}) -> {t} {{\n"
                    f"  let q = a / b; let r = a % b;\n"
                    f"  return select(q, q - 1, r != 0 && ((r < 0) != (b < 0)));\n}}")
        return self.require_helper(f"tvm_floordiv_{d.text}", text)

    def helper_floormod(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:
            return (f"fn tvm_floormod_{d.text}(a: {t}, b: {t}) -> {t} {{\n"
                    f"  let r = a % b;\n"
                    f"  return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));\n}}")
        return self.require_helper(f"tvm_floormod_{d.text}", text)

    def helper_float_floormod(self, d: DType) -> str:
        t = self.type_name(d)
        fd = dtype_of("float32") if d.is_half_like else d
        ft = self.type_name(fd)

        def text() -> str:
            ret = self.float_to_half("(x - floor(x / y) * y)", d) if fd is not d else \
                "x - floor(x / y) * y"
            return (f"fn tvm_floormod_{d.text}(a: {t}, b: {t}) -> {t} {{\n"
                    f"  let x: {ft} = {self.to_float('a', d)}; let y: {ft} = "
                    f"{self.to_float('b', d)};\n  return {ret};\n}}")
        return self.require_helper(f"tvm_floormod_{d.text}", text)

    def helper_minmax(self, d: DType, is_min: bool) -> str:
        t = self.type_name(d)
        kind = "min" if is_min else "max"

        def text() -> str:
            cond = self.compare("<" if is_min else ">", "a", "b", d)
            return (f"fn tvm_{kind}_{d.text}(a: {t}, b: {t}) -> {t} {{ return select(b, a, "
                    f"{unparen(cond)}); }}")
        return self.require_helper(f"tvm_{kind}_{d.text}", text)

    # ------------------------------------------------------------------ threads & sync
    def thread_index(self, tag: str) -> str:
        try:
            return _THREAD_INDEX[tag]
        except KeyError:
            raise CodegenError(f"webgpu codegen: unknown thread index {tag!r}") from None

    def barrier(self, scope: str) -> str:
        return "storageBarrier()" if scope == "global" else "workgroupBarrier()"

    def intrin_tvm_warp_shuffle_down(self, e: Any, lane: Any) -> str:
        raise CodegenError("webgpu codegen: warp shuffles need WebGPU subgroups, which this "
                           "target does not use; keep -thread_warp_size=1")

    intrin_tvm_warp_shuffle = intrin_tvm_warp_shuffle_down

    # ------------------------------------------------------------------ checks
    def error_claim(self, record: str, number: int) -> str:
        claimed = self.declare_name("claimed")
        self.emit(f"var {claimed}: bool = false;")
        self.open_block("loop {")
        res = self.declare_name("cas")
        self.emit(f"let {res} = atomicCompareExchangeWeak(&{record}[0], 0i, {number}i);")
        self.emit(f"if ({res}.exchanged) {{ {claimed} = true; break; }}")
        self.emit(f"if ({res}.old_value != 0i) {{ break; }}")
        self.close_block()
        return claimed

    def error_record_store(self, record: str, k: int, arg: Any) -> str:
        if isinstance(arg, BufferLoad) and self._is_wide(arg.buffer) and \
                dtype_of(arg.dtype).lanes == 1:  # an int64 read from a tensor: both words
            words = self.declare_name("err_arg")
            self.note_buffer_use(arg.buffer)
            idx = self.element_index(arg.buffer, self.flat_index(arg.buffer, arg.indices), None)
            self.emit(f"let {words}: vec2<i32> = {self.buffer_ptr(arg.buffer)}[{unparen(idx)}];")
            return (f"atomicStore(&{record}[{2 + 2 * k}], {words}.x); "
                    f"atomicStore(&{record}[{3 + 2 * k}], {words}.y);")
        value = self.declare_name("err_arg")
        self.emit(f"let {value}: i32 = i32({unparen(self.expr(arg))});")
        return (f"atomicStore(&{record}[{2 + 2 * k}], {value}); "
                f"atomicStore(&{record}[{3 + 2 * k}], {value} >> 31u);")

    def error_param_decl(self, index: int) -> str:
        return ERROR_RECORD_PARAM

    # ------------------------------------------------------------------ memory
    def _is_wide(self, buffer: Buffer) -> bool:
        return _is_global(buffer) and dtype_of(buffer.dtype).element.text == "int64"

    def _is_bytes(self, buffer: Buffer) -> bool:
        return _is_global(buffer) and dtype_of(buffer.dtype).element.is_bool

    def _byte_word(self, buffer: Buffer, index: str) -> tuple[str, str]:
        """``(word, shift)`` of the byte ``index`` of a bool tensor (declared here)."""
        b, sh = self.declare_name("bi"), self.declare_name("bsh")
        self.emit(f"let {b}: i32 = i32({unparen(index)});")
        self.emit(f"let {sh}: u32 = u32({b} & 3i) * 8u;")
        return f"&{self.buffer_ptr(buffer)}[{b} >> 2u]", sh

    def _byte_store(self, buffer: Buffer, index: str, value: str) -> str:
        word, sh = self._byte_word(buffer, index)
        # each thread owns its byte: clearing and setting it are atomic word updates that
        # leave the other bytes of the word alone
        return (f"atomicAnd({word}, ~(0xffu << {sh})); "
                f"atomicOr({word}, u32({unparen(value)}) << {sh})")

    def load(self, buffer: Buffer, index: str) -> str:
        if self._is_bytes(buffer):
            word, sh = self._byte_word(buffer, index)
            return f"(((atomicLoad({word}) >> {sh}) & 0xffu) != 0u)"
        text = f"{self.buffer_ptr(buffer)}[{unparen(index)}]"
        if self._is_wide(buffer):
            return f"{self._helper_i64()[0]}({text})"
        return text

    def _helper_i64(self) -> tuple[str, str]:
        narrow = self.require_helper("tvm_i64_narrow", lambda: (
            "fn tvm_i64_narrow(v: vec2<i32>) -> i32 {\n"
            "  if (v.y == (v.x >> 31u)) { return v.x; }\n"
            "  return select(2147483647i, -2147483647i - 1i, v.y < 0i);\n}"))
        widen = self.require_helper("tvm_i64_widen", lambda: (
            "fn tvm_i64_widen(v: i32) -> vec2<i32> { return vec2<i32>(v, v >> 31u); }"))
        return narrow, widen

    def vector_load(self, buffer: Buffer, base: str, d: DType) -> str:
        b = self.declare_name("vbase")
        self.emit(f"let {b}: i32 = i32({unparen(base)});")
        return self.make_vector(d, [self.load(buffer, f"{b} + {k}" if k else b)
                                    for k in range(d.lanes)])

    def vector_store(self, buffer: Buffer, base: str, value: str, d: DType) -> str:
        ptr = self.buffer_ptr(buffer)
        b, v = self.declare_name("vbase"), self.declare_name("vval")
        self.emit(f"let {b}: i32 = i32({unparen(base)});")
        self.emit(f"let {v}: {self.type_name(d)} = {unparen(value)};")
        if self._is_bytes(buffer):
            for k in range(d.lanes):
                self.emit(self._byte_store(buffer, f"{b} + {k}", f"{v}[{k}]") + ";")
            return ""
        return "; ".join(f"{ptr}[{b} + {k}] = {self._stored(buffer, f'{v}[{k}]')}"
                         for k in range(d.lanes))

    def _stored(self, buffer: Buffer, value: str) -> str:
        if self._is_wide(buffer):
            return f"{self._helper_i64()[1]}({unparen(value)})"
        return unparen(value)

    def _s_buffer_store(self, s: BufferStore) -> None:
        buf = s.buffer
        if self._is_wide(buf):
            v = s.value
            raw = isinstance(v, BufferLoad) and self._is_wide(v.buffer) and \
                dtype_of(v.dtype).lanes == 1
            if not raw and _reads_int64_tensor(v):
                raise CodegenError(f"webgpu codegen: kernel {self._kernel} computes int64 "
                                   f"values of {buf.name!r} from int64 tensor data; WGSL has "
                                   "no 64-bit integers (only copies and int64 results of "
                                   "32-bit values, such as indices, are supported); use int32")
        index = self.flat_index(buf, s.indices)
        if (dtype_of(s.value.dtype).lanes == 1 and dtype_of(index.dtype).lanes == 1
                and dtype_of(buf.dtype).lanes == 1):
            self.note_buffer_use(buf)
            idx = self.element_index(buf, index, None)
            v = s.value
            if self._is_bytes(buf):
                self.emit(self._byte_store(buf, idx, self.expr(v)) + ";")
                return
            if isinstance(v, BufferLoad) and self._is_wide(buf) and self._is_wide(v.buffer):
                src = v.buffer
                self.note_buffer_use(src)
                sidx = self.element_index(src, self.flat_index(src, v.indices), None)
                value = f"{self.buffer_ptr(src)}[{unparen(sidx)}]"  # both words
            else:
                value = self._stored(buf, self.expr(v))
            self.emit(f"{self.buffer_ptr(buf)}[{unparen(idx)}] = {value};")
            return
        super()._s_buffer_store(s)

    def _native_vector_store(self, s: BufferStore, buf: Buffer, index: Any, vd: Any) -> None:
        from tvm.tir.expr import Ramp

        if (dtype_of(buf.dtype).lanes == 1 and isinstance(index, Ramp)
                and isinstance(index.stride, IntImm) and index.stride.value == 1):
            self.emit(self.vector_store(buf, self.expr(index.base), self.expr(s.value), vd) + ";")
            return
        tmp = self.declare_name("vtmp")
        self.emit(self.declaration(self.type_name(vd), tmp, self.expr(s.value)))
        ptr = self.buffer_ptr(buf)
        for i in range(vd.lanes):
            idx = unparen(self.element_index(buf, index, i))
            if self._is_bytes(buf):
                self.emit(self._byte_store(buf, idx, self.vector_lane(tmp, vd, i)) + ";")
                continue
            self.emit(f"{ptr}[{idx}] = {self._stored(buf, self.vector_lane(tmp, vd, i))};")

    def storage_scope_qualifier(self, scope: str) -> str:
        if scope in ("local", "global", ""):
            return ""
        raise CodegenError(f"webgpu codegen: storage scope {scope!r} is not supported (use "
                           "'shared' or 'local')")

    def _s_allocate(self, s: Allocate) -> None:
        self.storage_scope_qualifier(s.scope) if s.scope != "shared" else None
        count = dtype_of(s.dtype).lanes
        for e in s.extents:
            if not isinstance(e, IntImm):
                raise CodegenError(f"webgpu codegen: kernel {self._kernel}: "
                                   f"{s.buffer_var.name!r} ({s.scope}) has the symbolic size "
                                   f"{tuple(s.extents)}; memory allocated in a kernel needs a "
                                   "constant size")
            count *= e.value
        elem = dtype_of(s.dtype).element
        t = self.type_name(elem)
        self.st.ptr_elem[s.buffer_var] = elem
        self.st.ptr_scope[s.buffer_var] = s.scope
        name = self.declare_var(s.buffer_var)
        decl = f"{name}: array<{t}, {max(count, 1)}>;"
        if s.scope == "shared":
            self._kernel_decls.append(f"var<workgroup> {decl}")
        else:
            self.emit(f"var {decl}")
        self.stmt(s.body)
        self.unbind_var(s.buffer_var)

    # ------------------------------------------------------------------ kernels
    def add_function(self, func: PrimFunc, name: Optional[str] = None) -> str:
        if not (isinstance(func, PrimFunc) and is_device_kernel(func)):
            raise CodegenError("webgpu codegen: only device kernels (after SplitHostDevice) "
                               "are printed as shaders")
        func = narrow_index_math(func)
        self._kernel = name or func.attrs.get("global_symbol") or "?"
        self._kernel_decls, self._kernel_params = [], []
        self._stored_vars = _stored_buffers(func)
        outer, self._printed_types = self._printed_types, set()
        try:
            out = super().add_function(func, name)
            self.kernel_features[out] = ["shader-f16"] if "float16" in self._printed_types \
                else []
        finally:
            self._printed_types = outer | self._printed_types
        self.kernel_texts[out] = self._functions[-1][1]
        return out

    def kernel_param_decl(self, var: Var, name: str, index: int, func: PrimFunc) -> str:
        self._kernel_params.append((var, name))
        if not dtype_of(var.dtype).is_handle:
            if str(var.dtype) not in UNIFORM_TYPES:
                raise CodegenError(f"webgpu codegen: kernel {self._kernel} parameter "
                                   f"{var.name!r} is a {var.dtype} scalar; WGSL kernels take "
                                   f"scalars of {', '.join(UNIFORM_TYPES)}")
            self.emit(f"let {name}: {self.type_name(dtype_of(str(var.dtype)))} = "
                      f"tvm_params.{name};")
        return name

    def _bool_tensor(self, var: Var) -> bool:
        elem = self.st.ptr_elem.get(var)
        return elem is not None and elem.is_bool

    def kernel_header(self, func: PrimFunc, name: str, params: list[str]) -> str:
        descs = []
        for var, _ in self._kernel_params:
            if dtype_of(var.dtype).is_handle:
                descs.append({"name": var.name, "kind": "handle"})
            else:
                descs.append({"name": var.name, "kind": "scalar", "dtype": str(var.dtype)})
        checks = ERROR_RECORD_PARAM in params
        if checks:
            descs.append({"name": ERROR_RECORD_PARAM, "kind": "handle"})
        try:
            layout = kernel_layout(descs, name)
        except LayoutError as err:
            raise CodegenError(str(err)) from None
        info = layout.to_json()
        #: per storage binding: whether the kernel only reads it (``var<storage, read>``)
        info["read_only"] = [var not in self._stored_vars and not self._bool_tensor(var)
                             for var, _ in self._kernel_params
                             if dtype_of(var.dtype).is_handle] + ([False] if checks else [])
        self.kernel_layouts[name] = info
        lines = ["override tvm_wg_x: u32 = 1u;", "override tvm_wg_y: u32 = 1u;",
                 "override tvm_wg_z: u32 = 1u;"]
        members = []
        for k, (var, cname) in enumerate(self._kernel_params):
            if layout.bindings[k] is not None:
                elem = self.st.ptr_elem.get(var)
                if elem is None:
                    raise CodegenError(f"webgpu codegen: kernel {name} parameter {var.name!r} "
                                       "is memory used with several element types; WGSL "
                                       "storage buffers have one")
                if elem.text == "int64":
                    t = "vec2<i32>"
                elif elem.is_bool:  # one byte each, as on the host: four to a word
                    t = "atomic<u32>"
                elif elem.text in self.scalar_type_names and not elem.is_bool:
                    t = self.type_name(elem)
                else:
                    raise self._refuse(f"the tensor {var.name!r}", elem)
                access = "read_write" if var in self._stored_vars or elem.is_bool else "read"
                lines.append(f"@group(0) @binding({layout.bindings[k]}) var<storage, {access}> "
                             f"{cname}: array<{t}>;")
            else:
                members.append(f"  {cname}: {UNIFORM_TYPES[str(var.dtype)][0]},")
        if checks:
            lines.append(f"@group(0) @binding({layout.num_storage - 1}) var<storage, read_write> "
                         f"{ERROR_RECORD_PARAM}: array<atomic<i32>>;")
        if members:
            lines.append("struct tvm_params_t {\n" + "\n".join(members) + "\n}")
            lines.append(f"@group(0) @binding({layout.uniform_binding}) var<uniform> "
                         "tvm_params: tvm_params_t;")
        lines.extend(self._kernel_decls)
        return "\n".join([f"{KERNEL_MARK}{name}", *lines,
                          "@compute @workgroup_size(tvm_wg_x, tvm_wg_y, tvm_wg_z)",
                          "fn main(@builtin(workgroup_id) tvm_wid: vec3<u32>, "
                          "@builtin(local_invocation_id) tvm_lid: vec3<u32>)"])

    # ------------------------------------------------------------------ the module
    def kernel_source(self, name: str) -> str:
        """The whole shader of kernel ``name`` (preamble, helpers, the kernel as ``main``)."""
        helpers = [t for t in self._helpers.values() if t]
        pre = ["// Generated by tvm-target-webgpu for target " + repr(self.target) + "."]
        if "shader-f16" in self.kernel_features.get(name, []):
            pre.insert(0, "enable f16;")
        return "\n\n".join(["\n".join(pre), *helpers, *self._aux,
                            self.kernel_texts[name]]) + "\n"

    def finish(self) -> str:
        return "\n".join(self.kernel_source(n) for n in self.kernel_texts)


def generate_device_code_webgpu(mod: Any, target: Any = "webgpu") -> tuple[DeviceCode, WebGPUPrinter]:
    """Kernels (WGSL), kernel descriptions and host programs of ``mod``; also the printer,
    whose :meth:`WebGPUPrinter.kernel_source` gives each kernel's shader.  Each kernel
    description gets its ``wgsl`` shader, ``layout`` (:mod:`.layout`) and ``features``."""
    printer = WebGPUPrinter(str(target))
    code = generate_device_code(mod, printer, target)
    for k in code.kernels:
        k["features"] = printer.kernel_features.get(k["name"], [])
        k["layout"] = printer.kernel_layouts[k["name"]]
        k["wgsl"] = printer.kernel_source(k["name"])
    return code, printer


def generate_source(mod: Any, target: Optional[Union[str, Any]] = "webgpu") -> str:
    """The WGSL of the kernels of ``mod`` (one shader per kernel, each after a
    :data:`KERNEL_MARK` line)."""
    return generate_device_code_webgpu(mod, target)[0].source
