"""ONNX loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference
semantics: the loss value), as gathers, masks and reductions."""

from __future__ import annotations

from typing import Any, Optional

from .common import R, converter


def nll(ctx: Any, logp: Any, target: Any, weight: Optional[Any], dt: str) -> Any:
    """The NLL loss of log-probabilities ``logp`` (N, C, ...) at ``target`` (N, ...)."""
    reduction = ctx.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise ctx.unsupported(f"reduction={reduction!r}")
    ignore = ctx.attr("ignore_index", None)
    tdt = ctx.importer.dtype_of(target)
    target = ctx.emit(target)
    mask = None
    safe = target
    if ignore is not None:
        mask = ctx.emit(R.not_equal(target, ctx.const_expr(ignore, tdt)))
        safe = ctx.emit(R.where(mask, target, ctx.const_expr(0, tdt)))
    picked = R.squeeze(R.gather_elements(logp, R.expand_dims(safe, [1]), axis=1), [1])
    if weight is not None:
        w = R.take(weight, safe, axis=0)
    else:
        w = None
    if mask is not None:
        m = R.astype(mask, dt)
        w = m if w is None else w * m
    w = ctx.emit(w) if w is not None else None
    loss = R.negative(picked) if w is None else R.negative(picked) * w
    if reduction == "none":
        return loss
    total = R.sum(loss)
    if reduction == "sum":
        return total
    if w is None:
        return R.mean(loss)
    return total / R.sum(w)


@converter("NegativeLogLikelihoodLoss")
def _nll_loss(ctx: Any) -> Any:
    return nll(ctx, ctx.input(0), ctx.input(1), ctx.input(2), ctx.dtype(0))


@converter("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ctx: Any) -> Any:
    logp = ctx.emit(R.nn.log_softmax(ctx.input(0), 1))
    loss = nll(ctx, logp, ctx.input(1), ctx.input(2), ctx.dtype(0))
    return [loss, logp]
