"""Converters of operators whose output sizes depend on the tensor's values: ``nonzero``,
``argwhere``, ``nonzero_static``, ``masked_select``, ``unique`` (``_unique2``,
``unique_dim``) and ``unique_consecutive``, plus the size assertions torch.export emits
around them.

torch.export gives such a size an *unbacked* symbol (``u0`` ...) in the node's fake value.
The converters emit the Relax operator with a data-dependent result (``relax.nonzero``,
``relax.unique``: known rank, unknown shape; see :mod:`tvm.relax.op.dynamic`) and bind its
shape right away with ``match_cast`` to the torch shape, where each new unbacked symbol
becomes a fresh int64 shape variable recorded in the importer's symbol table
(:func:`bind_torch_shape`).  Later nodes whose fake shapes mention ``u0`` (``sym_size``,
``view``, arithmetic on the size) then resolve it to that variable like any
``torch.export.Dim`` size.  At run time a TIR kernel counts the results and the VM turns
the count into the shape value ``match_cast`` binds.
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence

from tvm import tir
from tvm.tir.expr import IntImm, PrimExpr

from ... import op as _op
from ...expr import ShapeExpr, TupleGetItem
from ...op.dynamic import nonzero, unique
from ...struct_info import TensorStructInfo
from .common import NodeContext, converter
from .ops_tensor import int_arg, with_torch_shape

_INT64_MAX = 2**63 - 1


# -- binding data-dependent sizes ------------------------------------------------------------
def _dim_expr(ctx: NodeContext, dim: Any) -> Any:
    """A torch size as an int / PrimExpr; a bare unbacked symbol torch has not seen yet is
    defined here (a fresh shape variable named after it)."""
    import sympy

    expr = getattr(getattr(dim, "node", None), "expr", None)
    if isinstance(expr, sympy.Symbol) and str(expr) not in ctx.importer.sym_vars:
        var = tir.Var(str(expr), "int64")
        ctx.importer.sym_vars[str(expr)] = var
        return var
    return ctx.importer.sym_expr(dim)


def _prim(value: Any) -> PrimExpr:
    return IntImm("int64", int(value)) if isinstance(value, int) else value


def bind_shape(ctx: NodeContext, value: Any, shape: Sequence[Any], dtype: str) -> Any:
    """``value`` (emitted) cast to ``shape`` with ``match_cast``: its new shape variables
    are defined by the value at run time, the others are checked."""
    var = ctx.emit(value)
    return ctx.bb.match_cast(var, TensorStructInfo([_prim(d) for d in shape], dtype))


def bind_torch_shape(ctx: NodeContext, value: Any, index: int = 0) -> Any:
    """``value`` cast to the shape torch recorded for output ``index``, its unbacked symbols
    (``u0`` ...) bound to the sizes ``value`` has at run time."""
    meta = ctx.out_meta(index)
    dims = [_dim_expr(ctx, d) for d in meta.shape]
    return bind_shape(ctx, value, dims, ctx.out_dtype(index))


def _fresh(name: str) -> tir.Var:
    return tir.Var(name, "int64")


def _coords(ctx: NodeContext, x: Any) -> Any:
    """``relax.nonzero(x)`` bound to ``(ndim, k)`` with a fresh ``k``: the coordinates of
    the non-zero elements, one column each, in row-major order."""
    ndim = ctx.ndim(x)
    return bind_shape(ctx, nonzero(x), [ndim, _fresh("nnz")], "int64")


def _count(sinfo_value: Any, axis: int) -> Any:
    dim = sinfo_value.struct_info.shape_values[axis]
    return int(dim.value) if isinstance(dim, IntImm) else dim


def _size_vector(ctx: NodeContext, size: Any) -> Any:
    """A (1,) int64 tensor holding ``size`` (an int or a symbolic size)."""
    if isinstance(size, int):
        return ctx.const([size], "int64")
    return ctx.emit(_op.shape_to_tensor(ShapeExpr([size])))


# -- nonzero family --------------------------------------------------------------------------
@converter("aten.nonzero.default", "aten.argwhere.default")
def _nonzero(ctx: NodeContext) -> Any:
    # nonzero(as_tuple=True) reaches the graph as nonzero + unbind(dim=1)
    x = ctx.tensor(0)
    return bind_torch_shape(ctx, _op.permute_dims(_coords(ctx, x), [1, 0]))


@converter("aten.nonzero_static.default")
def _nonzero_static(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    size = int_arg(ctx, ctx.arg(1, "size"), "size")
    fill = int_arg(ctx, ctx.arg(2, "fill_value", -1), "fill_value")
    if size < 0:
        raise ctx.error(f"size must be non-negative, got {size}")
    ndim = ctx.ndim(x)
    found = ctx.emit(_op.permute_dims(_coords(ctx, x), [1, 0]))  # (k, ndim)
    padded = _op.concat([found, _op.full([size, ndim], ctx.const(fill, "int64"), "int64")], 0)
    return with_torch_shape(ctx, _op.strided_slice(padded, [0], [0], [size]))


@converter("aten.masked_select.default")
def _masked_select(ctx: NodeContext) -> Any:
    x, mask = ctx.tensor(0), ctx.tensor(1, "mask")
    if ctx.dtype(mask) != "bool":
        raise ctx.error(f"mask must be bool, got {ctx.dtype(mask)}")
    from .ops_index import _broadcast

    shape = _broadcast([ctx.shape(x), ctx.shape(mask)])
    flat_x = _op.reshape(_op.broadcast_to(x, shape), [-1])
    flat_mask = ctx.emit(_op.reshape(_op.broadcast_to(mask, shape), [-1]))
    picked = _coords(ctx, flat_mask)  # (1, k)
    index = _op.reshape(picked, [_count(picked, 1)])
    return bind_torch_shape(ctx, _op.take(flat_x, index, 0))


# -- unique ------------------------------------------------------------------------------------
def _unique_outputs(ctx: NodeContext, x: Any, axis: Optional[int], inverse: bool,
                    counts: bool) -> list[Any]:
    """torch's three outputs (values, inverse, counts) of ``unique``; an output not asked
    for is the empty tensor torch returns in its place.

    The values are always sorted: torch leaves the order unspecified for ``sorted=False``
    (its CPU kernel sorts too).  Every NaN is a value of its own, as in torch.
    """
    parts = ctx.emit(unique(x, True, False, True, True, axis, equal_nan=False))
    values = bind_torch_shape(ctx, TupleGetItem(parts, 0), 0)
    out = [values]
    for k, wanted in ((1, inverse), (2, counts)):
        if not wanted:
            out.append(_op.zeros(ctx.out_shape(k), "int64"))
            continue
        item = ctx.emit(TupleGetItem(parts, k))
        if k == 1 and axis is None:  # one index per element, in the input's shape
            item = _op.reshape(item, ctx.out_shape(1))
        out.append(bind_torch_shape(ctx, item, k))
    return out


@converter("aten._unique2.default")
def _unique2(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    return _unique_outputs(ctx, x, None, bool(ctx.arg(2, "return_inverse", False)),
                           bool(ctx.arg(3, "return_counts", False)))


@converter("aten.unique_dim.default")
def _unique_dim(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.ndim(x) == 0:
        raise ctx.error("unique with dim needs a tensor of at least one dimension")
    axis = ctx.axis(int_arg(ctx, ctx.arg(1, "dim"), "dim"), ctx.ndim(x))
    return _unique_outputs(ctx, x, axis, bool(ctx.arg(3, "return_inverse", False)),
                           bool(ctx.arg(4, "return_counts", False)))


@converter("aten.unique_consecutive.default")
def _unique_consecutive(ctx: NodeContext) -> Any:
    """Groups of equal neighbours (NaN equal to nothing, as in torch): a row starts a group
    when it differs from the one before; the group starts' positions (``nonzero``) give the
    values (``take``) and the counts (differences of the starts), the running count of
    starts the inverse indices."""
    x = ctx.tensor(0)
    want_inverse = bool(ctx.arg(1, "return_inverse", False))
    want_counts = bool(ctx.arg(2, "return_counts", False))
    dim = ctx.arg(3, "dim")
    if dim is None:
        rows, axis = ctx.emit(_op.reshape(x, [-1])), 0
    else:
        if ctx.ndim(x) == 0:
            raise ctx.error("unique_consecutive with dim needs a tensor of at least one "
                            "dimension")
        rows, axis = x, ctx.axis(int_arg(ctx, dim, "dim"), ctx.ndim(x))
    n = ctx.shape(rows)[axis]
    head = _op.strided_slice(rows, [axis], [0], [1])
    prev = _op.concat([head, _op.strided_slice(rows, [axis], [0], [-1])], axis)
    differs = _op.not_equal(rows, prev)  # row 0 compares with itself
    others = [k for k in range(ctx.ndim(rows)) if k != axis]
    if others:
        differs = _op.greater(_op.sum(_op.astype(differs, "int64"), others),
                              ctx.const(0, "int64"))
    first = _op.concat([_op.ones_like(_op.strided_slice(differs, [0], [0], [1]), "bool"),
                        _op.zeros_like(_op.strided_slice(differs, [0], [1], [_INT64_MAX]),
                                       "bool")], 0)
    starts_mask = ctx.emit(_op.logical_or(differs, first))  # (n,)
    picked = _coords(ctx, starts_mask)  # (1, k)
    k = _count(picked, 1)
    starts = ctx.emit(_op.reshape(picked, [k]))
    out = [bind_torch_shape(ctx, _op.take(rows, starts, axis), 0)]
    if want_inverse:
        inverse = _op.subtract(_op.cumsum(_op.astype(starts_mask, "int64"), 0),
                               ctx.const(1, "int64"))
        out.append(bind_torch_shape(ctx, _op.reshape(inverse, ctx.out_shape(1)), 1))
    else:
        out.append(_op.zeros(ctx.out_shape(1), "int64"))
    if want_counts:
        ends = bind_shape(ctx, _op.strided_slice(_op.concat([starts, _size_vector(ctx, n)], 0),
                                                 [0], [1], [_INT64_MAX]), [k], "int64")
        out.append(bind_torch_shape(ctx, _op.subtract(ends, starts), 2))
    else:
        out.append(_op.zeros(ctx.out_shape(2), "int64"))
    return out


# -- size assertions ----------------------------------------------------------------------------
_COMPARE = {"ge": (tir.GE, operator.ge), "gt": (tir.GT, operator.gt),
            "le": (tir.LE, operator.le), "lt": (tir.LT, operator.lt),
            "eq": (tir.EQ, operator.eq), "ne": (tir.NE, operator.ne)}


def _size_compare(kind: str) -> Any:
    def convert(ctx: NodeContext) -> Any:
        a, b = ctx.arg(0), ctx.arg(1)
        if not all(isinstance(v, (int, PrimExpr)) for v in (a, b)):
            raise ctx.unsupported(f"operator.{kind} on {type(a).__name__} and "
                                  f"{type(b).__name__} (only sizes are supported)")
        symbolic, python = _COMPARE[kind]
        if isinstance(a, int) and isinstance(b, int):
            return python(a, b)
        return ctx.bb.analyzer.simplify(symbolic(_prim(a), _prim(b)))
    return convert


for _kind in _COMPARE:
    converter(f"operator.{_kind}")(_size_compare(_kind))


@converter("aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default",
           "aten.sym_constrain_range.default")
def _size_assertion(ctx: NodeContext) -> Any:
    """torch.export's checks of the range of an unbacked size (``u0 >= 0``, ``u0 <= 6``):
    the data-dependent operators produce sizes in range by construction, so they convert to
    nothing."""
    return None
