"""Vector ``exp`` for float32 in straight-line LLVM IR.

LLVM lowers ``llvm.exp.v16f32`` to one ``expf`` call per lane, which makes vectorized
softmax, sigmoid or GELU-like kernels call-bound.  :func:`emit_vector_exp` emits instead
the classic range reduction and polynomial (Cephes ``expf``):

    n = floor(x * log2(e) + 1/2),  r = x - n * ln2 (in two parts),
    exp(x) = P(r) * 2^n,   P a degree-7 polynomial with the Cephes coefficients,

with ``2^n`` built in the exponent bits in two halves so that results in the subnormal
range round gradually.  Inputs are clamped to [-104, 88.8] (below: 0, above: inf); NaN
propagates.  The error is within 2 ulp of the exact value over the whole float range
(tests compare with numpy).  The scalar path keeps ``llvm.exp`` (libm).
"""

from __future__ import annotations

from llvmlite import ir

__all__ = ["emit_vector_exp"]

_LOG2E = 1.44269504088896341
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
         1.6666665459e-1, 5.0000001201e-1)
_FLAGS = ("contract",)


def _splat(t: ir.VectorType, value: float | int) -> ir.Constant:
    return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)


def emit_vector_exp(b: ir.IRBuilder, x: ir.Value, floor_fn: ir.Function) -> ir.Value:
    """``exp(x)`` for a ``<N x float>`` value ``x``; ``floor_fn`` is ``llvm.floor`` of the
    same type."""
    ft = x.type
    it = ir.VectorType(ir.IntType(32), ft.count)
    lo, hi = _splat(ft, -104.0), _splat(ft, 88.8)
    xc = b.select(b.fcmp_ordered("<", x, lo), lo, x)
    xc = b.select(b.fcmp_ordered(">", xc, hi), hi, xc)
    fx = b.call(floor_fn, [b.fadd(b.fmul(xc, _splat(ft, _LOG2E), flags=_FLAGS),
                                  _splat(ft, 0.5), flags=_FLAGS)])
    r = b.fsub(xc, b.fmul(fx, _splat(ft, _LN2_HI), flags=_FLAGS), flags=_FLAGS)
    r = b.fsub(r, b.fmul(fx, _splat(ft, _LN2_LO), flags=_FLAGS), flags=_FLAGS)
    p = _splat(ft, _POLY[0])
    for c in _POLY[1:]:
        p = b.fadd(b.fmul(p, r, flags=_FLAGS), _splat(ft, c), flags=_FLAGS)
    r2 = b.fmul(r, r, flags=_FLAGS)
    y = b.fadd(b.fadd(b.fmul(p, r2, flags=_FLAGS), r, flags=_FLAGS), _splat(ft, 1.0),
               flags=_FLAGS)
    n = b.fptosi(fx, it)
    n1 = b.ashr(n, _splat(it, 1))
    n2 = b.sub(n, n1)
    bias, shift = _splat(it, 127), _splat(it, 23)
    s1 = b.bitcast(b.shl(b.add(n1, bias), shift), ft)
    s2 = b.bitcast(b.shl(b.add(n2, bias), shift), ft)
    y = b.fmul(b.fmul(y, s1), s2)
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.select(is_nan, x, y)
