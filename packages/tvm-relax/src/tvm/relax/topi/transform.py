"""Shape manipulation and indexing te computes.

The functions take arguments already normalised by the operator declarations (axes in
range, slice starts resolved); shapes may be symbolic.
"""

from __future__ import annotations

from typing import Any, Sequence

from tvm import te, tir
from tvm.tir.expr import EQ, GE, GT, LT, FloorDiv, FloorMod, IntImm, Max, Min, PrimExpr, Select

from tvm.arith import Analyzer

from ._util import cast, checked_index, int64, is_float, simplify
from .elemwise import _operand

__all__ = [
    "reshape", "permute_dims", "squeeze", "expand_dims", "broadcast_to", "tile", "flip",
    "repeat", "concat", "split", "strided_slice", "take", "gather_elements", "gather_nd", "pad",
    "full", "arange", "eye", "trilu", "ravel_index", "unravel_index", "one_hot", "shape_values",
]


def ravel_index(idx: Sequence[PrimExpr], shape: Sequence[PrimExpr]) -> PrimExpr:
    """Row-major linear position of ``idx`` in ``shape``."""
    lin: PrimExpr = IntImm("int64", 0)
    for i, d in zip(idx, shape):
        lin = lin * int64(d) + int64(i)
    return lin


def unravel_index(lin: PrimExpr, shape: Sequence[PrimExpr]) -> list[PrimExpr]:
    """The index of row-major position ``lin`` in ``shape``."""
    out = []
    for d in reversed(shape):
        d = int64(d)
        out.append(simplify(FloorMod(lin, d)))
        lin = FloorDiv(lin, d)
    return list(reversed(out))


def reshape(x: te.Tensor, shape: Sequence[PrimExpr]) -> te.Tensor:
    """``x``'s elements in row-major order, viewed with ``shape``.

    Leading and trailing dimensions the two shapes share map their indices unchanged; only
    the dimensions between are linearized and split again (``[b, s, 512] -> [b, s, 8, 64]``
    reads ``x[i0, i1, i2 * 64 + i3]``, with no division by the symbolic ``s``)."""
    shape = tuple(shape)
    n_in, n_out = x.ndim, len(shape)
    lead = 0
    while lead < min(n_in, n_out) and _same_dim(shape[lead], x.shape[lead]):
        lead += 1
    trail = 0
    while trail < min(n_in, n_out) - lead and \
            _same_dim(shape[n_out - 1 - trail], x.shape[n_in - 1 - trail]):
        trail += 1
    if lead == n_in == n_out:
        return te.compute(shape, lambda *i: x(*i), name="T_reshape")
    mid_out, mid_in = shape[lead:n_out - trail], x.shape[lead:n_in - trail]

    def f(*i: Any) -> PrimExpr:
        analyzer = Analyzer()
        for v, d in zip(i, shape):
            analyzer.bind(v, tir.Range(IntImm("int64", 0), int64(d)))
        mid = unravel_index(ravel_index(i[lead:n_out - trail], mid_out), mid_in)
        mid = [analyzer.simplify(e) for e in mid]
        return x(*i[:lead], *mid, *i[n_out - trail:])

    return te.compute(shape, f, name="T_reshape")


def _same_dim(a: Any, b: Any) -> bool:
    diff = simplify(int64(a) - int64(b))
    return isinstance(diff, IntImm) and diff.value == 0


def permute_dims(x: te.Tensor, axes: Sequence[int]) -> te.Tensor:
    """``out[i_0, ..., i_n] = x[j]`` with ``j[axes[k]] = i_k``."""
    shape = tuple(x.shape[a] for a in axes)

    def f(*i: Any) -> PrimExpr:
        src = [None] * x.ndim
        for k, a in enumerate(axes):
            src[a] = i[k]
        return x(*src)

    return te.compute(shape, f, name="T_transpose")


def squeeze(x: te.Tensor, axes: Sequence[int]) -> te.Tensor:
    """``x`` without the (size-1) dimensions ``axes``."""
    keep = [d for d in range(x.ndim) if d not in axes]

    def f(*i: Any) -> PrimExpr:
        it = iter(i)
        return x(*[next(it) if d in keep else IntImm("int64", 0) for d in range(x.ndim)])

    return te.compute(tuple(x.shape[d] for d in keep), f, name="T_squeeze")


