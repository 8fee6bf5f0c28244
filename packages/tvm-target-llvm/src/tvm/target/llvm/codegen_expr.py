"""Expressions: TIR PrimExpr -> LLVM values (mixed into :class:`CodeGenLLVM`).

Each ``_e_<kind>`` method returns the LLVM value of one expression kind.  Arithmetic on
``bfloat16`` (stored as ``i16``) promotes to ``float`` and rounds back to nearest-even; every
other type computes natively, lane-wise for vectors.
"""

from __future__ import annotations

import math
from typing import Any

from llvmlite import ir
from tvm import tir
from tvm.tir import PrimExpr
from tvm.tir.codegen.c_types import float_to_bf16_bits

from .dtypes import F32, I16, I32, PTR, DType, dtype_info, mem_type, reg_type

__all__ = ["ExprCodegen"]

_FLOAT_FLAGS = ("contract",)  # allow FMA formation, nothing that changes results otherwise


def _vec(t: ir.Type, lanes: int) -> ir.Type:
    return t if lanes == 1 else ir.VectorType(t, lanes)


#: integer operations :meth:`ExprCodegen.numbered` computes when both operands are scalar
#: constants (the packed API's argument offsets): the result wraps to the type's width, as
#: the instruction does; division is left to LLVM (a zero divisor is guarded before code
#: generation)
_FOLD = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}


def _value_key(v: ir.Value) -> Any:
    """What identifies an LLVM value for value numbering: a constant by its type and value
    (each use makes a new Constant object), anything else by identity."""
    if isinstance(v, ir.Constant):
        c = v.constant
        return ("c", str(v.type), tuple(map(_value_key, c)) if isinstance(c, list) else c)
    return id(v)


