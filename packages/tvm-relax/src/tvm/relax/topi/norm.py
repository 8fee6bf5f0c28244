"""Softmax and normalisation te computes (layer, group, batch and RMS norm)."""

from __future__ import annotations

from typing import Any, Sequence

from tvm import te, tir
from tvm.tir.expr import FloorDiv, IntImm, PrimExpr

from ._util import cast, int64, prod, simplify

__all__ = ["softmax", "log_softmax", "layer_norm", "group_norm", "batch_norm", "rms_norm",
           "moments"]


def _keep(idx: Sequence[Any], axes: Sequence[int]) -> list:
    """``idx`` with the reduced ``axes`` set to 0 (indexing a keepdims result)."""
    return [IntImm("int64", 0) if d in axes else v for d, v in enumerate(idx)]


def _reduce_keep(x: te.Tensor, axes: Sequence[int], reducer: Any, body: Any, name: str) -> te.Tensor:
    shape = tuple(IntImm("int64", 1) if d in axes else s for d, s in enumerate(x.shape))
    raxes = {d: te.reduce_axis((0, x.shape[d]), name=f"k{d}") for d in axes}

    def f(*i: Any) -> PrimExpr:
        src = [raxes[d].var if d in raxes else v for d, v in enumerate(i)]
        return reducer(body(src), axis=list(raxes.values()))

    return te.compute(shape, f, name=name)


def softmax(x: te.Tensor, axis: int) -> te.Tensor:
    axis %= x.ndim
    mx = _reduce_keep(x, [axis], te.max, lambda s: x(*s), "T_softmax_maxelem")
    ex = te.compute(x.shape, lambda *i: tir.exp(x(*i) - mx(*_keep(i, [axis]))), name="T_softmax_exp")
    total = _reduce_keep(ex, [axis], te.sum, lambda s: ex(*s), "T_softmax_expsum")
    return te.compute(x.shape, lambda *i: ex(*i) / total(*_keep(i, [axis])), name="T_softmax_norm")


def log_softmax(x: te.Tensor, axis: int) -> te.Tensor:
    axis %= x.ndim
    mx = _reduce_keep(x, [axis], te.max, lambda s: x(*s), "T_softmax_maxelem")
    total = _reduce_keep(
        x, [axis], te.sum, lambda s: tir.exp(x(*s) - mx(*_keep(s, [axis]))), "T_softmax_expsum"
    )
    return te.compute(
        x.shape,
        lambda *i: x(*i) - mx(*_keep(i, [axis])) - tir.log(total(*_keep(i, [axis]))),
        name="T_log_softmax",
    )


def moments(x: te.Tensor, axes: Sequence[int]) -> tuple[te.Tensor, te.Tensor]:
    """Mean and population variance over ``axes`` (keepdims)."""
    count = cast(prod([x.shape[d] for d in axes]), x.dtype)
    total = _reduce_keep(x, axes, te.sum, lambda s: x(*s), "T_moments_sum")
    mean = te.compute(total.shape, lambda *i: total(*i) / count, name="T_mean")
    sq = _reduce_keep(x, axes, te.sum,
                      lambda s: _square(x(*s) - mean(*_keep(s, axes))), "T_moments_sqsum")
    var = te.compute(sq.shape, lambda *i: sq(*i) / count, name="T_var")
    return mean, var


def _square(v: PrimExpr) -> PrimExpr:
    return v * v


def _affine(value: PrimExpr, idx: Sequence[Any], axes: Sequence[int], gamma: Any, beta: Any) -> PrimExpr:
    pidx = [idx[d] for d in axes]
    if gamma is not None:
        value = value * gamma(*pidx)
    if beta is not None:
        value = value + beta(*pidx)
    return value


