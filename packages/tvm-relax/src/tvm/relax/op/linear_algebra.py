"""Linear algebra operators: ``matmul``, ``einsum``."""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import register_object

from ..analysis.struct_info_analysis import prim_equal
from ..expr import Call, Expr, ShapeExpr, Tuple, TupleGetItem
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo, canonical_dtype
from ._infer import broadcast_shapes, dim_str
from ._utils import out_tensor
from .base import Attrs, arg_sinfo, arg_tensor, make_call, op_error, register_op

__all__ = ["matmul", "MatmulAttrs", "einsum", "EinsumAttrs"]


@register_object("relax.attrs.MatmulAttrs")
class MatmulAttrs(Attrs):
    """``out_dtype``: the result dtype ("void": the operands' common dtype)."""

    out_dtype: str = "void"


@register_op("relax.matmul", inputs=("x1", "x2"), attrs=MatmulAttrs, op_pattern="out_elemwise_fusable")
def matmul(x1: Expr, x2: Expr, out_dtype: Optional[str] = None) -> Call:
    """numpy ``matmul``: 1-d operands are promoted (and the added axis removed), leading
    batch dimensions broadcast."""
    return make_call("relax.matmul", [x1, x2], MatmulAttrs(out_dtype=canonical_dtype(out_dtype)))


@matmul.infer
def _infer_matmul(call: Call, ctx: Any) -> StructInfo:
    a = arg_tensor(call, 0)
    b = arg_tensor(call, 1)
    out_dtype = call.attrs.out_dtype if call.attrs is not None else "void"
    if out_dtype == "void":
        if not a.is_unknown_dtype and not b.is_unknown_dtype and a.dtype != b.dtype:
            raise op_error(
                call,
                f"operands have different dtypes {a.dtype} and {b.dtype}; give out_dtype or "
                "convert one with astype",
            )
        out_dtype = a.dtype if not a.is_unknown_dtype else b.dtype if a.dtype == b.dtype else "void"
    for name, t in (("x1", a), ("x2", b)):
        if t.ndim == 0:
            raise op_error(call, f"argument {name!r} must have at least one dimension, got a scalar")
    if a.ndim == -1 or b.ndim == -1:
        return TensorStructInfo(None, out_dtype, -1, a.vdevice)
    ndim = max(a.ndim, b.ndim)
    if a.ndim == 1:
        ndim -= 1
    if b.ndim == 1:
        ndim -= 1
    if a.ndim == 1 and b.ndim == 1:
        ndim = 0
    av, bv = a.shape_values, b.shape_values
    if av is None or bv is None:
        return TensorStructInfo(None, out_dtype, ndim, a.vdevice)
    a_full = av if len(av) > 1 else (None, av[0])
    b_full = bv if len(bv) > 1 else (bv[0], None)
    k_a, k_b = a_full[-1], b_full[-2]
    if prim_equal(k_a, k_b, getattr(ctx, "analyzer", None)) is False:
        raise op_error(
            call,
            f"reduction dimensions differ: x1 has {dim_str(k_a)} columns but x2 has "
            f"{dim_str(k_b)} rows",
        )
    batch = broadcast_shapes(call, tuple(a_full[:-2]), tuple(b_full[:-2]), ctx, "batch dimensions")
    if batch is None:
        return TensorStructInfo(None, out_dtype, ndim, a.vdevice)
    out = list(batch)
    if len(av) > 1:
        out.append(a_full[-2])
    if len(bv) > 1:
        out.append(b_full[-1])
    return TensorStructInfo(ShapeExpr(out), out_dtype, ndim, a.vdevice)


# -- legalization to TIR (te compute of tvm.relax.topi.linalg) ---------------------------------
@matmul.legalize
def _legalize_matmul(bb: Any, call: Call) -> Any:
    from ..topi import linalg
    from ._lower import te_call

    return te_call(bb, call, linalg.matmul, call.args[0], call.args[1], call.attrs.out_dtype)


# -- einsum ------------------------------------------------------------------------------------------
@register_object("relax.attrs.EinsumAttrs")
class EinsumAttrs(Attrs):
    """``subscripts``: numpy/ONNX einsum equation, e.g. ``"bij,bjk->bik"``."""

    subscripts: str = ""


@register_op("relax.einsum", inputs=("operands",), attrs=EinsumAttrs,
             op_pattern="out_elemwise_fusable")
def einsum(operands: Any, subscripts: str) -> Call:
    """numpy ``einsum`` of the tensors ``operands`` (a list or a tuple expression):
    explicit (``"ij,jk->ik"``) or implicit (``"ij,jk"``) output, ``...`` for broadcast
    dimensions, a subscript repeated in one operand takes its diagonal (``"ii->i"``);
    labels missing from the output are summed over."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a str, got {subscripts!r}")
    if isinstance(operands, (list, tuple)):
        if not operands:
            raise ValueError("einsum: needs at least one operand")
        terms = subscripts.replace(" ", "").partition("->")[0].split(",")
        if len(terms) != len(operands):
            raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operand(s), "
                             f"given {len(operands)}")
        operands = Tuple(list(operands))
    return make_call("relax.einsum", [operands], EinsumAttrs(subscripts=subscripts))


def _einsum_operands(call: Call) -> list[TensorStructInfo]:
    tup = arg_sinfo(call, 0)
    if not isinstance(tup, TupleStructInfo):
        raise op_error(call, "argument 'operands' must be a tuple of tensors")
    out = []
    for k, f in enumerate(tup.fields):
        if not isinstance(f, TensorStructInfo):
            raise op_error(call, f"operand {k} must be a tensor")
        out.append(f)
    if not out:
        raise op_error(call, "needs at least one operand")
    return out


@einsum.infer
def _infer_einsum(call: Call, ctx: Any) -> StructInfo:
    from ..topi.linalg import einsum_label_sizes, parse_einsum

    ops = _einsum_operands(call)
    dtypes = {t.dtype for t in ops if not t.is_unknown_dtype}
    if len(dtypes) > 1:
        raise op_error(call, f"operands must have one dtype, got {', '.join(sorted(dtypes))}")
    dtype = dtypes.pop() if dtypes else "void"
    like = TensorStructInfo(None, dtype, -1, ops[0].vdevice)
    if any(t.ndim == -1 for t in ops):
        return like
    try:
        labels, out = parse_einsum(call.attrs.subscripts, [t.ndim for t in ops])
    except ValueError as err:
        raise op_error(call, str(err).removeprefix("einsum: ")) from None
    if any(t.shape_values is None for t in ops):
        return out_tensor(like, None, ndim=len(out))
    try:
        sizes = einsum_label_sizes(labels, [t.shape_values for t in ops])
    except ValueError as err:
        raise op_error(call, str(err).removeprefix("einsum: ")) from None
    return out_tensor(like, [sizes[label] for label in out], ctx=ctx)


@einsum.legalize
def _legalize_einsum(bb: Any, call: Call) -> Any:
    from ..topi import linalg
    from ._lower import te_call

    tup = call.args[0]
    fields = tup.fields if isinstance(tup, Tuple) else [
        bb.normalize_argument(TupleGetItem(tup, i)) for i in range(len(tup.struct_info.fields))]
    return te_call(bb, call, lambda *ts: linalg.einsum(call.attrs.subscripts, *ts), *fields)


# -- numpy semantics --------------------------------------------------------------------------
@matmul.evaluate
def _eval_matmul(call: Call, a: Any, b: Any) -> Any:
    from tvm.ffi.dtype import to_numpy_dtype

    dtype = to_numpy_dtype(call.struct_info.dtype)
    return a.astype(dtype) @ b.astype(dtype)
