"""ONNX neural-network operators: Conv, ConvTranspose, pooling, normalisations, Softmax
family, LRN, Resize/Upsample.

1-d convolutions and pools run as 2-d ones over an inserted unit axis.  Normalisations with
constant parameters precompute their per-channel scale and shift at import time.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ...expr import TupleGetItem as relax_tuple_item
from . import ops_runtime
from .common import R, converter
from .ops_math import scalar


# -- padding helpers -------------------------------------------------------------------------
def _auto_pads(ctx: Any, in_sizes: list[Any], kernel: list[int], strides: list[int],
               dilations: list[int]) -> list[int]:
    """ONNX pads ([b_1, ..., b_n, e_1, ..., e_n]) from auto_pad and pads."""
    n = len(kernel)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = ctx.attr("pads", [0] * (2 * n))
        return [int(p) for p in pads]
    if auto == "VALID":
        return [0] * (2 * n)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.unsupported(f"auto_pad={auto!r}")
    begin, end = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        if not isinstance(size, int):
            raise ctx.unsupported(f"auto_pad={auto} needs static spatial dimensions")
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if auto == "SAME_UPPER" else big)
        end.append(big if auto == "SAME_UPPER" else small)
    return begin + end


def _spatial(ctx: Any, weight_i: Optional[int] = None) -> tuple[int, list[int]]:
    nsp = ctx.ndim(0) - 2
    if nsp < 1:
        raise ctx.error(f"input must have at least 3 dimensions, got {nsp + 2}")
    if "kernel_shape" in ctx.attrs:
        kernel = list(ctx.attr("kernel_shape"))
    elif weight_i is not None:
        kernel = [int(k) for k in ctx.shape(weight_i)[2:]]
    else:
        raise ctx.error("kernel_shape is required")
    return nsp, kernel


def _to_2d(ctx: Any, x: Any) -> Any:
    """(N, C, W) -> (N, C, 1, W)."""
    return R.expand_dims(x, [2])


def _lift(values: list[Any], nsp: int, fill: Any) -> list[Any]:
    """Per-axis values of a 1-d op as the 2-d op's (unit H axis first)."""
    return [fill] + list(values) if nsp == 1 else list(values)


def _lift_pads(pads: list[int], nsp: int) -> list[int]:
    if nsp == 1:
        return [0, pads[0], 0, pads[1]]
    return pads


# -- Conv ------------------------------------------------------------------------------------
@converter("Conv")
def _conv(ctx: Any) -> Any:
    nsp, kernel = _spatial(ctx, 1)
    strides = list(ctx.attr("strides", [1] * nsp))
    dilations = list(ctx.attr("dilations", [1] * nsp))
    pads = _auto_pads(ctx, ctx.shape(0)[2:], kernel, strides, dilations)
    groups = ctx.attr("group", 1)
    x, w = ctx.input(0), ctx.input(1)
    if nsp > 3:
        raise ctx.unsupported(f"{nsp}-d convolution (1-d, 2-d and 3-d are supported)")
    if nsp == 3:
        y = R.nn.conv3d(x, w, strides, pads, dilations, groups)
        return y + _channel_vector(ctx, 2, nsp) if ctx.has(2) else y
    if nsp == 1:
        x, w = _to_2d(ctx, x), _to_2d(ctx, w)
    y = R.nn.conv2d(x, w, _lift(strides, nsp, 1), _lift_pads(pads, nsp),
                    _lift(dilations, nsp, 1), groups)
    if nsp == 1:
        y = R.squeeze(y, [2])
    if ctx.has(2):
        y = y + _channel_vector(ctx, 2, nsp)
    return y


def _channel_vector(ctx: Any, i: int, nsp: int) -> Any:
    """Input ``i`` (shape [C]) shaped [C, 1, ..., 1] to broadcast over the spatial axes."""
    c = ctx.const(i)
    if c is not None:
        return ctx.const_expr(np.asarray(c).reshape([-1] + [1] * nsp), ctx.dtype(i))
    return R.reshape(ctx.input(i), [-1] + [1] * nsp)


