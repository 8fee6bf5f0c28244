"""Bessel and Airy functions and the classical orthogonal polynomials, elementwise.

Each function is written once, over a small *backend* (:class:`NumpyMath` or the TIR
emitter behind :func:`special_func`), so the compiled kernel and the operator's numpy
semantics are the same algorithm.  The algorithms follow ATen's CPU kernels (themselves
Cephes' methods; coefficient tables in :mod:`tvm.relax.topi._cephes`), branch for branch,
so special values (0, negative arguments, infinities, NaN) match torch.

A kernel is a hand-written PrimFunc: per element, a straight sequence of stores to local
scalars (the Chebyshev recurrences reuse every intermediate twice, which a single
expression tree would duplicate exponentially), and for the polynomials a serial loop whose
trip count is the element's degree.  Every branch is computed and the result picked with
``Select``; only arithmetic and ``exp``/``log``/``sqrt``/``sin``/``cos``/``acos`` are used,
so every target can compile it.  ``float16``/``bfloat16`` compute in ``float32``.

One deliberate difference: a polynomial at ``x = NaN`` is NaN (ATen's U/V/W, Laguerre and
Legendre kernels return an uninitialised value there).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from tvm import tir
from tvm.tir import For, PrimFunc, Var
from tvm.tir.expr import EQ, GE, GT, LE, LT, NE, And, Not, Or, Select

from . import _cephes as C
from ._tir import FuncBuilder, fresh_shapes, i64, loop_nest, seq
from ._util import broadcast_index, cast

__all__ = ["UNARY_SPECIAL", "POLYNOMIALS", "NumpyMath", "compute_dtype", "special_func",
           "numpy_special"]


def compute_dtype(dtype: str) -> str:
    return "float32" if dtype in ("float16", "bfloat16") else dtype


# -- backends ----------------------------------------------------------------------------------
class NumpyMath:
    """The backend over numpy arrays of one float dtype."""

    def __init__(self, dtype: str):
        self.dtype = np.dtype(dtype)

    def c(self, v: float) -> Any:
        return np.asarray(v, self.dtype)

    def let(self, e: Any) -> Any:
        return np.asarray(e, self.dtype)

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        return np.where(cond, a, b).astype(self.dtype)

    lt, le, gt, ge = (staticmethod(np.less), staticmethod(np.less_equal),
                      staticmethod(np.greater), staticmethod(np.greater_equal))
    eq, ne = staticmethod(np.equal), staticmethod(np.not_equal)
    and_, or_, not_ = (staticmethod(np.logical_and), staticmethod(np.logical_or),
                       staticmethod(np.logical_not))
    abs, exp, log, sqrt = (staticmethod(np.abs), staticmethod(np.exp), staticmethod(np.log),
                           staticmethod(np.sqrt))
    sin, cos, acos, floor = (staticmethod(np.sin), staticmethod(np.cos),
                             staticmethod(np.arccos), staticmethod(np.floor))
    isinf, isnan, trunc = staticmethod(np.isinf), staticmethod(np.isnan), staticmethod(np.trunc)

    def loop(self, count: Any, k0: float, p: Any, q: Any,
             step: Callable[[Any, Any, Any], Any]) -> Any:
        """``q`` after ``count`` (per element) steps ``p, q = q, step(k, p, q)``, k = k0, ..."""
        count = np.asarray(count)
        p, q = np.broadcast_arrays(self.let(p), self.let(q))
        p, q = p.copy(), q.copy()
        top = int(count.max()) if count.size else 0
        for i in range(top):
            active = count > i
            r = self.let(step(self.c(k0 + i), p, q))
            p, q = np.where(active, q, p), np.where(active, r, q)
        return q


class _TirMath(NumpyMath):
    """The backend emitting TIR: :meth:`let` stores into a fresh local scalar."""

    def __init__(self, dtype: str, fb: FuncBuilder):
        self.dtype, self.fb, self.stmts = dtype, fb, []

    def c(self, v: float) -> Any:
        return tir.const(v, self.dtype)

    def let(self, e: Any) -> Any:
        s = self.fb.scalar(self.dtype, f"t{len(self.fb.allocs)}")
        self.stmts.append(s.set(e))
        return s.value

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        return Select(cond, a, b)

    lt, le, gt, ge, eq, ne = (staticmethod(LT), staticmethod(LE), staticmethod(GT),
                              staticmethod(GE), staticmethod(EQ), staticmethod(NE))
    and_, or_, not_ = staticmethod(And), staticmethod(Or), staticmethod(Not)
    abs, exp, log, sqrt = (staticmethod(tir.abs), staticmethod(tir.exp), staticmethod(tir.log),
                           staticmethod(tir.sqrt))
    sin, cos, acos, floor = (staticmethod(tir.sin), staticmethod(tir.cos),
                             staticmethod(tir.op.acos), staticmethod(tir.floor))
    isinf, isnan, trunc = (staticmethod(tir.isinf), staticmethod(tir.isnan),
                           staticmethod(tir.op.trunc))

    def loop(self, count: Any, k0: float, p: Any, q: Any,
             step: Callable[[Any, Any, Any], Any]) -> Any:
        ps, qs, rs = (self.fb.scalar(self.dtype, f"{n}{len(self.fb.allocs)}") for n in "pqr")
        k = Var("k", "int64")
        kf = cast(k, self.dtype) + self.c(k0)
        body = seq(rs.set(step(kf, ps.value, qs.value)), ps.set(qs.value), qs.set(rs.value))
        self.stmts += [ps.set(p), qs.set(q),
                       For(k, i64(0), Select(GT(count, self.c(0)), cast(count, "int64"),
                                             i64(0)), body=body)]
        return qs.value


# -- shared pieces -----------------------------------------------------------------------------
def _chbevl(B: Any, y: Any, coeffs: Sequence[float]) -> Any:
    """Clenshaw's sum of a Chebyshev series in ``y/2`` (Cephes' ``chbevl`` convention)."""
    b0, b1 = B.c(coeffs[0]), B.c(0.0)
    b2 = b1
    for a in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = B.let(y * b1 - b2 + B.c(a))
    return B.c(0.5) * (b0 - b2)


def _polevl(B: Any, z: Any, coeffs: Sequence[float]) -> Any:
    """Horner's rule, highest order first."""
    acc = B.c(coeffs[0])
    for a in coeffs[1:]:
        acc = acc * z + B.c(a)
    return B.let(acc)


