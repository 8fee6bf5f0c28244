"""TIR for ONNX NonMaxSuppression: greedy per-class box selection, padded then cropped.

One serial kernel walks every (batch, class): it keeps the boxes scoring above the
threshold, sorts them by descending score (stably: equal scores keep ascending box order),
then selects greedily, dropping a box whose IoU with an already selected one exceeds the
IoU threshold, until ``max_output_boxes_per_class`` are selected.  The selections
(batch, class, box) are written one after the other into a buffer with room for every box,
and their number into a (1,) tensor; the result is its first rows
(:func:`~.data_dependent.crop`).
"""

from __future__ import annotations

from typing import Any, Sequence

from tvm.tir import BufferStore, For, IfThenElse, LetStmt, PrimFunc, Var, While
from tvm.tir.expr import GT, LE, LT, NE, And, Max, Min, Or, PrimExpr, Select

from ._tir import FuncBuilder, fresh_shapes, i64, seq
from ._util import cast, int64
from .data_dependent import FLAG_DTYPE, merge_sort

__all__ = ["nms_func"]


def nms_func(
    boxes_shape: Sequence[Any], boxes_dtype: str, scores_shape: Sequence[Any],
    scores_dtype: str, scalar_shapes: Sequence[Sequence[Any]], scalar_dtypes: Sequence[str],
    center_point_box: int,
) -> PrimFunc:
    """PrimFunc ``(boxes, scores, max_output_boxes_per_class, iou_threshold,
    score_threshold, selected, num)``.

    ``boxes`` (B, N, 4): ``[y1, x1, y2, x2]`` corners in either order, or with
    ``center_point_box`` ``[x_center, y_center, width, height]``; ``scores`` (B, C, N); the
    three scalars are one-element tensors (``score_threshold`` -inf keeps every box).
    ``selected`` (B * C * N, 3) int64 gets the selections in its first ``num[0]`` rows.
    """
    boxes_shape, scores_shape, *scalar_shapes = fresh_shapes(
        boxes_shape, scores_shape, *scalar_shapes)
    fb = FuncBuilder()
    boxes = fb.arg(boxes_shape, boxes_dtype, "boxes")
    scores = fb.arg(scores_shape, scores_dtype, "scores")
    max_out, iou_thr, score_thr = (fb.arg(s, dt, nm) for s, dt, nm in zip(
        scalar_shapes, scalar_dtypes, ("max_output_boxes_per_class", "iou_threshold",
                                       "score_threshold")))
    nb, n = int64(boxes_shape[0]), int64(boxes_shape[1])
    nc = int64(scores_shape[1])
    selected = fb.arg((nb * nc * n, i64(3)), "int64", "selected")
    num = fb.arg((i64(1),), "int64", "num")
    ft = boxes_dtype if boxes_dtype in ("float32", "float64") else "float32"
    cand = fb.local((n,), "int64", "candidates")
    chosen = fb.local((n,), "int64", "chosen")
    ncand, nsel, total = (fb.scalar("int64", nm) for nm in ("num_candidates", "num_chosen",
                                                             "total"))
    check, suppressed = fb.scalar("int64", "check"), fb.scalar(FLAG_DTYPE, "suppressed")
    b, c, i, k = (Var(nm, "int64") for nm in ("b", "c", "i", "k"))
    limit = Var("limit", "int64")
    iou_limit = Var("iou_limit", ft)
    min_score = Var("min_score", scores_dtype)

    def score(box: PrimExpr) -> PrimExpr:
        return scores[b, c, box]

    def by_score(x: PrimExpr, y: PrimExpr) -> tuple[None, PrimExpr]:
        return None, GT(score(x), score(y))  # "x before y": a strictly higher score

    def coord(box: PrimExpr, q: int) -> PrimExpr:
        return cast(boxes[b, box, i64(q)], ft)

    def extent(box: PrimExpr) -> tuple[PrimExpr, PrimExpr, PrimExpr, PrimExpr]:
        """(x_min, x_max, y_min, y_max) of ``box``."""
        if center_point_box:
            half_w, half_h = coord(box, 2) / cast(2, ft), coord(box, 3) / cast(2, ft)
            return (coord(box, 0) - half_w, coord(box, 0) + half_w,
                    coord(box, 1) - half_h, coord(box, 1) + half_h)
        return (Min(coord(box, 1), coord(box, 3)), Max(coord(box, 1), coord(box, 3)),
                Min(coord(box, 0), coord(box, 2)), Max(coord(box, 0), coord(box, 2)))

    def overlaps(k1: PrimExpr, k2: PrimExpr) -> PrimExpr:
        """IoU(k1, k2) > the threshold (ONNX: no overlap or an empty box never suppresses)."""
        ax0, ax1, ay0, ay1 = extent(k1)
        bx0, bx1, by0, by1 = extent(k2)
        iw = Min(ax1, bx1) - Max(ax0, bx0)
        ih = Min(ay1, by1) - Max(ay0, by0)
        inter = iw * ih
        area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
        union = area_a + area_b - inter
        zero = cast(0, ft)
        valid = And(And(GT(iw, zero), GT(ih, zero)), And(
            And(GT(inter, zero), GT(area_a, zero)), And(GT(area_b, zero), GT(union, zero))))
        return And(valid, GT(inter / Select(valid, union, cast(1, ft)), iou_limit))

    keep = Or(GT(score(i), min_score), LE(min_score, cast(float("-inf"), scores_dtype)))
    gather = seq(ncand.set(i64(0)), For(i, i64(0), n, body=IfThenElse(keep, seq(
        BufferStore(cand, i, (ncand.value,)), ncand.set(ncand.value + 1)))))
    sort = merge_sort(fb, cand, ncand.value, by_score, n, "score_sort")
    box = cand[k]
    test = seq(suppressed.set(cast(0, FLAG_DTYPE)), check.set(i64(0)), While(
        And(LT(check.value, nsel.value), NE(suppressed.value, cast(1, FLAG_DTYPE))),
        seq(IfThenElse(overlaps(box, chosen[check.value]), suppressed.set(cast(1, FLAG_DTYPE))),
            check.set(check.value + 1))))
    row = total.value + nsel.value
    select = seq(
        BufferStore(chosen, box, (nsel.value,)),
        BufferStore(selected, b, (row, i64(0))), BufferStore(selected, c, (row, i64(1))),
        BufferStore(selected, box, (row, i64(2))), nsel.set(nsel.value + 1))
    greedy = seq(nsel.set(i64(0)), For(k, i64(0), ncand.value, body=IfThenElse(
        LT(nsel.value, limit), seq(test, IfThenElse(NE(suppressed.value, cast(1, FLAG_DTYPE)),
                                                   select)))))
    per_class = seq(gather, sort, greedy, total.set(total.value + nsel.value))
    body = seq(total.set(i64(0)),
               For(b, i64(0), nb, body=For(c, i64(0), nc, body=per_class)),
               BufferStore(num, total.value, (i64(0),)))
    body = LetStmt(limit, Max(int64(_scalar(max_out)), i64(0)), LetStmt(
        iou_limit, cast(_scalar(iou_thr), ft), LetStmt(
            min_score, cast(_scalar(score_thr), scores_dtype), body)))
    return fb.finish(body)


def _scalar(buf: Any) -> PrimExpr:
    """The first element of a one-element tensor of any rank."""
    return buf[tuple(i64(0) for _ in buf.shape)]

