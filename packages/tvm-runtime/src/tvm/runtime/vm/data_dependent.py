"""VM builtins for operators whose output shapes depend on the data.

Compiled Relax code calls them with ``call_pure_packed`` and then binds the result's shape
to fresh symbolic variables with ``match_cast`` (``relax.op.nonzero``, ``relax.op.unique``,
``relax.op.dynamic_strided_slice``, ``relax.op.vision.non_max_suppression``; TIR kernels
compute the sizes and the results):

* ``vm.builtin.tensor_to_shape(t[, what])``: a 1-d integer tensor as a shape value;
  ``what`` (a string) names the value in the error a negative entry raises (compiled
  code marks an invalid run-time shape input that way, e.g. an ONNX Reshape target
  whose element count differs from the input's).

They run on the host (device tensors are copied).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from .builtins import ShapeTuple, register_builtin

__all__: list[str] = []


def _host(value: Any, who: str) -> np.ndarray:
    if not isinstance(value, Tensor):
        raise TypeError(f"{who}: expected a tensor, got {type(value).__name__}")
    return value.numpy()


@register_builtin("vm.builtin.tensor_to_shape")
def _tensor_to_shape(value: Any, what: str = "") -> ShapeTuple:
    """A 1-d integer tensor as a shape value (e.g. a computed output shape); ``what`` says
    in the error which value a negative entry came from."""
    array = _host(value, "vm.builtin.tensor_to_shape")
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"vm.builtin.tensor_to_shape: expected a 1-d integer tensor, got shape "
                         f"{array.shape} of dtype {array.dtype}")
    if (array < 0).any():
        if what:
            raise ValueError(f"{what} (run-time shape {array.tolist()})")
        raise ValueError(f"vm.builtin.tensor_to_shape: negative dimension in {array.tolist()}")
    return ShapeTuple(int(v) for v in array)
