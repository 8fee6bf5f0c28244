"""Vector ``exp``, ``erf`` and ``tanh`` for float32 in straight-line LLVM IR.

LLVM lowers ``llvm.exp.v16f32`` to one ``expf`` call per lane (and ``erf`` is a libm call
per element), which makes vectorized softmax, sigmoid or GELU kernels call-bound.
:func:`emit_vector_exp` emits instead
the classic range reduction and polynomial (Cephes ``expf``):

    n = floor(x * log2(e) + 1/2),  r = x - n * ln2 (in two parts),
    exp(x) = P(r) * 2^n,   P a degree-7 polynomial with the Cephes coefficients,

with ``2^n`` built in the exponent bits in two halves so that results in the subnormal
range round gradually.  Inputs are clamped to [-104, 88.8] (below: 0, above: inf); NaN
propagates.  The error is within 2 ulp of the exact value over the whole float range
(tests compare with numpy).  Scalars use the same code (no libm call, so LLVM's loop
vectorizer can widen a loop around it).

:func:`emit_erf` (vector or scalar float32) uses two polynomial pieces fitted for this
module (weighted least squares in float64, coefficients rounded to float32):

    |x| < 1:  erf(x) = x * S(x^2),                    S of degree 6
    |x| >= 1: erf(x) = sign(x) * (1 - exp(-a^2) * L(1/a)),  a = min(|x|, 4), L of degree 8

(``exp(a^2) * erfc(a)`` is smooth in ``1/a``; beyond 4, ``erf`` rounds to +-1).  The
absolute error is below 1.5e-7 and the relative error within 3 ulp; NaN propagates.

:func:`emit_tanh` (vector or scalar float32), in two pieces as Cephes ``tanhf`` splits it:

    |x| < 0.625:  tanh(x) = x + x^3 * T(x^2),          T of degree 4 (Cephes coefficients)
    |x| >= 0.625: tanh(x) = sign(x) * (1 - 2 / (exp(2|x|) + 1))

(the second with the vector ``exp`` above, which saturates to inf beyond 88.8, giving
+-1); the relative error is within 3 ulp, NaN propagates.  An RNN/LSTM cell or a GELU
(tanh form) then vectorizes instead of calling ``tanhf`` per element.
"""

from __future__ import annotations

from llvmlite import ir

__all__ = ["emit_vector_exp", "emit_erf", "emit_tanh"]

_LOG2E = 1.44269504088896341
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
         1.6666665459e-1, 5.0000001201e-1)
_FLAGS = ("contract",)


_ERF_SMALL = (1.1283791065216064, -0.3761262595653534, 0.11283600330352783,
              -0.02685444988310337, 0.005189545452594757, -0.0008020923123694956,
              7.88937250035815e-05)
_ERF_LARGE = (0.00028098883922211826, 0.5588637590408325, 0.04325136914849281,
              -0.47632816433906555, 0.5074991583824158, -0.256536602973938,
              0.0360570065677166, 0.02279721386730671, -0.008301136083900928)


_TANH_SMALL = (-3.33332819422e-1, 1.33314422036e-1, -5.37397155531e-2, 2.06390887954e-2,
               -5.70498872745e-3)


def _splat(t: ir.Type, value: float | int) -> ir.Constant:
    if not isinstance(t, ir.VectorType):
        return ir.Constant(t, value)
    return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)


def _horner(b: ir.IRBuilder, coeffs: tuple, u: ir.Value) -> ir.Value:
    """``sum(coeffs[k] * u**k)``."""
    p = _splat(u.type, coeffs[-1])
    for c in coeffs[-2::-1]:
        p = b.fadd(b.fmul(p, u, flags=_FLAGS), _splat(u.type, c), flags=_FLAGS)
    return p


def emit_vector_exp(b: ir.IRBuilder, x: ir.Value, floor_fn: ir.Function) -> ir.Value:
    """``exp(x)`` for a ``<N x float>`` (or ``float``) value ``x``; ``floor_fn`` is
    ``llvm.floor`` of the same type."""
    ft = x.type
    it = ir.VectorType(ir.IntType(32), ft.count) if isinstance(ft, ir.VectorType) \
        else ir.IntType(32)
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


def emit_erf(b: ir.IRBuilder, x: ir.Value, floor_fn: ir.Function) -> ir.Value:
    """``erf(x)`` for a ``<N x float>`` or ``float`` value ``x`` (see the module docstring);
    ``floor_fn`` is ``llvm.floor`` of the same type (for the exp inside)."""
    ft = x.type
    one = _splat(ft, 1.0)
    small = b.fmul(x, _horner(b, _ERF_SMALL, b.fmul(x, x, flags=_FLAGS)), flags=_FLAGS)
    # |x| clamped to [1, 4]: the large piece on every lane, selected below
    neg = b.fcmp_ordered("<", x, _splat(ft, 0.0))
    a = b.select(neg, b.fsub(_splat(ft, 0.0), x), x)
    ac = b.select(b.fcmp_ordered("<", a, one), one, a)
    ac = b.select(b.fcmp_ordered(">", ac, _splat(ft, 4.0)), _splat(ft, 4.0), ac)
    tail = b.fmul(emit_vector_exp(b, b.fmul(b.fsub(_splat(ft, 0.0), ac), ac), floor_fn),
                  _horner(b, _ERF_LARGE, b.fdiv(one, ac)), flags=_FLAGS)
    large = b.fsub(one, tail)
    large = b.select(neg, b.fsub(_splat(ft, 0.0), large), large)
    y = b.select(b.fcmp_ordered("<", a, one), small, large)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def emit_tanh(b: ir.IRBuilder, x: ir.Value, floor_fn: ir.Function) -> ir.Value:
    """``tanh(x)`` for a ``<N x float>`` or ``float`` value ``x`` (see the module docstring);
    ``floor_fn`` is ``llvm.floor`` of the same type (for the exp inside)."""
    ft = x.type
    one, zero = _splat(ft, 1.0), _splat(ft, 0.0)
    z = b.fmul(x, x, flags=_FLAGS)
    small = b.fadd(x, b.fmul(b.fmul(x, z, flags=_FLAGS), _horner(b, _TANH_SMALL, z),
                             flags=_FLAGS), flags=_FLAGS)
    neg = b.fcmp_ordered("<", x, zero)
    a = b.select(neg, b.fsub(zero, x), x)
    e = emit_vector_exp(b, b.fadd(a, a), floor_fn)
    large = b.fsub(one, b.fdiv(_splat(ft, 2.0), b.fadd(e, one)))
    large = b.select(neg, b.fsub(zero, large), large)
    y = b.select(b.fcmp_ordered("<", a, _splat(ft, 0.625)), small, large)
    keep = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_ordered("==", x, zero))  # NaN, +-0
    return b.select(keep, x, y)
