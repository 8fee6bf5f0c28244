"""Converters for views, copies, dtype casts, joining/splitting, slicing, movement and padding.

Shapes may hold symbolic sizes (int64 PrimExprs from ``torch.export.Dim``).  Where the shape
Relax infers for a result is not provably the one torch recorded (a clamped slice bound, a
data-dependent slice), :func:`with_torch_shape` casts the result to torch's shape, so later
nodes see the sizes in torch's own terms.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from tvm.tir.expr import IntImm, PrimExpr

from ... import op as _op
from ...analysis.struct_info_analysis import prim_equal
from ...expr import ShapeExpr
from ...struct_info import TensorStructInfo
from .common import NodeContext, converter

_INT64_MAX = 2**63 - 1


# -- shared helpers ------------------------------------------------------------------------
def with_torch_shape(ctx: NodeContext, expr: Any, index: int = 0) -> Any:
    """``expr`` with the shape torch recorded for output ``index`` when Relax's inferred
    shape is not provably equal to it (a run-time checked ``match_cast``)."""
    want = ctx.out_shape(index)
    expr = ctx.bb.normalize(expr)
    sinfo = expr.struct_info
    have = sinfo.shape_values if isinstance(sinfo, TensorStructInfo) else None
    if want is None:
        return expr
    if have is not None and len(have) == len(want) and all(
        prim_equal(_prim(a), _prim(b), ctx.bb.analyzer) is True for a, b in zip(have, want)
    ):
        return expr
    var = expr if _is_var(expr) else ctx.emit(expr)
    return ctx.bb.match_cast(var, TensorStructInfo([_prim(d) for d in want], sinfo.dtype))


def _is_var(expr: Any) -> bool:
    from ...expr import Var

    return isinstance(expr, Var)


def _prim(value: Any) -> PrimExpr:
    return IntImm("int64", int(value)) if isinstance(value, int) else value


def is_static(*values: Any) -> bool:
    """Every value a plain int (no symbolic size)."""
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def int_arg(ctx: NodeContext, value: Any, what: str) -> int:
    """``value`` as a Python int; a symbolic size is rejected naming ``what``."""
    if isinstance(value, IntImm):
        return int(value.value)
    if not is_static(value):
        raise ctx.unsupported(f"{what} must be a constant integer, got the symbolic {value}")
    return int(value)


def slice_axis(ctx: NodeContext, x: Any, axis: int, start: Any, end: Any, step: int) -> Any:
    """``x[start:end:step]`` along ``axis`` with torch's bounds (negative from the end,
    clamped; ``None`` for the ends).  Symbolic bounds go through a run-time slice."""
    if step <= 0:
        raise ctx.error(f"slice step must be positive, got {step}")
    start = 0 if start is None else start
    end = _INT64_MAX if end is None else end
    if is_static(start, end):
        begin, stop = min(max(start, -_INT64_MAX), _INT64_MAX), min(end, _INT64_MAX)
        if begin == 0 and stop >= _INT64_MAX and step == 1:
            return x
        dim = ctx.shape(x)[axis]
        if is_static(dim) and (begin, stop) == (0, dim) and step == 1:
            return x
        return _op.strided_slice(x, [axis], [begin], [max(stop, -_INT64_MAX)], [step])
    bounds = [_op.shape_to_tensor(ShapeExpr([_prim(v)])) for v in (start, end)]
    strides = ctx.const([step], "int64")
    return _op.dynamic_strided_slice(x, bounds[0], bounds[1], strides, axes=[axis])


def _dims(ctx: NodeContext, value: Any, ndim: int) -> list[int]:
    """A dim or list of dims normalised to ``[0, ndim)``."""
    values = [value] if isinstance(value, int) else list(value)
    return [ctx.axis(int_arg(ctx, d, "dim"), ndim) for d in values]


def _check_layout(ctx: NodeContext) -> None:
    """Reject ``layout`` / ``device`` keyword values that change what a tensor holds."""
    layout = ctx.kwargs.get("layout")
    if layout is not None and str(layout) != "torch.strided":
        raise ctx.unsupported(f"layout {layout} (only torch.strided tensors)")
    device = ctx.kwargs.get("device")
    if device is not None and str(device).startswith("meta"):
        raise ctx.unsupported("device 'meta' (a tensor without data)")


# -- views ---------------------------------------------------------------------------------
@converter("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
           "aten.view_copy.default",
           "aten.flatten.using_ints", "aten.unflatten.int", "aten.view_as.default",
           "aten.reshape_as.default")
def _view(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    return _op.reshape(x, ctx.out_shape())


@converter("aten.view.dtype")
def _view_dtype(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    want = ctx.out_dtype()
    if ctx.dtype(x) == want:
        return x
    from tvm.ir.dtype import DataType

    if DataType(want).bits != DataType(ctx.dtype(x)).bits:
        raise ctx.unsupported(f"viewing {ctx.dtype(x)} as {want} (different element sizes)")
    return _op.bitcast(x, want)


@converter("aten.permute.default", "aten.permute_copy.default")
def _permute(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    ndim = ctx.ndim(x)
    if ndim == 0:
        return x
    return _op.permute_dims(x, [ctx.axis(d, ndim) for d in ctx.arg(1, "dims")])


@converter("aten.transpose.int", "aten.transpose_copy.int")
def _transpose(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    ndim = ctx.ndim(x)
    a, b = (ctx.axis(ctx.arg(i, n), ndim) for i, n in ((1, "dim0"), (2, "dim1")))
    if ndim < 2 or a == b:
        return x
    axes = list(range(ndim))
    axes[a], axes[b] = b, a
    return _op.permute_dims(x, axes)


@converter("aten.t.default", "aten.t_copy.default", "aten.numpy_T.default")
def _t(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.op == "aten.t.default" and ctx.ndim(x) > 2:
        raise ctx.error(f"t() expects a tensor of at most 2 dimensions, got {ctx.ndim(x)}")
    return x if ctx.ndim(x) < 2 else _op.permute_dims(x, None)


@converter("aten.expand.default", "aten.expand_copy.default", "aten.expand_as.default",
           "aten.broadcast_to.default")
def _expand(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    return _op.broadcast_to(x, ctx.out_shape())


@converter("aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
           "aten.squeeze_copy.default", "aten.squeeze_copy.dim", "aten.squeeze_copy.dims")
def _squeeze(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    ndim = ctx.ndim(x)
    shape = ctx.shape(x)
    if ndim == 0:
        return x
    dims = range(ndim) if ctx.op.endswith(".default") else _dims(ctx, ctx.arg(1, "dim"), ndim)
    axes = sorted({d for d in dims if shape[d] == 1})
    return _op.squeeze(x, axes) if axes else x


@converter("aten.unsqueeze.default", "aten.unsqueeze_copy.default")
def _unsqueeze(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    return _op.expand_dims(x, ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x) + 1))


@converter("aten.movedim.int", "aten.movedim.intlist", "aten.moveaxis.int",
           "aten.moveaxis.intlist")
def _movedim(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    ndim = ctx.ndim(x)
    src, dst = _dims(ctx, ctx.arg(1, "source"), ndim), _dims(ctx, ctx.arg(2, "destination"), ndim)
    if len(src) != len(dst):
        raise ctx.error(f"source {src} and destination {dst} differ in length")
    order = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    axes = [o if o is not None else next(rest) for o in order]
    return x if axes == list(range(ndim)) else _op.permute_dims(x, axes)


# -- copies and casts ----------------------------------------------------------------------
@converter("aten.alias.default", "aten.alias_copy.default", "aten.detach.default",
           "aten.detach_copy.default", "aten.lift_fresh_copy.default",
           "aten.lift_fresh.default", "aten.contiguous.default", "aten.clone.default")
def _identity(ctx: NodeContext) -> Any:
    # memory_format only changes strides, never values
    return ctx.tensor(0)


@converter("aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout",
           "aten.type_as.default", "aten._to_dim_order_copy.default")
def _to_copy(ctx: NodeContext) -> Any:
    _check_layout(ctx)
    return ctx.astype(ctx.tensor(0), ctx.out_dtype())


@converter("aten._assert_tensor_metadata.default")
def _assert_metadata(ctx: NodeContext) -> Any:
    """torch's check of a tensor's dtype/device after ``.to()``: the importer's own check of
    every result's dtype covers it, so it converts to nothing."""
    return None


