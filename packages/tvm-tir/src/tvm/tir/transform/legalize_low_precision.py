"""LegalizeLowPrecision: low-precision element types become bytes and bit arithmetic.

The low-precision types (``float8_e4m3fn``, ``float8_e5m2``, the ``fnuz`` variants,
``float8_e8m0fnu``, ``float6_*``, ``float4_e2m1fn``, ``int4``, ``uint4``, ``int2``,
``uint2``; see :func:`tvm.ffi.dtype.is_low_precision`) take one byte per element in memory
(the ``ml_dtypes`` layout).  No code generator knows them; after this pass none is left:

* buffers, ``Allocate`` and loads/stores of such a dtype use ``uint8`` (same lanes) and
  carry the bit patterns;
* a ``Cast`` from or to one becomes explicit conversion arithmetic through float32 (int32
  for the integer types), see :mod:`.low_precision_codec`; constants fold at compile time;
* arithmetic, comparisons and float math on them are computed in float32 (int32) and, for
  a low-precision result, converted back; ``Select``/``if_then_else``/``reinterpret``
  move the bits as they are;
* the function's parameters keep their original dtype for callers: the attribute
  ``tir.original_dtypes`` (parameter index -> dtype) records it, and MakePackedAPI checks
  arguments against it (:func:`original_dtype`), so a ``float8_e5m2`` tensor passed for a
  ``float8_e4m3fn`` one is rejected.

The pass runs in :func:`tvm.tir.get_lowering_pipeline` right after FlattenBuffer, before
vectorization, so every target (LLVM, C, OpenCL, CUDA, Metal) sees only ordinary types;
the conversions are plain lane-wise expressions the vectorizer widens.  It also works on
functions that still have blocks.  Scalar parameters of a low-precision dtype are not
supported (a clear error).
"""

from __future__ import annotations

from typing import Any

from tvm.ffi.dtype import is_low_precision, storage_dtype
from tvm.ir.op import Op
from tvm.ir.transform import FunctionPass

from ..buffer import Buffer
from ..expr import (
    BinaryOp, Broadcast, BufferLoad, Call, Cast, CmpOp, FloatImm, IntImm, Let, PrimExpr,
    Select, Shuffle, Var, lanes_of, with_lanes,
)
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..op import FLOAT_MATH, FLOAT_PREDICATES
from ..stmt import Allocate, BufferStore, LetStmt
from ._common import prim_func_pass
from .low_precision_codec import (
    compute_dtype, decode, decode_constant, encode, encode_constant,
)

__all__ = [
    "LegalizeLowPrecision", "legalize_low_precision", "ORIGINAL_DTYPES_ATTR", "original_dtype",
]

#: PrimFunc attribute: ``{str(parameter index): original dtype}`` of legalized parameters.
ORIGINAL_DTYPES_ATTR = "tir.original_dtypes"

_LANEWISE_FLOAT_OPS = frozenset(f"tir.{n}" for n in (*FLOAT_MATH, *FLOAT_PREDICATES))


def original_dtype(func: PrimFunc, index: int) -> str:
    """The dtype callers pass for tensor parameter ``index`` of ``func``: the buffer's, or
    the low-precision dtype LegalizeLowPrecision replaced by ``uint8``."""
    recorded = func.attrs.get(ORIGINAL_DTYPES_ATTR) or {}
    if str(index) in recorded:
        return recorded[str(index)]
    return func.buffer_map[func.params[index]].dtype


def _low(dtype: str) -> bool:
    return dtype not in ("void", "handle") and is_low_precision(dtype)


