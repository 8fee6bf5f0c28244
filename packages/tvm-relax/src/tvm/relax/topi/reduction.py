"""Reduction te computes: sum/mean/max/min/prod/variance/std, argmax/argmin."""

from __future__ import annotations

from typing import Any, Sequence

from tvm import te, tir
from tvm.tir.expr import EQ, GT, LT, And, Not, Or, PrimExpr, Select

from ._util import cast, is_float, prod, simplify

__all__ = ["reduce", "mean", "variance", "std", "arg_reduce"]

_prod = te.comm_reducer(lambda x, y: x * y, lambda t: cast(1, t), name="prod")
# Float max/min start from -inf/+inf (not the lowest/highest finite value), so a row of
# -inf (or an empty reduction) gives -inf like numpy and ONNX; integers use their limits.
# A NaN anywhere makes a float max/min NaN (numpy, torch and ONNX's reference agree).
_max = te.comm_reducer(
    lambda x, y: _nan_pick(x, y, GT) if is_float(x.dtype) else tir.Max(x, y),
    lambda t: tir.neg_infinity(t) if is_float(t) else tir.min_value(t), name="max")
_min = te.comm_reducer(
    lambda x, y: _nan_pick(x, y, LT) if is_float(x.dtype) else tir.Min(x, y),
    lambda t: tir.infinity(t) if is_float(t) else tir.max_value(t), name="min")
def _nan_pick(x: PrimExpr, y: PrimExpr, better: type) -> PrimExpr:
    return Select(Or(better(x, y), tir.isnan(x)), x, y)


REDUCERS = {"sum": te.sum, "max": _max, "min": _min, "prod": _prod}


def _split(x: te.Tensor, axes: Sequence[int], keepdims: bool) -> tuple[tuple, list]:
    """Output shape and the reduction axes (one te axis per reduced dimension)."""
    shape = []
    for d in range(x.ndim):
        if d not in axes:
            shape.append(x.shape[d])
        elif keepdims:
            shape.append(tir.IntImm("int64", 1))
    raxes = [te.reduce_axis((0, x.shape[d]), name=f"k{d}") for d in axes]
    return tuple(shape), raxes


def _source_index(x: te.Tensor, axes: Sequence[int], keepdims: bool, out_idx: tuple,
                  raxes: list) -> list:
    src, it, rit = [], iter(out_idx), iter(raxes)
    for d in range(x.ndim):
        if d in axes:
            if keepdims:
                next(it)
            src.append(next(rit).var)
        else:
            src.append(next(it))
    return src


def reduce(x: te.Tensor, kind: str, axes: Sequence[int], keepdims: bool = False) -> te.Tensor:
    """``kind`` (sum, max, min, prod) of ``x`` over ``axes`` (sorted, normalised)."""
    reducer = REDUCERS[kind]
    shape, raxes = _split(x, axes, keepdims)
    if not raxes:
        return te.compute(shape, lambda *i: x(*i), name=f"T_{kind}")
    if any(isinstance(d, tir.IntImm) and d.value == 0 for d in (x.shape[a] for a in axes)):
        # an empty reduction is its identity (a zero-extent loop would never run its init)
        identity = reducer.fidentity(x.dtype)
        return te.compute(shape, lambda *i: identity, name=f"T_{kind}")

    def f(*i: Any) -> PrimExpr:
        return reducer(x(*_source_index(x, axes, keepdims, i, raxes)), axis=raxes)

    symbolic = [x.shape[a] for a in axes if not isinstance(x.shape[a], tir.IntImm)]
    if not symbolic:
        return te.compute(shape, f, name=f"T_{kind}")
    # a symbolic extent may be 0 at run time, when the loop (and its init) never runs:
    # the identity is selected then
    total = te.compute(shape, f, name=f"T_{kind}_red")
    identity = reducer.fidentity(x.dtype)
    empty: PrimExpr = EQ(symbolic[0], tir.IntImm(symbolic[0].dtype, 0))
    for d in symbolic[1:]:
        empty = Or(empty, EQ(d, tir.IntImm(d.dtype, 0)))
    return te.compute(shape, lambda *i: Select(empty, identity, total(*i)), name=f"T_{kind}")


