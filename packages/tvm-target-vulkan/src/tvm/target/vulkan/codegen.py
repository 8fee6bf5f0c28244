"""TIR -> GLSL compute shaders for the ``vulkan`` target.

:class:`VulkanPrinter` is the shared :class:`~tvm.tir.codegen.gpu.GPUPrinter` with GLSL's
spellings (``#version 450``, compiled by glslang to SPIR-V in :mod:`.spirv`):

* each kernel is its own shader whose entry point is ``main``; the workgroup size comes from
  the launch as specialisation constants 0-2 (``local_size_{x,y,z}_id``);
* every tensor parameter is a std430 storage buffer (set 0, bindings in parameter order:
  :mod:`.layout`) holding a runtime-sized array named like the parameter, so an access reads
  as in C (``A[i]``); bool tensors are stored as ``uint8_t`` (one byte, as on the host);
* scalar parameters are members of one ``push_constant`` block;
* ``shared`` allocations become workgroup ``shared`` arrays at shader scope;
  ``tvm_storage_sync`` is ``memoryBarrierShared(); barrier()``;
* thread indices are ``gl_WorkGroupID`` / ``gl_LocalInvocationID``; warp shuffles of
  LowerThreadAllreduce (``-thread_warp_size`` > 1) are subgroup shuffles
  (``GL_KHR_shader_subgroup_shuffle*``);
* int64 index arithmetic that provably fits runs in int32 (:mod:`tvm.tir.codegen.narrow`);
* casts are constructors (``int(x)``), int64/int8/int16/float16 use
  ``GL_EXT_shader_explicit_arithmetic_types_*`` (plus the 8/16-bit storage extensions for
  buffers of those types); buffer indices are converted to ``int`` (Vulkan buffers are
  addressed by 32-bit indices; the runtime refuses larger buffers);
* checks in kernels write the shared error record (an ``int`` storage buffer) with
  ``atomicCompSwap``; its int64 arguments are written as two ints.

GLSL has float64 arithmetic but no float64 transcendental functions: ``pow`` with an
integral exponent (a cast from an integer or an integral constant: the integer ``power`` of
the Relax operators computes through it) is exact repeated squaring, and every other float64
``exp``/``log``/``pow``/trigonometric/``erf``/``sigmoid`` is refused with a CodegenError naming
the kernel.  float32 ``asin``/``acos`` are computed as ``atan(x, sqrt((1 - x)(1 + x)))`` (and
its complement): Mesa's own (lavapipe, RADV, ANV) are cheap approximations off by up to 4e-4,
about 100 times worse than its ``atan``.  bfloat16 is not supported (a CodegenError says so).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from tvm.tir.buffer import Buffer
from tvm.tir.codegen import CodegenError, DType, dtype_of
from tvm.tir.codegen.c_like_stmt import unparen
from tvm.tir.codegen.gpu import ERROR_RECORD_PARAM, DeviceCode, GPUPrinter, generate_device_code
from tvm.tir.expr import Cast, FloatImm, IntImm, IterVar, Var
from tvm.tir.function import PrimFunc
from tvm.tir.stmt import Allocate, AttrStmt, BufferStore, For, ForKind
from tvm.tir.stmt_functor import pre_order_visit
from tvm.tir.transform.split_host_device import is_device_kernel

from .layout import PUSH_CONSTANT_TYPES, LayoutError, kernel_layout
from tvm.tir.codegen.narrow import narrow_index_math

__all__ = ["VulkanPrinter", "generate_source", "generate_device_code_vulkan", "KERNEL_MARK"]

#: the comment in front of each kernel's shader in the module's combined source
KERNEL_MARK = "// ---- vulkan kernel "

_THREAD_INDEX = {
    "blockIdx.x": "int(gl_WorkGroupID.x)", "blockIdx.y": "int(gl_WorkGroupID.y)",
    "blockIdx.z": "int(gl_WorkGroupID.z)", "threadIdx.x": "int(gl_LocalInvocationID.x)",
    "threadIdx.y": "int(gl_LocalInvocationID.y)", "threadIdx.z": "int(gl_LocalInvocationID.z)",
}
_VECTOR_PREFIX = {"float32": "vec", "int32": "ivec", "uint32": "uvec", "float64": "dvec",
                  "bool": "bvec", "float16": "f16vec", "int64": "i64vec", "uint64": "u64vec"}
#: element type -> (the extensions it needs, the device features it needs)
_TYPE_NEEDS = {
    "int64": (("GL_EXT_shader_explicit_arithmetic_types_int64",), ("shaderInt64",)),
    "uint64": (("GL_EXT_shader_explicit_arithmetic_types_int64",), ("shaderInt64",)),
    "float64": ((), ("shaderFloat64",)),
    "float16": (("GL_EXT_shader_explicit_arithmetic_types_float16", "GL_EXT_shader_16bit_storage"),
                ("shaderFloat16", "storageBuffer16BitAccess")),
    "int16": (("GL_EXT_shader_explicit_arithmetic_types_int16", "GL_EXT_shader_16bit_storage"),
              ("shaderInt16", "storageBuffer16BitAccess")),
    "uint16": (("GL_EXT_shader_explicit_arithmetic_types_int16", "GL_EXT_shader_16bit_storage"),
               ("shaderInt16", "storageBuffer16BitAccess")),
    "int8": (("GL_EXT_shader_explicit_arithmetic_types_int8", "GL_EXT_shader_8bit_storage"),
             ("shaderInt8", "storageBuffer8BitAccess")),
    "uint8": (("GL_EXT_shader_explicit_arithmetic_types_int8", "GL_EXT_shader_8bit_storage"),
              ("shaderInt8", "storageBuffer8BitAccess")),
}


#: GLSL keywords, reserved words and built-in names a TIR name must not take
_GLSL_RESERVED = frozenset("""attribute const uniform varying buffer shared coherent volatile
restrict readonly writeonly atomic_uint layout centroid flat smooth noperspective patch
sample break continue do for while switch case default if else subroutine in out inout
float double int void bool true false invariant precise discard return mat2 mat3 mat4 dmat2
dmat3 dmat4 vec2 vec3 vec4 ivec2 ivec3 ivec4 bvec2 bvec3 bvec4 dvec2 dvec3 dvec4 uint uvec2
uvec3 uvec4 lowp mediump highp precision sampler1D sampler2D sampler3D samplerCube image1D
image2D image3D struct common partition active asm class union enum typedef template this
resource goto inline noinline public static extern external interface long short half
fixed unsigned superp input output hvec2 hvec3 hvec4 fvec2 fvec3 fvec4 filter sizeof cast
namespace using main int8_t int16_t int64_t uint8_t uint16_t uint64_t float16_t float32_t
float64_t f16vec2 f16vec3 f16vec4 i64vec2 i64vec3 i64vec4 u64vec2 u64vec3 u64vec4 abs sign
floor ceil trunc fract mod min max clamp mix step exp exp2 log log2 sqrt inversesqrt pow
sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh isnan isinf roundEven round
barrier memoryBarrier memoryBarrierShared memoryBarrierBuffer groupMemoryBarrier
atomicAdd atomicCompSwap bitCount findMSB findLSB length dot cross normalize any all not
equal lessThan greaterThan""".split())

#: float math GLSL has no float64 overload of (``pow`` only for integral exponents)
_NO_FLOAT64_MATH = frozenset("""exp exp2 exp10 expm1 log log2 log10 log1p sin cos tan sinh cosh
tanh asin acos atan asinh acosh atanh atan2 erf sigmoid pow nextafter""".split())


def _is_integral(e: Any) -> bool:
    """Whether the float expression ``e`` is provably a whole number."""
    if isinstance(e, FloatImm):
        return float(e.value).is_integer()
    return isinstance(e, Cast) and dtype_of(e.value.dtype).element.is_int


def _as_int32(e: Any) -> Any:
    """``e`` (a scalar int64) as an equal int32 expression when it is an int32 value widened
    or a constant in int32's range; else None."""
    if str(e.dtype) != "int64":
        return None
    if isinstance(e, IntImm):
        return IntImm("int32", e.value) if -(2 ** 31) <= e.value < 2 ** 31 else None
    if isinstance(e, Cast) and str(e.value.dtype) == "int32":
        return e.value
    return None


