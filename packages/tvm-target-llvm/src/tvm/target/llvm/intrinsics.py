"""Intrinsic calls: ``tir.<op>`` -> LLVM instructions, LLVM intrinsics or libm calls.

* Math with an LLVM intrinsic (``exp``, ``log``, ``sqrt``, ``floor``, ``pow``, ``sin``...)
  maps to ``llvm.<name>.<type>``, vectors included; ``round`` is ``llvm.nearbyint``
  (half to even, like numpy).  float32 ``exp`` (also inside ``sigmoid``) and ``erf``,
  vector or scalar, are inlined as polynomials (:mod:`.vector_math`) instead of libm calls
  per lane; in a scalar loop LLVM's loop vectorizer can then widen them (softmax rows of
  symbolic length).
* Math without one (``tanh``, ``tan``, ``atan2``, ``log1p``...) calls the C math
  library lane by lane (``tanhf`` for float32, ``tanh`` for float64), which is accurate to a
  few ulp; ``sigmoid`` is ``1 / (1 + exp(-x))`` and ``rsqrt`` is ``1 / sqrt(x)`` in IR.
* float16 and bfloat16 math computes in float32 and rounds back.
* ``if_then_else`` branches (only the taken side is evaluated); ``call_extern`` declares the C
  function from the argument and result dtypes.
"""

from __future__ import annotations

from llvmlite import ir
from tvm import tir
from tvm.ir.op import Op

from .dtypes import F32, I1, I32, PTR, VOID, DType, dtype_info, mem_type, reg_type

__all__ = ["IntrinsicCodegen", "LLVM_MATH", "LIBM_MATH"]

LLVM_MATH = {
    "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor",
    "ceil": "llvm.ceil", "trunc": "llvm.trunc", "round": "llvm.nearbyint",
    "nearbyint": "llvm.nearbyint", "pow": "llvm.pow", "sin": "llvm.sin", "cos": "llvm.cos",
    "fma": "llvm.fma", "copysign": "llvm.copysign",
}
LIBM_MATH = {
    "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf",
    "expm1", "log1p", "atan2", "hypot", "fmod", "nextafter",
}


def _suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_suffix(t.element)}"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    raise TypeError(f"no LLVM intrinsic suffix for {t}")