@converter("aten.copy.default")
def _copy(ctx: NodeContext) -> Any:
    dst, src = ctx.tensor(0), ctx.tensor(1)
    src = ctx.astype(src, ctx.dtype(dst))
    return _op.broadcast_to(src, ctx.shape(dst))


# -- joining and splitting -----------------------------------------------------------------
@converter("aten.cat.default", "aten.concat.default", "aten.concatenate.default")
def _cat(ctx: NodeContext) -> Any:
    tensors = list(ctx.arg(0, "tensors"))
    dtype = ctx.out_dtype()
    ndim = len(ctx.out_shape())
    # torch skips 1-d empty tensors whatever the other ranks are (legacy behaviour)
    kept = [t for t in tensors if not (ctx.ndim(t) == 1 and ctx.shape(t)[0] == 0 and ndim != 1)]
    kept = [ctx.astype(t, dtype) for t in kept]
    if not kept:
        return _op.zeros([0], dtype)
    axis = ctx.axis(ctx.arg(1, "dim", 0), ndim)
    if len(kept) == 1:
        return kept[0]
    return with_torch_shape(ctx, _op.concat(kept, axis))


@converter("aten.stack.default")
def _stack(ctx: NodeContext) -> Any:
    tensors = list(ctx.arg(0, "tensors"))
    dtype = ctx.out_dtype()
    axis = ctx.axis(ctx.arg(1, "dim", 0), len(ctx.out_shape()))
    parts = [_op.expand_dims(ctx.astype(t, dtype), axis) for t in tensors]
    return with_torch_shape(ctx, parts[0] if len(parts) == 1 else _op.concat(parts, axis))


