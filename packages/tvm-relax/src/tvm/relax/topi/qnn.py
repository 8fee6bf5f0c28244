"""Integer (quantized) te computes: quantize, dequantize, fixed-point requantize, quantized
conv2d / matmul with zero-point correction, quantized add / mul / concat.

Quantization parameters are compile-time values: a Python number for a per-tensor value, a
te tensor (a constant the legalization passes in) for a per-channel one, indexed along the
channel axis.  Integer results are computed in int32 (products and accumulators) and int64
(fixed-point products); see :func:`fixed_point_multiplier` for the rounding.
"""

from __future__ import annotations

import math
from typing import Any, Sequence, Union

import numpy as np

from tvm import te, tir
from tvm.tir.expr import GE, LT, FloorDiv, IntImm, Max, Min, PrimExpr

from ._util import broadcast_index, cast, int64, simplify
from .nn import Layout, conv_out_dim

__all__ = [
    "INT_RANGES", "fixed_point_multiplier", "common_shift_multipliers", "rounding_shift_np",
    "quantize", "dequantize", "requantize", "conv2d", "matmul", "add", "multiply", "concat",
    "shift_8bit",
]

Param = Union[int, float, te.Tensor]

#: value range of each quantized integer dtype
INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
              "uint16": (0, 65535), "int32": (-(2**31), 2**31 - 1)}


# -- fixed-point arithmetic (the one definition; the numpy evaluators use the same) -------------
def fixed_point_multiplier(real: float, what: str = "requantize") -> tuple[int, int]:
    """``(m, s)`` with ``real ~= m * 2**-s``: ``m`` an int32 in ``[2**30, 2**31)`` (0 for 0),
    ``s`` a right shift in ``[1, 62]``.

    ``m`` is ``real``'s mantissa rounded to 31 bits (relative error below ``2**-31``); a
    multiplier below ``2**-32`` (every int32 input rounds to 0) becomes ``(0, 1)``.  A value
    is then rescaled as ``round_half_even(x * m / 2**s)`` in int64 (:func:`rounding_shift`).
    """
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"{what}: the scale ratio must be finite and non-negative, got {real}")
    if real == 0.0:
        return 0, 1
    frac, exp = math.frexp(real)  # real = frac * 2**exp, frac in [0.5, 1)
    m = round(frac * 2**31)
    if m == 2**31:
        m, exp = m // 2, exp + 1
    s = 31 - exp
    if s < 1:
        raise ValueError(f"{what}: the scale ratio {real} is too large for a fixed-point "
                         "multiplier (at most 2**30)")
    if s > 62:
        return 0, 1
    return m, s


def common_shift_multipliers(reals: Sequence[float], what: str) -> tuple[list[int], int]:
    """Multipliers ``m_i`` sharing one shift ``s`` (``reals[i] ~= m_i * 2**-s``), the
    largest in ``[2**30, 2**31)``: terms rescaled by them are summed before one rounding."""
    for r in reals:
        fixed_point_multiplier(r, what)  # the same checks
    m_top, s = fixed_point_multiplier(max(reals), what)
    if m_top == 0:
        return [0 for _ in reals], 1
    ms = [round(r * 2.0**s) for r in reals]
    if max(ms) >= 2**31:
        s -= 1
        ms = [round(r * 2.0**s) for r in reals]
    return ms, s


def rounding_shift(p: PrimExpr, s: PrimExpr) -> PrimExpr:
    """``round_half_even(p / 2**s)`` of an int64 ``p`` for a shift ``s`` in ``[1, 62]``:
    ``(p + 2**(s-1) - 1 + ((p >> s) & 1)) >> s`` (``>>`` floors; adding half minus one, plus
    one more when the floor is odd, carries exactly the remainders above half, and half
    itself when that makes the result even)."""
    s = int64(s)
    one = IntImm("int64", 1)
    odd = tir.op.bitwise_and(tir.op.shift_right(p, s), one)
    bias = tir.op.shift_left(one, s - one) - one + odd
    return tir.op.shift_right(p + bias, s)