class _Legalizer(StmtExprMutator):
    """Rewrites one function; every expression of a low-precision dtype becomes its bits."""

    def __init__(self, fname: str) -> None:
        self.fname = fname
        self.buffers: dict[int, Buffer] = {}
        self.vars: dict[Var, Var] = {}

    def error(self, message: str) -> ValueError:
        return ValueError(f"LegalizeLowPrecision ({self.fname}): {message}")

    # -- values -------------------------------------------------------------------------
    def bits(self, e: PrimExpr) -> PrimExpr:
        """The legalized form of ``e``: its bit patterns when ``e`` is low-precision."""
        return self.visit_expr(e)

    def value(self, e: PrimExpr) -> PrimExpr:
        """``e`` as an ordinary value: decoded to float32/int32 when it is low-precision."""
        new = self.visit_expr(e)
        if not _low(e.dtype):
            return new
        if isinstance(new, IntImm):
            return _const(decode_constant(new.value, e.dtype), compute_dtype(e.dtype))
        return decode(new, e.dtype)

    def to_low(self, value: PrimExpr, dtype: str) -> PrimExpr:
        """Bits of the ordinary ``value`` converted to the low-precision ``dtype``."""
        lanes = lanes_of(dtype)
        if isinstance(value, (IntImm, FloatImm)):
            return _u8(encode_constant(value.value, value.dtype, dtype), lanes)
        if isinstance(value, Broadcast) and isinstance(value.value, (IntImm, FloatImm)):
            v = value.value
            return _u8(encode_constant(v.value, v.dtype, dtype), lanes)
        return encode(value, dtype)

    # -- buffers and variables ------------------------------------------------------------
    def visit_buffer(self, buffer: Buffer) -> Buffer:
        new = self.buffers.get(id(buffer))
        if new is None:
            if _low(buffer.dtype):
                new = buffer.with_fields(dtype=storage_dtype(buffer.dtype))
            else:
                new = buffer
            self.buffers[id(buffer)] = new
        return new

    def visit_var_(self, v: Var) -> Any:
        new = self.vars.get(v)
        if new is not None:
            return new
        if _low(v.dtype):
            raise self.error(
                f"variable {v.name!r} of dtype {v.dtype} is not bound by a Let: scalar "
                "parameters of low-precision dtypes are not supported (pass a tensor, or a "
                "float32 scalar and cast it)"
            )
        return v

    def _new_var(self, var: Var) -> Var:
        if not _low(var.dtype):
            return var
        new = Var(var.name, storage_dtype(var.dtype), span=var.span)
        self.vars[var] = new
        return new

    # -- expressions ----------------------------------------------------------------------
    def visit_float_imm_(self, e: FloatImm) -> Any:
        if _low(e.dtype):
            return _u8(encode_constant(e.value, "float64", e.dtype), 1)
        return e

    def visit_int_imm_(self, e: IntImm) -> Any:
        if _low(e.dtype):
            return _u8(encode_constant(e.value, "int64", e.dtype), 1)
        return e

    def visit_buffer_load_(self, e: BufferLoad) -> Any:
        buffer = self.visit_buffer(e.buffer)
        indices = tuple(self.visit_expr(i) for i in e.indices)
        if buffer is e.buffer and all(a is b for a, b in zip(indices, e.indices)):
            return e
        return BufferLoad(buffer, indices, span=e.span)

    def visit_cast_(self, e: Cast) -> Any:
        src, dst = e.value.dtype, e.dtype
        if not _low(src) and not _low(dst):
            return self.generic_mutate(e)
        if src == dst:
            return self.bits(e.value)
        if _low(dst):
            return self.to_low(self.value(e.value), dst)
        value = self.value(e.value)
        return value if value.dtype == dst else Cast(dst, value, span=e.span)

    def visit_binary_op_(self, e: BinaryOp) -> Any:
        if not _low(e.dtype):
            return self.generic_mutate(e)
        result = type(e)(self.value(e.a), self.value(e.b), span=e.span)
        return self.to_low(result, e.dtype)

    def visit_cmp_op_(self, e: CmpOp) -> Any:
        if not _low(e.a.dtype):
            return self.generic_mutate(e)
        return type(e)(self.value(e.a), self.value(e.b), span=e.span)

    def visit_select_(self, e: Select) -> Any:
        if not _low(e.dtype):
            return self.generic_mutate(e)
        return Select(self.visit_expr(e.condition), self.bits(e.true_value),
                      self.bits(e.false_value), span=e.span)

    def visit_broadcast_(self, e: Broadcast) -> Any:
        value = self.visit_expr(e.value)
        return e if value is e.value else Broadcast(value, e.lanes, span=e.span)

    def visit_shuffle_(self, e: Shuffle) -> Any:
        vectors = tuple(self.visit_expr(v) for v in e.vectors)
        if all(a is b for a, b in zip(vectors, e.vectors)):
            return e
        dtype = storage_dtype(e.dtype) if _low(e.dtype) else e.dtype
        return Shuffle(dtype, vectors, e.indices, span=e.span)

    def visit_let_(self, e: Let) -> Any:
        value = self.visit_expr(e.value)
        var = self._new_var(e.var)
        body = self.visit_expr(e.body)
        if value is e.value and var is e.var and body is e.body:
            return e
        return Let(var, value, body, span=e.span)

    def visit_call_(self, e: Call) -> Any:
        low_args = [a for a in e.args if _low(a.dtype)]
        if not low_args and not _low(e.dtype):
            if _is_op(e, "tir.if_then_else"):
                return self._if_then_else(e)
            return self.generic_mutate(e)
        name = e.op.name if isinstance(e.op, Op) else str(e.op)
        if name == "tir.reinterpret":
            return self._reinterpret(e)
        if e.dtype == "handle":  # address_of(A[i]) and the like: the storage is the bytes
            return Call(e.dtype, e.op, tuple(self.bits(a) for a in e.args), span=e.span)
        if name == "tir.if_then_else":
            return self._if_then_else(e)
        if name in _LANEWISE_FLOAT_OPS:
            args = tuple(self.value(a) for a in e.args)
            if _low(e.dtype):
                call = Call(compute_dtype(e.dtype), e.op, args, span=e.span)
                return self.to_low(call, e.dtype)
            return Call(e.dtype, e.op, args, span=e.span)
        what = ", ".join(sorted({a.dtype for a in low_args} | ({e.dtype} if _low(e.dtype)
                                                                 else set())))
        raise self.error(
            f"call to {name} with low-precision operands or result ({what}) is not supported; "
            "cast them to float32 (or int32) first"
        )

    def _if_then_else(self, e: Call) -> Any:
        """The conversions bind values with Let, which a C-like printer hoists before the
        statement, out of the guarded branch: loads in a branch that needs them are
        guarded by the condition themselves, so evaluating them early is safe."""
        cond = self.visit_expr(e.args[0])
        t, f = self.bits(e.args[1]), self.bits(e.args[2])
        if t is not e.args[1] and _has_let(t):
            t = self.bits(_GuardLoads(e.args[0], True).visit_expr(e.args[1]))
        if f is not e.args[2] and _has_let(f):
            f = self.bits(_GuardLoads(e.args[0], False).visit_expr(e.args[2]))
        if cond is e.args[0] and t is e.args[1] and f is e.args[2]:
            return e
        return Call(storage_dtype(e.dtype) if _low(e.dtype) else e.dtype, e.op, (cond, t, f),
                    span=e.span)

    def _reinterpret(self, e: Call) -> Any:
        src, dst = e.args[0].dtype, e.dtype
        value = self.bits(e.args[0])
        if _low(dst) and not _low(src) and lanes_of(src) == lanes_of(dst):
            if src == with_lanes("int8", lanes_of(src)):
                return Cast(storage_dtype(dst), value)
            if value.dtype == storage_dtype(dst):
                return value
        if _low(src) and lanes_of(src) == lanes_of(dst):
            if _low(dst) or dst == storage_dtype(src):
                return value
            if dst == with_lanes("int8", lanes_of(dst)):
                return Cast(dst, value)
        raise self.error(
            f"reinterpret of {src} as {dst}: a low-precision type reinterprets only as "
            "uint8/int8 or another low-precision type with the same lanes"
        )

    # -- statements -----------------------------------------------------------------------
    def visit_buffer_store_(self, s: BufferStore) -> Any:
        buffer = self.visit_buffer(s.buffer)
        value = self.visit_expr(s.value)
        indices = tuple(self.visit_expr(i) for i in s.indices)
        if (buffer is s.buffer and value is s.value
                and all(a is b for a, b in zip(indices, s.indices))):
            return s
        return BufferStore(buffer, value, indices, span=s.span)

    def visit_allocate_(self, s: Allocate) -> Any:
        new = self.generic_mutate(s)
        if _low(s.dtype):
            new = new.with_fields(dtype=storage_dtype(s.dtype))
        return new

    def visit_let_stmt_(self, s: LetStmt) -> Any:
        value = self.visit_expr(s.value)
        var = self._new_var(s.var)
        body = self.visit_stmt(s.body)
        if value is s.value and var is s.var and body is s.body:
            return s
        return LetStmt(var, value, body, span=s.span)


