"""VM builtins for operators whose output shapes depend on the data.

Compiled Relax code calls them with ``call_pure_packed`` and then binds the result's shape
to fresh symbolic variables with ``match_cast`` (``relax.op.nonzero``, ``relax.op.unique``,
``relax.op.dynamic_strided_slice``):

* ``vm.builtin.tensor_to_shape(t)``: a 1-d integer tensor as a shape value;
* ``relax.run.nonzero(x)``: the int64 (ndim, count) coordinates of the non-zero elements;
* ``relax.run.unique(x, sorted, has_axis, axis)``: (values, first indices, inverse indices,
  counts), ONNX Unique semantics.

They run on the host (device tensors are copied) with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, tensor
from .builtins import ShapeTuple, register_builtin

__all__: list[str] = []


def _host(value: Any, who: str) -> np.ndarray:
    if not isinstance(value, Tensor):
        raise TypeError(f"{who}: expected a tensor, got {type(value).__name__}")
    return value.numpy()


@register_builtin("vm.builtin.tensor_to_shape")
def _tensor_to_shape(value: Any) -> ShapeTuple:
    """A 1-d integer tensor as a shape value (e.g. a computed output shape)."""
    array = _host(value, "vm.builtin.tensor_to_shape")
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"vm.builtin.tensor_to_shape: expected a 1-d integer tensor, got shape "
                         f"{array.shape} of dtype {array.dtype}")
    if (array < 0).any():
        raise ValueError(f"vm.builtin.tensor_to_shape: negative dimension in {array.tolist()}")
    return ShapeTuple(int(v) for v in array)


@register_builtin("relax.run.nonzero")
def _nonzero(value: Any) -> Tensor:
    """ONNX NonZero: int64 (ndim, count) coordinates in row-major order."""
    array = _host(value, "relax.run.nonzero")
    coords = np.array(np.nonzero(array), dtype=np.int64).reshape(array.ndim, -1)
    return tensor(coords, device=value.device)


@register_builtin("relax.run.unique")
def _unique(value: Any, sort: int, has_axis: int, axis: int) -> tuple:
    """ONNX Unique of ``value`` (flattened unless ``has_axis``): the unique values (slices
    along ``axis``), the first index of each, the inverse indices and the counts, all int64
    but the values; ``sort`` 0 keeps the order of first occurrence."""
    array = _host(value, "relax.run.unique")
    if has_axis:
        if not -array.ndim <= axis < array.ndim:
            raise ValueError(f"relax.run.unique: axis {axis} is out of range for a tensor of "
                             f"{array.ndim} dimension(s)")
        axis = axis % array.ndim
        values, first, inverse, counts = np.unique(
            array, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    else:
        axis = 0
        values, first, inverse, counts = np.unique(
            array.reshape(-1), return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if not sort:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values, first, counts, inverse = (
            np.take(values, order, axis=axis), first[order], counts[order], rank[inverse])
    device = value.device
    return tuple(tensor(np.ascontiguousarray(a), device=device) for a in (
        values.astype(array.dtype, copy=False), first.astype(np.int64),
        inverse.astype(np.int64), counts.astype(np.int64)))
