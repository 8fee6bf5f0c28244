"""The SSD post-processing custom operator ``TFLite_Detection_PostProcess``: box decoding
against constant anchors, then non-maximum suppression, into fixed-size outputs.

Outputs (as the TFLite kernel): boxes [1, max_detections, 4] (ymin, xmin, ymax, xmax),
classes [1, max_detections] and scores [1, max_detections] (float32; entries past the
detections are zero) and num_detections [1] (float32).  Fast NMS (``use_regular_nms``
false) suppresses across classes by each box's best class score; regular NMS suppresses per
class (up to ``detections_per_class`` each) and keeps the best ``max_detections`` overall.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import op as _op
from ...struct_info import TensorStructInfo
from .common import OpContext, converter


def _decode(ctx: OpContext, enc: Any, anchors: np.ndarray, opts: dict[str, Any]) -> Any:
    """[1, N, 4] encodings (ty, tx, th, tw) -> [1, N, 4] corners (ymin, xmin, ymax, xmax)."""
    ya, xa, ha, wa = (anchors[:, k].astype(np.float32) for k in range(4))
    scale = [float(opts.get(k, 1.0)) for k in ("y_scale", "x_scale", "h_scale", "w_scale")]
    if any(s == 0 for s in scale):
        raise ctx.error(f"box scales {scale} must be non-zero")
    part = [_op.squeeze(_op.strided_slice(enc, [2], [k], [k + 1]), [2]) for k in range(4)]

    def c(v: np.ndarray) -> Any:
        return ctx.const_expr(v.reshape(1, -1), "float32")

    yc = _op.add(_op.multiply(part[0], c(ha / scale[0])), c(ya))
    xc = _op.add(_op.multiply(part[1], c(wa / scale[1])), c(xa))
    half_h = _op.multiply(_op.exp(_op.multiply(part[2], ctx.scalar(1 / scale[2], "float32"))),
                          c(ha / 2))
    half_w = _op.multiply(_op.exp(_op.multiply(part[3], ctx.scalar(1 / scale[3], "float32"))),
                          c(wa / 2))
    corners = [_op.subtract(yc, half_h), _op.subtract(xc, half_w), _op.add(yc, half_h),
               _op.add(xc, half_w)]
    return ctx.emit(_op.concat([_op.expand_dims(v, -1) for v in corners], 2))


def _padded(ctx: OpContext, x: Any, length: int, fill: float, dtype: str) -> Any:
    """The first ``length`` entries of 1-d ``x`` (of run-time length at most ``length``)
    followed by ``fill``: a tensor of static length ``length``."""
    pad = _op.full([length], ctx.scalar(fill, dtype), dtype)
    joined = _op.strided_slice(_op.concat([x, pad], 0), [0], [0], [length])
    return ctx.bb.match_cast(ctx.emit(joined), TensorStructInfo([length], dtype))


@converter("TFLite_Detection_PostProcess", custom=True)
def _detection_postprocess(ctx: OpContext) -> Any:
    opts = ctx.custom_options()
    max_det = int(opts.get("max_detections", 0))
    num_classes = int(opts.get("num_classes", 0))
    if max_det <= 0 or num_classes <= 0:
        raise ctx.error(f"max_detections {max_det} and num_classes {num_classes} must be "
                        "positive")
    if int(opts.get("max_classes_per_detection", 1)) != 1:
        raise ctx.unsupported("max_classes_per_detection other than 1")
    regular = bool(opts.get("use_regular_nms", False))
    per_class = int(opts.get("detections_per_class", 100))
    iou = float(opts.get("nms_iou_threshold", 0.5))
    # the kernel keeps scores >= the threshold; ONNX-style NMS keeps those above it
    score_thr = float(np.nextafter(np.float32(opts.get("nms_score_threshold", 0.0)),
                                   np.float32(-np.inf)))
    anchors = ctx.const(2)
    if anchors is None:
        raise ctx.unsupported("the anchors (input 2) must be a constant tensor")
    n = anchors.shape[0]
    if ctx.shape(0) != [1, n, 4] or ctx.shape(1)[:2] != [1, n]:
        raise ctx.error(f"box encodings {ctx.shape(0)} and class predictions {ctx.shape(1)} "
                        f"do not fit {n} anchors (batch 1)")
    label_offset = ctx.shape(1)[2] - num_classes  # 1: a background class comes first
    if label_offset < 0:
        raise ctx.error(f"class predictions have {ctx.shape(1)[2]} classes, fewer than "
                        f"num_classes {num_classes}")
    boxes = _decode(ctx, ctx.input(0), anchors, opts)
    scores = ctx.emit(_op.strided_slice(ctx.input(1), [2], [label_offset],
                                        [label_offset + num_classes]))  # [1, N, C]
    f32 = "float32"
    if not regular:
        best = ctx.emit(_op.max(scores, 2))  # [1, N]
        label = ctx.emit(_op.argmax(scores, 2))
        sel = ctx.emit(_op.vision.non_max_suppression(
            boxes, _op.expand_dims(best, 1), max_det, iou, score_thr))
        box_idx = _op.astype(_op.squeeze(_op.strided_slice(sel, [1], [2], [3]), [1]), "int32")
        idx = _padded(ctx, box_idx, max_det, -1, "int32")
        flat_scores, flat_labels = _op.squeeze(best, [0]), _op.squeeze(label, [0])
        gather_box = idx
    else:
        sel = ctx.emit(_op.vision.non_max_suppression(
            boxes, _op.permute_dims(scores, [0, 2, 1]), per_class, iou, score_thr))
        cls = _op.squeeze(_op.strided_slice(sel, [1], [1], [2]), [1])
        box = _op.squeeze(_op.strided_slice(sel, [1], [2], [3]), [1])
        flat = _op.astype(_op.add(_op.multiply(box, ctx.scalar(num_classes, "int64")), cls),
                          "int32")  # index into [N * C]
        total = num_classes * per_class
        cand = _padded(ctx, flat, min(total, n * num_classes), -1, "int32")
        all_scores = _op.reshape(scores, [-1])
        valid_c = _op.greater_equal(cand, ctx.scalar(0, "int32"))
        cand_scores = _op.where(valid_c, _op.take(all_scores, _op.maximum(
            cand, ctx.scalar(0, "int32")), 0), ctx.scalar(-np.inf, f32))
        k = min(max_det, min(total, n * num_classes))
        top = ctx.emit(_op.topk(cand_scores, k, 0, "indices", dtype="int32"))
        picked = ctx.emit(_op.take(cand, top, 0))
        if k < max_det:
            picked = _padded(ctx, picked, max_det, -1, "int32")
        idx = picked
        flat_scores = all_scores
        flat_labels = ctx.const_expr(np.tile(np.arange(num_classes), n), "int64")
        gather_box = _op.floor_divide(idx, ctx.scalar(num_classes, "int32"))
    valid = ctx.emit(_op.greater_equal(idx, ctx.scalar(0, "int32")))
    safe = ctx.emit(_op.maximum(idx, ctx.scalar(0, "int32")))
    safe_box = ctx.emit(_op.maximum(gather_box, ctx.scalar(0, "int32")))
    zero = ctx.scalar(0, f32)
    out_boxes = _op.where(_op.expand_dims(valid, -1),
                          _op.take(_op.squeeze(boxes, [0]), safe_box, 0), zero)
    out_scores = _op.where(valid, _op.take(flat_scores, safe, 0), zero)
    out_classes = _op.where(valid, _op.astype(_op.take(flat_labels, safe, 0), f32), zero)
    count = _op.reshape(_op.sum(_op.astype(valid, f32)), [1])
    return [_op.expand_dims(out_boxes, 0), _op.expand_dims(out_classes, 0),
            _op.expand_dims(out_scores, 0), count]


@converter("NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", max_version=1)
def _nms(ctx: OpContext) -> Any:
    """tf.image.non_max_suppression_padded: boxes [N, 4] (corners), scores [N], then
    max_output_size, iou_threshold, score_threshold (and soft_nms_sigma, V5) scalars.
    Outputs: selected indices [max_output_size] padded with 0 (V5: their scores, padded with
    0), and the number selected."""
    max_out = ctx.int_list(2, "max_output_size")[0]
    iou, thr = ctx.const(3), ctx.const(4)
    if iou is None or thr is None:
        raise ctx.unsupported("iou_threshold and score_threshold must be constant tensors")
    if ctx.name == "NON_MAX_SUPPRESSION_V5":
        sigma = ctx.const(5)
        if sigma is None or float(sigma.reshape(-1)[0]) != 0.0:
            raise ctx.unsupported("soft NMS (soft_nms_sigma other than 0)")
    if max_out <= 0:
        raise ctx.error(f"max_output_size must be positive, got {max_out}")
    boxes, scores = ctx.input(0), ctx.input(1)
    sel = ctx.emit(_op.vision.non_max_suppression(
        _op.expand_dims(boxes, 0), _op.reshape(scores, [1, 1, -1]), max_out,
        float(iou.reshape(-1)[0]), float(thr.reshape(-1)[0])))  # kept: scores above it
    box_idx = _op.astype(_op.squeeze(_op.strided_slice(sel, [1], [2], [3]), [1]), "int32")
    idx = _padded(ctx, box_idx, max_out, -1, "int32")
    valid = ctx.emit(_op.greater_equal(idx, ctx.scalar(0, "int32")))
    safe = ctx.emit(_op.maximum(idx, ctx.scalar(0, "int32")))
    count = _op.astype(_op.sum(_op.astype(valid, "int32")), "int32")
    outs = [safe]
    if ctx.name == "NON_MAX_SUPPRESSION_V5":
        outs.append(_op.where(valid, _op.take(scores, safe, 0), ctx.scalar(0, "float32")))
    return outs + [count]