def _neg_if(B: Any, cond: Any, v: Any) -> Any:
    return B.where(cond, -v, v)


# -- modified Bessel functions ----------------------------------------------------------------
def _i_scaled(B: Any, ax: Any, A: Sequence[float], Bc: Sequence[float], order: int) -> Any:
    """``exp(-|x|) I_order(|x|)`` for ``ax = |x|``."""
    small = _chbevl(B, ax / B.c(2.0) - B.c(2.0), A)
    if order:
        small = small * ax
    large = _chbevl(B, B.c(32.0) / ax - B.c(2.0), Bc) / B.sqrt(ax)
    return B.let(B.where(B.le(ax, B.c(8.0)), small, large))


def i0e(B: Any, x: Any) -> Any:
    return _i_scaled(B, B.let(B.abs(x)), C.I0_A, C.I0_B, 0)


def i0(B: Any, x: Any) -> Any:
    ax = B.let(B.abs(x))
    return B.exp(ax) * _i_scaled(B, ax, C.I0_A, C.I0_B, 0)


def i1e(B: Any, x: Any) -> Any:
    return _neg_if(B, B.lt(x, B.c(0.0)), _i_scaled(B, B.let(B.abs(x)), C.I1_A, C.I1_B, 1))


def i1(B: Any, x: Any) -> Any:
    ax = B.let(B.abs(x))
    return _neg_if(B, B.lt(x, B.c(0.0)), B.exp(ax) * _i_scaled(B, ax, C.I1_A, C.I1_B, 1))


