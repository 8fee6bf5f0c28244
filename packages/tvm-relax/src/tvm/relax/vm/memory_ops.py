"""Explicit memory operators produced by the VM lowering passes.

* ``relax.memory.alloc_storage(size, virtual_device_index, storage_scope, dtype)``: an untyped
  buffer of ``size`` (a 1-d shape holding the byte count) on a device;
* ``relax.memory.alloc_tensor(storage, offset, shape, dtype)``: a tensor over part of it;
* ``relax.memory.kill_storage(storage)`` / ``relax.memory.kill_tensor(tensor)``: end of use.

StaticPlanBlockMemory emits them for intermediates sharing storage; VMBuiltinLower turns each
remaining ``relax.builtin.alloc_tensor`` into a pair of them.  The VM code generator maps them
to its ``alloc_storage`` and ``alloc_tensor`` instructions.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

from ..expr import Call, DataTypeImm, Expr
from ..op._utils import as_dtype, as_prim, as_shape, as_string, infer_alloc_tensor
from ..op.base import arg_sinfo, make_call, op_error, register_op
from ..struct_info import ObjectStructInfo, ShapeStructInfo, StructInfo

__all__ = ["alloc_storage", "alloc_tensor", "kill_storage", "kill_tensor"]


@register_op(
    "relax.memory.alloc_storage",
    inputs=("size", "virtual_device_index", "storage_scope", "dtype"),
    op_pattern="opaque",
)
def alloc_storage(
    size: Union[Expr, Sequence[Any]],
    virtual_device_index: Union[int, Expr] = 0,
    storage_scope: Union[str, Expr] = "global",
    dtype: Union[str, Expr] = "uint8",
) -> Call:
    """An untyped storage of ``size`` bytes (``size`` is a 1-d shape, e.g. ``[4096]``)."""
    return make_call("relax.memory.alloc_storage", [
        as_shape(size), as_prim(virtual_device_index), as_string(storage_scope), as_dtype(dtype),
    ])


@alloc_storage.infer
def _infer_alloc_storage(call: Call, ctx: Any) -> StructInfo:
    size = arg_sinfo(call, 0)
    if not isinstance(size, ShapeStructInfo) or size.ndim not in (1, -1):
        raise op_error(call, "argument 'size' must be a 1-d shape holding the byte count")
    if not isinstance(call.args[3], DataTypeImm):
        raise op_error(call, "argument 'dtype' must be a DataTypeImm")
    return ObjectStructInfo()


@register_op(
    "relax.memory.alloc_tensor", inputs=("storage", "offset", "shape", "dtype"),
    op_pattern="opaque",
)
def alloc_tensor(
    storage: Expr,
    offset: Union[int, Expr],
    shape: Union[Expr, Sequence[Any]],
    dtype: Union[str, Expr],
) -> Call:
    """A tensor of ``shape``/``dtype`` at byte ``offset`` in ``storage``."""
    return make_call("relax.memory.alloc_tensor",
                     [storage, as_prim(offset), as_shape(shape), as_dtype(dtype)])


@alloc_tensor.infer
def _infer_alloc_tensor(call: Call, ctx: Any) -> StructInfo:
    return infer_alloc_tensor(call, 2, 3)


@register_op("relax.memory.kill_storage", inputs=("storage",), purity=False,
             op_pattern="opaque")
def kill_storage(storage: Expr) -> Call:
    """Mark the end of ``storage``'s use."""
    return make_call("relax.memory.kill_storage", [storage])


@register_op("relax.memory.kill_tensor", inputs=("tensor",), purity=False, op_pattern="opaque")
def kill_tensor(tensor: Expr) -> Call:
    """Mark the end of ``tensor``'s use."""
    return make_call("relax.memory.kill_tensor", [tensor])


@kill_storage.infer
def _infer_kill(call: Call, ctx: Any) -> StructInfo:
    return ObjectStructInfo()


kill_tensor.infer(_infer_kill)