def expand_dims(x: te.Tensor, axes: Sequence[int]) -> te.Tensor:
    """``x`` with size-1 dimensions inserted at output positions ``axes``."""
    ndim = x.ndim + len(axes)
    shape, it = [], iter(x.shape)
    for d in range(ndim):
        shape.append(IntImm("int64", 1) if d in axes else next(it))
    return te.compute(
        tuple(shape), lambda *i: x(*[i[d] for d in range(ndim) if d not in axes]),
        name="T_expand_dims",
    )


def broadcast_to(x: Any, shape: Sequence[PrimExpr]) -> te.Tensor:
    _, fx = _operand(x)
    return te.compute(tuple(shape), lambda *i: fx(i), name="T_broadcast_to")


def tile(x: te.Tensor, repeats: Sequence[int]) -> te.Tensor:
    """numpy ``tile``: the shorter of ``x.shape`` / ``repeats`` is padded with leading 1s."""
    ndim = max(x.ndim, len(repeats))
    reps = [1] * (ndim - len(repeats)) + list(repeats)
    shape = [IntImm("int64", 1)] * (ndim - x.ndim) + list(x.shape)
    out_shape = tuple(simplify(int64(d) * r) for d, r in zip(shape, reps))
    off = ndim - x.ndim

    def f(*i: Any) -> PrimExpr:
        return x(*[FloorMod(i[off + k], int64(x.shape[k])) if reps[off + k] != 1 else i[off + k]
                   for k in range(x.ndim)])

    return te.compute(out_shape, f, name="T_tile")


def flip(x: te.Tensor, axis: int) -> te.Tensor:
    def f(*i: Any) -> PrimExpr:
        src = list(i)
        src[axis] = int64(x.shape[axis]) - 1 - i[axis]
        return x(*src)

    return te.compute(x.shape, f, name="T_reverse_sequence")


def repeat(x: te.Tensor, repeats: int, axis: int) -> te.Tensor:
    """numpy ``repeat`` of each element along ``axis`` (flatten ``x`` first for axis=None)."""
    shape = list(x.shape)
    shape[axis] = simplify(int64(shape[axis]) * repeats)

    def f(*i: Any) -> PrimExpr:
        src = list(i)
        src[axis] = FloorDiv(i[axis], int64(repeats))
        return x(*src)

    return te.compute(tuple(shape), f, name="T_repeat")


def concat(tensors: Sequence[te.Tensor], axis: int) -> te.Tensor:
    """The tensors joined along ``axis`` (other dimensions equal)."""
    tensors = list(tensors)
    offsets: list[PrimExpr] = [IntImm("int64", 0)]
    for t in tensors:
        offsets.append(simplify(offsets[-1] + int64(t.shape[axis])))
    shape = list(tensors[0].shape)
    shape[axis] = offsets[-1]

    def f(*i: Any) -> PrimExpr:
        def load(k: int) -> PrimExpr:
            src = list(i)
            src[axis] = i[axis] - offsets[k]
            return tensors[k](*src)

        value = load(len(tensors) - 1)
        for k in range(len(tensors) - 2, -1, -1):
            value = tir.if_then_else(LT(i[axis], offsets[k + 1]), load(k), value)
        return value

    return te.compute(tuple(shape), f, name="T_concat")


def split(x: te.Tensor, bounds: Sequence[PrimExpr], axis: int) -> list[te.Tensor]:
    """Pieces ``x[..., bounds[k]:bounds[k+1], ...]`` along ``axis``."""
    outs = []
    for k in range(len(bounds) - 1):
        start = bounds[k]
        shape = list(x.shape)
        shape[axis] = simplify(int64(bounds[k + 1]) - int64(start))

        def f(*i: Any, start: PrimExpr = start) -> PrimExpr:
            src = list(i)
            src[axis] = i[axis] + start
            return x(*src)

        outs.append(te.compute(tuple(shape), f, name=f"T_split_{k}"))
    return outs