def _k(B: Any, x: Any, order: int, scaled: bool) -> Any:
    """K0/K1 (times ``exp(x)`` when ``scaled``): NaN for x < 0, inf at 0."""
    x = B.let(x)
    a = _chbevl(B, x * x - B.c(2.0), C.K1_A if order else C.K0_A)
    log_half = B.log(B.c(0.5) * x)
    if order:
        small = log_half * i1(B, x) + a / x
    else:
        small = a - log_half * i0(B, x)
    b = _chbevl(B, B.c(8.0) / x - B.c(2.0), C.K1_B if order else C.K0_B) / B.sqrt(x)
    if scaled:
        small = small * B.exp(x)
    else:
        b = B.exp(-x) * b
    out = B.where(B.le(x, B.c(2.0)), small, b)
    out = B.where(B.lt(x, B.c(0.0)), B.c(math.nan), out)
    return B.where(B.eq(x, B.c(0.0)), B.c(math.inf), out)


# -- Bessel functions of the first and second kind --------------------------------------------
def _asymptotic(B: Any, x: Any, order: int, second_kind: bool) -> Any:
    """The phase-amplitude form for x > 5 (``x`` > 0 assumed)."""
    pre = C.J1_PP, C.J1_PQ, C.J1_QP, C.J1_QQ
    if not order:
        pre = C.J0_PP, C.J0_PQ, C.J0_QP, C.J0_QQ
    w = B.let(B.c(25.0) / (x * x))
    pp, pq, qp, qq = (_polevl(B, w, t) for t in pre)
    phase = B.let(x - B.c(math.pi / 4 * (3 if order else 1)))
    p, q = pp / pq, B.c(5.0) / x * (qp / qq)
    if second_kind:
        mix = p * B.sin(phase) + q * B.cos(phase)
    else:
        mix = p * B.cos(phase) - q * B.sin(phase)
    return mix * B.c(math.sqrt(2 / math.pi)) / B.sqrt(x)


def bessel_j0(B: Any, x: Any) -> Any:
    ax = B.let(B.abs(x))
    z = B.let(ax * ax)
    small = (z - B.c(5.78318596294678452118)) * (z - B.c(30.4712623436620863991)) * (
        _polevl(B, z, C.J0_RP) / _polevl(B, z, C.J0_RQ))
    small = B.where(B.lt(ax, B.c(1e-5)), B.c(1.0) - z / B.c(4.0), small)
    return B.where(B.le(ax, B.c(5.0)), small, _asymptotic(B, ax, 0, False))


def bessel_j1(B: Any, x: Any) -> Any:
    ax = B.let(B.abs(x))
    z = B.let(ax * ax)
    small = _polevl(B, z, C.J1_RP) / _polevl(B, z, C.J1_RQ) * ax * (
        z - B.c(14.6819706421238932572)) * (z - B.c(49.2184563216946036703))
    out = B.let(B.where(B.le(ax, B.c(5.0)), small, _asymptotic(B, ax, 1, False)))
    return _neg_if(B, B.lt(x, B.c(0.0)), out)


def _y_small_guard(B: Any, x: Any, small: Any, large: Any) -> Any:
    out = B.where(B.lt(x, B.c(0.0)), B.c(math.nan), small)
    out = B.where(B.eq(x, B.c(0.0)), B.c(-math.inf), out)
    return B.where(B.le(x, B.c(5.0)), out, large)


def bessel_y0(B: Any, x: Any) -> Any:
    x = B.let(x)
    z = B.let(x * x)
    small = _polevl(B, z, C.Y0_P) / _polevl(B, z, C.Y0_Q) + B.c(2 / math.pi) * B.log(x) * (
        bessel_j0(B, x))
    return _y_small_guard(B, x, small, _asymptotic(B, x, 0, True))


def bessel_y1(B: Any, x: Any) -> Any:
    x = B.let(x)
    z = B.let(x * x)
    small = x * (_polevl(B, z, C.Y1_P) / _polevl(B, z, C.Y1_Q)) + B.c(2 / math.pi) * (
        bessel_j1(B, x) * B.log(x) - B.c(1.0) / x)
    return _y_small_guard(B, x, small, _asymptotic(B, x, 1, True))