def _split_at(ctx: NodeContext, x: Any, axis: int, sizes: Sequence[Any]) -> list[Any]:
    """``x`` cut along ``axis`` into consecutive pieces of ``sizes``."""
    dim = ctx.shape(x)[axis]
    if is_static(dim, *sizes) and len(sizes) > 1:
        if sum(sizes) != dim:
            raise ctx.error(f"split sizes {list(sizes)} do not add up to dimension {dim}")
        cuts, total = [], 0
        for s in sizes[:-1]:
            total += s
            cuts.append(total)
        parts = ctx.emit(_op.split(x, cuts, axis))
        from ...expr import TupleGetItem

        return [ctx.emit(TupleGetItem(parts, i)) for i in range(len(sizes))]
    out, start = [], 0
    for i, s in enumerate(sizes):
        piece = slice_axis(ctx, x, axis, start, start + s, 1)
        out.append(ctx.emit(with_torch_shape(ctx, piece, i)) if piece is not x else x)
        start = start + s
    return out


@converter("aten.split_with_sizes.default", "aten.unsafe_split_with_sizes.default",
           "aten.split_with_sizes_copy.default")
def _split_with_sizes(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    axis = ctx.axis(ctx.arg(2, "dim", 0), ctx.ndim(x))
    return _split_at(ctx, x, axis, list(ctx.arg(1, "split_sizes")))


@converter("aten.split.Tensor", "aten.unsafe_split.Tensor")
def _split(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    axis = ctx.axis(ctx.arg(2, "dim", 0), ctx.ndim(x))
    sizes = [shape[axis] for shape in (ctx.out_shape(i) for i in range(len(ctx.meta())))]
    return _split_at(ctx, x, axis, sizes)


@converter("aten.unbind.int", "aten.unbind_copy.int")
def _unbind(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    axis = ctx.axis(ctx.arg(1, "dim", 0), ctx.ndim(x))
    n = int_arg(ctx, ctx.shape(x)[axis], "the unbound dimension")
    pieces = _split_at(ctx, x, axis, [1] * n) if n > 1 else [x]
    return [ctx.emit(_op.squeeze(p, [axis])) for p in pieces[:n]]


# -- slicing -------------------------------------------------------------------------------
@converter("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    axis = ctx.axis(ctx.arg(1, "dim", 0), ctx.ndim(x))
    step = int_arg(ctx, ctx.arg(4, "step", 1), "step")
    out = slice_axis(ctx, x, axis, ctx.arg(2, "start"), ctx.arg(3, "end"), step)
    return out if out is x else with_torch_shape(ctx, out)


@converter("aten.narrow.default", "aten.narrow_copy.default")
def _narrow(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    start, length = ctx.arg(2, "start"), ctx.arg(3, "length")
    if is_static(start) and start < 0:
        start = start + ctx.shape(x)[axis]
    out = slice_axis(ctx, x, axis, start, start + length, 1)
    return out if out is x else with_torch_shape(ctx, out)


@converter("aten.select.int", "aten.select_copy.int")
def _select(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    index = ctx.arg(2, "index")
    if is_static(index):
        dim = ctx.shape(x)[axis]
        if is_static(dim) and not -dim <= index < dim:
            raise ctx.error(f"index {index} is out of range for dimension {axis} of size {dim}")
        stop = index + 1 if index != -1 else _INT64_MAX
        piece = _op.strided_slice(x, [axis], [index], [stop], [1])
        return _op.squeeze(piece, [axis])
    return _op.take(x, ctx.importer.to_expr(index, "int64"), axis)


@converter("aten.index_select.default")
def _index_select(ctx: NodeContext) -> Any:
    x, index = ctx.tensor(0), ctx.tensor(2, "index")
    if ctx.ndim(x) == 0:
        x = _op.reshape(x, [1])
    axis = ctx.axis(ctx.arg(1, "dim"), ctx.ndim(x))
    if ctx.ndim(index) == 0:
        index = _op.reshape(index, [1])
    out = _op.take(x, index, axis)
    return _op.reshape(out, ctx.out_shape()) if len(ctx.out_shape()) != ctx.ndim(x) else out


@converter("aten.unfold.default", "aten.unfold_copy.default")
def _unfold(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    ndim = ctx.ndim(x)
    if ndim == 0:
        x, ndim = _op.reshape(x, [1]), 1
    axis = ctx.axis(ctx.arg(1, "dimension"), ndim)
    size, step = (int_arg(ctx, ctx.arg(i, n), n) for i, n in ((2, "size"), (3, "step")))
    windows = ctx.out_shape()[axis] if ctx.ndim(ctx.tensor(0)) else 1
    starts = _op.reshape(_op.multiply(_op.arange(0, windows, 1, "int64"),
                                      ctx.const(step, "int64")), [-1, 1])
    index = _op.add(starts, _op.reshape(_op.arange(0, size, 1, "int64"), [1, size]))
    taken = _op.take(x, index, axis)  # [..., windows, size, ...]
    order = [d for d in range(ndim + 1) if d != axis + 1] + [axis + 1]
    out = _op.permute_dims(taken, order)
    return _op.reshape(out, ctx.out_shape()) if ctx.ndim(ctx.tensor(0)) == 0 else out


@converter("aten.as_strided.default", "aten.as_strided_copy.default")
def _as_strided(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    meta = ctx.arg_meta(0)
    if meta is None or not meta.is_contiguous() or int(meta.storage_offset()) != 0:
        raise ctx.unsupported("as_strided of a tensor that is not contiguous from the start "
                              "of its storage (its storage is not what the program holds)")
    sizes = [int_arg(ctx, s, "size") for s in ctx.arg(1, "size")]
    strides = [int_arg(ctx, s, "stride") for s in ctx.arg(2, "stride")]
    offset = int_arg(ctx, ctx.arg(3, "storage_offset", 0) or 0, "storage_offset")
    if len(sizes) != len(strides):
        raise ctx.error(f"size {sizes} and stride {strides} differ in length")
    total = 1
    for d in ctx.shape(x):
        total = total * d
    if is_static(total) and sizes and all(sizes):
        last = offset + sum((n - 1) * s for n, s in zip(sizes, strides))
        if last >= total:
            raise ctx.error(f"size {sizes} and stride {strides} read past the {total} elements")
    index: Any = ctx.const(offset, "int64")
    for d, (n, s) in enumerate(zip(sizes, strides)):
        view = [1] * len(sizes)
        view[d] = n
        term = _op.multiply(_op.arange(0, n, 1, "int64"), ctx.const(s, "int64"))
        index = _op.add(index, _op.reshape(term, view))
    return _op.take(_op.reshape(x, [-1]), index, 0)


# -- movement ------------------------------------------------------------------------------
@converter("aten.flip.default")
def _flip(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.ndim(x) == 0:
        return x
    for axis in _dims(ctx, ctx.arg(1, "dims"), ctx.ndim(x)):
        x = _op.flip(x, axis)
    return x


@converter("aten.roll.default")
def _roll(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    shifts = ctx.arg(1, "shifts")
    shifts = [shifts] if not isinstance(shifts, (list, tuple)) else list(shifts)
    dims = ctx.arg(2, "dims", [])
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    shape = ctx.shape(x)
    if not dims:
        if len(shifts) != 1:
            raise ctx.error(f"shifts {shifts} need dims of the same length")
        flat = _op.reshape(x, [-1])
        return _op.reshape(_roll_axis(ctx, ctx.emit(flat), 0, shifts[0]), shape)
    if len(shifts) != len(dims):
        raise ctx.error(f"shifts {shifts} and dims {dims} differ in length")
    for shift, d in zip(shifts, dims):
        x = ctx.emit(_roll_axis(ctx, x, ctx.axis(d, ctx.ndim(x)), shift))
    return x


def _roll_axis(ctx: NodeContext, x: Any, axis: int, shift: Any) -> Any:
    dim = ctx.shape(x)[axis]
    if is_static(dim, shift):
        if dim == 0 or shift % dim == 0:
            return x
        k = shift % dim
        head = _op.strided_slice(x, [axis], [dim - k], [dim], [1])
        tail = _op.strided_slice(x, [axis], [0], [dim - k], [1])
        return _op.concat([head, tail], axis)
    # out[i] = x[(i - shift) mod dim]
    n = ctx.importer.to_expr(dim, "int64")
    index = _op.floor_mod(_op.subtract(_op.arange(0, dim, 1, "int64"),
                                       ctx.importer.to_expr(shift, "int64")), n)
    return _op.take(x, index, axis)


@converter("aten.repeat.default")
def _repeat(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    reps = [int_arg(ctx, r, "repeats") for r in ctx.arg(1, "repeats")]
    ndim = ctx.ndim(x)
    if len(reps) < ndim:
        raise ctx.error(f"repeats {reps} has fewer entries than the tensor's {ndim} dimensions")
    if len(reps) > ndim:
        x = _op.reshape(x, [1] * (len(reps) - ndim) + ctx.shape(x))
    if all(r == 1 for r in reps):
        return x
    return with_torch_shape(ctx, _op.tile(x, reps))


@converter("aten.repeat_interleave.self_int")
def _repeat_interleave(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    reps = int_arg(ctx, ctx.arg(1, "repeats"), "repeats")
    dim = ctx.arg(2, "dim")
    axis = None if dim is None else ctx.axis(dim, ctx.ndim(x))
    if axis is not None and ctx.ndim(x) == 0:
        x, axis = _op.reshape(x, [1]), 0
    return with_torch_shape(ctx, _op.repeat(x, reps, axis))


@converter("aten.tril.default", "aten.triu.default")
def _trilu(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    k = int_arg(ctx, ctx.arg(1, "diagonal", 0), "diagonal")
    return (_op.tril if ctx.op.startswith("aten.tril") else _op.triu)(x, k)


def diagonal_plan(ctx: NodeContext, x: Any, offset: Any, dim1: Any, dim2: Any,
                  length: Any) -> tuple:
    """How to address torch's ``diagonal(x, offset, dim1, dim2)`` (``length`` entries):
    the permutation moving the two dims last, the flattened shape of the moved tensor and
    the int64 positions of the diagonal along its last (flattened) axis."""
    ndim = ctx.ndim(x)
    offset = int_arg(ctx, offset, "offset")
    d1, d2 = ctx.axis(dim1, ndim), ctx.axis(dim2, ndim)
    if d1 == d2:
        raise ctx.error(f"dim1 and dim2 are both {d1}")
    rest = [d for d in range(ndim) if d not in (d1, d2)]
    shape = ctx.shape(x)
    n2 = shape[d2]
    flat_shape = [shape[d] for d in rest] + [shape[d1] * n2]
    row0, col0 = max(0, -offset), max(0, offset)
    step = ctx.importer.to_expr(n2 + 1, "int64")
    first = ctx.importer.to_expr(row0 * n2 + col0, "int64")
    index = _op.add(_op.multiply(_op.arange(0, length, 1, "int64"), step), first)
    return rest + [d1, d2], flat_shape, index


@converter("aten.diagonal.default", "aten.diagonal_copy.default")
def _diagonal(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    order, flat_shape, index = diagonal_plan(
        ctx, x, ctx.arg(1, "offset", 0), ctx.arg(2, "dim1", 0), ctx.arg(3, "dim2", 1),
        ctx.out_shape()[-1])
    flat = _op.reshape(_op.permute_dims(x, order), flat_shape)
    return with_torch_shape(ctx, _op.take(flat, index, len(flat_shape) - 1))


# -- padding -------------------------------------------------------------------------------
def _pad(ctx: NodeContext, x: Any, pads: Sequence[Any], mode: str, value: float = 0.0) -> Any:
    """torch padding (``pads`` = (before, after) pairs from the last dimension backwards;
    negative entries crop) as a slice then a ``relax.nn.pad``."""
    pads = [int_arg(ctx, p, "pad") for p in pads]
    ndim = ctx.ndim(x)
    if len(pads) % 2 or len(pads) // 2 > ndim:
        raise ctx.error(f"pad {pads} must hold (before, after) pairs for at most {ndim} "
                        "dimensions")
    width = [0] * (2 * ndim)
    for k in range(len(pads) // 2):
        d = ndim - 1 - k
        width[2 * d], width[2 * d + 1] = pads[2 * k], pads[2 * k + 1]
    for d in range(ndim):
        before, after = width[2 * d], width[2 * d + 1]
        if before < 0 or after < 0:
            if mode == "reflect":
                raise ctx.error(f"negative padding {pads} is not allowed for reflection")
            if mode == "edge":  # out[i] = x[clamp(i - before, 0, n - 1)]
                n = int_arg(ctx, ctx.shape(x)[d], f"dimension {d} (replication with negative "
                                                  "padding)")
                index = np.clip(np.arange(-before, n + after), 0, n - 1)
                x = ctx.emit(_op.take(x, ctx.const(index, "int64"), d))
                width[2 * d], width[2 * d + 1] = 0, 0
                continue
            end = after if after < 0 else _INT64_MAX
            x = ctx.emit(_op.strided_slice(x, [d], [max(-before, 0)], [end], [1]))
            width[2 * d], width[2 * d + 1] = max(before, 0), max(after, 0)
    if not any(width):
        return x
    if mode == "reflect":
        shape = ctx.shape(x)
        for d in range(ndim):
            widest = max(width[2 * d], width[2 * d + 1])
            if widest and is_static(shape[d]) and widest >= shape[d]:
                raise ctx.error(f"reflection padding {pads} must be smaller than the padded "
                                f"dimension {d} of size {shape[d]}")
    return _op.nn.pad(x, width, mode, value)


@converter("aten.constant_pad_nd.default")
def _constant_pad(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    value = ctx.arg(2, "value", 0)
    if not isinstance(value, (int, float)):
        raise ctx.unsupported(f"pad value {value!r} (a number is needed)")
    if ctx.dtype(x) == "bool" or (isinstance(value, float) and value != int(value)
                                  and not ctx.dtype(x).startswith(("float", "bfloat"))):
        raise ctx.unsupported(f"pad value {value} for a {ctx.dtype(x)} tensor")
    return with_torch_shape(ctx, _pad(ctx, x, ctx.arg(1, "pad"), "constant", float(value)))


def _mode_pad(mode: str, rank: int) -> Any:
    def convert(ctx: NodeContext) -> Any:
        x = ctx.tensor(0)
        pads = list(ctx.arg(1, "padding"))
        if len(pads) != 2 * rank:
            raise ctx.error(f"padding {pads} must have {2 * rank} values")
        if ctx.ndim(x) not in (rank + 1, rank + 2):
            raise ctx.error(f"expects a {rank + 1}-d or {rank + 2}-d input, got {ctx.ndim(x)}-d")
        return with_torch_shape(ctx, _pad(ctx, x, pads, mode))
    return convert


for _rank in (1, 2, 3):
    converter(f"aten.reflection_pad{_rank}d.default")(_mode_pad("reflect", _rank))
    converter(f"aten.replication_pad{_rank}d.default")(_mode_pad("edge", _rank))


@converter("operator.getitem")
def _getitem(ctx: NodeContext) -> Any:
    seq, index = ctx.arg(0), ctx.arg(1)
    if not isinstance(seq, (list, tuple)):
        raise ctx.unsupported(f"getitem on a {type(seq).__name__}")
    return seq[index]

