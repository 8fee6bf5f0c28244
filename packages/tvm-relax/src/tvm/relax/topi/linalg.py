"""Linear algebra te computes: numpy ``matmul``."""

from __future__ import annotations

from typing import Any, Optional

from tvm import te

from ._util import broadcast_index, cast
from .elemwise import _out_shape

__all__ = ["matmul"]


def matmul(a: te.Tensor, b: te.Tensor, out_dtype: Optional[str] = None) -> te.Tensor:
    """numpy ``matmul``: batch dimensions broadcast, 1-d operands promoted then squeezed.

    Products are accumulated in ``out_dtype`` (default: ``a``'s dtype).
    """
    dtype = out_dtype if out_dtype and out_dtype != "void" else a.dtype
    a_batch = tuple(a.shape[:-2]) if a.ndim > 1 else ()
    b_batch = tuple(b.shape[:-2]) if b.ndim > 1 else ()
    batch = _out_shape(a_batch, b_batch) if (a_batch or b_batch) else ()
    nb = len(batch)
    out_shape = list(batch)
    if a.ndim > 1:
        out_shape.append(a.shape[-2])
    if b.ndim > 1:
        out_shape.append(b.shape[-1])
    k = te.reduce_axis((0, a.shape[-1]), name="k")

    def f(*idx: Any) -> Any:
        bidx = idx[:nb]
        rest = list(idx[nb:])
        i = rest.pop(0) if a.ndim > 1 else None
        j = rest.pop(0) if b.ndim > 1 else None
        a_idx = (*broadcast_index(bidx, a_batch), i, k) if a.ndim > 1 else (k,)
        b_idx = (*broadcast_index(bidx, b_batch), k, j) if b.ndim > 1 else (k,)
        return te.sum(cast(a(*a_idx), dtype) * cast(b(*b_idx), dtype), axis=k)

    return te.compute(tuple(out_shape), f, name="T_matmul")
