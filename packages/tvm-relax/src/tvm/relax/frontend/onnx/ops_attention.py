"""ONNX Attention (opset 23+) and RotaryEmbedding, decomposed into MatMul / Softmax / masks.

Attention follows the ONNX function body: Q and K scaled by ``sqrt(scale)`` each, an optional
KV cache (``past_key``/``past_value`` concatenated on the sequence axis), an additive bias
built from ``attn_mask`` (bool or float, padded to the KV length), ``is_causal`` (bottom-right
aligned after a cache), sliding windows and ``nonpad_kv_seqlen``; group-query attention
repeats KV heads; rows whose bias is all ``-inf`` produce zeros.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .common import R, converter, onnx_dtype_to_str
from .ops_math import scalar


def _to_4d(ctx: Any, x: Any, heads: int, shape: list[Any]) -> Any:
    b, s, hidden = shape
    if not isinstance(hidden, int):
        raise ctx.unsupported("3-d inputs need a static hidden size")
    x = R.reshape(x, [b, s, heads, hidden // heads])
    return R.permute_dims(x, [0, 2, 1, 3])


def _neg_inf_bias(ctx: Any, allowed: Any, dt: str) -> Any:
    return R.where(allowed, scalar(ctx, 0.0, dt), scalar(ctx, -np.inf, dt))


def _offset_pattern(ctx: Any, q_len: int, kv_len: int, offset: Any, dt: str,
                    left: int = -1, right: int = -1, causal: bool = False) -> Any:
    """Additive 0/-inf bias of a causal or window pattern with a query offset.

    ``offset``: a Python int (constant pattern, shape (q, kv)) or a runtime int64 tensor
    of shape (B,) (result shape (B, 1, q, kv)).
    """
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)
    if isinstance(offset, int):
        diff = i + offset - j
        allowed = np.ones_like(diff, dtype=bool)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return ctx.const_expr(np.where(allowed, 0.0, -np.inf), dt)
    off = R.reshape(offset, [-1, 1, 1])
    diff = ctx.const_expr(i - j, "int64") + off  # (B, q, kv)
    zero = ctx.const_expr(0, "int64")
    allowed = None
    conds = []
    if causal:
        conds.append(R.greater_equal(diff, zero))
    if left >= 0:
        conds.append(R.less_equal(diff, ctx.const_expr(left, "int64")))
    if right >= 0:
        conds.append(R.less_equal(R.negative(diff), ctx.const_expr(right, "int64")))
    for c in conds:
        allowed = c if allowed is None else R.logical_and(allowed, c)
    bias = _neg_inf_bias(ctx, allowed, dt)
    return R.expand_dims(bias, [1])


def _safe_softmax(ctx: Any, x: Any, dt: str) -> Any:
    """Softmax over the last axis that maps all -inf rows to zeros (no NaN)."""
    m = R.max(x, [-1], True)
    zero = scalar(ctx, 0.0, dt)
    m = R.where(R.equal(m, scalar(ctx, -np.inf, dt)), zero, m)
    e = ctx.emit(R.exp(x - m))
    s = R.sum(e, [-1], True)
    s = R.where(R.equal(s, zero), scalar(ctx, 1.0, dt), s)
    return e / s


@converter("Attention")
def _attention(ctx: Any) -> Any:
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    dt = ctx.dtype(0)
    ndim = ctx.ndim(0)
    q_heads, kv_heads = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    if ndim == 3:
        if q_heads is None or kv_heads is None:
            raise ctx.error("3-d inputs need q_num_heads and kv_num_heads")
        q = _to_4d(ctx, q, q_heads, ctx.shape(0))
        k = _to_4d(ctx, k, kv_heads, ctx.shape(1))
        v = _to_4d(ctx, v, kv_heads, ctx.shape(2))
    elif ndim != 4:
        raise ctx.error(f"inputs must have 3 or 4 dimensions, got {ndim}")
    q = ctx.emit(q)
    k = ctx.emit(k)
    v = ctx.emit(v)
    qs = ctx.importer.shape_of(q)
    head_size = qs[3]
    scale = ctx.attr("scale", None)
    if scale is None:
        if not isinstance(head_size, int):
            raise ctx.unsupported("scale must be given for a symbolic head size")
        scale = 1.0 / np.sqrt(head_size)
    sf = np.float32(np.sqrt(np.float32(scale)))
    has_past = ctx.has(4)
    if has_past:
        k = ctx.emit(R.concat([ctx.input(4), k], axis=2))
        v = ctx.emit(R.concat([ctx.input(5), v], axis=2))
    present_k, present_v = k, v
    q_len = qs[2]
    kv_len = ctx.importer.shape_of(k)[2]
    past_len = ctx.shape(4)[2] if has_past else 0
    nonpad = ctx.input(6) if ctx.has(6) else None
    if not (isinstance(q_len, int) and isinstance(kv_len, int)):
        raise ctx.unsupported("needs static sequence lengths")
    causal = bool(ctx.attr("is_causal", 0))
    left, right = ctx.attr("left_window_size", -1), ctx.attr("right_window_size", -1)

    bias: Optional[Any] = None
    if ctx.has(3):
        mask = ctx.input(3)
        mshape = ctx.shape(3)
        pad = kv_len - mshape[-1]
        is_bool = ctx.dtype(3) == "bool"
        if pad > 0:
            pshape = list(mshape)
            pshape[-1] = pad
            fill = ctx.const_expr(False, "bool") if is_bool else ctx.const_expr(-np.inf, ctx.dtype(3))
            mask = R.concat([mask, R.full(pshape, fill, ctx.dtype(3))], axis=-1)
        if is_bool:
            mask = _neg_inf_bias(ctx, mask, dt)
        elif ctx.dtype(3) != dt:
            mask = R.astype(mask, dt)
        bias = ctx.emit(mask)
    if causal:
        offset = (R.astype(nonpad, "int64") - ctx.const_expr(q_len, "int64")) \
            if (nonpad is not None and not has_past) else past_len
        pattern = _offset_pattern(ctx, q_len, kv_len, offset, dt, causal=True)
        bias = pattern if bias is None else bias + pattern
    if left >= 0 or right >= 0:
        offset = (R.astype(nonpad, "int64") - ctx.const_expr(q_len, "int64")) \
            if (nonpad is not None and not has_past) else past_len
        pattern = _offset_pattern(ctx, q_len, kv_len, offset, dt, left, right)
        bias = pattern if bias is None else bias + pattern
    if nonpad is not None:
        rng = ctx.const_expr(np.arange(kv_len).reshape(1, kv_len), "int64")
        allowed = R.less(rng, R.reshape(R.astype(nonpad, "int64"), [-1, 1]))
        pm = R.reshape(_neg_inf_bias(ctx, allowed, dt), [-1, 1, 1, kv_len])
        bias = pm if bias is None else bias + pm
    if bias is not None:
        bias = ctx.emit(bias + ctx.const_expr(np.zeros((q_len, kv_len)), dt))

    nq = qs[1]
    nk = ctx.importer.shape_of(k)[1]
    if isinstance(nq, int) and isinstance(nk, int) and nq != nk and nq % nk == 0:
        k = R.repeat(k, nq // nk, 1)
        v = R.repeat(v, nq // nk, 1)
    s = ctx.const_expr(sf, dt)
    kt = R.permute_dims(k * s, [0, 1, 3, 2])
    qk = ctx.emit(R.matmul(q * s, kt))
    mode = ctx.attr("qk_matmul_output_mode", 0)
    qk_out = qk
    softcap = ctx.attr("softcap", 0.0)
    if softcap and softcap > 0:
        c = scalar(ctx, softcap, dt)
        qk = ctx.emit(R.tanh(qk / c) * c)
        if mode == 1:
            qk_out = qk
    with_bias = ctx.emit(qk + bias) if bias is not None else qk
    if mode == 2:
        qk_out = with_bias
    sm_dt = dt
    if ctx.attr("softmax_precision", None) is not None:
        sm_dt = onnx_dtype_to_str(ctx.attr("softmax_precision"), f"{ctx.where()}: ")
        if sm_dt != dt:
            with_bias = ctx.emit(R.astype(with_bias, sm_dt))
    if bias is None:
        probs = R.nn.softmax(with_bias, -1)
    else:
        probs = _safe_softmax(ctx, with_bias, sm_dt)
        # a row is fully masked when every bias entry is -inf (counted: robust to how the
        # max reduction is initialised)
        is_inf = R.astype(R.equal(bias, scalar(ctx, -np.inf, dt)), "float32")
        masked_row = R.equal(R.sum(is_inf, [-1], True), ctx.const_expr(float(kv_len), "float32"))
        probs = R.where(masked_row, scalar(ctx, 0.0, sm_dt), probs)
    probs = ctx.emit(probs)
    if mode == 3:
        qk_out = probs
    if sm_dt != dt:
        probs = R.astype(probs, dt)
        if mode == 3:
            qk_out = probs
    y = R.matmul(probs, v)
    if ndim == 3:
        y = R.permute_dims(y, [0, 2, 1, 3])
        ys = ctx.importer.shape_of(ctx.emit(y))
        y = R.reshape(y, [ys[0], ys[1], ys[2] * ys[3]])
    return [y, present_k, present_v, qk_out]


@converter("RotaryEmbedding")
def _rotary(ctx: Any) -> Any:
    x = ctx.input(0)
    ndim = ctx.ndim(0)
    shape = ctx.shape(0)
    interleaved = bool(ctx.attr("interleaved", 0))
    rot_dim = ctx.attr("rotary_embedding_dim", 0)
    heads = ctx.attr("num_heads", 0)
    if ndim == 3:
        b, s, hidden = shape
        if not heads:
            raise ctx.error("3-d input needs num_heads")
        x4 = R.reshape(x, [b, s, heads, hidden // heads])
    else:
        # (B, N, S, H) -> (B, S, N, H)
        x4 = R.permute_dims(x, [0, 2, 1, 3])
    x4 = ctx.emit(x4)
    b, s, n, h = ctx.importer.shape_of(x4)
    if not isinstance(h, int):
        raise ctx.unsupported("needs a static head size")
    rot = rot_dim or h
    cos, sin = ctx.input(1), ctx.input(2)
    if ctx.has(3):
        # position_ids (B, S) index the caches (max_pos, rot/2)
        cos = R.take(cos, ctx.input(3), axis=0)
        sin = R.take(sin, ctx.input(3), axis=0)
    cos = R.expand_dims(cos, [2])  # (B, S, 1, rot/2)
    sin = R.expand_dims(sin, [2])
    xr = R.strided_slice(x4, [3], [0], [rot]) if rot < h else x4
    if interleaved:
        x1 = R.strided_slice(xr, [3], [0], [rot], [2])
        x2 = R.strided_slice(xr, [3], [1], [rot], [2])
    else:
        x1 = R.strided_slice(xr, [3], [0], [rot // 2])
        x2 = R.strided_slice(xr, [3], [rot // 2], [rot])
    x1, x2 = ctx.emit(x1), ctx.emit(x2)
    r1 = x1 * cos - x2 * sin
    r2 = x2 * cos + x1 * sin
    if interleaved:
        out = R.reshape(R.concat([R.expand_dims(r1, [4]), R.expand_dims(r2, [4])], axis=4),
                        [b, s, n, rot])
    else:
        out = R.concat([r1, r2], axis=3)
    if rot < h:
        out = R.concat([out, R.strided_slice(x4, [3], [rot], [h])], axis=3)
    if ndim == 3:
        return R.reshape(out, shape)
    return R.permute_dims(out, [0, 2, 1, 3])


@converter("LinearAttention")
def _linear_attention(ctx: Any) -> Any:
    """The recurrent state update unrolled over a static sequence length."""
    hq, hkv = ctx.attr("q_num_heads", None), ctx.attr("kv_num_heads", None)
    if hq is None or hkv is None:
        raise ctx.error("q_num_heads and kv_num_heads are required")
    rule = ctx.attr("update_rule", "gated_delta")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    qshape, vshape = ctx.static_shape(0), ctx.static_shape(2)
    if qshape is None or vshape is None:
        raise ctx.unsupported("needs static shapes (the recurrence is unrolled)")
    b, t, _ = qshape
    dk, dv = qshape[2] // hq, vshape[2] // hkv
    out_dt = ctx.dtype(0)
    f32 = "float32"

    def unpack(i: int, heads: int) -> Any:
        x = ctx.input(i)
        if ctx.dtype(i) != f32:
            x = R.astype(x, f32)
        return ctx.emit(_to_4d(ctx, x, heads, ctx.shape(i)))

    q4, k4, v4 = unpack(0, hq), unpack(1, hkv), unpack(2, hkv)
    decay4 = beta4 = None
    if gating:
        if not ctx.has(4):
            raise ctx.error(f"update_rule {rule!r} needs decay")
        last = ctx.shape(4)[-1]
        d = R.astype(ctx.input(4), f32) if ctx.dtype(4) != f32 else ctx.input(4)
        decay4 = ctx.emit(_to_4d(ctx, d, hkv, ctx.shape(4)) if last != hkv else
                          R.permute_dims(R.reshape(d, [b, t, hkv, 1]), [0, 2, 1, 3]))
    if delta:
        if not ctx.has(5):
            raise ctx.error(f"update_rule {rule!r} needs beta")
        last = ctx.shape(5)[-1]
        bt = R.astype(ctx.input(5), f32) if ctx.dtype(5) != f32 else ctx.input(5)
        beta4 = ctx.emit(R.permute_dims(R.reshape(bt, [b, t, last, 1]), [0, 2, 1, 3]))
    if ctx.has(3):
        state_dt = ctx.dtype(3)
        state = ctx.input(3)
        if state_dt != f32:
            state = R.astype(state, f32)
    else:
        state_dt = out_dt
        state = R.full([b, hkv, dk, dv], scalar(ctx, 0.0, f32), f32)
    state = ctx.emit(state)
    scale = ctx.attr("scale", None)
    scale = 1.0 / np.sqrt(dk) if not scale else float(scale)
    group = hq // hkv

    def at(x: Any, i: int) -> Any:
        return R.strided_slice(x, [2], [i], [i + 1])  # keeps the axis: (B, H, 1, d)

    outs = []
    for i in range(t):
        k_t, v_t = at(k4, i), at(v4, i)
        if gating:
            g = R.permute_dims(R.exp(at(decay4, i)), [0, 1, 3, 2])  # (B, H, d|1, 1)
            state = ctx.emit(state * g)
        if delta:
            retrieved = R.matmul(k_t, state)  # (B, H, 1, dv)
            v_t = at(beta4, i) * (v_t - retrieved)
        state = ctx.emit(state + R.matmul(R.permute_dims(k_t, [0, 1, 3, 2]), v_t))
        read = R.repeat(state, group, 1) if group > 1 else state
        outs.append(ctx.emit(R.matmul(at(q4, i), read) * scalar(ctx, scale, f32)))
    y = R.concat(outs, axis=2) if len(outs) > 1 else outs[0]  # (B, Hq, T, dv)
    y = R.reshape(R.permute_dims(y, [0, 2, 1, 3]), [b, t, hq * dv])
    if out_dt != f32:
        y = R.astype(y, out_dt)
    present = state if state_dt == f32 else R.astype(state, state_dt)
    return [y, present]


@converter("CausalConvWithState")
def _causal_conv_with_state(ctx: Any) -> Any:
    """Depthwise causal 1-d convolution over [past_state, input]; returns the new state."""
    shape = ctx.static_shape(0)
    wshape = ctx.static_shape(1)
    if shape is None or wshape is None:
        raise ctx.unsupported("needs static shapes")
    b, c, _ = shape
    k = wshape[2]
    dt = ctx.dtype(0)
    act = ctx.attr("activation", "none")
    if act not in ("none", "silu", "swish"):
        raise ctx.unsupported(f"activation={act!r}")
    pad = ctx.input(3) if ctx.has(3) else R.full([b, c, k - 1], scalar(ctx, 0.0, dt), dt)
    padded = ctx.emit(R.concat([pad, ctx.input(0)], axis=2) if k > 1 else ctx.input(0))
    x4 = R.expand_dims(padded, [2])
    w4 = R.expand_dims(ctx.input(1), [2])
    y = R.squeeze(R.nn.conv2d(x4, w4, [1, 1], [0, 0, 0, 0], [1, 1], c), [2])
    if ctx.has(2):
        y = y + R.reshape(ctx.input(2), [-1, 1])
    if act != "none":
        y = ctx.emit(y)
        y = y * R.sigmoid(y)
    total = ctx.importer.shape_of(padded)[2]
    state = R.strided_slice(padded, [2], [total - (k - 1)], [total])
    return [y, state]
