"""Complex tensors as pairs of reals: ``relax.view_as_real`` and ``relax.view_as_complex``.

Relax and TIR compute on real dtypes only; a complex tensor of shape ``S`` is computed on as a
real tensor of shape ``S + (2,)`` (real part, imaginary part), the layout complex numbers have
in memory.  These two operators convert between the forms without copying: they legalize to
the VM builtins ``vm.builtin.view_as_real`` / ``vm.builtin.view_as_complex``, which return a
view of the same storage with the other dtype and shape.  ``complex64`` pairs with
``float32`` and ``complex128`` with ``float64``.
"""

from __future__ import annotations

from typing import Any

import numpy as _np
from tvm.tir.expr import IntImm

from ..expr import Call, Expr, ShapeExpr
from ..struct_info import StructInfo, TensorStructInfo
from .base import arg_tensor, make_call, op_error, register_op

__all__ = ["view_as_real", "view_as_complex", "COMPLEX_PARTS"]

#: complex dtype -> the real dtype of its parts
COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}
_COMPLEX_OF = {v: k for k, v in COMPLEX_PARTS.items()}


@register_op("relax.view_as_real", inputs=("x",))
def view_as_real(x: Expr) -> Call:
    """A complex tensor of shape ``S`` as its real dtype with shape ``S + (2,)`` (no copy)."""
    return make_call("relax.view_as_real", [x])


@view_as_real.infer
def _infer_view_as_real(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    part = COMPLEX_PARTS.get(x.dtype)
    if part is None:
        raise op_error(call, f"needs a complex64/complex128 tensor, got dtype {x.dtype}")
    values = x.shape_values
    if values is None:
        return TensorStructInfo(None, part, x.ndim + 1 if x.ndim >= 0 else -1, x.vdevice)
    return TensorStructInfo(ShapeExpr([*values, 2]), part, x.ndim + 1, x.vdevice)


@view_as_real.legalize
def _legalize_view_as_real(bb: Any, call: Call) -> Expr:
    from .call import call_pure_packed

    return call_pure_packed("vm.builtin.view_as_real", call.args[0],
                            sinfo_args=[call.struct_info])


@view_as_real.evaluate
def _eval_view_as_real(call: Call, x: Any) -> Any:
    x = _np.ascontiguousarray(x)
    return x.view(COMPLEX_PARTS[str(x.dtype)]).reshape((*x.shape, 2))


@register_op("relax.view_as_complex", inputs=("x",))
def view_as_complex(x: Expr) -> Call:
    """A float32/float64 tensor of shape ``S + (2,)`` as complex64/complex128 of shape ``S``
    (no copy; the last dimension holds the real and imaginary parts)."""
    return make_call("relax.view_as_complex", [x])


@view_as_complex.infer
def _infer_view_as_complex(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    dtype = _COMPLEX_OF.get(x.dtype)
    if dtype is None:
        raise op_error(call, f"needs a float32/float64 tensor, got dtype {x.dtype}")
    if x.ndim == 0:
        raise op_error(call, "needs a tensor whose last dimension is 2, got a 0-d tensor")
    values = x.shape_values
    if values is None:
        return TensorStructInfo(None, dtype, x.ndim - 1 if x.ndim > 0 else -1, x.vdevice)
    last = values[-1]
    if not (isinstance(last, IntImm) and int(last.value) == 2):
        raise op_error(call, f"needs a last dimension of 2, got {last}")
    return TensorStructInfo(ShapeExpr(list(values[:-1])), dtype, x.ndim - 1, x.vdevice)


@view_as_complex.legalize
def _legalize_view_as_complex(bb: Any, call: Call) -> Expr:
    from .call import call_pure_packed

    return call_pure_packed("vm.builtin.view_as_complex", call.args[0],
                            sinfo_args=[call.struct_info])


@view_as_complex.evaluate
def _eval_view_as_complex(call: Call, x: Any) -> Any:
    x = _np.ascontiguousarray(x)
    return x.view(_COMPLEX_OF[str(x.dtype)]).reshape(x.shape[:-1])