@converter("ConvTranspose")
def _conv_transpose(ctx: Any) -> Any:
    nsp, kernel = _spatial(ctx, 1)
    if nsp > 3:
        raise ctx.unsupported(f"{nsp}-d transposed convolution (1-d, 2-d and 3-d are "
                              "supported)")
    strides = list(ctx.attr("strides", [1] * nsp))
    dilations = list(ctx.attr("dilations", [1] * nsp))
    out_pad = list(ctx.attr("output_padding", [0] * nsp))
    groups = ctx.attr("group", 1)
    in_sizes = ctx.shape(0)[2:]
    out_shape = ctx.attr("output_shape", None)
    auto = ctx.attr("auto_pad", "NOTSET")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = list(out_shape)[-nsp:] if out_shape is not None else [
            s * st for s, st in zip(in_sizes, strides)]
        begin, end = [], []
        for i in range(nsp):
            if not isinstance(in_sizes[i], int):
                raise ctx.unsupported("output_shape needs static spatial dimensions")
            total = (strides[i] * (in_sizes[i] - 1) + out_pad[i]
                     + (kernel[i] - 1) * dilations[i] + 1 - out_shape[i])
            if total < 0:
                out_pad[i] -= total
                total = 0
            if auto == "SAME_UPPER":
                begin.append(total // 2)
                end.append(total - total // 2)
            else:
                begin.append(total - total // 2)
                end.append(total // 2)
        pads = begin + end
    elif auto == "VALID" or auto in ("NOTSET", ""):
        pads = [int(p) for p in ctx.attr("pads", [0] * (2 * nsp))]
    else:
        raise ctx.unsupported(f"auto_pad={auto!r}")
    x, w = ctx.input(0), ctx.input(1)
    if nsp == 3:
        y = R.nn.conv3d_transpose(x, w, strides, pads, out_pad, dilations, groups)
        return y + _channel_vector(ctx, 2, nsp) if ctx.has(2) else y
    if nsp == 1:
        x, w = _to_2d(ctx, x), _to_2d(ctx, w)
    y = R.nn.conv2d_transpose(x, w, _lift(strides, nsp, 1), _lift_pads(pads, nsp),
                              _lift(out_pad, nsp, 0), _lift(dilations, nsp, 1), groups)
    if nsp == 1:
        y = R.squeeze(y, [2])
    if ctx.has(2):
        y = y + _channel_vector(ctx, 2, nsp)
    return y


# -- pooling ---------------------------------------------------------------------------------
def _pool(kind: str) -> Any:
    def impl(ctx: Any) -> Any:
        nsp, kernel = _spatial(ctx)
        with_indices = ctx.num_outputs > 1 and bool(ctx.node.output[1])
        strides = list(ctx.attr("strides", [1] * nsp))
        dilations = list(ctx.attr("dilations", [1] * nsp))
        pads = _auto_pads(ctx, ctx.shape(0)[2:], kernel, strides, dilations)
        ceil_mode = bool(ctx.attr("ceil_mode", 0))
        x = ctx.input(0)
        if with_indices or (kind == "max" and nsp > 3):
            if any(not isinstance(d, int) for d in ctx.shape(0)[2:]):
                raise ctx.unsupported("needs static spatial dimensions")
            out = R.nn.max_pool_with_indices(x, kernel, strides, pads, dilations, ceil_mode,
                                             ctx.attr("storage_order", 0))
            if with_indices:
                return [ctx.emit(relax_tuple_item(out, 0)), ctx.emit(relax_tuple_item(out, 1))]
            return ctx.emit(relax_tuple_item(out, 0))
        if nsp > 3:
            raise ctx.unsupported(f"{nsp}-d {'LpPool' if kind == 'lp' else 'AveragePool'}")
        if nsp == 1:
            x = _to_2d(ctx, x)
        if nsp == 3:
            args = (kernel, strides, pads, dilations, ceil_mode)
            max_pool, avg_pool = R.nn.max_pool3d, R.nn.avg_pool3d
        else:
            args = (_lift(kernel, nsp, 1), _lift(strides, nsp, 1), _lift_pads(pads, nsp),
                    _lift(dilations, nsp, 1), ceil_mode)
            max_pool, avg_pool = R.nn.max_pool2d, R.nn.avg_pool2d
        if kind == "max":
            y = max_pool(x, *args)
        elif kind == "avg":
            y = avg_pool(x, *args, bool(ctx.attr("count_include_pad", 0)))
        else:  # lp
            p = float(ctx.attr("p", 2))
            dt = ctx.dtype(0)
            xp = R.power(R.abs(x), scalar(ctx, p, dt))
            n = float(np.prod(kernel))
            y = avg_pool(xp, *args, True) * scalar(ctx, n, dt)
            y = R.power(y, scalar(ctx, 1.0 / p, dt))
        if nsp == 1:
            y = R.squeeze(y, [2])
        return y

    return impl


converter("MaxPool")(_pool("max"))
converter("AveragePool")(_pool("avg"))
converter("LpPool")(_pool("lp"))


def _global_pool(kind: str) -> Any:
    def impl(ctx: Any) -> Any:
        x = ctx.input(0)
        axes = list(range(2, ctx.ndim(0)))
        if kind == "avg":
            return R.mean(x, axes, True)
        if kind == "max":
            return R.max(x, axes, True)
        p = float(ctx.attr("p", 2))
        dt = ctx.dtype(0)
        s = R.sum(R.power(R.abs(x), scalar(ctx, p, dt)), axes, True)
        return R.power(s, scalar(ctx, 1.0 / p, dt))

    return impl


converter("GlobalAveragePool")(_global_pool("avg"))
converter("GlobalMaxPool")(_global_pool("max"))
converter("GlobalLpPool")(_global_pool("lp"))


# -- normalisation ---------------------------------------------------------------------------
@converter("BatchNormalization")
def _batch_norm(ctx: Any) -> Any:
    if ctx.attr("training_mode", 0):
        from .ops_misc import batch_norm_training

        return batch_norm_training(ctx)
    if ctx.num_outputs > 1 and any(ctx.node.output[1:]):
        raise ctx.unsupported("outputs beyond Y outside training mode")
    eps = ctx.attr("epsilon", 1e-5)
    nsp = ctx.ndim(0) - 2
    dt = ctx.dtype(0)
    consts = [ctx.const(i) for i in range(1, 5)]
    x = ctx.input(0)
    if all(c is not None for c in consts):
        scale, bias, mean, var = (np.asarray(c, dtype=np.float64) for c in consts)
        a = scale / np.sqrt(var + eps)
        b = bias - mean * a
        shape = [-1] + [1] * max(nsp, 0)
        return x * ctx.const_expr(a.reshape(shape), dt) + ctx.const_expr(b.reshape(shape), dt)
    scale, bias, mean, var = (ctx.input(i) for i in range(1, 5))

    def bc(v: Any) -> Any:
        return R.reshape(v, [-1] + [1] * max(nsp, 0))

    inv = R.rsqrt(bc(var) + scalar(ctx, eps, dt)) * bc(scale)
    return (x - bc(mean)) * inv + bc(bias)


def _moments(ctx: Any, x: Any, axes: list[int]) -> tuple[Any, Any]:
    mean = R.mean(x, axes, True)
    d = x - mean
    return mean, R.mean(d * d, axes, True)


@converter("InstanceNormalization")
def _instance_norm(ctx: Any) -> Any:
    eps = ctx.attr("epsilon", 1e-5)
    nsp = ctx.ndim(0) - 2
    dt = ctx.dtype(0)
    x = ctx.input(0)
    mean, var = _moments(ctx, x, list(range(2, nsp + 2)))
    y = (x - mean) * R.rsqrt(var + scalar(ctx, eps, dt))
    return y * _channel_vector(ctx, 1, nsp) + _channel_vector(ctx, 2, nsp)


@converter("LayerNormalization")
def _layer_norm(ctx: Any) -> Any:
    ndim = ctx.ndim(0)
    axis = ctx.attr("axis", -1) % ndim
    eps = ctx.attr("epsilon", 1e-5)
    dt = ctx.dtype(0)
    axes = list(range(axis, ndim))
    x = ctx.input(0)
    extra = ctx.num_outputs > 1 and any(ctx.node.output[1:])
    stash = ctx.attr("stash_type", 1)
    xs = R.astype(x, "float32") if (stash == 1 and dt != "float32") else x
    sdt = "float32" if stash == 1 and dt != "float32" else dt
    norm_shape = ctx.static_shape(0)
    norm_shape = None if norm_shape is None else norm_shape[axis:]
    if norm_shape is None:  # symbolic leading dims are fine: only the normalized ones count
        norm_shape = [d for d in ctx.shape(0)[axis:] if isinstance(d, int)]
        if len(norm_shape) != ndim - axis:
            norm_shape = None
    if not extra and sdt == dt and ctx.has(1) and ctx.has(2) and norm_shape is not None and \
            ctx.static_shape(1) == norm_shape and ctx.static_shape(2) == norm_shape:
        # one operator: it legalizes to one kernel whose statistics are computed per row
        return R.nn.layer_norm(x, ctx.input(1), ctx.input(2), axes, eps)
    mean, var = _moments(ctx, xs, axes)
    inv = R.rsqrt(var + scalar(ctx, eps, sdt))
    y = (xs - mean) * inv
    if sdt != dt:
        y = R.astype(y, dt)
    y = y * ctx.input(1)
    if ctx.has(2):
        y = y + ctx.input(2)
    if extra:
        return [y, mean, inv]
    return y


@converter("GroupNormalization")
def _group_norm(ctx: Any) -> Any:
    groups = ctx.attr("num_groups")
    eps = ctx.attr("epsilon", 1e-5)
    dt = ctx.dtype(0)
    shape = ctx.shape(0)
    n, c = shape[0], shape[1]
    nsp = len(shape) - 2
    x = ctx.input(0)
    xg = R.reshape(x, [n, groups, -1])
    mean, var = _moments(ctx, xg, [2])
    y = R.reshape((xg - mean) * R.rsqrt(var + scalar(ctx, eps, dt)), shape)
    if ctx.opset < 21:
        # scale and bias are per group
        sc = R.repeat(ctx.input(1), c // groups if isinstance(c, int) else 1, 0)
        bi = R.repeat(ctx.input(2), c // groups if isinstance(c, int) else 1, 0)
        return y * R.reshape(sc, [-1] + [1] * nsp) + R.reshape(bi, [-1] + [1] * nsp)
    return y * _channel_vector(ctx, 1, nsp) + _channel_vector(ctx, 2, nsp)


@converter("RMSNormalization")
def _rms_norm(ctx: Any) -> Any:
    ndim = ctx.ndim(0)
    axis = ctx.attr("axis", -1) % ndim
    eps = ctx.attr("epsilon", 1e-5)
    dt = ctx.dtype(0)
    x = ctx.input(0)
    stash = ctx.attr("stash_type", 1)
    xs = R.astype(x, "float32") if (stash == 1 and dt != "float32") else x
    sdt = "float32" if stash == 1 and dt != "float32" else dt
    ms = R.mean(xs * xs, list(range(axis, ndim)), True)
    y = xs * R.rsqrt(ms + scalar(ctx, eps, sdt))
    if sdt != dt:
        y = R.astype(y, dt)
    return y * ctx.input(1)


@converter("LpNormalization")
def _lp_norm(ctx: Any) -> Any:
    axis = ctx.attr("axis", -1) % ctx.ndim(0)
    p = ctx.attr("p", 2)
    dt = ctx.dtype(0)
    x = ctx.input(0)
    if p == 1:
        norm = R.sum(R.abs(x), [axis], True)
    elif p == 2:
        norm = R.sqrt(R.sum(x * x, [axis], True))
    else:
        raise ctx.unsupported(f"p={p} (expected 1 or 2)")
    zero = scalar(ctx, 0, dt)
    safe = R.where(R.equal(norm, zero), scalar(ctx, 1, dt), norm)
    return R.where(R.equal(norm, zero), zero, x / safe)


@converter("MeanVarianceNormalization")
def _mvn(ctx: Any) -> Any:
    axes = [a % ctx.ndim(0) for a in ctx.attr("axes", [0, 2, 3])]
    dt = ctx.dtype(0)
    x = ctx.input(0)
    mean, var = _moments(ctx, x, axes)
    return (x - mean) / (R.sqrt(var) + scalar(ctx, 1e-9, dt))


@converter("LRN")
def _lrn(ctx: Any) -> Any:
    size = ctx.attr("size")
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    dt = ctx.dtype(0)
    shape = ctx.shape(0)
    c = shape[1]
    if not isinstance(c, int):
        raise ctx.unsupported("needs a static channel count")
    x = ctx.input(0)
    sq = ctx.emit(x * x)
    lo, hi = (size - 1) // 2, int(math.ceil((size - 1) / 2))
    zeros_shape = list(shape)
    parts = []
    if lo:
        zeros_shape[1] = lo
        parts.append(R.full(list(zeros_shape), scalar(ctx, 0, dt), dt))
    parts.append(sq)
    if hi:
        zeros_shape[1] = hi
        parts.append(R.full(list(zeros_shape), scalar(ctx, 0, dt), dt))
    padded = ctx.emit(R.concat(parts, axis=1)) if len(parts) > 1 else sq
    total = None
    for k in range(size):
        piece = R.strided_slice(padded, [1], [k], [k + c])
        total = piece if total is None else total + piece
    denom = R.power(total * scalar(ctx, alpha / size, dt) + scalar(ctx, bias, dt),
                    scalar(ctx, beta, dt))
    return x / denom


# -- softmax family --------------------------------------------------------------------------
def _softmax(kind: str) -> Any:
    def impl(ctx: Any) -> Any:
        x = ctx.input(0)
        ndim = ctx.ndim(0)
        if ctx.opset < 13:
            axis = ctx.attr("axis", 1) % max(ndim, 1)
            shape = ctx.shape(0)
            flat = R.reshape(x, [ctx.prod(shape[:axis]), ctx.prod(shape[axis:])])
            return R.reshape(_apply(ctx, kind, flat, 1, 2), shape)
        axis = ctx.attr("axis", -1) % max(ndim, 1)
        return _apply(ctx, kind, x, axis, ndim)

    return impl


def _apply(ctx: Any, kind: str, x: Any, axis: int, ndim: int) -> Any:
    if kind == "softmax":
        return R.nn.softmax(x, axis)
    if kind == "log_softmax":
        return R.nn.log_softmax(x, axis)
    idx = R.argmax(x, axis, True)
    n = ctx.importer.shape_of(x)[axis] if ctx.importer.shape_of(x) else None
    if not isinstance(n, int):
        raise ctx.unsupported("Hardmax needs a static axis length")
    shape = [1] * ndim
    shape[axis] = n
    rng = ctx.const_expr(np.arange(n).reshape(shape), "int64")
    dt = ctx.dtype(0)
    return R.astype(R.equal(idx, rng), dt)


converter("Softmax")(_softmax("softmax"))
converter("LogSoftmax")(_softmax("log_softmax"))
converter("Hardmax")(_softmax("hardmax"))


# -- Resize / Upsample -----------------------------------------------------------------------
# Resize is separable and linear in its input: each resized axis is a (out x in) matrix.
# Exact cases (NCHW, integral scale, no antialias) use relax.image.resize2d; the others apply
# per-axis interpolation matrices computed at import time by evaluating a one-axis Resize
# node (same attributes) on the identity with onnx's reference evaluator.
_NEAREST = {"round_prefer_floor": "round_prefer_floor", "round_prefer_ceil": "round_prefer_ceil",
            "floor": "floor", "ceil": "ceil"}
_RESIZE_ATTRS = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                 "exclude_outside", "extrapolation_value", "antialias")


def _resize_params(ctx: Any) -> dict[str, Any]:
    """Scales / sizes / roi (constants) and the attributes, Upsample mapped to Resize."""
    if ctx.op_type == "Upsample":
        if ctx.opset < 9:
            scales = ctx.attr("scales")
        elif ctx.const(1) is None:
            scales = RUNTIME
        else:
            scales = [float(v) for v in ctx.const(1)]
        mode = ctx.attr("mode", "nearest")
        return {"scales": scales, "sizes": None, "roi": None, "axes": None, "slot": 1,
                "attrs": {"mode": "linear" if mode in ("linear", "bilinear") else mode,
                          "coordinate_transformation_mode": "asymmetric",
                          "nearest_mode": "floor"}}
    attrs = {k: ctx.attrs[k] for k in _RESIZE_ATTRS if k in ctx.attrs}
    if ctx.opset < 11:
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        sc = ctx.const(1)
        return {"scales": RUNTIME if sc is None else [float(v) for v in sc], "sizes": None,
                "roi": None, "axes": None, "attrs": attrs, "slot": 1}
    roi = ctx.const(1) if ctx.has(1) else None
    roi = [float(v) for v in roi] if roi is not None and roi.size else None
    if not ctx.has(1) or ctx.const(1) is not None:
        absent = [not ctx.has(i) or (ctx.const(i) is not None and ctx.const(i).size == 0)
                  for i in (2, 3)]
        if ctx.has(3) and ctx.const(3) is None and absent[0]:  # sizes at run time
            return {"scales": None, "sizes": RUNTIME, "axes": ctx.attr("axes", None),
                    "roi": roi, "attrs": attrs}
        if ctx.has(2) and ctx.const(2) is None and absent[1]:  # scales at run time
            return {"scales": RUNTIME, "sizes": None, "axes": ctx.attr("axes", None),
                    "roi": roi, "attrs": attrs, "slot": 2}
    for i, what in ((1, "roi"), (2, "scales"), (3, "sizes")):
        if ctx.has(i) and ctx.const(i) is None:
            raise ctx.unsupported(f"{what} must be a constant (the output shape depends on it)")
    roi, sc, sz = ctx.const(1), ctx.const(2), ctx.const(3)
    scales = [float(v) for v in sc] if sc is not None and sc.size else None
    sizes = [int(v) for v in sz] if sz is not None and sz.size else None
    if scales is None and sizes is None:
        raise ctx.error("one of scales and sizes is required")
    return {"scales": scales, "sizes": sizes,
            "roi": [float(v) for v in roi] if roi is not None and roi.size else None,
            "axes": ctx.attr("axes", None), "attrs": attrs}


RUNTIME = "runtime"  # Resize's sizes or scales are an input known only at run time


def _resize_plan(ctx: Any, shape: list[Any], p: dict[str, Any]) -> list[tuple[int, int, float]]:
    """(axis, output length, scale) of every resized axis."""
    ndim = len(shape)
    axes = [a % ndim for a in p["axes"]] if p["axes"] else list(range(ndim))
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    plan = []
    if p["sizes"] is not None and policy != "stretch":
        ratios = [p["sizes"][i] / shape[a] for i, a in enumerate(axes)]
        r = min(ratios) if policy == "not_larger" else max(ratios)
        for a in axes:
            plan.append((a, int(math.floor(shape[a] * r + 0.5)), r))
    elif p["sizes"] is not None:
        for i, a in enumerate(axes):
            plan.append((a, p["sizes"][i], p["sizes"][i] / shape[a]))
    else:
        for i, a in enumerate(axes):
            plan.append((a, int(math.floor(shape[a] * p["scales"][i])), p["scales"][i]))
    return [(a, n, s) for a, n, s in plan if not (n == shape[a] and s == 1.0)]


def _axis_matrix(ctx: Any, p: dict[str, Any], length: int, out_len: int, scale: float,
                 roi: Optional[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The (out, in) interpolation matrix of one axis and its 0/1 validity vector
    (tf_crop_and_resize extrapolates outside the roi)."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    attrs = dict(p["attrs"])
    extrap = float(attrs.pop("extrapolation_value", 0.0))
    use_sizes = p["sizes"] is not None and ctx.attr("keep_aspect_ratio_policy", "stretch") ==         "stretch"
    inputs = ["x", "roi" if roi is not None else "", "" if use_sizes else "scales"]
    if use_sizes:
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["y"], extrapolation_value=0.0, **attrs)
    opset = max(ctx.opset, 13)
    graph = helper.make_graph(
        [node], "axis", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, None)],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    feeds = {"x": np.eye(length)}
    if roi is not None:
        feeds["roi"] = np.array([0.0, roi[0], 1.0, roi[1]])
    if use_sizes:
        feeds["sizes"] = np.array([length, out_len], dtype=np.int64)
    else:
        feeds["scales"] = np.array([1.0, scale], dtype=np.float32)
    ev = ReferenceEvaluator(model)
    mat = ev.run(None, feeds)[0].T  # (out, in)
    if mat.shape != (out_len, length):
        raise ctx.unsupported(f"output length {mat.shape[0]} != {out_len} for this policy")
    valid = np.ones(out_len)
    if extrap != 0.0 or attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        node2 = helper.make_node("Resize", inputs, ["y"], extrapolation_value=1.0, **attrs)
        graph2 = helper.make_graph([node2], "axis", graph.input, graph.output)
        model2 = helper.make_model(graph2, opset_imports=[helper.make_opsetid("", opset)])
        feeds2 = dict(feeds, x=np.zeros((1, length)))
        valid = 1.0 - ReferenceEvaluator(model2).run(None, feeds2)[0][0]
    return mat, valid


def _fast_resize2d(ctx: Any, x: Any, shape: list[Any], plan: list[tuple[int, int, float]],
                   p: dict[str, Any]) -> Optional[Any]:
    attrs = p["attrs"]
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    if (len(shape) != 4 or any(a < 2 for a, _, _ in plan) or attrs.get("antialias", 0)
            or mode not in ("nearest", "linear", "cubic") or attrs.get("exclude_outside", 0)
            or coord in ("tf_crop_and_resize", "half_pixel_symmetric")
            or any(abs(n - s * shape[a]) > 1e-9 for a, n, s in plan)):
        return None
    out = list(shape[2:])
    for a, n, _ in plan:
        out[a - 2] = n
    method = "nearest_neighbor" if mode == "nearest" else mode
    rounding = _NEAREST.get(attrs.get("nearest_mode", "round_prefer_floor"), "round")
    return R.image.resize2d(x, out, "NCHW", method, coord, rounding,
                            attrs.get("cubic_coeff_a", -0.75), 0)


def _symbolic_resize(ctx: Any, shape: list[Any], p: dict[str, Any]) -> Any:
    """Resize of an input with symbolic dimensions: the spatial axes (after N and C) of a
    3-, 4- or 5-d input resampled by ``relax.image.resize{1,2,3}d``, to ``dim * scale`` for an
    integer scale (the ratio ONNX's coordinate mapping then uses) or to constant sizes."""
    ndim = len(shape)
    attrs = p["attrs"]
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    why = None
    if ndim not in (3, 4, 5):
        why = f"a {ndim}-d input"
    elif mode not in ("nearest", "linear", "cubic"):
        why = f"mode {mode!r}"
    elif coord in ("tf_crop_and_resize", "half_pixel_symmetric") or attrs.get("antialias", 0):
        why = "coordinate_transformation_mode " + repr(coord) if not attrs.get("antialias", 0) \
            else "antialias"
    elif ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch" and p["sizes"] is not None:
        why = "keep_aspect_ratio_policy other than 'stretch'"
    if why is not None:
        raise ctx.unsupported(f"{why} needs a static input shape")
    axes = [a % ndim for a in p["axes"]] if p["axes"] else list(range(ndim))
    out = list(shape[2:])
    for i, a in enumerate(axes):
        same = shape[a]
        if p["sizes"] is not None:
            n = p["sizes"][i]
            if isinstance(n, int) and isinstance(same, int) and n == same:
                continue
        else:
            scale = p["scales"][i]
            if scale == 1.0:
                continue
            if not (scale > 0 and float(scale).is_integer()):
                raise ctx.unsupported(f"scale {scale} of axis {a} with a symbolic input shape "
                                      "(an integer scale, or constant sizes, is supported)")
            n = same * int(scale)
        if a < 2:
            raise ctx.unsupported(f"resizing axis {a} (batch or channel) of an input with "
                                  "symbolic dimensions")
        out[a - 2] = n
    if all(o is d for o, d in zip(out, shape[2:])):
        return ctx.input(0)
    dt = ctx.dtype(0)
    x = ctx.input(0)
    cdt = dt if dt in ("float32", "float64", "float16") else "float32"
    if cdt != dt:
        x = R.astype(x, cdt)
    nsp = ndim - 2
    fn = {1: R.image.resize1d, 2: R.image.resize2d, 3: R.image.resize3d}[nsp]
    layout = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[nsp]
    method = "nearest_neighbor" if mode == "nearest" else mode
    rounding = _NEAREST.get(attrs.get("nearest_mode", "round_prefer_floor"), "round")
    y = fn(x, out, layout, method, coord, rounding, attrs.get("cubic_coeff_a", -0.75),
           int(attrs.get("exclude_outside", 0)) if mode == "cubic" else 0)
    if cdt != dt:
        y = R.astype(R.round(y) if dt.startswith(("int", "uint")) else y, dt)
    return y


@converter("Resize", "Upsample")
def _resize(ctx: Any) -> Any:
    shape = ctx.static_shape(0)
    p = _resize_params(ctx)
    if p["sizes"] is RUNTIME:
        if p["attrs"].get("coordinate_transformation_mode") == "tf_crop_and_resize":
            raise ctx.unsupported("tf_crop_and_resize with sizes given at run time")
        return ops_runtime.resize_sizes(ctx, p, _symbolic_resize)
    if p["scales"] is RUNTIME:
        return ops_runtime.resize_scales(ctx, p, p["slot"])
    if shape is None:
        return _symbolic_resize(ctx, ctx.shape(0), p)
    plan = _resize_plan(ctx, shape, p)
    x = ctx.input(0)
    if not plan:
        return x
    fast = _fast_resize2d(ctx, x, shape, plan, p)
    if fast is not None:
        return fast
    dt = ctx.dtype(0)
    cdt = dt if dt in ("float32", "float64", "float16") else "float32"
    if cdt != dt:
        x = R.astype(x, cdt)
    ndim = len(shape)
    valid_total = None
    for a, n, scale in plan:
        roi = None
        if p["roi"] is not None:
            raxes = [b % ndim for b in p["axes"]] if p["axes"] else list(range(ndim))
            k = raxes.index(a)
            roi = (p["roi"][k], p["roi"][k + len(raxes)])
        mat, valid = _axis_matrix(ctx, p, shape[a], n, scale, roi)
        perm = [i for i in range(ndim) if i != a] + [a]
        inv = list(np.argsort(perm))
        y = R.matmul(R.permute_dims(x, perm), ctx.const_expr(mat.T, cdt))
        x = ctx.emit(R.permute_dims(y, inv))
        if not np.all(valid == 1.0):
            vshape = [1] * ndim
            vshape[a] = n
            v = valid.reshape(vshape)
            valid_total = v if valid_total is None else valid_total * v
    if valid_total is not None:
        extrap = float(p["attrs"].get("extrapolation_value", 0.0))
        x = R.where(ctx.const_expr(valid_total > 0.5, "bool"), x, scalar(ctx, extrap, cdt))
    if cdt != dt:
        if dt.startswith(("int", "uint")):
            x = R.round(x)
        x = R.astype(x, dt)
    return x
