"""tvm.te: the tensor-expression language.

Describe a computation as tensors defined elementwise by expressions, then turn it into a
block-level TIR function::

    from tvm import te

    A = te.placeholder((128, 64), name="A")
    B = te.placeholder((64, 32), name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((128, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])

``te.max``/``te.min`` reduce over an axis or, given plain expressions, combine them
(``te.max(x, 0.0)``).  Math intrinsics (``te.exp``, ``te.if_then_else`` ...) are the ones of
:mod:`tvm.tir.op`.
"""

from tvm.tir.expr import IterVar, Range, Reduce, Var
from tvm.tir.op import (
    abs, all, any, ceil, cos, div, erf, exp, exp2, fabs, floor, floordiv, floormod, if_then_else,
    isfinite, isinf, isnan, likely, log, log1p, log2, log10, max_value, min_value, power, round,
    rsqrt, sigmoid, sin, sqrt, tan, tanh, truncdiv, truncmod,
)

from .create_prim_func import create_prim_func
from .operation import (
    Reducer, comm_reducer, compute, const, max, min, placeholder, reduce_axis, size_var, sum,
    thread_axis, var,
)
from .tensor import ComputeOp, Operation, PlaceholderOp, ProducerLoad, ReduceAxisVar, Tensor