class _GuardLoads(StmtExprMutator):
    """Each load ``L`` becomes ``if_then_else(cond, L, 0)`` (``take_true``) or
    ``if_then_else(cond, 0, L)``: safe to evaluate whatever ``cond`` is."""

    def __init__(self, cond: PrimExpr, take_true: bool) -> None:
        self.cond = cond
        self.take_true = take_true

    def visit_buffer_load_(self, e: BufferLoad) -> Any:
        indices = tuple(self.visit_expr(i) for i in e.indices)
        load = e if all(a is b for a, b in zip(indices, e.indices)) else BufferLoad(
            e.buffer, indices, span=e.span)
        zero = _const(0, e.dtype)
        args = (self.cond, load, zero) if self.take_true else (self.cond, zero, load)
        return Call(e.dtype, Op.get("tir.if_then_else"), args, span=e.span)


def _has_let(e: PrimExpr) -> bool:
    from ..stmt_functor import pre_order_visit

    found = False

    def visit(node: Any) -> Any:
        nonlocal found
        if isinstance(node, Let):
            found = True
        return False if found else None

    pre_order_visit(e, visit)
    return found


def _is_op(e: Call, name: str) -> bool:
    return isinstance(e.op, Op) and e.op.name == name


def _u8(bits: int, lanes: int) -> PrimExpr:
    imm = IntImm("uint8", bits & 0xFF)
    return imm if lanes == 1 else Broadcast(imm, lanes)