class ExprCodegen:
    """Expression visitors; relies on ``self.builder``, ``self.var_map`` and helpers of the
    main code generator."""

    builder: ir.IRBuilder
    var_map: dict
    _vn_block: Any
    _vn: dict

    def numbered(self, op: str, dtype: str, operands: tuple, make: Any) -> ir.Value:
        """``make()``, the value of integer operation ``op`` on ``operands``, unless the
        current basic block computed it already (local value numbering) or the operands are
        scalar constants of an operation in ``_FOLD`` (then the folded constant).

        Flattened buffer indices repeat their whole address computation at every access
        of an unrolled register tile; emitting each once halves the IR of a convolution
        kernel and the time LLVM and this code generator spend on it.  Only pure integer
        and boolean operations are numbered, and only within one block, whose earlier
        instructions dominate its later ones.
        """
        fold = _FOLD.get(op)
        if fold is not None and all(isinstance(o, ir.Constant) and isinstance(o.type, ir.IntType)
                                    for o in operands):
            return self.const(dtype, fold(*(o.constant for o in operands)))
        block = self.builder.block
        if block is not self._vn_block:
            self._vn_block = block
            self._vn = {}
        key = (op, dtype, *map(_value_key, operands))
        hit = self._vn.get(key)
        if hit is not None:
            return hit[0]
        value = make()
        if self.builder.block is block:
            self._vn[key] = (value, operands)  # the operands kept alive: their ids are keys
        return value

    # ------------------------------------------------------------------ constants & helpers
    def const(self, dtype: str | DType, value: Any) -> ir.Value:
        d = dtype if isinstance(dtype, DType) else dtype_info(dtype)
        e = d.element
        if e.is_bf16:
            c = ir.Constant(I16, float_to_bf16_bits(float(value)))
        elif e.is_float:
            c = ir.Constant(reg_type(e.text), float(value))
        elif e.is_handle:
            if value:
                raise ValueError(f"llvm codegen: non-null handle constant {value!r}")
            c = ir.Constant(PTR, None)
        else:
            v = int(value)
            bits = 1 if e.is_bool else e.bits
            v &= (1 << bits) - 1
            if bits > 1 and v >= 1 << (bits - 1):
                v -= 1 << bits
            c = ir.Constant(reg_type(e.text), v)
        if d.lanes == 1:
            return c
        return ir.Constant(reg_type(d.text), [c] * d.lanes)

    def broadcast(self, value: ir.Value, lanes: int) -> ir.Value:
        if lanes == 1:
            return value
        vt = ir.VectorType(value.type, lanes)
        if isinstance(value, ir.Constant):
            return ir.Constant(vt, [value] * lanes)
        b = self.builder
        one = b.insert_element(ir.Constant(vt, ir.Undefined), value, ir.Constant(I32, 0))
        mask = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
        return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), mask)

    def _int_like(self, v: ir.Value, scalar: ir.Type) -> ir.Type:
        lanes = v.type.count if isinstance(v.type, ir.VectorType) else 1
        return _vec(scalar, lanes)

    def bf16_to_f32(self, v: ir.Value) -> ir.Value:
        b = self.builder
        i32t = self._int_like(v, I32)
        w = b.zext(v, i32t)
        w = b.shl(w, self._splat(i32t, 16))
        return b.bitcast(w, self._int_like(v, F32))

    def f32_to_bf16(self, v: ir.Value) -> ir.Value:
        b = self.builder
        i32t = self._int_like(v, I32)
        bits = b.bitcast(v, i32t)
        hi = b.lshr(bits, self._splat(i32t, 16))
        lsb = b.and_(hi, self._splat(i32t, 1))
        rounded = b.add(bits, b.add(lsb, self._splat(i32t, 0x7FFF)))
        res = b.trunc(b.lshr(rounded, self._splat(i32t, 16)), self._int_like(v, I16))
        quiet = b.trunc(b.or_(hi, self._splat(i32t, 0x40)), self._int_like(v, I16))
        isnan = b.fcmp_unordered("uno", v, v)
        return b.select(isnan, quiet, res)

    def _splat(self, t: ir.Type, value: Any) -> ir.Constant:
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
        return ir.Constant(t, value)

    def to_f32(self, v: ir.Value, d: DType) -> ir.Value:
        """Promote a bfloat16/float16 value to float32 (others unchanged)."""
        if d.is_bf16:
            return self.bf16_to_f32(v)
        if d.is_float and d.bits == 16:
            return self.builder.fpext(v, self._int_like(v, F32))
        return v

    def from_f32(self, v: ir.Value, d: DType) -> ir.Value:
        """Demote a float32 value back to bfloat16/float16."""
        if d.is_bf16:
            return self.f32_to_bf16(v)
        if d.is_float and d.bits == 16:
            return self.builder.fptrunc(v, reg_type(d.text))
        return v

    # ------------------------------------------------------------------ casts
    def cast(self, v: ir.Value, src: DType, dst: DType) -> ir.Value:
        """Convert ``v`` from ``src`` to ``dst`` with C semantics (bool is 0/1)."""
        if src.text == dst.text:
            return v
        b = self.builder
        if src.lanes != dst.lanes:
            if src.lanes == 1:
                return self.broadcast(self.cast(v, src, dst.element), dst.lanes)
            raise TypeError(f"llvm codegen: cannot cast {src.text} to {dst.text} (lanes differ)")
        lanes = dst.lanes
        if src.is_bf16:
            v = self.bf16_to_f32(v)
            src = dtype_info("float32").with_lanes(lanes)
            if dst.text == src.text:
                return v
        if dst.is_bf16:
            f32 = dtype_info("float32").with_lanes(lanes)
            return self.f32_to_bf16(self.cast(v, src, f32))
        tgt = reg_type(dst.text)
        if dst.is_handle or src.is_handle:
            if dst.is_handle and src.is_handle:
                return v
            if dst.is_bool:
                return b.icmp_unsigned("!=", v, ir.Constant(PTR, None))
            if dst.is_handle:
                return b.inttoptr(v, tgt)
            return b.ptrtoint(v, tgt)
        if dst.is_bool:
            if src.is_float:
                return b.fcmp_unordered("!=", v, self._splat(v.type, 0.0))
            return b.icmp_unsigned("!=", v, self._splat(v.type, 0))
        if src.is_bool:
            return b.uitofp(v, tgt) if dst.is_float else b.zext(v, tgt)
        if src.is_int and dst.is_int:
            if dst.bits == src.bits:
                return v
            if dst.bits < src.bits:
                return b.trunc(v, tgt)
            return b.sext(v, tgt) if src.is_signed else b.zext(v, tgt)
        if src.is_int and dst.is_float:
            return b.sitofp(v, tgt) if src.is_signed else b.uitofp(v, tgt)
        if src.is_float and dst.is_int:
            return b.fptosi(v, tgt) if dst.is_signed else b.fptoui(v, tgt)
        if src.is_float and dst.is_float:
            return b.fpext(v, tgt) if dst.bits > src.bits else b.fptrunc(v, tgt)
        raise TypeError(f"llvm codegen: unsupported cast {src.text} -> {dst.text}")

    # ------------------------------------------------------------------ leaves
    def _e_int_imm(self, e: tir.IntImm) -> ir.Value:
        return self.const(e.dtype, e.value)

    def _e_float_imm(self, e: tir.FloatImm) -> ir.Value:
        return self.const(e.dtype, e.value)

    def _e_string_imm(self, e: tir.StringImm) -> ir.Value:
        return self.global_string(e.value)

    def _e_var(self, e: tir.Var) -> ir.Value:
        try:
            return self.var_map[e]
        except KeyError:
            raise ValueError(
                f"llvm codegen: variable {e.name!r} ({e.dtype}) is used in {self.func_name} "
                "but never defined (a free variable; was the function lowered and run "
                "through MakePackedAPI?)"
            ) from None

    def _e_cast(self, e: tir.Cast) -> ir.Value:
        src, dst = dtype_info(e.value.dtype), dtype_info(e.dtype)
        v = self.expr(e.value)
        if not (src.is_int or src.is_bool) or not (dst.is_int or dst.is_bool):
            return self.cast(v, src, dst)
        if isinstance(v, ir.Constant) and src.lanes == 1 and dst.lanes == 1:
            value = int(v.constant)  # stored sign-normalised: read it back as the source type
            if src.is_bool:
                value &= 1
            elif not src.is_signed:
                value &= (1 << src.bits) - 1
            return self.const(dst, int(value != 0) if dst.is_bool else value)
        # the source type is part of the operation: one LLVM value read as int32 or as
        # uint32 extends differently
        return self.numbered(f"cast.{src.text}", e.dtype, (v,), lambda: self.cast(v, src, dst))

    # ------------------------------------------------------------------ arithmetic
    def _arith(self, e: Any, int_op: str, float_op: str, uint_op: str | None = None) -> ir.Value:
        d = dtype_info(e.dtype)
        a, c = self.expr(e.a), self.expr(e.b)
        b = self.builder
        if d.is_float:
            if d.is_bf16:
                a, c = self.bf16_to_f32(a), self.bf16_to_f32(c)
            r = getattr(b, float_op)(a, c, flags=_FLOAT_FLAGS)
            return self.f32_to_bf16(r) if d.is_bf16 else r
        op = uint_op if (uint_op and not d.is_signed) else int_op
        if op in ("add", "sub", "mul") and d.is_signed and d.bits >= 32:
            return self.numbered(op, e.dtype, (a, c),
                                 lambda: getattr(b, op)(a, c, flags=("nsw",)))
        return self.numbered(op, e.dtype, (a, c), lambda: getattr(b, op)(a, c))

    def _e_add(self, e: tir.Add) -> ir.Value:
        return self._arith(e, "add", "fadd")

    def _e_sub(self, e: tir.Sub) -> ir.Value:
        return self._arith(e, "sub", "fsub")

    def _e_mul(self, e: tir.Mul) -> ir.Value:
        return self._arith(e, "mul", "fmul")

    def _e_div(self, e: tir.Div) -> ir.Value:
        return self._arith(e, "sdiv", "fdiv", "udiv")

    def _e_mod(self, e: tir.Mod) -> ir.Value:
        return self._arith(e, "srem", "frem", "urem")

    def _positive_const(self, e: PrimExpr) -> int | None:
        if isinstance(e, tir.Broadcast):
            e = e.value
        if isinstance(e, tir.IntImm) and e.value > 0:
            return e.value
        return None

    def _e_floor_div(self, e: tir.FloorDiv) -> ir.Value:
        d = dtype_info(e.dtype)
        if d.is_float:
            q = self._arith(e, "sdiv", "fdiv")
            return self.float_math("floor", q, d)
        if not d.is_signed:
            return self._arith(e, "sdiv", "fdiv", "udiv")
        b = self.builder
        a, c = self.expr(e.a), self.expr(e.b)
        k = self._positive_const(e.b)

        def make() -> ir.Value:
            if k is not None and k & (k - 1) == 0:
                return b.ashr(a, self._splat(a.type, k.bit_length() - 1))
            q, r = b.sdiv(a, c), b.srem(a, c)
            return b.sub(q, b.zext(self._floor_adjust(r, c, k is not None), a.type))
        return self.numbered("floordiv", e.dtype, (a, c), make)

    def _e_floor_mod(self, e: tir.FloorMod) -> ir.Value:
        d = dtype_info(e.dtype)
        b = self.builder
        if d.is_float:
            a, c = self.to_f32(self.expr(e.a), d), self.to_f32(self.expr(e.b), d)
            fd = d if not (d.is_bf16 or d.bits == 16) else dtype_info("float32").with_lanes(d.lanes)
            q = self.float_math("floor", b.fdiv(a, c), fd)
            r = b.fsub(a, b.fmul(q, c))
            return self.from_f32(r, d)
        if not d.is_signed:
            return self._arith(e, "srem", "frem", "urem")
        a, c = self.expr(e.a), self.expr(e.b)
        k = self._positive_const(e.b)

        def make() -> ir.Value:
            if k is not None and k & (k - 1) == 0:
                return b.and_(a, self._splat(a.type, k - 1))
            r = b.srem(a, c)
            adjust = self._floor_adjust(r, c, k is not None)
            return b.add(r, b.select(adjust, c, self._splat(a.type, 0)))
        return self.numbered("floormod", e.dtype, (a, c), make)

    def _floor_adjust(self, r: ir.Value, c: ir.Value, positive_divisor: bool) -> ir.Value:
        """Whether truncating division must step down to floor: the remainder ``r`` of
        ``a / c`` is non-zero and its sign differs from the divisor's."""
        b = self.builder
        zero = self._splat(r.type, 0)
        if positive_divisor:
            return b.icmp_signed("<", r, zero)
        nonzero = b.icmp_signed("!=", r, zero)
        sign_differs = b.icmp_signed("!=", b.icmp_signed("<", r, zero),
                                     b.icmp_signed("<", c, zero))
        return b.and_(nonzero, sign_differs)

    def _minmax(self, e: Any, is_min: bool) -> ir.Value:
        d = dtype_info(e.dtype)
        a, c = self.expr(e.a), self.expr(e.b)
        b = self.builder
        if d.is_float:
            fa, fc = (self.bf16_to_f32(a), self.bf16_to_f32(c)) if d.is_bf16 else (a, c)
            less = b.fcmp_ordered("<", fa, fc) if is_min else b.fcmp_ordered(">", fa, fc)
            return b.select(less, a, c)
        if d.is_signed:
            cmp = b.icmp_signed
        else:
            cmp = b.icmp_unsigned
        return self.numbered("min" if is_min else "max", e.dtype, (a, c),
                             lambda: b.select(cmp("<" if is_min else ">", a, c), a, c))

    def _e_min(self, e: tir.Min) -> ir.Value:
        return self._minmax(e, True)

    def _e_max(self, e: tir.Max) -> ir.Value:
        return self._minmax(e, False)

    # ------------------------------------------------------------------ comparisons & logic
    def compare(self, op: str, a: ir.Value, c: ir.Value, d: DType) -> ir.Value:
        b = self.builder
        if d.is_float:
            if d.is_bf16:
                a, c = self.bf16_to_f32(a), self.bf16_to_f32(c)
            if op == "!=":
                return b.fcmp_unordered("!=", a, c)
            return b.fcmp_ordered(op, a, c)
        if d.is_signed:
            return b.icmp_signed(op, a, c)
        return b.icmp_unsigned(op, a, c)

    def _cmp(self, e: Any, op: str) -> ir.Value:
        a, c = self.expr(e.a), self.expr(e.b)
        d = dtype_info(e.a.dtype)
        if d.is_float:
            return self.compare(op, a, c, d)
        return self.numbered(op, e.a.dtype, (a, c), lambda: self.compare(op, a, c, d))

    def _e_eq(self, e: tir.EQ) -> ir.Value:
        return self._cmp(e, "==")

    def _e_ne(self, e: tir.NE) -> ir.Value:
        return self._cmp(e, "!=")

    def _e_lt(self, e: tir.LT) -> ir.Value:
        return self._cmp(e, "<")

    def _e_le(self, e: tir.LE) -> ir.Value:
        return self._cmp(e, "<=")

    def _e_gt(self, e: tir.GT) -> ir.Value:
        return self._cmp(e, ">")

    def _e_ge(self, e: tir.GE) -> ir.Value:
        return self._cmp(e, ">=")

    def _e_and(self, e: tir.And) -> ir.Value:
        a, c = self.expr(e.a), self.expr(e.b)
        return self.numbered("and", e.dtype, (a, c), lambda: self.builder.and_(a, c))

    def _e_or(self, e: tir.Or) -> ir.Value:
        a, c = self.expr(e.a), self.expr(e.b)
        return self.numbered("or", e.dtype, (a, c), lambda: self.builder.or_(a, c))

    def _e_not(self, e: tir.Not) -> ir.Value:
        a = self.expr(e.a)
        return self.numbered("not", e.dtype, (a,), lambda: self.builder.not_(a))

    def _e_select(self, e: tir.Select) -> ir.Value:
        cond = self.expr(e.condition)
        return self.builder.select(cond, self.expr(e.true_value), self.expr(e.false_value))

    def _e_let(self, e: tir.Let) -> ir.Value:
        value = self.expr(e.value)
        with self.bind_var(e.var, value):
            return self.expr(e.body)

    # ------------------------------------------------------------------ vectors
    def _e_ramp(self, e: tir.Ramp) -> ir.Value:
        d = dtype_info(e.dtype)
        if isinstance(e.base, tir.IntImm) and isinstance(e.stride, tir.IntImm):
            et = reg_type(d.element.text)
            return ir.Constant(reg_type(d.text), [ir.Constant(et, e.base.value + i * e.stride.value)
                                                  for i in range(e.lanes)])
        base = self.broadcast(self.expr(e.base), e.lanes)
        stride = self.broadcast(self.expr(e.stride), e.lanes)
        iota = self.const_vector(d, list(range(e.lanes)))
        b = self.builder
        if d.is_float:
            return b.fadd(base, b.fmul(stride, iota))
        return b.add(base, b.mul(stride, iota))

    def const_vector(self, d: DType, values: list) -> ir.Constant:
        et = reg_type(d.element.text)
        return ir.Constant(ir.VectorType(et, len(values)), [ir.Constant(et, v) for v in values])

    def _e_broadcast(self, e: tir.Broadcast) -> ir.Value:
        return self.broadcast(self.expr(e.value), e.lanes)

    def _e_shuffle(self, e: tir.Shuffle) -> ir.Value:
        b = self.builder
        lanes: list[ir.Value] = []
        for vec in e.vectors:
            v = self.expr(vec)
            n = dtype_info(vec.dtype).lanes
            if n == 1:
                lanes.append(v)
            else:
                lanes.extend(b.extract_element(v, ir.Constant(I32, i)) for i in range(n))
        picks = [lanes[int(i)] for i in e.indices]
        if len(picks) == 1:
            return picks[0]
        out: ir.Value = ir.Constant(reg_type(e.dtype), ir.Undefined)
        for i, v in enumerate(picks):
            out = b.insert_element(out, v, ir.Constant(I32, i))
        return out

    # ------------------------------------------------------------------ memory
    def flat_index(self, buffer: tir.Buffer, indices: tuple) -> PrimExpr:
        """The element offset of ``buffer[indices]`` (FlattenBuffer's rule: row-major or by
        declared strides, plus ``elem_offset``)."""
        from tvm.tir.transform.flatten_buffer import flatten_indices

        if not indices:
            return tir.const(0, "int32")
        flat = flatten_indices(buffer, tuple(indices))
        if len(flat) != 1:
            raise NotImplementedError(
                f"llvm codegen: buffer {buffer.name} has axis_separators (a multi-dimensional "
                "physical layout), which CPU memory does not have"
            )
        return flat[0]

    def _known_multiple(self, e: PrimExpr) -> int:
        if isinstance(e, tir.IntImm):
            return abs(e.value) or 1 << 20
        if isinstance(e, tir.Mul):
            return self._known_multiple(e.a) * self._known_multiple(e.b)
        if isinstance(e, (tir.Add, tir.Sub)):
            return math.gcd(self._known_multiple(e.a), self._known_multiple(e.b))
        if isinstance(e, tir.Cast):
            return self._known_multiple(e.value)
        if isinstance(e, tir.Var):
            return self.var_multiple.get(e, 1)
        return 1

    def access_align(self, buffer: tir.Buffer, index: PrimExpr) -> int:
        """Alignment in bytes of an access at ``index`` (element offset) of ``buffer``."""
        elem = dtype_info(buffer.dtype).element.nbytes
        base = self.var_align.get(buffer.data, elem)
        offset = self._known_multiple(index) * dtype_info(buffer.dtype).nbytes
        return max(elem, math.gcd(base, offset))

    def index_value(self, e: PrimExpr) -> ir.Value:
        """A scalar element offset as an i64 value.

        32-bit index arithmetic (``+ - *``) is redone in 64 bits with ``nsw`` instead of
        sign-extending its 32-bit result: indices do not overflow, and the wide form lets
        LLVM fold constant offsets and tell apart the addresses of a register tile.
        """
        d = dtype_info(e.dtype)
        if d.lanes != 1 or d.is_float or not d.is_signed or d.bits != 32:
            return self.expr(e)
        i64 = ir.IntType(64)
        if isinstance(e, tir.IntImm):
            return ir.Constant(i64, e.value)
        if isinstance(e, (tir.Add, tir.Sub, tir.Mul)):
            a, c = self.index_value(e.a), self.index_value(e.b)
            op = {tir.Add: "add", tir.Sub: "sub", tir.Mul: "mul"}[type(e)]
            return self.numbered(op, "int64", (a, c),
                                 lambda: getattr(self.builder, op)(a, c, flags=("nsw",)))
        v = self.expr(e)
        return self.numbered("sext", "int64", (v,), lambda: self.builder.sext(v, i64))

    def element_ptr(self, buffer: tir.Buffer, index: ir.Value) -> ir.Value:
        """Address of element ``index`` (scalar value) of ``buffer``."""
        d = dtype_info(buffer.dtype)
        base = self.expr(buffer.data)
        et = mem_type(d.element.text)
        if d.lanes != 1:
            lanes = ir.Constant(index.type, d.lanes)
            index = self.numbered("mul", f"int{index.type.width}", (index, lanes),
                                  lambda: self.builder.mul(index, lanes))
        return self.builder.gep(base, [index], inbounds=True, source_etype=et)

    def _load_value(self, ptr: ir.Value, dtype: str, align: int) -> ir.Value:
        d = dtype_info(dtype)
        v = self.builder.load(ptr, typ=mem_type(dtype), align=align)
        if d.is_bool:
            v = self.builder.icmp_unsigned("!=", v, self._splat(v.type, 0))
        return v

    def _store_value(self, value: ir.Value, ptr: ir.Value, dtype: str, align: int) -> None:
        d = dtype_info(dtype)
        if d.is_bool:
            value = self.builder.zext(value, mem_type(dtype))
        self.builder.store(value, ptr, align=align)

    def _contiguous(self, index: PrimExpr) -> tir.Ramp | None:
        if isinstance(index, tir.Ramp) and isinstance(index.stride, tir.IntImm) \
                and index.stride.value == 1:
            return index
        return None

    def _e_buffer_load(self, e: tir.BufferLoad) -> ir.Value:
        buf = e.buffer
        index = self.flat_index(buf, e.indices)
        bd = dtype_info(buf.dtype)
        ramp = self._contiguous(index)
        if dtype_info(index.dtype).lanes == 1:
            ptr = self.element_ptr(buf, self.index_value(index))
            return self._load_value(ptr, buf.dtype, self.access_align(buf, index))
        if ramp is not None and bd.lanes == 1:
            ptr = self.element_ptr(buf, self.index_value(ramp.base))
            return self._load_value(ptr, e.dtype, self.access_align(buf, ramp.base))
        return self._gather(buf, index, e.dtype)

    def _lane_indices(self, index: PrimExpr) -> list[ir.Value]:
        b = self.builder
        if isinstance(index, tir.Ramp):
            base, stride = self.expr(index.base), self.expr(index.stride)
            out = [base]
            for i in range(1, index.lanes):
                step = b.mul(stride, ir.Constant(stride.type, i))
                out.append(b.add(base, step))
            return out
        vec = self.expr(index)
        n = dtype_info(index.dtype).lanes
        return [b.extract_element(vec, ir.Constant(I32, i)) for i in range(n)]

    def _gather(self, buf: tir.Buffer, index: PrimExpr, dtype: str) -> ir.Value:
        b = self.builder
        bd = dtype_info(buf.dtype)
        elem_align = bd.element.nbytes
        parts = [self._load_value(self.element_ptr(buf, i), buf.dtype, elem_align)
                 for i in self._lane_indices(index)]
        out: ir.Value = ir.Constant(reg_type(dtype), ir.Undefined)
        pos = 0
        for p in parts:
            if bd.lanes == 1:
                out = b.insert_element(out, p, ir.Constant(I32, pos))
                pos += 1
            else:
                for j in range(bd.lanes):
                    out = b.insert_element(out, b.extract_element(p, ir.Constant(I32, j)),
                                           ir.Constant(I32, pos))
                    pos += 1
        return out

    def store(self, buf: tir.Buffer, indices: tuple, value: PrimExpr) -> None:
        """Emit ``buf[indices] = value`` (vector store, scatter or scalar store)."""
        index = self.flat_index(buf, indices)
        bd = dtype_info(buf.dtype)
        v = self.expr(value)
        if dtype_info(index.dtype).lanes == 1:
            ptr = self.element_ptr(buf, self.index_value(index))
            self._store_value(v, ptr, buf.dtype, self.access_align(buf, index))
            return
        ramp = self._contiguous(index)
        if ramp is not None and bd.lanes == 1:
            ptr = self.element_ptr(buf, self.index_value(ramp.base))
            self._store_value(v, ptr, value.dtype, self.access_align(buf, ramp.base))
            return
        b = self.builder
        pos = 0
        for i in self._lane_indices(index):
            ptr = self.element_ptr(buf, i)
            if bd.lanes == 1:
                lane = b.extract_element(v, ir.Constant(I32, pos))
                pos += 1
            else:
                lane = ir.Constant(reg_type(buf.dtype), ir.Undefined)
                for j in range(bd.lanes):
                    lane = b.insert_element(lane, b.extract_element(v, ir.Constant(I32, pos)),
                                            ir.Constant(I32, j))
                    pos += 1
            self._store_value(lane, ptr, buf.dtype, bd.element.nbytes)

    # ------------------------------------------------------------------ calls
    def _e_call(self, e: tir.Call) -> ir.Value:
        return self.call_intrinsic(e)