class IntrinsicCodegen:
    """``Call`` expressions."""

    builder: ir.IRBuilder

    def call_intrinsic(self, e: tir.Call) -> ir.Value:
        op = e.op
        if not isinstance(op, Op):
            raise NotImplementedError(
                f"llvm codegen: {self.func_name} calls {op!r}; calls between PrimFuncs are not "
                "supported (inline the callee or use call_extern)"
            )
        name = op.name[4:] if op.name.startswith("tir.") else op.name
        handler = getattr(self, f"_i_{name}", None)
        if handler is not None:
            return handler(e)
        if name in LLVM_MATH or name in LIBM_MATH or name in ("sigmoid", "rsqrt", "exp10"):
            d = dtype_info(e.dtype)
            args = [self.expr(a) for a in e.args]
            return self.float_math(name, args, d)
        raise NotImplementedError(
            f"llvm codegen: intrinsic {op.name} (in {self.func_name}) is not supported on the "
            "llvm target"
        )

    # ------------------------------------------------------------------ float math
    def float_math(self, name: str, args: ir.Value | list, d: DType) -> ir.Value:
        """``name`` applied lane-wise to ``args`` (values of dtype ``d``)."""
        if not isinstance(args, (list, tuple)):
            args = [args]
        if not d.is_float:
            raise TypeError(f"llvm codegen: {name} needs float operands, got {d.text}")
        if d.is_bf16 or d.bits == 16:
            f32 = dtype_info("float32").with_lanes(d.lanes)
            wide = [self.to_f32(a, d) for a in args]
            return self.from_f32(self.float_math(name, wide, f32), d)
        b = self.builder
        t = reg_type(d.text)
        one = self._splat(t, 1.0)
        if name == "sigmoid":
            neg = b.fsub(self._splat(t, 0.0), args[0])
            return b.fdiv(one, b.fadd(one, self.float_math("exp", [neg], d)))
        if name == "exp" and d.bits == 32:
            from .vector_math import emit_vector_exp

            floor = self.declare(f"llvm.floor.{_suffix(t)}", t, [t])
            return emit_vector_exp(b, args[0], floor)
        if name == "erf" and d.bits == 32:
            from .vector_math import emit_erf

            floor = self.declare(f"llvm.floor.{_suffix(t)}", t, [t])
            return emit_erf(b, args[0], floor)
        if name == "tanh" and d.bits == 32:
            from .vector_math import emit_tanh

            floor = self.declare(f"llvm.floor.{_suffix(t)}", t, [t])
            return emit_tanh(b, args[0], floor)
        if name == "rsqrt":
            return b.fdiv(one, self.llvm_intrinsic("llvm.sqrt", args, t))
        if name == "exp10":
            return self.llvm_intrinsic("llvm.pow", [self._splat(t, 10.0), args[0]], t)
        if name in LLVM_MATH:
            return self.llvm_intrinsic(LLVM_MATH[name], list(args), t)
        if name in LIBM_MATH:
            return self.libm(name, list(args), d)
        raise NotImplementedError(f"llvm codegen: no implementation of {name}")

    def llvm_intrinsic(self, base: str, args: list, ret: ir.Type) -> ir.Value:
        fn = self.declare(f"{base}.{_suffix(ret)}", ret, [a.type for a in args])
        return self.builder.call(fn, args)

    def libm(self, name: str, args: list, d: DType) -> ir.Value:
        et = reg_type(d.element.text)
        sym = name + ("f" if isinstance(et, ir.FloatType) else "")
        fn = self.declare(sym, et, [et] * len(args))
        b = self.builder
        if d.lanes == 1:
            return b.call(fn, args)
        out: ir.Value = ir.Constant(reg_type(d.text), ir.Undefined)
        for i in range(d.lanes):
            lane = ir.Constant(I32, i)
            r = b.call(fn, [b.extract_element(a, lane) for a in args])
            out = b.insert_element(out, r, lane)
        return out

    def _float_pred(self, e: tir.Call, kind: str) -> ir.Value:
        d = dtype_info(e.args[0].dtype)
        v = self.expr(e.args[0])
        if not d.is_float:
            return self.const(e.dtype, kind == "isfinite")
        v = self.to_f32(v, d)
        b = self.builder
        if kind == "isnan":
            return b.fcmp_unordered("uno", v, v)
        inf = self._splat(v.type, float("inf"))
        absv = self.llvm_intrinsic("llvm.fabs", [v], v.type)
        if kind == "isinf":
            return b.fcmp_ordered("==", absv, inf)
        return b.fcmp_ordered("<", absv, inf)

    def _i_isnan(self, e: tir.Call) -> ir.Value:
        return self._float_pred(e, "isnan")

    def _i_isinf(self, e: tir.Call) -> ir.Value:
        return self._float_pred(e, "isinf")

    def _i_isfinite(self, e: tir.Call) -> ir.Value:
        return self._float_pred(e, "isfinite")

    def _i_ldexp(self, e: tir.Call) -> ir.Value:
        d = dtype_info(e.dtype)
        x = self.to_f32(self.expr(e.args[0]), d) if d.bits == 16 else self.expr(e.args[0])
        wd = dtype_info("float32").with_lanes(d.lanes) if d.bits == 16 else d
        exp = self.cast(self.expr(e.args[1]), dtype_info(e.args[1].dtype),
                        dtype_info("int32").with_lanes(d.lanes))
        et = reg_type(wd.element.text)
        fn = self.declare("ldexpf" if et == F32 else "ldexp", et, [et, I32])
        b = self.builder
        if d.lanes == 1:
            r = b.call(fn, [x, exp])
        else:
            r = ir.Constant(reg_type(wd.text), ir.Undefined)
            for i in range(d.lanes):
                lane = ir.Constant(I32, i)
                r = b.insert_element(r, b.call(fn, [b.extract_element(x, lane),
                                                    b.extract_element(exp, lane)]), lane)
        return self.from_f32(r, d) if d.bits == 16 else r

    # ------------------------------------------------------------------ control
    def _i_if_then_else(self, e: tir.Call) -> ir.Value:
        cond_e, t_e, f_e = e.args
        if dtype_info(cond_e.dtype).lanes != 1:
            return self.builder.select(self.expr(cond_e), self.expr(t_e), self.expr(f_e))
        b = self.builder
        cond = self.expr(cond_e)
        then_bb, else_bb = self.new_block("ite.then"), self.new_block("ite.else")
        end_bb = self.new_block("ite.end")
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        tv = self.expr(t_e)
        then_end = b.block
        b.branch(end_bb)
        b.position_at_end(else_bb)
        fv = self.expr(f_e)
        else_end = b.block
        b.branch(end_bb)
        b.position_at_end(end_bb)
        phi = b.phi(tv.type)
        phi.add_incoming(tv, then_end)
        phi.add_incoming(fv, else_end)
        return phi

    def _i_likely(self, e: tir.Call) -> ir.Value:
        return self.expr(e.args[0])

    def _i_assume(self, e: tir.Call) -> ir.Value:
        cond = self.expr(e.args[0])
        self.builder.call(self.declare("llvm.assume", VOID, [I1]), [cond])
        return ir.Constant(I32, 0)

    # ------------------------------------------------------------------ bits
    def _bitwise(self, e: tir.Call, op: str) -> ir.Value:
        a, c = self.expr(e.args[0]), self.expr(e.args[1])
        return getattr(self.builder, op)(a, c)

    def _i_bitwise_and(self, e: tir.Call) -> ir.Value:
        return self._bitwise(e, "and_")

    def _i_bitwise_or(self, e: tir.Call) -> ir.Value:
        return self._bitwise(e, "or_")

    def _i_bitwise_xor(self, e: tir.Call) -> ir.Value:
        return self._bitwise(e, "xor")

    def _i_bitwise_not(self, e: tir.Call) -> ir.Value:
        return self.builder.not_(self.expr(e.args[0]))

    def _i_shift_left(self, e: tir.Call) -> ir.Value:
        return self._bitwise(e, "shl")

    def _i_shift_right(self, e: tir.Call) -> ir.Value:
        return self._bitwise(e, "ashr" if dtype_info(e.dtype).is_signed else "lshr")

    def _i_popcount(self, e: tir.Call) -> ir.Value:
        v = self.expr(e.args[0])
        r = self.llvm_intrinsic("llvm.ctpop", [v], v.type)
        return self.cast(r, dtype_info(e.args[0].dtype), dtype_info(e.dtype))

    def _i_clz(self, e: tir.Call) -> ir.Value:
        v = self.expr(e.args[0])
        fn = self.declare(f"llvm.ctlz.{_suffix(v.type)}", v.type, [v.type, I1])
        r = self.builder.call(fn, [v, ir.Constant(I1, 0)])
        return self.cast(r, dtype_info(e.args[0].dtype), dtype_info(e.dtype))

    def _i_reinterpret(self, e: tir.Call) -> ir.Value:
        v = self.expr(e.args[0])
        src, dst = dtype_info(e.args[0].dtype), dtype_info(e.dtype)
        t = reg_type(dst.text)
        if src.is_handle and not dst.is_handle:
            return self.builder.ptrtoint(v, t)
        if dst.is_handle and not src.is_handle:
            return self.builder.inttoptr(v, t)
        if src.bits * src.lanes != dst.bits * dst.lanes:
            raise TypeError(f"llvm codegen: reinterpret {src.text} as {dst.text} changes the size")
        return v if v.type == t else self.builder.bitcast(v, t)

    # ------------------------------------------------------------------ pointers & calls
    def _i_address_of(self, e: tir.Call) -> ir.Value:
        load = e.args[0]
        if not isinstance(load, tir.BufferLoad):
            raise TypeError("llvm codegen: address_of expects a BufferLoad")
        index = self.flat_index(load.buffer, load.indices)
        if isinstance(index, tir.Ramp):
            index = index.base
        return self.element_ptr(load.buffer, self.expr(index))

    def _i_isnullptr(self, e: tir.Call) -> ir.Value:
        return self.builder.icmp_unsigned("==", self.expr(e.args[0]), ir.Constant(PTR, None))

    def _i_tvm_access_ptr(self, e: tir.Call) -> ir.Value:
        ptype, data, offset = e.args[0], e.args[1], e.args[2]
        base = self.expr(data)
        return self.builder.gep(base, [self.expr(offset)], inbounds=True,
                                source_etype=mem_type(ptype.dtype))

    def _i_undef(self, e: tir.Call) -> ir.Value:
        return ir.Constant(reg_type(e.dtype), ir.Undefined)

    def _extern(self, e: tir.Call, pure: bool) -> ir.Value:
        name_e = e.args[0]
        if not isinstance(name_e, tir.StringImm):
            raise TypeError("llvm codegen: call_extern needs the function name as a StringImm")
        args = [self.expr(a) for a in e.args[1:]]
        d = dtype_info(e.dtype)
        ret = VOID if d.is_void else reg_type(e.dtype)
        fn = self.declare(name_e.value, ret, [a.type for a in args])
        r = self.builder.call(fn, args)
        return ir.Constant(I32, 0) if d.is_void else r

    def _i_call_extern(self, e: tir.Call) -> ir.Value:
        return self._extern(e, False)

    def _i_call_pure_extern(self, e: tir.Call) -> ir.Value:
        return self._extern(e, True)

    def _i_call_llvm_intrin(self, e: tir.Call) -> ir.Value:
        name_e = e.args[0]
        if not isinstance(name_e, tir.StringImm):
            raise TypeError(
                "llvm codegen: call_llvm_intrin needs the intrinsic's name as a StringImm "
                "(e.g. 'llvm.x86.avx2.pmadd.wd'), numeric intrinsic ids are not supported"
            )
        args = [self.expr(a) for a in e.args[1:]]
        d = dtype_info(e.dtype)
        ret = VOID if d.is_void else reg_type(e.dtype)
        r = self.builder.call(self.declare(name_e.value, ret, [a.type for a in args]), args)
        return ir.Constant(I32, 0) if d.is_void else r

    _i_call_llvm_pure_intrin = _i_call_llvm_intrin

    # ------------------------------------------------------------------ vector halves
    def _half(self, e: tir.Call, high: bool) -> ir.Value:
        v = self.expr(e.args[0])
        n = v.type.count
        start = n // 2 if high else 0
        mask = ir.Constant(ir.VectorType(I32, n // 2), list(range(start, start + n // 2)))
        return self.builder.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), mask)

    def _i_vectorhigh(self, e: tir.Call) -> ir.Value:
        return self._half(e, True)

    def _i_vectorlow(self, e: tir.Call) -> ir.Value:
        return self._half(e, False)

    def _i_vectorcombine(self, e: tir.Call) -> ir.Value:
        a, c = self.expr(e.args[0]), self.expr(e.args[1])
        n = a.type.count
        mask = ir.Constant(ir.VectorType(I32, 2 * n), list(range(2 * n)))
        return self.builder.shuffle_vector(a, c, mask)

    def _i_fma(self, e: tir.Call) -> ir.Value:
        d = dtype_info(e.dtype)
        return self.float_math("fma", [self.expr(a) for a in e.args], d)

