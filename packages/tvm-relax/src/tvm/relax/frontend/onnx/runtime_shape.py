"""Shape-deciding ONNX inputs whose values are known only at run time.

A converter whose output shape depends on an input that is not a constant (Reshape's shape,
Reduce*'s axes, OneHot's depth, ...) computes the output shape as a small int64 tensor with
ordinary Relax operators, and this module turns that tensor into symbolic dimensions: the VM
reads it into a shape value (``vm.builtin.tensor_to_shape``, as the data-dependent operators
of :mod:`tvm.relax.op.dynamic` do) and ``match_cast`` binds it to fresh variables, so the
operators after it see a symbolic shape and legalize as usual.

Validation happens in the same step: an entry of the shape tensor is set to -1 where the
run-time values are invalid (an axis out of range, a Reshape target of another element
count), and ``tensor_to_shape`` refuses a negative entry with a message naming the node.
Kernels after it therefore never see a shape that would make them read out of bounds.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from tvm import tir

from ...expr import ShapeExpr, StringImm
from ...op.call import call_pure_packed, shape_to_tensor
from ...struct_info import ShapeStructInfo
from .common import R


def int_vector(ctx: Any, i: int, what: str) -> tuple[Any, int]:
    """Input ``i`` (a 1-d or 0-d integer tensor of static length) as a 1-d int64 tensor and
    its length."""
    shape = ctx.static_shape(i)
    if shape is None or len(shape) > 1:
        raise ctx.unsupported(f"input {i} ({what}) needs a static 1-d shape when it is given "
                              "at run time")
    dtype = ctx.dtype(i)
    if not dtype.startswith(("int", "uint")):
        raise ctx.error(f"input {i} ({what}) must be an integer tensor, got {dtype}")
    x = ctx.input(i)
    if dtype != "int64":
        x = ctx.emit(R.astype(x, "int64"))
    n = shape[0] if shape else 1
    if not shape:
        x = ctx.emit(R.reshape(x, [1]))
    return x, n


def dims_vector(ctx: Any, dims: Sequence[Any]) -> Any:
    """Dimensions (ints, or symbolic dimensions bound earlier) as a 1-d int64 tensor."""
    if all(isinstance(d, int) for d in dims):
        return ctx.const_expr(np.asarray(list(dims), "int64").reshape(len(dims)), "int64")
    values = [tir.IntImm("int64", d) if isinstance(d, int) else
              d if d.dtype == "int64" else tir.Cast("int64", d) for d in dims]
    return ctx.emit(shape_to_tensor(ShapeExpr(values)))


def i64(ctx: Any, value: Any) -> Any:
    """A scalar int64 constant (or a 1-d array of them)."""
    return ctx.const_expr(value, "int64")


def to_dims(ctx: Any, vec: Any, n: int, what: str, valid: Optional[Any] = None,
            name: str = "dim") -> list[tir.Var]:
    """Fresh symbolic dimensions bound at run time to the ``n`` entries of the int64 tensor
    ``vec``; ``valid`` (a boolean scalar or (n,) tensor) marks the values allowed, anything
    else (and a negative entry) fails with an error naming the node and ``what``."""
    if valid is not None:
        vec = ctx.emit(R.where(valid, vec, i64(ctx, -1)))
    message = f"{ctx.where()}: invalid {what} given at run time"
    shape = ctx.emit(call_pure_packed("vm.builtin.tensor_to_shape", vec, StringImm(message),
                                      sinfo_args=ShapeStructInfo(ndim=n)))
    # a node without a name gets a serial (names are hints, but keep printed ones apart)
    base = _sanitize(ctx.name) if ctx.name else f"{ctx.op_type}{len(ctx.importer.sym_owner)}"
    dims = [tir.Var(f"{base}_{name}{k}", "int64") for k in range(n)]
    bound = ctx.bb.match_cast(shape, ShapeStructInfo(dims))
    for d in dims:
        ctx.importer.sym_owner.setdefault(id(d), bound)
    return dims


def _sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"n{out}"


def checked_reshape(ctx: Any, x: Any, vec: Any, n: int, what: str,
                    valid: Optional[Any] = None) -> Any:
    """``x`` reshaped to the run-time shape ``vec`` (``n`` entries), which must hold as many
    elements as ``x`` (checked at run time with ``valid``)."""
    total = ctx.prod(ctx.importer.shape_of(x))
    same = R.equal(R.prod(vec, None, False), scalar_dim(ctx, total))
    ok = same if valid is None else R.logical_and(valid, same)
    dims = to_dims(ctx, vec, n, what, ctx.emit(ok))
    return R.reshape(x, dims)


def scalar_dim(ctx: Any, value: Any) -> Any:
    """An int or symbolic dimension as a 0-d int64 tensor."""
    if isinstance(value, int):
        return i64(ctx, value)
    return ctx.emit(R.reshape(dims_vector(ctx, [value]), []))


def normalized_axes(ctx: Any, axes: Any, ndim: int) -> tuple[Any, Any]:
    """Run-time axes (1-d int64) counted from the front, and whether all lie in
    ``[-ndim, ndim)`` (a boolean scalar)."""
    wrapped = R.where(R.less(axes, i64(ctx, 0)), axes + i64(ctx, ndim), axes)
    wrapped = ctx.emit(wrapped)
    ok = R.logical_and(R.greater_equal(wrapped, i64(ctx, 0)), R.less(wrapped, i64(ctx, ndim)))
    all_ok = ctx.emit(R.equal(R.sum(R.astype(ok, "int64"), None, False),
                              i64(ctx, _length(ctx, axes))))
    return wrapped, all_ok


def _length(ctx: Any, vec: Any) -> int:
    return int(ctx.importer.shape_of(vec)[0])


def axis_mask(ctx: Any, axes: Any, ndim: int) -> Any:
    """(ndim,) int64: 1 for the dimensions named in the (normalized) run-time ``axes``, as
    many times as they are named."""
    n = _length(ctx, axes)
    rng = i64(ctx, np.arange(ndim, dtype="int64").reshape(1, ndim))
    hits = R.equal(R.reshape(axes, [n, 1]), rng)
    return ctx.emit(R.sum(R.astype(hits, "int64"), [0], False))


def compact(ctx: Any, values: Any, keep: Any, ndim: int, count: int) -> Any:
    """The entries of ``values`` ((ndim,) int64) where ``keep`` ((ndim,) int64 0/1) is 1, in
    order, as a (count,) tensor (``count`` kept entries; fewer leave zeros)."""
    pos = R.cumsum(keep, 0) - i64(ctx, 1)  # position of each kept entry
    slots = i64(ctx, np.arange(count, dtype="int64").reshape(1, count))
    hit = R.logical_and(R.equal(R.reshape(pos, [ndim, 1]), slots),
                        R.equal(R.reshape(keep, [ndim, 1]), i64(ctx, 1)))
    picked = R.where(hit, R.reshape(values, [ndim, 1]), i64(ctx, 0))
    return ctx.emit(R.sum(picked, [0], False))


def expand(ctx: Any, values: Any, new: Any, ndim: int, fill: int) -> Any:
    """The inverse of :func:`compact`: a (ndim,) tensor holding ``fill`` where ``new``
    ((ndim,) int64 0/1) is 1 and the entries of ``values`` in order elsewhere."""
    count = _length(ctx, values)
    old = i64(ctx, 1) - new
    pos = ctx.emit(R.cumsum(old, 0) - i64(ctx, 1))
    slots = i64(ctx, np.arange(count, dtype="int64").reshape(1, count))
    hit = R.equal(R.reshape(pos, [ndim, 1]), slots)
    src = R.sum(R.where(hit, R.reshape(values, [1, count]), i64(ctx, 0)), [1], False)
    return ctx.emit(R.where(R.equal(new, i64(ctx, 1)), i64(ctx, fill), src))
