"""``relax.qnn.conv2d`` and ``relax.qnn.matmul`` (with the ``dense`` and ``batch_matmul``
builders): int8/uint8 data and weights with zero points, results accumulated in int32.

The result is ``sum((x - input_zero_point) * (w - kernel_zero_point[o]))``, the int32
accumulator of the real product divided by ``input_scale * weight_scale``; a following
``relax.qnn.requantize`` (with ``input_scale = x_scale * w_scale[o]``) brings it to an 8-bit
output.  The kernel zero point is per tensor or per output channel.  The legalization
computes the plain integer dot product and subtracts the zero-point correction terms
(``tvm.relax.topi.qnn.conv2d``), dropping those whose zero point is 0.

Under a target whose integer dot product wants the other signedness of activation than the
data has (the CPU description's ``int8_activation``, hook ``tvm_tir_cpu_info``: ``"uint8"``
for x86 VNNI's ``vpdpbusd``, ``"int8"`` for AArch64 ``sdot``), int8 weights meet shifted
activations: ``x + 128`` as uint8 with zero point ``zx + 128`` (or ``x - 128`` as int8 with
``zx - 128``), the same real values, so the result is unchanged; the extra correction
``(zx + 128) * sum(w)`` of a constant weight is computed at compile time.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from tvm.ffi import register_object

from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._lower import te_call
from ..base import Attrs, arg_tensor, make_call, op_error, register_op
from ..nn._layout import check_layout, padding_tuple, window_tuple
from ._common import int_params, param_args

__all__ = ["conv2d", "matmul", "dense", "batch_matmul", "QConv2DAttrs", "QMatmulAttrs",
           "activation_shift"]

IntOrSeq = Union[int, Sequence[int]]
_INT8 = ("int8", "uint8")


@register_object("relax.attrs.QConv2DAttrs")
class QConv2DAttrs(Attrs):
    """The attributes of ``relax.nn.conv2d`` (result always int32) plus the input zero point
    and the kernel zero point (one value or one per output channel)."""

    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = "NCHW"
    input_zero_point: int = 0
    kernel_zero_point: tuple = (0,)


def _check_int8(call: Call, index: int, name: str) -> Any:
    t = arg_tensor(call, index)
    if not t.is_unknown_dtype and t.dtype not in _INT8:
        raise op_error(call, f"argument {name!r} must be int8 or uint8, got {t.dtype}")
    return t


def _check_zero_point(call: Call, what: str, values: tuple, dtype: str) -> None:
    from ...topi.qnn import INT_RANGES

    if dtype == "void":
        return
    lo, hi = INT_RANGES[dtype]
    for v in values:
        if not lo <= v <= hi:
            raise op_error(call, f"{what} {v} is outside the range [{lo}, {hi}] of {dtype}")


@register_op("relax.qnn.conv2d", inputs=("data", "weight"), attrs=QConv2DAttrs,
             op_pattern="out_elemwise_fusable")
def conv2d(data: Expr, weight: Expr, input_zero_point: int = 0,
           kernel_zero_point: IntOrSeq = 0, strides: IntOrSeq = 1, padding: IntOrSeq = 0,
           dilation: IntOrSeq = 1, groups: int = 1, data_layout: str = "NCHW",
           kernel_layout: str = "OIHW", out_layout: Optional[str] = None) -> Call:
    """Quantized 2-d convolution to an int32 accumulator (module docstring)."""
    name = "relax.qnn.conv2d"
    if groups < 1:
        raise ValueError(f"{name}: groups must be positive, got {groups}")
    zx = int_params(name, "input_zero_point", input_zero_point)
    if len(zx) != 1:
        raise ValueError(f"{name}: input_zero_point must be one value (per tensor), got {zx}")
    return make_call(name, [data, weight], QConv2DAttrs(
        strides=window_tuple(strides, 2, f"{name}: strides"),
        padding=padding_tuple(padding, 2, f"{name}: padding"),
        dilation=window_tuple(dilation, 2, f"{name}: dilation"),
        groups=int(groups),
        data_layout=check_layout(data_layout, "NC", 2, f"{name}: data_layout"),
        kernel_layout=check_layout(kernel_layout, "OI", 2, f"{name}: kernel_layout"),
        out_layout=check_layout(out_layout or data_layout, "NC", 2, f"{name}: out_layout"),
        input_zero_point=zx[0],
        kernel_zero_point=int_params(name, "kernel_zero_point", kernel_zero_point)))


@conv2d.infer
def _infer_qconv2d(call: Call, ctx: Any) -> StructInfo:
    from .._utils import const_dim
    from ..nn._layout import dims_of
    from ..nn.conv import Conv2DAttrs, _infer_conv

    data, weight = _check_int8(call, 0, "data"), _check_int8(call, 1, "weight")
    a = call.attrs
    _check_zero_point(call, "input_zero_point", (a.input_zero_point,), data.dtype)
    _check_zero_point(call, "kernel_zero_point", a.kernel_zero_point, weight.dtype)
    kd = dims_of(a.kernel_layout, weight.shape_values)
    n_out = const_dim(kd["O"]) if kd is not None else None
    if len(a.kernel_zero_point) > 1 and n_out is not None and len(a.kernel_zero_point) != n_out:
        raise op_error(call, f"kernel_zero_point has {len(a.kernel_zero_point)} values but the "
                             f"kernel has {n_out} output channels")
    # the shape rules are those of relax.nn.conv2d
    float_call = Call(call.op, call.args, Conv2DAttrs(
        strides=a.strides, padding=a.padding, dilation=a.dilation, groups=a.groups,
        data_layout=a.data_layout, kernel_layout=a.kernel_layout, out_layout=a.out_layout,
        out_dtype="int32"), span=call.span)
    return _infer_conv(float_call, ctx, 2, False)


def activation_shift(data_dtype: str, weight_dtype: str) -> int:
    """``+128`` (int8 activations to uint8), ``-128`` (uint8 to int8) or 0: what the
    current target's integer dot product prefers (see the module docstring).  Asks the
    target's plugin for its CPU description; no target, no answer or int8 x uint8 data it
    has no preference for: 0."""
    from tvm.ir.target import Target

    if weight_dtype != "int8" or data_dtype not in _INT8:
        return 0
    try:
        target = Target.current()
    except Exception:  # noqa: BLE001 - no current target: no preference
        return 0
    if target is None:
        return 0
    from tvm.ffi.plugin import call_hook
    from tvm.tir import hooks  # noqa: F401 - declares tvm_tir_cpu_info

    try:
        cpu = call_hook("tvm_tir_cpu_info", target=target)
    except Exception:  # noqa: BLE001 - a failing plugin is reported by call_hook
        return 0
    want = getattr(cpu, "int8_activation", None)
    if want is None or want == data_dtype:
        return 0
    return 128 if want == "uint8" else -128


def _shifted(x: Any, shift: int) -> Any:
    from ...topi import qnn

    return qnn.shift_8bit(x, shift) if shift else x


@conv2d.legalize
def _legalize_qconv2d(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    a = call.attrs
    zw, zw_t = param_args(a.kernel_zero_point, "int32")
    extra = [zw_t] if zw_t is not None else []
    shift = activation_shift(call.args[0].struct_info.dtype, call.args[1].struct_info.dtype)

    def f(x: Any, w: Any, *ts: Any) -> Any:
        return qnn.conv2d(_shifted(x, shift), w, a.input_zero_point + shift,
                          ts[0] if ts else zw, a.strides, a.padding, a.dilation, a.groups,
                          a.data_layout, a.kernel_layout, a.out_layout)

    return te_call(bb, call, f, call.args[0], call.args[1], *extra)


@conv2d.evaluate
def _eval_qconv2d(call: Call, x: Any, w: Any) -> Any:
    from .._numpy import to_layout
    from ..nn.conv import conv2d_nchw

    a = call.attrs
    x = to_layout(np.asarray(x), a.data_layout, "NCHW").astype(np.int64) - a.input_zero_point
    w = to_layout(np.asarray(w), a.kernel_layout, "OIHW").astype(np.int64)
    w = w - np.asarray(a.kernel_zero_point, np.int64).reshape(-1, 1, 1, 1)
    # zero padding of x - zx is padding x with its zero point
    out = conv2d_nchw(x, w, a.strides, a.padding, a.dilation, a.groups, np.int64)
    return to_layout(out.astype(np.int32), "NCHW", a.out_layout)


# -- matmul -----------------------------------------------------------------------------------
@register_object("relax.attrs.QMatmulAttrs")
class QMatmulAttrs(Attrs):
    """``a_zero_point`` (per tensor), ``b_zero_point`` (one value or one per column of the
    result), ``transpose_b``: ``b`` is ``[.., N, K]`` (a dense layer's weight)."""

    a_zero_point: int = 0
    b_zero_point: tuple = (0,)
    transpose_b: bool = False


@register_op("relax.qnn.matmul", inputs=("a", "b"), attrs=QMatmulAttrs,
             op_pattern="out_elemwise_fusable")
def matmul(a: Expr, b: Expr, a_zero_point: int = 0, b_zero_point: IntOrSeq = 0,
           transpose_b: bool = False) -> Call:
    """Quantized (batched) matmul of int8/uint8 tensors of at least 2 dimensions to int32:
    ``sum_k (a[.., i, k] - za) * (b[.., k, j] - zb[j])``; batch dimensions broadcast."""
    name = "relax.qnn.matmul"
    za = int_params(name, "a_zero_point", a_zero_point)
    if len(za) != 1:
        raise ValueError(f"{name}: a_zero_point must be one value (per tensor), got {za}")
    return make_call(name, [a, b], QMatmulAttrs(
        a_zero_point=za[0], b_zero_point=int_params(name, "b_zero_point", b_zero_point),
        transpose_b=bool(transpose_b)))


def dense(data: Expr, weight: Expr, input_zero_point: int = 0,
          kernel_zero_point: IntOrSeq = 0) -> Call:
    """Quantized dense layer: ``data [.., K]`` times ``weight [N, K]`` transposed (a
    ``relax.qnn.matmul`` with ``transpose_b``); ``kernel_zero_point`` per tensor or per N."""
    return matmul(data, weight, input_zero_point, kernel_zero_point, transpose_b=True)


def batch_matmul(a: Expr, b: Expr, a_zero_point: int = 0, b_zero_point: IntOrSeq = 0,
                 transpose_b: bool = False) -> Call:
    """Quantized batch matmul ``[B, M, K] x [B, K, N]`` (``relax.qnn.matmul`` on 3-d
    operands; batch dimensions broadcast)."""
    return matmul(a, b, a_zero_point, b_zero_point, transpose_b)


@matmul.infer
def _infer_qmatmul(call: Call, ctx: Any) -> StructInfo:
    from .._utils import const_dim
    from ..linear_algebra import MatmulAttrs, _infer_matmul

    a_t, b_t = _check_int8(call, 0, "a"), _check_int8(call, 1, "b")
    at = call.attrs
    _check_zero_point(call, "a_zero_point", (at.a_zero_point,), a_t.dtype)
    _check_zero_point(call, "b_zero_point", at.b_zero_point, b_t.dtype)
    for name, t in (("a", a_t), ("b", b_t)):
        if t.ndim != -1 and t.ndim < 2:
            raise op_error(call, f"argument {name!r} must have at least 2 dimensions, got {t.ndim}")
    b_like = b_t
    if at.transpose_b and b_t.shape_values is not None:
        from ...struct_info import TensorStructInfo

        sv = list(b_t.shape_values)
        sv[-1], sv[-2] = sv[-2], sv[-1]
        b_like = TensorStructInfo(sv, b_t.dtype, b_t.ndim, b_t.vdevice)
    if len(at.b_zero_point) > 1 and b_like.shape_values is not None:
        n = const_dim(b_like.shape_values[-1])
        if n is not None and n != len(at.b_zero_point):
            raise op_error(call, f"b_zero_point has {len(at.b_zero_point)} values but the "
                                 f"result has {n} columns")
    from ...expr import Var

    args = [Var("a", a_t), Var("b", b_like)]
    return _infer_matmul(Call(call.op, args, MatmulAttrs(out_dtype="int32"), span=call.span),
                         ctx)


@matmul.legalize
def _legalize_qmatmul(bb: Any, call: Call) -> Expr:
    from ...topi import qnn

    at = call.attrs
    zb, zb_t = param_args(at.b_zero_point, "int32")
    extra = [zb_t] if zb_t is not None else []
    shift = activation_shift(call.args[0].struct_info.dtype, call.args[1].struct_info.dtype)

    def f(a: Any, b: Any, *ts: Any) -> Any:
        return qnn.matmul(_shifted(a, shift), b, at.a_zero_point + shift, ts[0] if ts else zb,
                          at.transpose_b)

    return te_call(bb, call, f, call.args[0], call.args[1], *extra)


@matmul.evaluate
def _eval_qmatmul(call: Call, a: Any, b: Any) -> Any:
    at = call.attrs
    a = np.asarray(a).astype(np.int64) - at.a_zero_point
    b = np.asarray(b).astype(np.int64)
    if at.transpose_b:
        b = np.swapaxes(b, -1, -2)
    b = b - np.asarray(at.b_zero_point, np.int64)
    return np.matmul(a, b).astype(np.int32)