def spherical_bessel_j0(B: Any, x: Any) -> Any:
    x = B.let(x)
    z = B.let(x * x)
    series = B.c(1.0)
    for k in (13, 11, 9, 7, 5, 3):  # 1 - z/3! + z^2/5! - ... (Horner, innermost first)
        series = B.c(1.0) - z / B.c(k * (k - 1)) * series
    out = B.where(B.lt(B.abs(x), B.c(0.5)), series, B.sin(x) / x)
    return B.where(B.isinf(x), B.c(0.0), out)


# -- Airy function -----------------------------------------------------------------------------
def airy_ai(B: Any, x: Any) -> Any:
    """Ai(x): asymptotic forms for x < -2.09 and x >= 2.09, the Maclaurin series between."""
    x = B.let(x)
    ax = B.let(B.abs(x))
    # oscillating tail (x < -2.09)
    zeta = B.let(B.c(2.0) * ax * B.sqrt(ax) / B.c(3.0))
    z = B.let(B.c(1.0) / zeta)
    zz = B.let(z * z)
    ratio_f = _polevl(B, zz, C.AIRY_FN) / _polevl(B, zz, C.AIRY_FD)
    ratio_g = _polevl(B, zz, C.AIRY_GN) / _polevl(B, zz, C.AIRY_GD)
    t = B.let(zeta + B.c(math.pi / 4))
    qrt = B.let(B.sqrt(B.sqrt(ax)))
    left = B.c(1 / math.sqrt(math.pi)) / qrt * (
        B.sin(t) * (B.c(1.0) + zz * ratio_f) - B.cos(t) * (z * ratio_g))
    # decaying tail (x >= 2.09)
    right = B.c(1 / math.sqrt(math.pi)) * (_polevl(B, z, C.AIRY_N) / _polevl(B, z, C.AIRY_D)) / (
        B.c(2.0) * qrt * B.exp(zeta))
    # Maclaurin series: Ai = c1 f - c2 g
    cube = B.let(x * x * x)
    f, g, m, n, k = B.c(1.0), x, B.c(1.0), x, 1.0
    for _ in range(16):
        m = B.let(m * cube / B.c((k + 1) * (k + 2)))
        n = B.let(n * cube / B.c((k + 2) * (k + 3)))
        f, g, k = B.let(f + m), B.let(g + n), k + 3
    middle = B.c(0.355028053887817239260) * f - B.c(0.258819403792806798405) * g
    out = B.where(B.lt(x, B.c(-2.09)), left, B.where(B.ge(x, B.c(2.09)), right, middle))
    out = B.where(B.gt(x, B.c(103.892)), B.c(0.0), out)
    return B.where(B.isinf(x), B.c(math.nan), out)


#: name -> f(backend, x)
UNARY_SPECIAL: dict[str, Callable[[Any, Any], Any]] = {
    "i0": i0, "i0e": i0e, "i1": i1, "i1e": i1e,
    "bessel_j0": bessel_j0, "bessel_j1": bessel_j1, "bessel_y0": bessel_y0,
    "bessel_y1": bessel_y1,
    "modified_bessel_k0": lambda B, x: _k(B, x, 0, False),
    "modified_bessel_k1": lambda B, x: _k(B, x, 1, False),
    "scaled_modified_bessel_k0": lambda B, x: _k(B, x, 0, True),
    "scaled_modified_bessel_k1": lambda B, x: _k(B, x, 1, True),
    "spherical_bessel_j0": spherical_bessel_j0, "airy_ai": airy_ai,
}


# -- orthogonal polynomials --------------------------------------------------------------------
def _degree(B: Any, n: Any) -> Any:
    """torch's ``static_cast<int64_t>(n)`` as a float: truncated; NaN, infinities and values
    outside int64 (INT64_MIN on the CPU, so the polynomial is 0) become -1."""
    inside = B.and_(B.ge(n, B.c(-9.2e18)), B.le(n, B.c(9.2e18)))
    return B.let(B.where(inside, B.trunc(n), B.c(-1.0)))


def _even(B: Any, n: Any) -> Any:
    return B.eq(n - B.c(2.0) * B.floor(n / B.c(2.0)), B.c(0.0))


def _pick(B: Any, cases: Sequence[tuple[Any, Any]], default: Any) -> Any:
    """The value of the first true condition (an if/else-if chain)."""
    out = default
    for cond, value in reversed(cases):
        out = B.where(cond, value, out)
    return out


