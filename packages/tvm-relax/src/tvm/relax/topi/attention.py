"""Scaled dot-product attention in the BSNH layout (batch, sequence, heads, head dim)."""

from __future__ import annotations

from typing import Any, Optional

from tvm import te, tir
from tvm.tir.expr import FloorDiv, GT, IntImm, PrimExpr, Select

from ._util import broadcast_index, cast, int64, simplify
from .norm import _keep, _reduce_keep

__all__ = ["attention"]


def attention(
    q: te.Tensor, k: te.Tensor, v: te.Tensor, bias: Optional[te.Tensor] = None,
    scale: Optional[float] = None, causal_mask: Optional[str] = None,
) -> te.Tensor:
    """``softmax(q k^T * scale + bias, masked) v`` per batch and head.

    ``q``: (B, S, N, H); ``k``: (B, T, N_kv, H); ``v``: (B, T, N_kv, H_v) with ``N_kv``
    dividing ``N`` (grouped heads share keys/values); ``bias`` broadcasts to (B, N, S, T).
    ``causal_mask``: ``"TopLeft"`` hides ``t > s``, ``"BottomRight"`` hides
    ``t > s + T - S``.  The result is (B, S, N, H_v).
    """
    b_, s_, n_, h_ = q.shape
    t_, nkv = k.shape[1], k.shape[2]
    hv = v.shape[3]
    rep = simplify(int64(n_) // int64(nkv))
    dtype = q.dtype
    factor = cast(1, dtype) / tir.sqrt(cast(h_, dtype)) if scale is None else cast(scale, dtype)
    r = te.reduce_axis((0, h_), name="h")

    def kv_head(n: PrimExpr) -> PrimExpr:
        return n if isinstance(rep, IntImm) and rep.value == 1 else FloorDiv(n, rep)

    def fscore(b: Any, n: Any, s: Any, t: Any) -> PrimExpr:
        return te.sum(q(b, s, n, r) * k(b, t, kv_head(n), r), axis=r)

    raw = te.compute((b_, n_, s_, t_), fscore, name="T_attention_qk")
    low = tir.min_value(dtype)
    shift = simplify(int64(t_) - int64(s_)) if causal_mask == "BottomRight" else IntImm("int64", 0)

    def fbias(*i: Any) -> PrimExpr:
        value = raw(*i) * factor
        if bias is not None:
            value = value + bias(*broadcast_index(i, bias.shape))
        if causal_mask is not None:
            value = Select(GT(i[3], i[2] + shift), low, value)
        return value

    score = te.compute(raw.shape, fbias, name="T_attention_score")
    mx = _reduce_keep(score, [3], te.max, lambda s: score(*s), "T_attention_max")
    ex = te.compute(score.shape, lambda *i: tir.exp(score(*i) - mx(*_keep(i, [3]))),
                    name="T_attention_exp")
    total = _reduce_keep(ex, [3], te.sum, lambda s: ex(*s), "T_attention_sum")
    rt = te.reduce_axis((0, t_), name="t")

    def fout(b: Any, s: Any, n: Any, j: Any) -> PrimExpr:
        return te.sum(ex(b, n, s, rt) * v(b, rt, kv_head(n), j), axis=rt)

    weighted = te.compute((b_, s_, n_, hv), fout, name="T_attention_pv")
    return te.compute(
        weighted.shape,
        lambda b, s, n, j: weighted(b, s, n, j) / total(b, n, s, IntImm("int64", 0)),
        name="T_attention",
    )