def rounding_shift_np(p: np.ndarray, s: Any) -> np.ndarray:
    """numpy twin of :func:`rounding_shift` (int64 arrays; ``s`` broadcasts)."""
    p = np.asarray(p, np.int64)
    s = np.asarray(s, np.int64)
    odd = (p >> s) & 1
    return (p + (np.int64(1) << (s - 1)) - 1 + odd) >> s


# -- parameters ---------------------------------------------------------------------------------
def _at(value: Param, index: Any, dtype: str) -> PrimExpr:
    """A per-tensor value as a constant, a per-channel one read at ``index``."""
    if isinstance(value, te.Tensor):
        return cast(value(index), dtype)
    return cast(value, dtype)


def _clamp(x: PrimExpr, lo: int, hi: int) -> PrimExpr:
    return Min(Max(x, cast(lo, x.dtype)), cast(hi, x.dtype))


# -- quantize / dequantize / requantize ----------------------------------------------------------
def quantize(data: te.Tensor, scale: Param, zero_point: Param, axis: int,
             out_dtype: str) -> te.Tensor:
    """``saturate(round_half_even(x / scale) + zero_point)`` in float32 (ONNX QuantizeLinear)."""
    lo, hi = INT_RANGES[out_dtype]
    fdt = "float32"

    def f(*idx: Any) -> PrimExpr:
        c = idx[axis] if data.ndim else None
        y = tir.op.nearbyint(cast(data(*idx), fdt) / _at(scale, c, fdt))
        y = y + _at(zero_point, c, fdt)
        return cast(_clamp(y, lo, hi), out_dtype)

    return te.compute(tuple(data.shape), f, name="quantize")


def dequantize(data: te.Tensor, scale: Param, zero_point: Param, axis: int,
               out_dtype: str) -> te.Tensor:
    """``float(int32(x) - zero_point) * scale`` (ONNX DequantizeLinear)."""

    def f(*idx: Any) -> PrimExpr:
        c = idx[axis] if data.ndim else None
        v = cast(data(*idx), "int32") - _at(zero_point, c, "int32")
        return cast(cast(v, "float32") * _at(scale, c, "float32"), out_dtype)

    return te.compute(tuple(data.shape), f, name="dequantize")


def requantize(data: te.Tensor, multiplier: Param, shift: Param, input_zero_point: Param,
               output_zero_point: Param, axis: int, out_dtype: str, clip: tuple) -> te.Tensor:
    """``clip(out_zp + round_half_even((x - in_zp) * m / 2**s))``, ``m``/``s`` from
    :func:`fixed_point_multiplier` (per tensor or per channel along ``axis``)."""
    lo, hi = clip

    def f(*idx: Any) -> PrimExpr:
        c = idx[axis] if data.ndim else None
        x = cast(data(*idx), "int64")
        if isinstance(input_zero_point, te.Tensor) or input_zero_point != 0:
            x = x - _at(input_zero_point, c, "int64")
        y = rounding_shift(x * _at(multiplier, c, "int64"), _at(shift, c, "int64"))
        if isinstance(output_zero_point, te.Tensor) or output_zero_point != 0:
            y = y + _at(output_zero_point, c, "int64")
        return cast(_clamp(y, lo, hi), out_dtype)

    return te.compute(tuple(data.shape), f, name="requantize")


def shift_8bit(x: te.Tensor, shift: int) -> te.Tensor:
    """``x + shift`` in the other 8-bit dtype: int8 ``+128`` -> uint8, uint8 ``-128`` ->
    int8 (the same real values with the zero point moved by ``shift``)."""
    out = "uint8" if shift > 0 else "int8"
    return te.compute(tuple(x.shape), lambda *i: cast(cast(x(*i), "int32") + shift, out),
                      name="qshift")