def _const(value: Any, dtype: str) -> PrimExpr:
    from ..expr import const

    return const(value, dtype)


def legalize_low_precision(func: PrimFunc) -> PrimFunc:
    """``func`` with every low-precision element type legalized (see the module docstring);
    the same object when it has none."""
    fname = func.attrs.get("global_symbol") or "main"
    leg = _Legalizer(str(fname))
    recorded = dict(func.attrs.get(ORIGINAL_DTYPES_ATTR) or {})
    buffer_map = {}
    for i, param in enumerate(func.params):
        if _low(param.dtype):
            raise leg.error(
                f"parameter {param.name!r} is a {param.dtype} scalar; scalar parameters of "
                "low-precision dtypes are not supported (pass a float32 scalar and cast it)"
            )
        buf = func.buffer_map.get(param)
        if buf is None:
            continue
        new = leg.visit_buffer(buf)
        if new is not buf:
            recorded.setdefault(str(i), buf.dtype)
        buffer_map[param] = new
    body = leg.visit_stmt(func.body)
    changed = body is not func.body or any(
        buffer_map[p] is not b for p, b in func.buffer_map.items())
    if not changed:
        return func
    attrs = dict(func.attrs)
    if recorded:
        attrs[ORIGINAL_DTYPES_ATTR] = recorded
    return func.with_fields(body=body, buffer_map={p: buffer_map.get(p, b) for p, b in
                                                  func.buffer_map.items()}, attrs=attrs)


def LegalizeLowPrecision() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`legalize_low_precision`."""
    return prim_func_pass(legalize_low_precision, "tir.LegalizeLowPrecision")
