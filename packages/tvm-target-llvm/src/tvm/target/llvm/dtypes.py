"""TIR dtypes as LLVM types.

Register types (what an expression evaluates to) and memory types (what a buffer element
occupies) differ only for ``bool``: ``i1`` in registers, ``i8`` in memory.  ``bfloat16``
lives in ``i16`` (arithmetic promotes to ``float`` and rounds back); ``float16`` is LLVM
``half``; ``handle`` is an opaque pointer.  Dtype facts (:class:`DType`) are the ones the
C-family code generators of tvm-tir use.
"""

from __future__ import annotations

from functools import lru_cache

from llvmlite import ir
from tvm.ffi.dtype import DTypeCode
from tvm.tir.codegen.c_types import DType
from tvm.tir.codegen.c_types import dtype_of as dtype_info

__all__ = ["DType", "dtype_info", "reg_type", "mem_type", "I1", "I8", "I16", "I32", "I64",
           "F32", "F64", "PTR", "VOID"]

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def _scalar_reg(d: DType) -> ir.Type:
    if d.is_handle:
        return PTR
    if d.is_void:
        return VOID
    if d.is_bool:
        return I1
    if d.code in (DTypeCode.INT, DTypeCode.UINT):
        return ir.IntType(d.bits)
    if d.is_bf16:
        return I16
    if d.code == DTypeCode.FLOAT:
        if d.bits == 16:
            return F16
        if d.bits == 32:
            return F32
        if d.bits == 64:
            return F64
    raise TypeError(f"llvm codegen: dtype {d.text} is not supported")


@lru_cache(maxsize=None)
def reg_type(dtype: str) -> ir.Type:
    """The LLVM type of a value of ``dtype`` (``<8 x float>`` for float32x8)."""
    d = dtype_info(dtype)
    t = _scalar_reg(d.element)
    return t if d.lanes == 1 else ir.VectorType(t, d.lanes)


@lru_cache(maxsize=None)
def mem_type(dtype: str) -> ir.Type:
    """The LLVM type of a buffer element of ``dtype`` (bool occupies a byte)."""
    d = dtype_info(dtype)
    t = I8 if d.is_bool else _scalar_reg(d.element)
    return t if d.lanes == 1 else ir.VectorType(t, d.lanes)