def strided_slice(
    x: te.Tensor, starts: Sequence[PrimExpr], strides: Sequence[int], shape: Sequence[PrimExpr]
) -> te.Tensor:
    """``out[i] = x[starts + i * strides]`` per dimension (bounds resolved by the caller)."""

    def f(*i: Any) -> PrimExpr:
        return x(*[int64(s) + i[d] * strides[d] if strides[d] != 1 else int64(s) + i[d]
                   for d, s in enumerate(starts)])

    return te.compute(tuple(shape), f, name="T_strided_slice")


def _wrap_index(index: PrimExpr, size: PrimExpr, mode: str, op: str, axis: int) -> PrimExpr:
    if mode == "fast":
        return checked_index(index, size, op, axis)
    index, size = int64(index), simplify(int64(size))
    pos = Min(Max(index, IntImm("int64", 0)), size - 1) if mode == "clip" else FloorMod(index, size)
    # clip and wrap accept every index, but not an empty axis (no element to clip/wrap to)
    return tir.checked(pos, GT(size, IntImm("int64", 0)),
                       f"{op}: index %lld into axis {axis} of size 0", index)


def take(x: te.Tensor, indices: te.Tensor, axis: int, mode: str = "fast") -> te.Tensor:
    """``x`` indexed along ``axis`` by ``indices``; ``mode``: fast (negative indices count
    from the end, an index out of range is a run-time error), clip or wrap."""
    shape = (*x.shape[:axis], *indices.shape, *x.shape[axis + 1:])
    k = indices.ndim

    def f(*i: Any) -> PrimExpr:
        pos = _wrap_index(indices(*i[axis:axis + k]), x.shape[axis], mode, "take", axis)
        return x(*i[:axis], pos, *i[axis + k:])

    return te.compute(shape, f, name="T_take")


def gather_elements(x: te.Tensor, indices: te.Tensor, axis: int) -> te.Tensor:
    """``out[i] = x[i with i[axis] replaced by indices[i]]``."""

    def f(*i: Any) -> PrimExpr:
        src = list(i)
        src[axis] = _wrap_index(indices(*i), x.shape[axis], "fast", "gather_elements", axis)
        return x(*src)

    return te.compute(indices.shape, f, name="T_gather_elements")


def gather_nd(x: te.Tensor, indices: te.Tensor, batch_dims: int = 0) -> te.Tensor:
    """ONNX ``GatherND``: the last axis of ``indices`` (length M) indexes ``x``'s dimensions
    ``batch_dims .. batch_dims + M``; the first ``batch_dims`` dimensions are shared."""
    m = int(indices.shape[-1])
    shape = (*indices.shape[:-1], *x.shape[batch_dims + m:])
    nlead = indices.ndim - 1

    def f(*i: Any) -> PrimExpr:
        lead = i[:nlead]
        src = list(lead[:batch_dims])
        for j in range(m):
            pos = indices(*lead, IntImm("int64", j))
            src.append(_wrap_index(pos, x.shape[batch_dims + j], "fast", "gather_nd",
                                   batch_dims + j))
        src.extend(i[nlead:])
        return x(*src)

    return te.compute(shape, f, name="T_gather_nd")


