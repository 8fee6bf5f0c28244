"""``relax.builtin.alloc_tensor``: allocate a tensor for a destination-passing call."""

from __future__ import annotations

from typing import Any, Sequence, Union

from ...expr import Call, DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm
from ...struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from ..base import arg_sinfo, make_call, op_error, register_op

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
    if isinstance(shape, (list, tuple)):
        shape = ShapeExpr(shape)
    if isinstance(dtype, str):
        dtype = DataTypeImm(dtype)
    if isinstance(runtime_device_index, int):
        runtime_device_index = PrimValue(runtime_device_index)
    if isinstance(storage_scope, str):
        storage_scope = StringImm(storage_scope)
    return make_call(
        "relax.builtin.alloc_tensor", [shape, dtype, runtime_device_index, storage_scope]
    )


@alloc_tensor.infer
def _infer_alloc_tensor(call: Call, ctx: Any) -> StructInfo:
    shape = arg_sinfo(call, 0)
    if not isinstance(shape, ShapeStructInfo):
        raise op_error(call, "argument 'shape' must be a shape")
    dtype = call.args[1]
    if not isinstance(dtype, DataTypeImm):
        raise op_error(call, "argument 'dtype' must be a DataTypeImm")
    if shape.values is not None:
        return TensorStructInfo(ShapeExpr(shape.values), dtype.value)
    return TensorStructInfo(None, dtype.value, shape.ndim)