def _thread_vars(func: PrimFunc) -> set:
    """The variables of ``func`` bound to thread indices."""
    found: set = set()

    def visit(node: Any) -> bool:
        if isinstance(node, AttrStmt) and node.attr_key == "thread_extent" and \
                isinstance(node.node, IterVar):
            found.add(node.node.var)
        elif isinstance(node, For) and node.kind == ForKind.THREAD_BINDING:
            found.add(node.loop_var)
        return True

    pre_order_visit(func.body, visit)
    return found


def _is_global(buffer: Buffer) -> bool:
    return buffer.scope in ("global", "")


class VulkanPrinter(GPUPrinter):
    """GLSL 4.50 compute shaders for Vulkan (see the module docstring)."""

    language = "vulkan"
    pointer_casts = False
    kernel_qualifier = ""
    helper_qualifier = ""
    restrict_keyword = ""
    float32_math_suffix = ""
    math_function_renames = {"round": "roundEven", "nearbyint": "roundEven", "fabs": "abs",
                             "atan2": "atan"}
    scalar_type_names = {
        "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int",
        "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint",
        "uint64": "uint64_t", "float16": "float16_t", "float32": "float", "float64": "double",
    }
    vector_ops_native = True
    vector_math_native = True
    warp_size = 1

    def __init__(self, target: str = "") -> None:
        super().__init__(target)
        for word in _GLSL_RESERVED:
            self.global_names.reserve(word)
        #: per kernel: its shader text (without the module preamble), features, uses
        self.kernel_texts: dict[str, str] = {}
        self.kernel_features: dict[str, list[str]] = {}
        self._kernel_decls: list[str] = []
        self._kernel_params: list[tuple[Var, str]] = []
        self._subgroup: set[str] = set()
        self._module_types: set[str] = set()
        self._thread_vars: set[Var] = set()
        self._kernel = "?"

    # ------------------------------------------------------------------ types & literals
    def c_cast(self, ctype: str, value: str) -> str:
        if "*" in ctype:
            raise CodegenError(f"vulkan codegen: GLSL has no pointers (a cast to {ctype})")
        return f"{ctype}({unparen(value)})"

    def vector_type_name(self, d: DType) -> str:
        prefix = _VECTOR_PREFIX.get(d.element.text)
        if prefix is None or not 2 <= d.lanes <= 4:
            raise CodegenError(f"vulkan codegen: no GLSL vector type for {d.text} (vectors of "
                               f"2-4 lanes of {', '.join(_VECTOR_PREFIX)}); vectorize by at "
                               "most 4")
        return f"{prefix}{d.lanes}"

    def pointer_type(self, elem: Optional[DType], scope: str = "global") -> str:
        raise CodegenError("vulkan codegen: GLSL has no pointers; a handle can only be a "
                           "kernel's buffer parameter (pointer arithmetic, tvm_access_ptr and "
                           "address_of are not supported)")

    def int_literal(self, value: int, d: DType) -> str:
        if not d.is_int:
            return self.literal(value, d)
        t = self.type_name(d)
        if d.bits == 32:
            if d.is_unsigned:
                return f"{value}u"
            return "(-2147483647 - 1)" if value == -(2 ** 31) else (
                str(value) if value >= 0 else f"({value})")
        if d.bits == 64:
            if d.is_unsigned:
                return f"{value}ul"
            if value == -(2 ** 63):
                return "(-9223372036854775807l - 1l)"
            return f"{value}l" if value >= 0 else f"({value}l)"
        return f"{t}({value})"

    def float_literal(self, value: float, d: DType) -> str:
        import math

        if d.is_bf16:
            self.helper_bf16()
        if d.bits == 64 and not d.is_half_like:
            if math.isnan(value):
                return "double(uintBitsToFloat(0x7fc00000u))"
            if math.isinf(value):
                return f"double(uintBitsToFloat({'0x7f800000u' if value > 0 else '0xff800000u'}))"
            text = repr(float(value))
            if "e" not in text and "." not in text:
                text += ".0"
            return f"({text}lf)" if text.startswith("-") else f"{text}lf"
        if d.bits == 32 and (math.isnan(value) or math.isinf(value)):
            bits = "0x7fc00000u" if math.isnan(value) else (
                "0x7f800000u" if value > 0 else "0xff800000u")
            return f"uintBitsToFloat({bits})"
        return super().float_literal(value, d)

    def helper_bf16(self) -> tuple[str, str]:
        raise CodegenError("vulkan codegen: bfloat16 is not supported by this target (use "
                           "float16 or float32)")

    def make_vector(self, d: DType, lanes: list[str]) -> str:
        return f"{self.type_name(d)}({', '.join(unparen(x) for x in lanes)})"

    def broadcast_vector(self, d: DType, value: str) -> str:
        return f"{self.type_name(d)}({unparen(value)})"

    def reinterpret(self, value: str, src: DType, dst: DType) -> str:
        names = {("float32", "int32"): "floatBitsToInt", ("float32", "uint32"): "floatBitsToUint",
                 ("int32", "float32"): "intBitsToFloat", ("uint32", "float32"): "uintBitsToFloat",
                 ("float64", "int64"): "doubleBitsToInt64", ("float64", "uint64"): "doubleBitsToUint64",
                 ("int64", "float64"): "int64BitsToDouble", ("uint64", "float64"): "uint64BitsToDouble"}
        if (src.text, dst.text) in (("int32", "uint32"), ("uint32", "int32"), ("int64", "uint64"),
                                    ("uint64", "int64")):
            return self.c_cast(self.type_name(dst), value)
        fn = names.get((src.text, dst.text))
        if fn is None:
            raise CodegenError(f"vulkan codegen: reinterpret from {src.text} to {dst.text} is "
                               "not supported")
        return f"{fn}({value})"

    def popcount(self, value: str, d: DType) -> str:
        if d.bits == 64:
            return (f"(bitCount(uint({value})) + bitCount(uint(uint64_t({value}) >> 32ul)))")
        mask = (1 << d.bits) - 1
        return f"bitCount(uint({value}) & {mask}u)"

    def helper_clz(self, d: DType) -> str:
        t = self.type_name(d.with_lanes(1))
        bits = d.bits

        def text() -> str:
            if bits == 64:
                body = ("uint hi = uint(uint64_t(x) >> 32ul); return hi != 0u ? 31 - findMSB(hi)"
                        " : 63 - findMSB(uint(x));")
            else:
                body = f"return 31 - findMSB(uint(x) & {(1 << bits) - 1}u) - {32 - bits};"
            return f"int tvm_clz_{d.text}({t} x) {{ if (x == {t}(0)) return {bits}; {body} }}"
        return self.require_helper(f"tvm_clz_{d.text}", text)

    # ------------------------------------------------------------------ math
    def math_call(self, name: str, e: Any, lane: Any) -> str:
        arg_d = dtype_of(e.args[0].dtype).element if e.args else None
        if arg_d is not None and arg_d.text == "float64" and name in _NO_FLOAT64_MATH:
            if name == "pow" and len(e.args) == 2 and _is_integral(e.args[1]):
                a, b = (self.sub(x, lane) for x in e.args)
                return f"{self.helper_pow_integral_f64()}({unparen(a)}, {unparen(b)})"
            raise CodegenError(f"vulkan codegen: kernel {self._kernel} uses tir.{name} of dtype "
                               f"float64; GLSL has float64 arithmetic but no float64 {name} "
                               "(compute it in float32)")
        return super().math_call(name, e, lane)

    def helper_pow_integral_f64(self) -> str:
        def text() -> str:
            return ("double tvm_pow_integral_float64(double a, double b) {\n"
                    "  // a ** b for a whole number b, by repeated squaring (GLSL has no "
                    "double pow)\n"
                    "  double r = 1.0lf, p = a, n = abs(b);\n"
                    "  while (n > 0.0lf) {\n"
                    "    if (mod(n, 2.0lf) == 1.0lf) r *= p;\n"
                    "    p *= p; n = floor(n * 0.5lf);\n  }\n"
                    "  return b < 0.0lf ? 1.0lf / r : r;\n}")
        return self.require_helper("tvm_pow_integral_float64", text)

    def float_math(self, name: str, args: list[str], d: DType) -> str:
        t = self.type_name(d)
        if name in ("asin", "acos"):
            return f"{self.helper_arc(name, d)}({unparen(args[0])})"
        if name == "fmod":
            a, b = args
            return f"({a} - {b} * trunc({a} / {b}))"
        if name == "log10":
            return f"(log({args[0]}) * {t}(0.4342944819032518))"
        if name == "log1p":
            return f"log({t}(1.0) + {args[0]})"
        if name == "expm1":
            return f"(exp({args[0]}) - {t}(1.0))"
        if name == "rsqrt":
            return f"inversesqrt({args[0]})"
        if name == "hypot":
            return f"length(vec2({args[0]}, {args[1]}))" if d.text == "float32" else \
                f"sqrt({args[0]} * {args[0]} + {args[1]} * {args[1]})"
        if name == "copysign":
            a, b = args
            return f"({b} < {t}(0) || (({b}) == {t}(0) && {t}(1) / ({b}) < {t}(0)) ? " \
                   f"-abs({a}) : abs({a}))"
        if name == "erf":
            return f"{self.helper_erf(d)}({args[0]})"
        if name == "nextafter":
            raise CodegenError("vulkan codegen: tir.nextafter has no GLSL counterpart")
        return super().float_math(name, args, d)

    def helper_arc(self, name: str, d: DType) -> str:
        """asin/acos through two-argument atan (see the module docstring)."""
        t = self.type_name(d)

        def text() -> str:
            root = f"sqrt(({t}(1.0) - x) * ({t}(1.0) + x))"
            value = f"atan(x, {root})" if name == "asin" else f"atan({root}, x)"
            return f"{t} tvm_{name}_{d.text}({t} x) {{ return {value}; }}"
        return self.require_helper(f"tvm_{name}_{d.text}", text)

    def helper_erf(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:  # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)
            return (f"{t} tvm_erf_{d.text}({t} x) {{\n"
                    f"  {t} s = sign(x); x = abs(x);\n"
                    f"  {t} k = {t}(1.0) / ({t}(1.0) + {t}(0.3275911) * x);\n"
                    f"  {t} p = k * ({t}(0.254829592) + k * ({t}(-0.284496736) + k * "
                    f"({t}(1.421413741) + k * ({t}(-1.453152027) + k * {t}(1.061405429)))));\n"
                    f"  return s * ({t}(1.0) - p * exp(-x * x));\n}}")
        return self.require_helper(f"tvm_erf_{d.text}", text)

    def float_predicate(self, name: str, arg: str, d: DType) -> str:
        if name == "isfinite":
            return f"!isnan({arg}) && !isinf({arg})"
        return f"{name}({arg})"

    def _p_cast(self, e: Any, lane: Any) -> str:
        # a thread index (never negative) widens to int64 through uint: exact, and llvmpipe
        # (lavapipe, LLVM 15) miscompiles divergent compares of a sign-extended thread index
        if (isinstance(e.value, Var) and e.value in self._thread_vars
                and str(e.value.dtype) == "int32" and str(e.dtype) == "int64"):
            return f"int64_t(uint({self.var_name(e.value)}))"
        return super()._p_cast(e, lane)

    def _cmp(self, e: Any, lane: Any, op: str) -> str:
        # int64 comparisons of 32-bit values (int32 widened, small constants) compare in
        # int32 (exact and shorter)
        a, b = _as_int32(e.a), _as_int32(e.b)
        if a is not None and b is not None:
            return self.compare(op, self.sub(a, lane), self.sub(b, lane), dtype_of("int32"))
        return super()._cmp(e, lane, op)

    # ------------------------------------------------------------------ threads & sync
    def thread_index(self, tag: str) -> str:
        try:
            return _THREAD_INDEX[tag]
        except KeyError:
            raise CodegenError(f"vulkan codegen: unknown thread index {tag!r}") from None

    def barrier(self, scope: str) -> str:
        self.emit("memoryBarrierBuffer();" if scope == "global" else "memoryBarrierShared();")
        return "barrier()"

    def intrin_tvm_warp_activemask(self, e: Any, lane: Any) -> str:
        return "0u"  # subgroup shuffles take no mask

    def intrin_tvm_warp_shuffle_down(self, e: Any, lane: Any) -> str:
        self._subgroup.add("shuffle_relative")
        return f"subgroupShuffleDown({self.expr(e.args[1])}, uint({unparen(self.expr(e.args[2]))}))"

    def intrin_tvm_warp_shuffle(self, e: Any, lane: Any) -> str:
        self._subgroup.add("shuffle")
        return f"subgroupShuffle({self.expr(e.args[1])}, uint({unparen(self.expr(e.args[2]))}))"

    # ------------------------------------------------------------------ checks
    def error_claim(self, record: str, number: int) -> str:
        return f"atomicCompSwap({record}[0], 0, {number}) == 0"

    def error_record_store(self, record: str, k: int, arg: Any) -> str:
        wide = self.declare_name("err_arg")
        self.emit(f"int64_t {wide} = int64_t({unparen(self.expr(arg))});")
        return (f"{record}[{2 + 2 * k}] = int({wide}); "
                f"{record}[{3 + 2 * k}] = int({wide} >> 32l);")

    def error_param_decl(self, index: int) -> str:
        return ERROR_RECORD_PARAM

    # ------------------------------------------------------------------ memory
    def element_index(self, buffer: Buffer, index: Any, lane: Any) -> str:
        text = super().element_index(buffer, index, lane)
        return text if dtype_of(index.dtype).element.bits == 32 else f"int({unparen(text)})"

    def load(self, buffer: Buffer, index: str) -> str:
        text = f"{self.buffer_ptr(buffer)}[{unparen(index)}]"
        if dtype_of(buffer.dtype).element.is_bool and _is_global(buffer):
            return f"({text} != uint8_t(0))"
        return text

    def vector_load(self, buffer: Buffer, base: str, d: DType) -> str:
        b = self.declare_name("vbase")
        self.emit(f"int {b} = int({unparen(base)});")
        return self.make_vector(d, [self.load(buffer, f"{b} + {k}" if k else b)
                                    for k in range(d.lanes)])

    def vector_store(self, buffer: Buffer, base: str, value: str, d: DType) -> str:
        ptr = self.buffer_ptr(buffer)
        b, v = self.declare_name("vbase"), self.declare_name("vval")
        self.emit(f"int {b} = int({unparen(base)});")
        self.emit(f"{self.type_name(d)} {v} = {unparen(value)};")
        return "; ".join(f"{ptr}[{b} + {k}] = {self._stored(buffer, f'{v}[{k}]')}"
                         for k in range(d.lanes))

    def _stored(self, buffer: Buffer, value: str) -> str:
        if dtype_of(buffer.dtype).element.is_bool and _is_global(buffer):
            return f"uint8_t({unparen(value)})"
        return unparen(value)

    def _s_buffer_store(self, s: BufferStore) -> None:
        buf = s.buffer
        index = self.flat_index(buf, s.indices)
        if (dtype_of(s.value.dtype).lanes == 1 and dtype_of(index.dtype).lanes == 1
                and dtype_of(buf.dtype).lanes == 1):
            self.note_buffer_use(buf)
            idx = self.element_index(buf, index, None)
            self.emit(f"{self.buffer_ptr(buf)}[{unparen(idx)}] = "
                      f"{self._stored(buf, self.expr(s.value))};")
            return
        super()._s_buffer_store(s)

    def storage_scope_qualifier(self, scope: str) -> str:
        if scope in ("local", "global", ""):
            return ""
        raise CodegenError(f"vulkan codegen: storage scope {scope!r} is not supported (use "
                           "'shared' or 'local')")

    def _s_allocate(self, s: Allocate) -> None:
        if s.scope != "shared":
            super()._s_allocate(s)
            return
        count = dtype_of(s.dtype).lanes
        for e in s.extents:
            if not isinstance(e, IntImm):
                raise CodegenError(f"vulkan codegen: shared memory {s.buffer_var.name!r} has "
                                   f"the symbolic size {tuple(s.extents)}; it needs a "
                                   "constant size")
            count *= e.value
        elem = dtype_of(s.dtype).element
        self.st.ptr_elem[s.buffer_var] = elem
        self.st.ptr_scope[s.buffer_var] = s.scope
        name = self.declare_var(s.buffer_var)
        self._kernel_decls.append(f"shared {self.type_name(elem)} {name}[{max(count, 1)}];")
        self.stmt(s.body)
        self.unbind_var(s.buffer_var)

    # ------------------------------------------------------------------ kernels
    def add_function(self, func: PrimFunc, name: Optional[str] = None) -> str:
        if not (isinstance(func, PrimFunc) and is_device_kernel(func)):
            raise CodegenError("vulkan codegen: only device kernels (after SplitHostDevice) "
                               "are printed as shaders")
        func = narrow_index_math(func)
        self._kernel = name or func.attrs.get("global_symbol") or "?"
        self._kernel_decls, self._kernel_params = [], []
        self._thread_vars = _thread_vars(func)
        outer, self._printed_types = self._printed_types, set()
        try:
            out = super().add_function(func, name)
            feats = set()
            for t in self._printed_types:
                feats.update(_TYPE_NEEDS.get(t, ((), ()))[1])
            if self._subgroup:
                feats.add("subgroup_shuffle")
            self.kernel_features[out] = sorted(feats)
        finally:
            self._module_types |= self._printed_types
            self._printed_types = outer | self._printed_types
        self.kernel_texts[out] = self._functions[-1][1]
        return out

    def kernel_param_decl(self, var: Var, name: str, index: int, func: PrimFunc) -> str:
        self._kernel_params.append((var, name))
        return name

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
        lines = ["layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;"]
        members = []
        for k, (var, cname) in enumerate(self._kernel_params):
            if layout.bindings[k] is not None:
                elem = self.st.ptr_elem.get(var)
                if elem is None:
                    raise CodegenError(f"vulkan codegen: kernel {name} parameter {var.name!r} "
                                       "is memory used with several element types; GLSL "
                                       "storage buffers have one")
                t = "uint8_t" if elem.is_bool else self.type_name(elem)
                if elem.is_bool:
                    self._printed_types.add("uint8")
                lines.append(f"layout(std430, set = 0, binding = {layout.bindings[k]}) buffer "
                             f"tvm_buffer_{layout.bindings[k]} {{ {t} {cname}[]; }};")
            else:
                members.append(f"layout(offset = {layout.push[k]}) "
                               f"{PUSH_CONSTANT_TYPES[str(var.dtype)][0]} {cname};")
                self._printed_types.add(str(var.dtype))
        if checks:
            lines.append(f"layout(std430, set = 0, binding = {layout.num_buffers - 1}) buffer "
                         f"tvm_error_buffer {{ int {ERROR_RECORD_PARAM}[]; }};")
            self._printed_types.add("int64")
        if members:
            lines.append("layout(push_constant) uniform tvm_push_constants { "
                         + " ".join(members) + " };")
        lines.extend(self._kernel_decls)
        return "\n".join([f"{KERNEL_MARK}{name}", *lines, "void main()"])

    # ------------------------------------------------------------------ the module
    def preamble_lines(self) -> list[str]:
        head = ["#version 450", f"// Generated by tvm-target-vulkan for target {self.target!r}."]
        exts: list[str] = []
        for t in sorted(self._module_types | self._printed_types):
            for ext in _TYPE_NEEDS.get(t, ((), ()))[0]:
                if ext not in exts:
                    exts.append(ext)
        if self._subgroup:
            exts.append("GL_KHR_shader_subgroup_basic")
            exts += [f"GL_KHR_shader_subgroup_{k}" for k in sorted(self._subgroup)]
        return head + [f"#extension {e} : require" for e in exts]

    def kernel_source(self, name: str) -> str:
        """The whole shader of kernel ``name`` (preamble, helpers, the kernel as ``main``)."""
        helpers = [t for t in self._helpers.values() if t]
        return "\n\n".join(["\n".join(self.preamble_lines()), *helpers, *self._aux,
                            self.kernel_texts[name]]) + "\n"

    def finish(self) -> str:
        return "\n".join(self.kernel_source(n) for n in self.kernel_texts)


def generate_device_code_vulkan(mod: Any, target: Any = "vulkan") -> tuple[DeviceCode, VulkanPrinter]:
    """Kernels (GLSL), kernel descriptions and host programs of ``mod``; also the printer,
    whose :meth:`VulkanPrinter.kernel_source` gives each kernel's shader."""
    printer = VulkanPrinter(str(target))
    code = generate_device_code(mod, printer, target)
    warp = getattr(target, "thread_warp_size", None) if not isinstance(target, str) else None
    for k in code.kernels:
        k["features"] = printer.kernel_features.get(k["name"], [])
        if "subgroup_shuffle" in k["features"]:
            k["subgroup_size"] = int(warp or 1)  # the lane arithmetic assumes this width
    return code, printer


def generate_source(mod: Any, target: Optional[Union[str, Any]] = "vulkan") -> str:
    """The GLSL of the kernels of ``mod`` (one shader per kernel, each after a
    :data:`KERNEL_MARK` line)."""
    return generate_device_code_vulkan(mod, target)[0].source