def _chebyshev(kind: str, shifted: bool) -> Callable[[Any, Any, Any], Any]:
    """T/U/V/W (shifted: of ``2x - 1``) with ATen's special cases and closed forms."""
    threshold = {"t": 6, "u": 6 if shifted else 8, "v": 6 if shifted else 8,
                 "w": 4 if shifted else 8}[kind]

    def f(B: Any, x: Any, n: Any) -> Any:
        x = B.let(x)
        n = _degree(B, n)
        y = B.let(x + x - B.c(1.0)) if shifted else x
        at_one = B.eq(x, B.c(1.0)) if shifted else B.and_(B.eq(B.abs(x), B.c(1.0)),
                                                           B.gt(x, B.c(0.0)))
        at_minus_one = B.eq(x, B.c(0.0)) if shifted else B.eq(x, B.c(-1.0))
        even = _even(B, n)

        def odd_sign(v: Any) -> Any:
            return B.where(even, v, -v)

        two_n1 = n + n + B.c(1.0)
        one_value, minus_one_value = {
            "t": (B.c(1.0), odd_sign(B.c(1.0))), "u": (n + B.c(1.0), odd_sign(n + B.c(1.0))),
            "v": (B.c(1.0), odd_sign(two_n1)), "w": (two_n1, odd_sign(B.c(1.0))),
        }[kind]
        theta = B.let(B.acos(y))
        if kind == "t":
            closed = B.cos(n * theta)
        elif kind == "u":
            s = B.let(B.sin(theta))
            closed = B.where(B.ne(s, B.c(0.0)), B.sin((n + B.c(1.0)) * theta) / s,
                             (n + B.c(1.0)) * B.cos((n + B.c(1.0)) * theta) / y)
        elif kind == "v":
            closed = B.where(B.ne(B.sin(theta / B.c(2.0)), B.c(1.0)),
                             B.cos((n + B.c(0.5)) * theta) / B.cos(theta / B.c(2.0)),
                             odd_sign(two_n1))
        else:
            edge = odd_sign(B.c(1.0)) if shifted else B.where(
                B.gt(x, B.c(0.0)), two_n1, odd_sign(B.c(1.0)))
            closed = B.where(B.ne(B.cos(theta / B.c(2.0)), B.c(1.0)),
                             B.sin((n + B.c(0.5)) * theta) / B.sin(theta / B.c(2.0)), edge)
        first = {"t": y, "u": y + y, "v": y + y - B.c(1.0), "w": y + y + B.c(1.0)}[kind]
        first = B.let(first)
        cases = [(B.lt(n, B.c(0.0)), B.c(0.0)), (at_one, one_value),
                 (at_minus_one, minus_one_value),
                 (B.and_(B.gt(n, B.c(threshold)), B.lt(B.abs(y), B.c(1.0))), closed),
                 (B.eq(n, B.c(0.0)), B.c(1.0)), (B.eq(n, B.c(1.0)), first)]
        trips = _pick(B, [(c, B.c(0.0)) for c, _ in cases], n - B.c(1.0))
        rec = B.loop(trips, 2.0, B.c(1.0), first, lambda k, p, q: (y + y) * q - p)
        return _pick(B, cases, rec)

    return f


def _hermite(physicists: bool) -> Callable[[Any, Any, Any], Any]:
    def f(B: Any, x: Any, n: Any) -> Any:
        x = B.let(x)
        n = _degree(B, n)
        limit = {"float32": 128, "float64": 512}.get(str(B.dtype), 1024)
        first = B.let(x + x if physicists else x)
        cases = [(B.lt(n, B.c(0.0)), B.c(0.0)), (B.eq(n, B.c(0.0)), B.c(1.0)),
                 (B.eq(n, B.c(1.0)), first), (B.gt(n, B.c(limit)), B.c(math.nan))]
        trips = _pick(B, [(c, B.c(0.0)) for c, _ in cases], n - B.c(1.0))
        if physicists:  # k = 2, 4, ..., 2n - 2
            rec = B.loop(trips, 1.0, B.c(1.0), first,
                         lambda k, p, q: (x + x) * q - (k + k) * p)
        else:
            rec = B.loop(trips, 1.0, B.c(1.0), first, lambda k, p, q: x * q - k * p)
        return _pick(B, cases, rec)

    return f