def pad(
    x: te.Tensor,
    before: Sequence[int],
    after: Sequence[int],
    mode: str = "constant",
    value: float = 0.0,
) -> te.Tensor:
    """``x`` padded per dimension; ``mode`` constant (``value``), edge, reflect (mirror
    without repeating the edge, numpy's ``reflect``: a pad wider than the dimension reflects
    again) or wrap (periodic).  Every source index stays inside the input whatever the
    (symbolic) dimension is; an empty dimension padded by edge/reflect/wrap fails the
    kernel with an error (there is no element to repeat)."""
    shape = tuple(simplify(int64(d) + b + a) for d, b, a in zip(x.shape, before, after))
    zero, one = IntImm("int64", 0), IntImm("int64", 1)

    def f(*i: Any) -> PrimExpr:
        src, inside = [], []
        for d, (idx, b) in enumerate(zip(i, before)):
            n = int64(x.shape[d])
            j = idx - b if b else idx
            padded = bool(b or after[d])
            if mode == "edge" and padded:
                j = Min(Max(j, zero), n - 1)
            elif mode == "reflect" and padded:
                period = Max(2 * (n - 1), one)
                m = FloorMod(j, period)
                j = Select(GE(m, n), period - m, m)
            elif mode == "wrap" and padded:
                j = FloorMod(j, Max(n, one))
            if mode != "constant" and padded:
                j = tir.checked(j, GT(n, zero), f"pad: {mode} padding of axis {d}, which is "
                                "empty")
            elif b or after[d]:
                inside.append(tir.all(GE(j, IntImm("int64", 0)), LT(j, n)))
            src.append(j)
        if mode != "constant" or not inside:
            return x(*src)
        return tir.if_then_else(tir.all(*inside), x(*src), cast(value, x.dtype))

    return te.compute(shape, f, name="T_pad")


def full(shape: Sequence[PrimExpr], value: Any, dtype: str) -> te.Tensor:
    """A tensor of ``shape`` filled with ``value`` (a 0-d te tensor or a scalar)."""
    if isinstance(value, te.Tensor):
        fill = cast(value(*[IntImm("int64", 0)] * value.ndim), dtype)
    else:
        fill = cast(value, dtype)
    return te.compute(tuple(shape), lambda *i: fill, name="T_full")


def shape_values(values: Sequence[PrimExpr]) -> te.Tensor:
    """The int64 1-d tensor of ``values`` (a shape's dimensions, possibly symbolic): entry
    ``i`` selects ``values[i]``."""
    exprs = [int64(v) for v in values]

    def f(i: Any) -> PrimExpr:
        if not exprs:
            return IntImm("int64", 0)
        out = exprs[-1]
        for k in range(len(exprs) - 2, -1, -1):
            out = Select(EQ(i, IntImm(i.dtype, k)), exprs[k], out)
        return out

    return te.compute((IntImm("int64", len(exprs)),), f, name="shape_values")


def arange(start: Any, step: Any, length: PrimExpr, dtype: str) -> te.Tensor:
    """``start + i * step`` for ``i < length``."""

    def f(i: Any) -> PrimExpr:
        if is_float(dtype):
            return cast(start, dtype) + cast(i, dtype) * cast(step, dtype)
        return cast(int64(start) + i * int64(step), dtype)

    return te.compute((length,), f, name="T_arange")


def eye(n: PrimExpr, m: PrimExpr, k: int, dtype: str) -> te.Tensor:
    """Ones on the ``k``-th diagonal."""
    return te.compute(
        (n, m),
        lambda i, j: Select(EQ(j - i, IntImm("int64", k)), cast(1, dtype), cast(0, dtype)),
        name="T_eye",
    )


def trilu(x: te.Tensor, k: int, upper: bool) -> te.Tensor:
    """``x`` with the elements above (tril) or below (triu) the ``k``-th diagonal zeroed."""

    def f(*i: Any) -> PrimExpr:
        r, c = i[-2], i[-1]
        keep = GE(c - r, IntImm("int64", k)) if upper else GE(IntImm("int64", k), c - r)
        return Select(keep, x(*i), cast(0, x.dtype))

    return te.compute(x.shape, f, name="T_triu" if upper else "T_tril")


def one_hot(indices: te.Tensor, values: te.Tensor, depth: PrimExpr, axis: int) -> te.Tensor:
    """``values[1]`` where the new axis ``axis`` (length ``depth``) equals the index (negative
    indices count from the end), ``values[0]`` elsewhere."""
    shape = list(indices.shape)
    shape.insert(axis, depth)
    n = int64(depth)

    def f(*idx: PrimExpr) -> PrimExpr:
        rest = list(idx)
        pos = rest.pop(axis)
        raw = int64(indices(*rest))
        wrapped = Select(LT(raw, IntImm("int64", 0)), raw + n, raw)
        return Select(EQ(wrapped, pos), values(IntImm("int64", 1)), values(IntImm("int64", 0)))

    return te.compute(tuple(shape), f, name="one_hot")