def layer_norm(
    x: te.Tensor, gamma: Any, beta: Any, axes: Sequence[int], epsilon: float,
) -> te.Tensor:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over ``axes`` (gamma/beta of shape
    ``x.shape[axes]``; None skips them)."""
    mean, var = moments(x, axes)
    eps = cast(epsilon, x.dtype)

    def f(*i: Any) -> PrimExpr:
        k = _keep(i, axes)
        norm = (x(*i) - mean(*k)) / tir.sqrt(var(*k) + eps)
        return _affine(norm, i, axes, gamma, beta)

    return te.compute(x.shape, f, name="T_layer_norm")


def rms_norm(x: te.Tensor, weight: Any, axes: Sequence[int], epsilon: float) -> te.Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over ``axes``."""
    count = cast(prod([x.shape[d] for d in axes]), x.dtype)
    sq = _reduce_keep(x, axes, te.sum, lambda s: _square(x(*s)), "T_rms_sqsum")
    eps = cast(epsilon, x.dtype)

    def f(*i: Any) -> PrimExpr:
        norm = x(*i) / tir.sqrt(sq(*_keep(i, axes)) / count + eps)
        return _affine(norm, i, axes, weight, None)

    return te.compute(x.shape, f, name="T_rms_norm")


def group_norm(
    x: te.Tensor, gamma: Any, beta: Any, num_groups: int, channel_axis: int,
    axes: Sequence[int], epsilon: float,
) -> te.Tensor:
    """Normalise each group of ``C / num_groups`` channels together with ``axes``."""
    c = channel_axis
    cg = simplify(int64(x.shape[c]) // num_groups)
    # View x as (..., G, C/G, ...): one more axis after the channel axis.
    gshape = (*x.shape[:c], IntImm("int64", num_groups), cg, *x.shape[c + 1:])
    xg = te.compute(gshape, lambda *i: x(*i[:c], i[c] * cg + i[c + 1], *i[c + 2:]), name="T_group")
    gaxes = [c + 1] + [a + 1 if a > c else a for a in axes]
    mean, var = moments(xg, gaxes)
    eps = cast(epsilon, x.dtype)

    def f(*i: Any) -> PrimExpr:
        g, r = FloorDiv(i[c], cg), i[c] - FloorDiv(i[c], cg) * cg
        gi = _keep((*i[:c], g, r, *i[c + 1:]), gaxes)
        norm = (x(*i) - mean(*gi)) / tir.sqrt(var(*gi) + eps)
        return _affine(norm, i, [c], gamma, beta)

    return te.compute(x.shape, f, name="T_group_norm")


def batch_norm(
    x: te.Tensor, gamma: Any, beta: Any, moving_mean: te.Tensor, moving_var: te.Tensor,
    axis: int, epsilon: float, momentum: float, training: bool,
) -> list[te.Tensor]:
    """(normalised x, mean, var) along channel ``axis``.

    Inference uses the moving statistics and returns them; training normalises with the
    batch statistics (population variance) and returns the updated moving statistics
    ``(1 - momentum) * moving + momentum * batch``.
    """
    eps = cast(epsilon, x.dtype)
    if training:
        others = [d for d in range(x.ndim) if d != axis]
        bmean, bvar = moments(x, others)
        zero = IntImm("int64", 0)

        def stat(t: te.Tensor) -> Any:
            return lambda ch: t(*[ch if d == axis else zero for d in range(x.ndim)])

        mean_at, var_at = stat(bmean), stat(bvar)
        m = cast(momentum, x.dtype)
        one = cast(1, x.dtype)
        new_mean = te.compute(moving_mean.shape, lambda ch: (one - m) * moving_mean(ch) + m * mean_at(ch),
                              name="T_new_mean")
        new_var = te.compute(moving_var.shape, lambda ch: (one - m) * moving_var(ch) + m * var_at(ch),
                             name="T_new_var")
    else:
        mean_at, var_at = moving_mean, moving_var
        new_mean = te.compute(moving_mean.shape, lambda ch: moving_mean(ch), name="T_mean")
        new_var = te.compute(moving_var.shape, lambda ch: moving_var(ch), name="T_var")

    def f(*i: Any) -> PrimExpr:
        ch = i[axis]
        norm = (x(*i) - mean_at(ch)) / tir.sqrt(var_at(ch) + eps)
        return _affine(norm, i, [axis], gamma, beta)

    out = te.compute(x.shape, f, name="T_batch_norm")
    return [out, new_mean, new_var]
