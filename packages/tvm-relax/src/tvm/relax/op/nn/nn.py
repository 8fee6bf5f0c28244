"""``relax.nn`` activations and softmax."""

from __future__ import annotations

from typing import Any

from tvm.ffi import register_object

from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._elementwise import infer_unary
from ..base import Attrs, arg_tensor, make_call, normalize_axis, register_op

__all__ = ["softmax", "log_softmax", "relu", "silu", "gelu", "gelu_tanh", "SoftmaxAttrs"]


@register_object("relax.attrs.SoftmaxAttrs")
class SoftmaxAttrs(Attrs):
    """``axis``: the axis normalised over."""

    axis: int = -1


def _infer_softmax(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    if x.ndim == 0:
        from ..base import op_error

        raise op_error(call, "needs a tensor with at least one dimension, got a scalar")
    if x.ndim != -1:
        normalize_axis(call, call.attrs.axis, x.ndim)
    return infer_unary(call, ctx, "float")


@register_op("relax.nn.softmax", inputs=("data",), attrs=SoftmaxAttrs, infer=_infer_softmax,
             op_pattern="out_elemwise_fusable")
def softmax(data: Expr, axis: int = -1) -> Call:
    """``exp(x) / sum(exp(x), axis)``."""
    return make_call("relax.nn.softmax", [data], SoftmaxAttrs(axis=int(axis)))


@register_op("relax.nn.log_softmax", inputs=("data",), attrs=SoftmaxAttrs, infer=_infer_softmax,
             op_pattern="out_elemwise_fusable")
def log_softmax(data: Expr, axis: int = -1) -> Call:
    """``x - log(sum(exp(x), axis))``."""
    return make_call("relax.nn.log_softmax", [data], SoftmaxAttrs(axis=int(axis)))


def _infer_activation(call: Call, ctx: Any) -> StructInfo:
    return infer_unary(call, ctx)


def _infer_float_activation(call: Call, ctx: Any) -> StructInfo:
    return infer_unary(call, ctx, "float")


@register_op("relax.nn.relu", inputs=("data",), infer=_infer_activation, op_pattern="elemwise")
def relu(data: Expr) -> Call:
    """``max(x, 0)``."""
    return make_call("relax.nn.relu", [data])


@register_op("relax.nn.silu", inputs=("data",), infer=_infer_float_activation,
             op_pattern="elemwise")
def silu(data: Expr) -> Call:
    """``x * sigmoid(x)``."""
    return make_call("relax.nn.silu", [data])


@register_op("relax.nn.gelu", inputs=("data",), infer=_infer_float_activation,
             op_pattern="elemwise")
def gelu(data: Expr) -> Call:
    """``0.5 * x * (1 + erf(x / sqrt(2)))``."""
    return make_call("relax.nn.gelu", [data])


@register_op("relax.nn.gelu_tanh", inputs=("data",), infer=_infer_float_activation,
             op_pattern="elemwise")
def gelu_tanh(data: Expr) -> Call:
    """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))``."""
    return make_call("relax.nn.gelu_tanh", [data])


# -- legalization to TIR (te computes of tvm.relax.topi) --------------------------------------
from .._lower import te_call as _te_call, unary_legalizer as _unary_legalizer  # noqa: E402

for _spec, _fn in ((relu, "relu"), (silu, "silu"), (gelu, "gelu"), (gelu_tanh, "gelu_tanh")):
    _spec.legalize(_unary_legalizer(_fn))


@softmax.legalize
def _legalize_softmax(bb: Any, call: Call) -> Any:
    from ...topi import norm

    return _te_call(bb, call, norm.softmax, call.args[0], call.attrs.axis)


@log_softmax.legalize
def _legalize_log_softmax(bb: Any, call: Call) -> Any:
    from ...topi import norm

    return _te_call(bb, call, norm.log_softmax, call.args[0], call.attrs.axis)


# -- numpy semantics --------------------------------------------------------------------------
import math as _math  # noqa: E402

import numpy as _np  # noqa: E402

from .._numpy import erf as _erf  # noqa: E402


@relu.evaluate
def _eval_relu(call: Call, x: Any) -> Any:
    return _np.maximum(x, _np.zeros((), x.dtype))


@silu.evaluate
def _eval_silu(call: Call, x: Any) -> Any:
    return x / (1 + _np.exp(-x))


@gelu.evaluate
def _eval_gelu(call: Call, x: Any) -> Any:
    return 0.5 * x * (1 + _erf(x / _math.sqrt(2)))


@gelu_tanh.evaluate
def _eval_gelu_tanh(call: Call, x: Any) -> Any:
    return 0.5 * x * (1 + _np.tanh(_math.sqrt(2 / _math.pi) * (x + 0.044715 * x ** 3)))


@softmax.evaluate
def _eval_softmax(call: Call, x: Any) -> Any:
    e = _np.exp(x - _np.max(x, axis=call.attrs.axis, keepdims=True))
    return e / _np.sum(e, axis=call.attrs.axis, keepdims=True)


@log_softmax.evaluate
def _eval_log_softmax(call: Call, x: Any) -> Any:
    shifted = x - _np.max(x, axis=call.attrs.axis, keepdims=True)
    return shifted - _np.log(_np.sum(_np.exp(shifted), axis=call.attrs.axis, keepdims=True))