# -- quantized conv2d / matmul ------------------------------------------------------------------
def conv2d(data: te.Tensor, weight: te.Tensor, input_zero_point: int, kernel_zero_point: Param,
           strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int], groups: int,
           data_layout: str, kernel_layout: str, out_layout: str) -> te.Tensor:
    """``sum((x - zx) * (w - zw[o]))`` in int32, computed as
    ``sum(x * w) - zw[o] * sum(x) - zx * sum(w[o]) + K * zx * zw[o]`` (``K`` the window size
    per group); padding holds ``zx`` (the real value 0).  A zero ``zx`` or ``zw`` drops its
    correction at compile time, so the main reduction is a plain int8 dot product."""
    dl, kl, ol = Layout(data_layout), Layout(kernel_layout), Layout(out_layout)
    ddims, kdims = dl.dims(data.shape), kl.dims(weight.shape)
    ksizes = [kdims[c] for c in kl.spatial]
    in_sizes = [ddims[c] for c in dl.spatial]
    out_sp = [simplify(int64(conv_out_dim(int64(s), int64(k), st, d, padding[i], padding[i + 2])))
              for i, (s, k, st, d) in enumerate(zip(in_sizes, ksizes, strides, dilation))]
    cin_g, cout = kdims["I"], kdims["O"]
    cout_g = simplify(int64(cout) // groups)
    out_dims = {"N": ddims["N"], "C": cout, **dict(zip(dl.spatial, out_sp))}
    zx = int(input_zero_point)
    zw_zero = not isinstance(kernel_zero_point, te.Tensor) and int(kernel_zero_point) == 0

    def window(o: dict, rc: Any, rs: list) -> PrimExpr:
        g = FloorDiv(o["C"], cout_g) if groups > 1 else None
        ic = g * int64(cin_g) + rc.var if g is not None else rc.var
        pos, inside = {}, []
        for i, c in enumerate(dl.spatial):
            p = o[c] * strides[i] + rs[i].var * dilation[i] - padding[i]
            pos[c] = p
            if padding[i] or padding[i + 2]:
                inside += [GE(p, IntImm("int64", 0)), LT(p, int64(in_sizes[i]))]
        x = cast(data(*dl.index({"N": o["N"], "C": ic, **pos})), "int32")
        if inside:
            x = tir.if_then_else(tir.all(*inside), x, cast(zx, "int32"))
        return x

    def axes(tag: str) -> tuple:
        rc = te.reduce_axis((0, cin_g), name=f"{tag}c")
        rs = [te.reduce_axis((0, k), name=f"{tag}{c.lower()}") for c, k in zip(kl.spatial, ksizes)]
        return rc, rs

    def weight_at(oc: Any, rc: Any, rs: list) -> PrimExpr:
        return cast(weight(*kl.index({"O": oc, "I": rc.var,
                                       **{c: r.var for c, r in zip(kl.spatial, rs)}})), "int32")

    def raw(*idx: Any) -> PrimExpr:
        o = ol.split(idx)
        rc, rs = axes("r")
        return te.sum(window(o, rc, rs) * weight_at(o["C"], rc, rs), axis=[rc, *rs])

    acc = te.compute(tuple(ol.index(out_dims)), raw, name="qconv_acc")
    if zx == 0 and zw_zero:
        return acc
    xsum = wsum = None
    if not zw_zero:
        def fx(*idx: Any) -> PrimExpr:
            o = ol.split(idx)
            rc, rs = axes("s")
            return te.sum(window(o, rc, rs), axis=[rc, *rs])

        # one window sum per output position and channel (grouped windows differ per group)
        xsum = te.compute(tuple(ol.index(out_dims)), fx, name="qconv_xsum")
    if zx != 0:
        def fw(oc: Any) -> PrimExpr:
            rc, rs = axes("w")
            return te.sum(weight_at(oc, rc, rs), axis=[rc, *rs])

        wsum = te.compute((cout,), fw, name="qconv_wsum")
    k = simplify(int64(cin_g) * math.prod(int(simplify(int64(s)).value) for s in ksizes)) \
        if all(isinstance(simplify(int64(s)), IntImm) for s in ksizes) else None

    def out(*idx: Any) -> PrimExpr:
        # the correction terms first, so that their sums come before the accumulator in
        # program order (the int8 schedule computes this block per tile of the accumulator)
        oc = ol.split(idx)["C"]
        zw = _at(kernel_zero_point, oc, "int32")
        terms = []
        if wsum is not None:
            terms.append(cast(-zx, "int32") * wsum(oc))
        if xsum is not None:
            terms.append(zw * xsum(*idx) * cast(-1, "int32"))
        if wsum is not None and not zw_zero:
            kk = cast(k, "int32") if k is not None else cast(
                int64(cin_g) * math.prod(int64(s) for s in ksizes), "int32")
            terms.append(kk * cast(zx, "int32") * zw)
        return _sum_then(terms, acc(*idx))

    return te.compute(tuple(acc.shape), out, name="qconv")


def matmul(a: te.Tensor, b: te.Tensor, a_zero_point: int, b_zero_point: Param,
           transpose_b: bool) -> te.Tensor:
    """Batched ``sum_k (a[.., i, k] - za) * (b[.., k, j] - zb[j])`` in int32 (``b`` is
    ``[.., j, k]`` with ``transpose_b``), with the zero-point terms as in :func:`conv2d`;
    leading batch dimensions broadcast.  ``a`` may be 1-d... no: both operands are >= 2-d,
    except a 2-d ``b`` shared by every batch of ``a``."""
    from .elemwise import _out_shape

    a_batch, b_batch = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    batch = _out_shape(a_batch, b_batch) if (a_batch or b_batch) else ()
    nb = len(batch)
    kdim = a.shape[-1]
    n = b.shape[-2] if transpose_b else b.shape[-1]
    out_shape = (*batch, a.shape[-2], n)
    za = int(a_zero_point)
    zb_zero = not isinstance(b_zero_point, te.Tensor) and int(b_zero_point) == 0

    def a_at(bidx: tuple, i: Any, k: Any) -> PrimExpr:
        return cast(a(*broadcast_index(bidx, a_batch), i, k), "int32")

    def b_at(bidx: tuple, k: Any, j: Any) -> PrimExpr:
        bi = broadcast_index(bidx, b_batch)
        return cast(b(*bi, j, k) if transpose_b else b(*bi, k, j), "int32")

    def raw(*idx: Any) -> PrimExpr:
        k = te.reduce_axis((0, kdim), name="k")
        bidx, i, j = idx[:nb], idx[nb], idx[nb + 1]
        return te.sum(a_at(bidx, i, k) * b_at(bidx, k, j), axis=k)

    acc = te.compute(out_shape, raw, name="qmatmul_acc")
    if za == 0 and zb_zero:
        return acc
    asum = bsum = None
    if not zb_zero:
        def fa(*idx: Any) -> PrimExpr:
            k = te.reduce_axis((0, kdim), name="ka")
            return te.sum(a_at(idx[:nb], idx[nb], k), axis=k)

        asum = te.compute((*batch, a.shape[-2]), fa, name="qmatmul_asum")
    if za != 0:
        def fb(*idx: Any) -> PrimExpr:
            k = te.reduce_axis((0, kdim), name="kb")
            return te.sum(b_at(idx[:nb], k, idx[nb]), axis=k)

        bsum = te.compute((*batch, n), fb, name="qmatmul_bsum")

    def out(*idx: Any) -> PrimExpr:
        # the correction terms first (see conv2d)
        bidx, i, j = idx[:nb], idx[nb], idx[nb + 1]
        zb = _at(b_zero_point, j, "int32")
        terms = []
        if bsum is not None:
            terms.append(cast(-za, "int32") * bsum(*bidx, j))
        if asum is not None:
            terms.append(zb * asum(*bidx, i) * cast(-1, "int32"))
        if bsum is not None and not zb_zero:
            terms.append(cast(kdim, "int32") * cast(za, "int32") * zb)
        return _sum_then(terms, acc(*idx))

    return te.compute(out_shape, out, name="qmatmul")


def _sum_then(terms: list, last: PrimExpr) -> PrimExpr:
    """``terms[0] + terms[1] + ... + last`` (int32, wrapping: any order gives the same
    result)."""
    v = None
    for t in terms:
        v = t if v is None else v + t
    return last if v is None else v + last


# -- quantized elementwise ----------------------------------------------------------------------
def _broadcast_shape(a: te.Tensor, b: te.Tensor) -> tuple:
    from .elemwise import _out_shape

    return tuple(_out_shape(tuple(a.shape), tuple(b.shape)))


def add(a: te.Tensor, b: te.Tensor, za: int, zb: int, ma: int, mb: int, shift: int, zo: int,
        out_dtype: str, clip: tuple) -> te.Tensor:
    """``clip(zo + round_half_even(((a - za) * ma + (b - zb) * mb) / 2**shift))`` in int64:
    both inputs rescaled to the output scale with one shared shift and rounded once."""
    shape = _broadcast_shape(a, b)

    def f(*idx: Any) -> PrimExpr:
        xa = cast(a(*broadcast_index(idx, a.shape)), "int64") - int64(za)
        xb = cast(b(*broadcast_index(idx, b.shape)), "int64") - int64(zb)
        y = rounding_shift(xa * int64(ma) + xb * int64(mb), int64(shift))
        return cast(_clamp(y + int64(zo), *clip), out_dtype)

    return te.compute(shape, f, name="qadd")


def multiply(a: te.Tensor, b: te.Tensor, za: int, zb: int, m: int, shift: int, zo: int,
             out_dtype: str, clip: tuple) -> te.Tensor:
    """``clip(zo + round_half_even((a - za) * (b - zb) * m / 2**shift))``."""
    shape = _broadcast_shape(a, b)

    def f(*idx: Any) -> PrimExpr:
        xa = cast(a(*broadcast_index(idx, a.shape)), "int64") - int64(za)
        xb = cast(b(*broadcast_index(idx, b.shape)), "int64") - int64(zb)
        y = rounding_shift(xa * xb * int64(m), int64(shift))
        return cast(_clamp(y + int64(zo), *clip), out_dtype)

    return te.compute(shape, f, name="qmul")


def concat(tensors: Sequence[te.Tensor], axis: int, params: Sequence[tuple], zo: int,
           out_dtype: str) -> te.Tensor:
    """Concatenation along ``axis``; input ``i`` with ``params[i] = (zi, m, s)`` rescaled as
    ``clip(zo + round_half_even((x - zi) * m / 2**s))``, or copied when ``m`` is None (same
    scale and zero point as the output)."""
    lo, hi = INT_RANGES[out_dtype]
    offsets, total = [], IntImm("int64", 0)
    for t in tensors:
        offsets.append(total)
        total = simplify(total + int64(t.shape[axis]))
    shape = list(tensors[0].shape)
    shape[axis] = total

    def value(k: int, idx: tuple) -> PrimExpr:
        src = list(idx)
        src[axis] = idx[axis] - offsets[k]
        x = tensors[k](*src)
        zi, m, s = params[k]
        if m is None:
            return cast(x, out_dtype)
        y = rounding_shift((cast(x, "int64") - int64(zi)) * int64(m), int64(s))
        return cast(_clamp(y + int64(zo), lo, hi), out_dtype)

    def f(*idx: Any) -> PrimExpr:
        out = value(len(tensors) - 1, idx)
        for k in range(len(tensors) - 2, -1, -1):
            out = tir.if_then_else(LT(idx[axis], offsets[k + 1]), value(k, idx), out)
        return out

    return te.compute(tuple(shape), f, name="qconcat")