def _count(x: te.Tensor, axes: Sequence[int], dtype: str) -> PrimExpr:
    return cast(simplify(prod([x.shape[d] for d in axes])), dtype)


def mean(x: te.Tensor, axes: Sequence[int], keepdims: bool = False) -> te.Tensor:
    total = reduce(x, "sum", axes, keepdims)
    count = _count(x, axes, x.dtype)
    return te.compute(total.shape, lambda *i: tir.Div(total(*i), count), name="T_mean")


def variance(x: te.Tensor, axes: Sequence[int], keepdims: bool = False) -> te.Tensor:
    """Population variance (``ddof=0``) over ``axes``."""
    mu = mean(x, axes, keepdims=True)
    ones = {d: tir.IntImm("int64", 0) for d in axes}
    diff = te.compute(
        x.shape,
        lambda *i: _sq(x(*i) - mu(*[ones.get(d, v) for d, v in enumerate(i)])),
        name="T_sq_diff",
    )
    total = reduce(diff, "sum", axes, keepdims)
    count = _count(x, axes, x.dtype)
    return te.compute(total.shape, lambda *i: tir.Div(total(*i), count), name="T_variance")


def _sq(v: PrimExpr) -> PrimExpr:
    return v * v


def std(x: te.Tensor, axes: Sequence[int], keepdims: bool = False) -> te.Tensor:
    var = variance(x, axes, keepdims)
    return te.compute(var.shape, lambda *i: tir.sqrt(var(*i)), name="T_std")


def _arg_reducer(largest: bool) -> te.Reducer:
    def fcombine(a: tuple, b: tuple) -> tuple:
        better = GT(a[1], b[1]) if largest else LT(a[1], b[1])
        same = EQ(a[1], b[1])
        if is_float(a[1].dtype):  # NaN beats every number (torch and numpy pick the NaN)
            nan_a, nan_b = tir.isnan(a[1]), tir.isnan(b[1])
            better = Or(better, And(nan_a, Not(nan_b)))
            same = Or(same, And(nan_a, nan_b))
        take_a = Or(better, And(same, LT(a[0], b[0])))
        return Select(take_a, a[0], b[0]), Select(take_a, a[1], b[1])

    def fidentity(idx_dtype: str, val_dtype: str) -> tuple:
        if is_float(val_dtype):
            worst = tir.neg_infinity(val_dtype) if largest else tir.infinity(val_dtype)
        else:
            worst = tir.min_value(val_dtype) if largest else tir.max_value(val_dtype)
        return tir.max_value(idx_dtype), worst

    return te.comm_reducer(fcombine, fidentity, name="argmax" if largest else "argmin")


def arg_reduce(x: te.Tensor, largest: bool, axis: Any, keepdims: bool = False) -> te.Tensor:
    """Index (int64) of the first maximum (``largest``) or minimum along ``axis``
    (None: of the flattened tensor)."""
    from .transform import reshape

    if axis is None:
        ndim = x.ndim
        out = arg_reduce(reshape(x, (prod(x.shape),)), largest, 0, False)
        if keepdims:
            return reshape(out, (tir.IntImm("int64", 1),) * ndim)
        return out
    axes = [axis]
    shape, raxes = _split(x, axes, keepdims)
    reducer = _arg_reducer(largest)
    name = "T_argmax" if largest else "T_argmin"

    def f(*i: Any) -> Any:
        src = _source_index(x, axes, keepdims, i, raxes)
        return reducer((tir.Cast("int64", raxes[0].var) if raxes[0].var.dtype != "int64"
                        else raxes[0].var, x(*src)), axis=raxes)

    return te.compute(shape, f, name=name)[0]