def laguerre_polynomial_l(B: Any, x: Any, n: Any) -> Any:
    x, n = B.let(x), _degree(B, n)
    first = B.let(B.c(1.0) - x)
    cases = [(B.lt(n, B.c(0.0)), B.c(0.0)), (B.eq(B.abs(x), B.c(0.0)), B.c(1.0)),
             (B.eq(n, B.c(0.0)), B.c(1.0)), (B.eq(n, B.c(1.0)), first)]
    trips = _pick(B, [(c, B.c(0.0)) for c, _ in cases], n - B.c(1.0))
    rec = B.loop(trips, 1.0, B.c(1.0), first,
                 lambda k, p, q: ((k + k + first) * q - k * p) / (k + B.c(1.0)))
    return _pick(B, cases, rec)


def legendre_polynomial_p(B: Any, x: Any, n: Any) -> Any:
    x, n = B.let(x), _degree(B, n)
    unit = B.where(B.or_(B.gt(x, B.c(0.0)), _even(B, n)), B.c(1.0), B.c(-1.0))
    cases = [(B.lt(n, B.c(0.0)), B.c(0.0)), (B.eq(B.abs(x), B.c(1.0)), unit),
             (B.eq(n, B.c(0.0)), B.c(1.0)), (B.eq(n, B.c(1.0)), x)]
    trips = _pick(B, [(c, B.c(0.0)) for c, _ in cases], n - B.c(1.0))
    rec = B.loop(trips, 1.0, B.c(1.0), x,
                 lambda k, p, q: ((k + k + B.c(1.0)) * x * q - k * p) / (k + B.c(1.0)))
    return _pick(B, cases, rec)


#: name -> f(backend, x, n)
POLYNOMIALS: dict[str, Callable[[Any, Any, Any], Any]] = {
    **{f"chebyshev_polynomial_{k}": _chebyshev(k, False) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": _chebyshev(k, True) for k in "tuvw"},
    "hermite_polynomial_h": _hermite(True), "hermite_polynomial_he": _hermite(False),
    "laguerre_polynomial_l": laguerre_polynomial_l,
    "legendre_polynomial_p": legendre_polynomial_p,
}


# -- entry points ------------------------------------------------------------------------------
def numpy_special(name: str, *xs: Any) -> np.ndarray:
    """``name`` (a key of :data:`UNARY_SPECIAL` or :data:`POLYNOMIALS`) on numpy arrays."""
    arrays = [np.asarray(x) for x in xs]
    dtype = str(arrays[0].dtype)
    cdt = compute_dtype(dtype)
    B = NumpyMath(cdt)
    fn = UNARY_SPECIAL.get(name) or POLYNOMIALS[name]
    with np.errstate(all="ignore"):
        out = fn(B, *(np.broadcast_arrays(*[a.astype(cdt) for a in arrays])))
    return np.asarray(out).astype(arrays[0].dtype)


def special_func(name: str, shapes: Sequence[Sequence[Any]], out_shape: Sequence[Any],
                 dtype: str) -> PrimFunc:
    """PrimFunc ``(*inputs, out)``: ``name`` elementwise over inputs of ``shapes`` broadcast
    to ``out_shape``, all of float ``dtype``."""
    *shapes, out_shape = fresh_shapes(*shapes, out_shape)
    fb = FuncBuilder()
    ins = [fb.arg(s, dtype, f"x{i}") for i, s in enumerate(shapes)]
    out = fb.arg(out_shape, dtype, "out")
    cdt = compute_dtype(dtype)
    fn = UNARY_SPECIAL.get(name) or POLYNOMIALS[name]

    def body(idx: list) -> Any:
        B = _TirMath(cdt, fb)
        args = [B.let(cast(b[broadcast_index(idx, b.shape)], cdt)) for b in ins]
        value = fn(B, *args)
        return seq(*B.stmts, tir.BufferStore(out, cast(value, dtype), tuple(idx)))

    return fb.finish(loop_nest(out_shape, body))
