"""``relax.nn.attention``: scaled dot-product attention in the BSNH layout."""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi import register_object

from ...analysis.struct_info_analysis import prim_equal
from ...expr import Call, Expr
from ...struct_info import StructInfo
from .._infer import broadcast_shapes, dim_str
from .._lower import te_call
from .._utils import check_float, const_dim, out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op

__all__ = ["attention", "AttentionAttrs"]

_MASKS = ("TopLeft", "BottomRight")


@register_object("relax.attrs.AttentionAttrs")
class AttentionAttrs(Attrs):
    """``scale`` of the scores (None: ``1 / sqrt(head_dim)``); ``causal_mask``: None,
    ``"TopLeft"`` or ``"BottomRight"``."""

    scale: Optional[float] = None
    causal_mask: Optional[str] = None


@register_op("relax.nn.attention", inputs=None, attrs=AttentionAttrs,
             op_pattern="opaque")
def attention(
    query: Expr, key: Expr, value: Expr, bias: Optional[Expr] = None,
    scale: Optional[float] = None, causal_mask: Optional[str] = None,
) -> Call:
    """``softmax(query key^T * scale + bias) value`` per batch and head.

    query (B, S, N, H), key (B, T, N_kv, H), value (B, T, N_kv, H_v), ``N_kv`` dividing
    ``N``; ``bias`` broadcasts to (B, N, S, T).  Returns (B, S, N, H_v).  ``causal_mask``
    ``"TopLeft"`` hides key ``t > s``; ``"BottomRight"`` aligns the last query with the last
    key (hides ``t > s + T - S``).
    """
    if causal_mask is not None and causal_mask not in _MASKS:
        raise ValueError(f"attention: causal_mask must be None, 'TopLeft' or 'BottomRight', got "
                         f"{causal_mask!r}")
    args = [query, key, value] + ([bias] if bias is not None else [])
    return make_call("relax.nn.attention", args, AttentionAttrs(
        scale=None if scale is None else float(scale), causal_mask=causal_mask))


@attention.infer
def _infer_attention(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) not in (3, 4):
        raise op_error(call, f"expects 3 or 4 arguments (query, key, value[, bias]), got "
                             f"{len(call.args)}")
    q, k, v = (arg_tensor(call, i) for i in range(3))
    names = ("query", "key", "value")
    for name, t in zip(names, (q, k, v)):
        check_float(call, t, name)
        if t.ndim not in (-1, 4):
            raise op_error(call, f"{name} must have 4 dimensions (B, S, N, H), got {t.ndim}")
    dtypes = {t.dtype for t in (q, k, v) if not t.is_unknown_dtype}
    if len(dtypes) > 1:
        raise op_error(call, f"query, key and value must have one dtype, got {sorted(dtypes)}")
    if any(t.shape_values is None for t in (q, k, v)):
        return out_tensor(q, None, ndim=4)
    (b, s, n, h), (bk, t, nk, hk), (bv, tv, nv, hv) = (x.shape_values for x in (q, k, v))
    analyzer = getattr(ctx, "analyzer", None)
    for what, x, y in (("batch size", b, bk), ("batch size", b, bv), ("head dim", h, hk),
                       ("key length", t, tv), ("key/value heads", nk, nv)):
        if prim_equal(x, y, analyzer) is False:
            raise op_error(call, f"the {what} differs: {dim_str(x)} vs {dim_str(y)}")
    if const_dim(n) is not None and const_dim(nk) is not None and const_dim(n) % const_dim(nk):
        raise op_error(call, f"query heads {const_dim(n)} are not a multiple of key/value heads "
                             f"{const_dim(nk)}")
    if len(call.args) == 4:
        bias = arg_tensor(call, 3)
        if bias.dtype not in dtypes | {"void"}:
            raise op_error(call, f"bias must have dtype {q.dtype}, got {bias.dtype}")
        if bias.shape_values is not None:
            if bias.ndim > 4:
                raise op_error(call, f"bias must have at most 4 dimensions, got {bias.ndim}")
            broadcast_shapes(call, bias.shape_values, (b, n, s, t), ctx, "bias and (B, N, S, T)")
    return out_tensor(q, [b, s, n, hv], ctx=ctx)


@attention.legalize
def _legalize_attention(bb: Any, call: Call) -> Expr:
    from ...topi.attention import attention as te_attention

    a = call.attrs
    q, k, v = call.args[:3]
    bias = call.args[3] if len(call.args) == 4 else None
    return te_call(bb, call, te_attention, q, k, v, bias, a.scale, a.causal_mask)
