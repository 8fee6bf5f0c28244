"""Intrinsic calls and the small helper functions of the C-like printer.

``tir.<name>`` calls are printed by ``intrin_<name>(call, lane)`` when the printer has
such a method, else as lane-wise float math (:meth:`CallPrinterMixin.math_call`).  A
target adds an intrinsic by defining ``intrin_<name>``; a language renames math functions
through :meth:`~.c_like.CLikePrinter.math_function`.

Helpers (``tvm_floordiv_int32``, ``tvm_min_float32``, bfloat16 conversions ...) are
emitted once per module, on first use, before the functions.
"""

from __future__ import annotations

from typing import Any

from ..expr import BufferLoad, Call, StringImm
from ..op import FLOAT_MATH, FLOAT_PREDICATES
from .c_like_expr import Lane
from .c_types import CodegenError, DType, dtype_of

__all__ = ["CallPrinterMixin"]

_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
            "shift_left": "<<", "shift_right": ">>"}


class CallPrinterMixin:
    """Intrinsic calls and helper functions; mixed into :class:`CLikePrinter`."""

    # ------------------------------------------------------------------ float math
    def math_call(self, name: str, e: Call, lane: Lane) -> str:
        """Lane-wise float math (``tir.exp`` ... ``tir.isnan``); half types compute in float."""
        if name not in FLOAT_MATH and name not in FLOAT_PREDICATES:
            raise CodegenError(
                f"{self.language} codegen: intrinsic {getattr(e.op, 'name', e.op)!r} is not "
                f"supported by this target (in {self.st.name if self.st else '?'}: {e!r})"
            )
        if len(e.args) != FLOAT_MATH.get(name, 1):
            raise CodegenError(f"{self.language} codegen: tir.{name} takes "
                               f"{FLOAT_MATH.get(name, 1)} argument(s), got {len(e.args)}")
        arg_d = dtype_of(e.args[0].dtype).element
        args = [self.sub(a, lane) for a in e.args]
        if not arg_d.is_float:
            raise CodegenError(f"{self.language} codegen: tir.{name} needs float arguments, got "
                               f"{e.args[0].dtype}")
        fd = arg_d
        if arg_d.is_half_like and self.half_via_float:
            fd = dtype_of("float32")
            args = [self.half_to_float(a, arg_d) for a in args]
        if name in FLOAT_PREDICATES:
            return f"({self.float_predicate(name, args[0], fd)})"
        out = self.float_math(name, args, fd)
        return self.float_to_half(out, arg_d) if fd is not arg_d else out

    def float_math(self, name: str, args: list[str], d: DType) -> str:
        """``name(args)`` on floats of dtype ``d`` (float32 or float64, or a native half)."""
        if name == "sigmoid":
            return f"{self.helper_sigmoid(d)}({args[0]})"
        if name == "rsqrt":
            return f"({self.literal(1.0, d)} / {self.math_function('sqrt', d)}({args[0]}))"
        if name == "exp10":
            return f"{self.math_function('pow', d)}({self.literal(10.0, d)}, {args[0]})"
        return f"{self.math_function(name, d)}({', '.join(args)})"

    def float_predicate(self, name: str, arg: str, d: DType) -> str:
        """``isnan``/``isinf``/``isfinite`` of a float (C99 macros by default)."""
        return f"{name}({arg})"

    # ------------------------------------------------------------------ control / select
    def intrin_if_then_else(self, e: Call, lane: Lane) -> str:
        c, t, f = e.args
        return self.conditional(self.sub(c, lane), self.sub(t, lane), self.sub(f, lane))

    def intrin_likely(self, e: Call, lane: Lane) -> str:
        return self.likely(self.sub(e.args[0], lane))

    def intrin_assume(self, e: Call, lane: Lane) -> str:
        return self.literal(True, dtype_of("bool"))

    # ------------------------------------------------------------------ bits
    def _bitwise(self, e: Call, lane: Lane, op: str) -> str:
        d = dtype_of(e.dtype).element
        a, b = self.sub(e.args[0], lane), self.sub(e.args[1], lane)
        if d.is_bool:
            return self.c_cast(self.type_name(d), f"{a} {op} {b}")
        if not d.is_int:
            raise CodegenError(f"{self.language} codegen: tir.{e.op.name[4:]} needs integers, "
                               f"got {e.dtype}")
        return self.binop(op, a, b, d)

    def intrin_bitwise_and(self, e: Call, lane: Lane) -> str:
        return self._bitwise(e, lane, "&")

    def intrin_bitwise_or(self, e: Call, lane: Lane) -> str:
        return self._bitwise(e, lane, "|")

    def intrin_bitwise_xor(self, e: Call, lane: Lane) -> str:
        return self._bitwise(e, lane, "^")

    def intrin_shift_left(self, e: Call, lane: Lane) -> str:
        return self._bitwise(e, lane, "<<")

    def intrin_shift_right(self, e: Call, lane: Lane) -> str:
        return self._bitwise(e, lane, ">>")

    def intrin_bitwise_not(self, e: Call, lane: Lane) -> str:
        d = dtype_of(e.dtype).element
        a = self.sub(e.args[0], lane)
        if d.is_bool:
            return f"(!{a})"
        return self.c_cast(self.type_name(d), f"~{a}")

    def intrin_popcount(self, e: Call, lane: Lane) -> str:
        d = dtype_of(e.args[0].dtype).element
        a = self.sub(e.args[0], lane)
        return self.cast(self.popcount(a, d), dtype_of("int32"), dtype_of(e.dtype).element)

    def popcount(self, value: str, d: DType) -> str:
        """Number of set bits of an integer (an int32)."""
        if d.bits == 64:
            return f"__builtin_popcountll((unsigned long long)({value}))"
        mask = (1 << d.bits) - 1
        return f"__builtin_popcount((unsigned int)({value}) & {mask}u)"

    def intrin_clz(self, e: Call, lane: Lane) -> str:
        d = dtype_of(e.args[0].dtype).element
        return self.cast(f"{self.helper_clz(d)}({self.sub(e.args[0], lane)})",
                         dtype_of("int32"), dtype_of(e.dtype).element)

    def intrin_ldexp(self, e: Call, lane: Lane) -> str:
        d = dtype_of(e.dtype).element
        x = self.to_float(self.sub(e.args[0], lane), d)
        fd = dtype_of("float32") if d.is_half_like and self.half_via_float else d
        out = f"{self.math_function('ldexp', fd)}({x}, {self.c_cast('int', self.sub(e.args[1], lane))})"
        return self.float_to_half(out, d) if fd is not d else out

    def intrin_reinterpret(self, e: Call, lane: Lane) -> str:
        src, dst = dtype_of(e.args[0].dtype).element, dtype_of(e.dtype).element
        if src.bits != dst.bits:
            raise CodegenError(f"{self.language} codegen: reinterpret between {src.text} and "
                               f"{dst.text}: the sizes differ")
        value = self.sub(e.args[0], lane)
        return value if src.text == dst.text else self.reinterpret(value, src, dst)

    # ------------------------------------------------------------------ externs & pointers
    def _extern(self, e: Call, lane: Lane) -> str:
        if not e.args or not isinstance(e.args[0], StringImm):
            raise CodegenError(f"{self.language} codegen: {e.op.name} needs the function name "
                               "(a StringImm) as its first argument")
        args = ", ".join(self.sub(a, lane) for a in e.args[1:])
        return f"{e.args[0].value}({args})"

    def intrin_call_extern(self, e: Call, lane: Lane) -> str:
        return self._extern(e, lane)

    def intrin_call_pure_extern(self, e: Call, lane: Lane) -> str:
        return self._extern(e, lane)

    def intrin_address_of(self, e: Call, lane: Lane) -> str:
        load = e.args[0]
        if not isinstance(load, BufferLoad):
            raise CodegenError(f"{self.language} codegen: tir.address_of needs a BufferLoad, "
                               f"got {type(load).__name__}")
        buf = load.buffer
        self.note_buffer_use(buf)
        index = self.element_index(buf, self.flat_index(buf, load.indices), None)
        return f"(&{self.buffer_ptr(buf)}[{index}])"

    def intrin_isnullptr(self, e: Call, lane: Lane) -> str:
        return f"({self.expr(e.args[0])} == {self.null_pointer})"

    def intrin_tvm_access_ptr(self, e: Call, lane: Lane) -> str:
        ptype, data, offset = e.args[0], e.args[1], e.args[2]
        elem = dtype_of(ptype.dtype).element
        ptr = f"(({self.pointer_type(elem)}){self.expr(data)})"
        return f"({ptr} + {self.expr(offset)})"

    def intrin_tvm_storage_sync(self, e: Call, lane: Lane) -> str:
        scope = e.args[0].value if e.args and isinstance(e.args[0], StringImm) else "shared"
        return self.barrier(scope)

    def intrin_ret(self, e: Call, lane: Lane) -> str:
        raise CodegenError(f"{self.language} codegen: tir.ret can only be evaluated as a "
                           "statement (Evaluate(ret(value)))")

    # ------------------------------------------------------------------ vector pieces
    def _half_lanes(self, e: Call) -> int:
        return dtype_of(e.args[0].dtype).lanes // 2

    def intrin_vectorlow(self, e: Call, lane: Lane) -> str:
        return self.lane(e.args[0], lane) if lane is not None else self._lanes_only(e)

    def intrin_vectorhigh(self, e: Call, lane: Lane) -> str:
        if lane is None:
            return self._lanes_only(e)
        half = self._half_lanes(e)
        return self.lane(e.args[0], lane + half if isinstance(lane, int) else f"({lane} + {half})")

    def intrin_vectorcombine(self, e: Call, lane: Lane) -> str:
        if lane is None:
            return self._lanes_only(e)
        a, b = e.args
        n = dtype_of(a.dtype).lanes
        if isinstance(lane, int):
            return self.lane(a, lane) if lane < n else self.lane(b, lane - n)
        return self.conditional(f"(({lane}) < {n})", self.lane(a, lane),
                                self.lane(b, f"({lane} - {n})"))

    def _lanes_only(self, e: Call) -> str:
        raise CodegenError(f"{self.language} codegen: {e.op.name} of a scalar")

    # ------------------------------------------------------------------ helpers
    def require_helper(self, name: str, text_fn: Any) -> str:
        """Emit the helper ``name`` (source from ``text_fn()``) once; returns ``name``."""
        if name not in self._helpers:
            self._helpers[name] = None  # reserve first: helpers may use other helpers
            self._helpers[name] = text_fn()
        return name

    def _hq(self) -> str:
        return self.helper_qualifier

    def helper_floordiv(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:
            return (f"{self._hq()} {t} tvm_floordiv_{d.text}({t} a, {t} b) {{\n"
                    f"  {t} q = a / b, r = a % b;\n"
                    f"  return (r != 0 && ((r < 0) != (b < 0))) ? {self.c_cast(t, 'q - 1')} : q;\n}}")
        return self.require_helper(f"tvm_floordiv_{d.text}", text)

    def helper_floormod(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:
            return (f"{self._hq()} {t} tvm_floormod_{d.text}({t} a, {t} b) {{\n"
                    f"  {t} r = a % b;\n"
                    f"  return (r != 0 && ((r < 0) != (b < 0))) ? {self.c_cast(t, 'r + b')} : r;\n}}")
        return self.require_helper(f"tvm_floormod_{d.text}", text)

    def helper_float_floormod(self, d: DType) -> str:
        t = self.type_name(d)
        fd = dtype_of("float32") if d.is_half_like and self.half_via_float else d
        ft = self.type_name(fd)

        def text() -> str:
            a, b = self.to_float("a", d), self.to_float("b", d)
            r = f"x - {self.math_function('floor', fd)}(x / y) * y"
            ret = self.float_to_half(f"({r})", d) if fd is not d else r
            return (f"{self._hq()} {t} tvm_floormod_{d.text}({t} a, {t} b) {{\n"
                    f"  {ft} x = {a}, y = {b};\n  return {ret};\n}}")
        return self.require_helper(f"tvm_floormod_{d.text}", text)

    def helper_minmax(self, d: DType, is_min: bool) -> str:
        t = self.type_name(d)
        kind = "min" if is_min else "max"
        op = "<" if is_min else ">"

        def text() -> str:
            cond = self.compare(op, "a", "b", d)
            return f"{self._hq()} {t} tvm_{kind}_{d.text}({t} a, {t} b) {{ return {cond} ? a : b; }}"
        return self.require_helper(f"tvm_{kind}_{d.text}", text)

    def helper_sigmoid(self, d: DType) -> str:
        t = self.type_name(d)

        def text() -> str:
            one = self.literal(1.0, d)
            return (f"{self._hq()} {t} tvm_sigmoid_{d.text}({t} x) {{ return {one} / ({one} + "
                    f"{self.math_function('exp', d)}(-x)); }}")
        return self.require_helper(f"tvm_sigmoid_{d.text}", text)

    def helper_clz(self, d: DType) -> str:
        t = self.type_name(d.with_lanes(1))
        bits = d.bits

        def text() -> str:
            if bits == 64:
                body = "__builtin_clzll((unsigned long long)x)"
            else:
                body = f"(__builtin_clz((unsigned int)x & {(1 << bits) - 1}u) - {32 - bits})"
            return (f"{self._hq()} int32_t tvm_clz_{d.text}({t} x) {{ return x == 0 ? {bits} : "
                    f"{body}; }}")
        return self.require_helper(f"tvm_clz_{d.text}", text)

    def helper_bf16(self) -> tuple[str, str]:
        """Names of the bfloat16 <-> float conversions (round to nearest even, NaN kept)."""
        s = self.bfloat16_storage

        def to_f32() -> str:
            return (f"{self._hq()} float tvm_bf16_to_f32({s} v) {{\n"
                    "  uint32_t bits = (uint32_t)v << 16; float f;\n"
                    "  memcpy(&f, &bits, sizeof(f)); return f;\n}")

        def from_f32() -> str:
            return (f"{self._hq()} {s} tvm_f32_to_bf16(float f) {{\n"
                    "  uint32_t bits; memcpy(&bits, &f, sizeof(bits));\n"
                    f"  if (f != f) return ({s})0x7FC0;\n"
                    "  bits += ((bits >> 16) & 1u) + 0x7FFFu;\n"
                    f"  return ({s})(bits >> 16);\n}}")
        return (self.require_helper("tvm_bf16_to_f32", to_f32),
                self.require_helper("tvm_f32_to_bf16", from_f32))

    def helper_reinterpret(self, src: DType, dst: DType) -> str:
        ts, td = self.type_name(src), self.type_name(dst)
        name = f"tvm_reinterpret_{src.text}_as_{dst.text}"

        def text() -> str:
            return (f"{self._hq()} {td} {name}({ts} x) {{ {td} y; memcpy(&y, &x, sizeof(y)); "
                    "return y; }")
        return self.require_helper(name, text)

    def helper_report_error(self) -> str:
        """``tvm_report_error(fmt, ...)``: format, hand to the error slot, return -1."""
        slot = self.use_runtime_slot("error")

        def text() -> str:
            return ("static int32_t tvm_report_error(const char* fmt, ...) {\n"
                    "  char msg[1024];\n  va_list ap;\n  va_start(ap, fmt);\n"
                    "  vsnprintf(msg, sizeof(msg), fmt, ap);\n  va_end(ap);\n"
                    f"  if ({slot}) {slot}(msg);\n  return -1;\n}}")
        return self.require_helper("tvm_report_error", text)

    def helper_parallel_launch(self) -> str:
        """``tvm_parallel_launch(f, cdata)``: the runtime's pool, or serially without one."""
        slot = self.use_runtime_slot("parallel")

        def text() -> str:
            return ("static int32_t tvm_parallel_launch(FTVMParallelLambda f, void* cdata) {\n"
                    f"  if ({slot}) return {slot}(f, cdata, {self.parallel_num_tasks});\n"
                    "  return f(0, 1, cdata);\n}")
        return self.require_helper("tvm_parallel_launch", text)

    def helper_alloc(self) -> str:
        """``tvm_alloc(nbytes)``: aligned heap memory for large kernel-local buffers."""
        align = self.alloc_alignment

        def text() -> str:
            return (f"static void* tvm_alloc(size_t nbytes) {{\n"
                    f"  size_t rounded = (nbytes + {align - 1}u) / {align}u * {align}u;\n"
                    f"  return aligned_alloc({align}, rounded ? rounded : {align});\n}}")
        return self.require_helper("tvm_alloc", text)
