"""Patterns, check and composite reader for convolution backends (DNN libraries).

:func:`conv2d_patterns` gives, most specific first, ``<backend>.conv2d_bias_relu``
(``relu(add(conv2d(x, w), b))``), ``<backend>.conv2d_bias``, ``<backend>.conv2d_relu`` and
``<backend>.conv2d``.  Their check (:func:`check_float32_conv2d`) takes float32 tensors of
static shape with data and output in ``NCHW`` and the kernel ``OIHW``, or data and output in
``NHWC`` and the kernel ``OHWI`` or ``HWIO`` (grouped and depthwise included, any strides,
padding and dilation), and a bias broadcast along the channel axis only (``(1, C, 1, 1)`` or
``(C, 1, 1)`` for NCHW, ``(1, 1, 1, C)`` or ``(C,)`` for NHWC).
:func:`read_conv2d_composite` reads a matched composite function back for code generation.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from ..dpl import is_op, wildcard
from ..expr import Function
from .matmul import composite_values, float32_static_problem, static_shape
from .registry import FusionPattern, PatternCheckContext

__all__ = ["conv2d_patterns", "check_float32_conv2d", "Conv2DSpec", "read_conv2d_composite",
           "LAYOUTS"]

#: (data, kernel, output) layouts the check accepts
LAYOUTS = (("NCHW", "OIHW", "NCHW"), ("NHWC", "OHWI", "NHWC"), ("NHWC", "HWIO", "NHWC"))


def conv2d_patterns(backend: str) -> list[FusionPattern]:
    """The four conv2d patterns of ``backend`` (see the module docstring)."""
    out = []
    for bias in (True, False):
        for relu in (True, False):
            conv = is_op("relax.nn.conv2d")(wildcard(), wildcard())
            pat = is_op("relax.add")(conv, wildcard()) if bias else conv
            pat = is_op("relax.nn.relu")(pat) if relu else pat
            name = "conv2d" + ("_bias" if bias else "") + ("_relu" if relu else "")
            out.append(FusionPattern(f"{backend}.{name}", pat, {"conv": conv},
                                     check_float32_conv2d))
    return out


def _ints(values: Any) -> list[int]:
    return [int(getattr(v, "value", v)) for v in values]


def check_float32_conv2d(ctx: PatternCheckContext) -> Optional[str]:
    """None if a float32 library convolution can compute the match, else why not."""
    backend = ctx.backend or "the library"
    conv = ctx.annotated["conv"]
    data, weight = conv.args
    attrs = conv.attrs
    problem = float32_static_problem(
        backend, (("output", ctx.root), ("data", data), ("weight", weight)))
    if problem:
        return problem
    layouts = (attrs.data_layout, attrs.kernel_layout, attrs.out_layout or attrs.data_layout)
    if layouts not in LAYOUTS:
        return (f"layouts {layouts}: {backend} takes data and output NCHW with kernel OIHW, or "
                "NHWC with OHWI or HWIO")
    if str(attrs.out_dtype) not in ("void", "", "None", "float32"):
        return f"out_dtype {attrs.out_dtype} is not float32"
    node = ctx.root
    if getattr(node.op, "name", "") == "relax.nn.relu":
        node = ctx.bindings.get(node.args[0], node.args[0])
    if node is conv:
        return None
    bias = node.args[1]
    channels = static_shape(conv)[layouts[0].index("C")]
    sbias = static_shape(bias)
    if sbias is None or getattr(getattr(bias, "struct_info_", None), "dtype", None) != "float32":
        return "bias is not a float32 tensor of static shape"
    along = ((1, channels, 1, 1), (channels, 1, 1)) if layouts[0] == "NCHW" else (
        (1, 1, 1, channels), (channels,))
    if tuple(sbias) not in along:
        return f"bias of shape {sbias} is not broadcast along the channel axis only"
    return None


@dataclasses.dataclass(frozen=True)
class Conv2DSpec:
    """A conv2d composite: parameter indices of data, weight and the optional bias, the
    convolution's geometry and whether a relu follows."""

    data: int
    weight: int
    bias: Optional[int]
    relu: bool
    strides: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    dilation: tuple[int, int]
    groups: int
    data_layout: str = "NCHW"  # also the output's
    kernel_layout: str = "OIHW"


def read_conv2d_composite(func: Function) -> Conv2DSpec:
    """The :class:`Conv2DSpec` of a composite function made from :func:`conv2d_patterns`."""
    index, values, node = composite_values(func)
    relu = getattr(getattr(node, "op", None), "name", "") == "relax.nn.relu"
    if relu:
        node = values[id(node.args[0])]
    bias = None
    if getattr(getattr(node, "op", None), "name", "") == "relax.add":
        conv_var, bias_arg = node.args
        bias = index[id(bias_arg)]
        node = values[id(conv_var)]
    if getattr(getattr(node, "op", None), "name", "") != "relax.nn.conv2d":
        raise ValueError(f"{func.attrs.get('Composite')}: not a conv2d composite function")
    a = node.attrs
    return Conv2DSpec(index[id(node.args[0])], index[id(node.args[1])], bias, relu,
                      tuple(_ints(a.strides)), tuple(_ints(a.padding)),
                      tuple(_ints(a.dilation)), int(a.groups), str(a.data_layout),
                      str(a.kernel_layout))
