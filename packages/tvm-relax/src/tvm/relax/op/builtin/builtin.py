"""``relax.builtin.alloc_tensor``: allocate a tensor for a destination-passing call."""

from __future__ import annotations

from typing import Any, Sequence, Union

from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._utils import as_dtype, as_prim, as_shape, as_string, infer_alloc_tensor
from ..base import make_call, register_op

__all__ = ["alloc_tensor"]


@register_op("relax.builtin.alloc_tensor", inputs=("shape", "dtype", "runtime_device_index",
                                                   "storage_scope"))
def alloc_tensor(
    shape: Union[Expr, Sequence[Any]],
    dtype: Union[str, Expr],
    runtime_device_index: Union[int, Expr] = 0,
    storage_scope: Union[str, Expr] = "global",
) -> Call:
    """A fresh tensor of ``shape`` and ``dtype`` on the given device."""
    return make_call(
        "relax.builtin.alloc_tensor",
        [as_shape(shape), as_dtype(dtype), as_prim(runtime_device_index), as_string(storage_scope)],
    )


@alloc_tensor.infer
def _infer_alloc_tensor(call: Call, ctx: Any) -> StructInfo:
    return infer_alloc_tensor(call, 0, 1)
