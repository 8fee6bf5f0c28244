"""Matrix factorizations and solves as hand-written TIR PrimFuncs (LAPACK's algorithms).

Each function works on a batch of matrices: the last two dimensions are one matrix, the
leading ones a batch looped over (serially; the local work buffers are shared by the
iterations).  The algorithms are the unblocked LAPACK ones, with LAPACK's choices so that
results match it and thus torch:

- :func:`lu_factor_func` -- ``getrf``: partial pivoting, the pivot is the first row with the
  largest ``|a|``; pivots are 1-based row swaps; ``info`` the first zero pivot (1-based).
- :func:`cholesky_func` -- ``potrf`` (lower): ``info`` the first non-positive pivot.
- :func:`trsm_func` -- forward / back substitution for ``A X = B``.
- :func:`lu_permutation_func` -- the row permutation of a sequence of pivots.
- :func:`geqrf_func` / :func:`householder_product_func` -- ``geqrf`` / ``orgqr``: Householder
  QR with ``dlarfg``'s reflectors (``beta = -sign(alpha) * ||x||``, ``tau = 0`` when the
  column below the diagonal is zero).
- :func:`matrix_exp_func` -- scaling and squaring with a Taylor polynomial.
- :func:`ldl_factor_func` / :func:`ldl_solve_func` -- ``sytf2`` / ``sytrs`` (lower,
  Bunch-Kaufman pivoting as LAPACK).
- :func:`svd_jacobi_func` / :func:`eigh_jacobi_func` -- one-sided / cyclic Jacobi.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from tvm import tir
from tvm.tir import BufferStore, For, PrimFunc, Stmt, Var
from tvm.tir.expr import EQ, GE, GT, LE, LT, NE, Or, Select

from ._tir import FuncBuilder, fresh_shapes, i64, if_then, loop_nest, seq, while_loop
from ._util import cast, int64

__all__ = ["lu_factor_func", "cholesky_func", "trsm_func", "lu_permutation_func",
           "geqrf_func", "householder_product_func", "matrix_exp_func", "ldl_factor_func",
           "ldl_solve_func", "svd_jacobi_func", "eigh_jacobi_func"]


def _range(lo: Any, hi: Any, body: Callable[[Var], Stmt], name: str = "t") -> Stmt:
    """``for v in range(lo, hi): body(v)`` (no iterations when ``hi <= lo``)."""
    v = Var(name, "int64")
    lo = int64(lo)
    return For(v, lo, tir.Max(int64(hi) - lo, i64(0)), body=body(v))


def _batched(shapes: Sequence[Sequence[Any]], nbatch: int,
             body: Callable[[list], Stmt]) -> Stmt:
    return loop_nest(list(shapes[0][:nbatch]), body, prefix="b")


def lu_factor_func(shape: Sequence[Any], dtype: str) -> PrimFunc:
    """``(LU, pivots int32 [..., min(m, n)], info int32 [...])`` of ``a`` (``shape``: ``[...,
    m, n]``): ``P A = L U`` with unit-lower ``L`` below the diagonal of ``LU``."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 2
    m, n = int64(shape[-2]), int64(shape[-1])
    k = tir.Min(m, n)
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    lu = fb.arg(shape, dtype, "lu")
    piv = fb.arg((*shape[:nb], k), "int32", "pivots")
    info = fb.arg(tuple(shape[:nb]), "int32", "info")
    best = fb.scalar(dtype, "best")
    p = fb.scalar("int64", "p")
    tmp = fb.scalar(dtype, "tmp")

    def one(b: list) -> Stmt:
        def at(i: Any, j: Any) -> Any:
            return lu[(*b, i, j)]

        def put(i: Any, j: Any, v: Any) -> Stmt:
            return BufferStore(lu, v, (*b, i, j))

        copy = _range(0, m, lambda i: _range(0, n, lambda j: put(i, j, a[(*b, i, j)]), "c"), "r")

        def column(j: Var) -> Stmt:
            search = seq(
                p.set(j), best.set(tir.abs(at(j, j))),
                _range(j + 1, m, lambda i: if_then(
                    GT(tir.abs(at(i, j)), best.value),
                    seq(best.set(tir.abs(at(i, j))), p.set(i))), "i"))
            swap = if_then(NE(p.value, j), _range(0, n, lambda c: seq(
                tmp.set(at(j, c)), put(j, c, at(p.value, c)), put(p.value, c, tmp.value)), "c"))
            scale = _range(j + 1, m, lambda i: put(i, j, at(i, j) / at(j, j)), "i")
            nonzero = NE(at(p.value, j), cast(0, dtype))
            record = if_then(EQ(info[tuple(b)], 0), BufferStore(info, cast(j + 1, "int32"),
                                                                 tuple(b)))
            update = _range(j + 1, m, lambda i: _range(j + 1, n, lambda c: put(
                i, c, at(i, c) - at(i, j) * at(j, c)), "c"), "i")
            return seq(search, BufferStore(piv, cast(p.value + 1, "int32"), (*b, j)),
                       if_then(nonzero, seq(swap, scale), record), update)

        return seq(copy, BufferStore(info, cast(0, "int32"), tuple(b)),
                   _range(0, k, column, "j"))

    return fb.finish(_batched([shape], nb, one))


def cholesky_func(shape: Sequence[Any], dtype: str) -> PrimFunc:
    """``(L, info int32 [...])``: the lower Cholesky factor of ``a`` ``[..., n, n]`` (its lower
    triangle is read).  On failure at column ``j`` (``info = j + 1``) that column holds the
    non-positive pivot and the later ones are zero."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 2
    n = int64(shape[-1])
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    low = fb.arg(shape, dtype, "l")
    info = fb.arg(tuple(shape[:nb]), "int32", "info")
    acc = fb.scalar(dtype, "acc")

    def one(b: list) -> Stmt:
        def at(i: Any, j: Any) -> Any:
            return low[(*b, i, j)]

        def put(i: Any, j: Any, v: Any) -> Stmt:
            return BufferStore(low, v, (*b, i, j))

        zero = _range(0, n, lambda i: _range(0, n, lambda j: put(i, j, cast(0, dtype)), "c"), "r")

        def dot(i: Any, j: Any) -> Stmt:  # acc = a[i, j] - sum_t L[i, t] L[j, t]
            return seq(acc.set(a[(*b, i, j)]),
                       _range(0, j, lambda t: acc.set(acc.value - at(i, t) * at(j, t)), "t"))

        def column(j: Var) -> Stmt:
            d = acc.value
            bad = Or(LE(d, cast(0, dtype)), tir.isnan(d))
            good = seq(put(j, j, tir.sqrt(d)), _range(j + 1, n, lambda i: seq(
                dot(i, j), put(i, j, acc.value / at(j, j))), "i"))
            fail = seq(put(j, j, d), BufferStore(info, cast(j + 1, "int32"), tuple(b)))
            return if_then(EQ(info[tuple(b)], 0), seq(dot(j, j), if_then(bad, fail, good)))

        return seq(zero, BufferStore(info, cast(0, "int32"), tuple(b)),
                   _range(0, n, column, "j"))

    return fb.finish(_batched([shape], nb, one))


def trsm_func(a_shape: Sequence[Any], b_shape: Sequence[Any], dtype: str, upper: bool,
              unit: bool) -> PrimFunc:
    """``X`` with ``A X = B``: ``A`` ``[..., n, n]`` triangular (``upper``; ``unit``: its
    diagonal is taken as ones), ``B`` ``[..., n, k]`` with the same batch dimensions."""
    a_shape, b_shape = fresh_shapes(a_shape, b_shape)
    nb = len(a_shape) - 2
    n, kk = int64(b_shape[-2]), int64(b_shape[-1])
    fb = FuncBuilder()
    a = fb.arg(a_shape, dtype, "a")
    rhs = fb.arg(b_shape, dtype, "b")
    x = fb.arg(b_shape, dtype, "x")
    acc = fb.scalar(dtype, "acc")

    def one(b: list) -> Stmt:
        def row(ii: Var, c: Var) -> Stmt:
            i = n - 1 - ii if upper else ii
            lo, hi = (i + 1, n) if upper else (0, i)
            value = acc.value if unit else acc.value / a[(*b, i, i)]
            return seq(acc.set(rhs[(*b, i, c)]),
                       _range(lo, hi, lambda t: acc.set(acc.value - a[(*b, i, t)] * x[(*b, t, c)]),
                              "t"),
                       BufferStore(x, value, (*b, i, c)))

        return _range(0, kk, lambda c: _range(0, n, lambda ii: row(ii, c), "i"), "c")

    return fb.finish(_batched([a_shape], nb, one))


def lu_permutation_func(shape: Sequence[Any], m: Any) -> PrimFunc:
    """``perm int64 [..., m]`` of 1-based row swaps ``pivots`` (``shape`` ``[..., k]``): row
    ``i`` of ``P^T A`` is row ``perm[i]`` of ``A``."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 1
    k = int64(shape[-1])
    fb = FuncBuilder()
    piv = fb.arg(shape, "int32", "pivots")
    perm = fb.arg((*shape[:nb], int64(m)), "int64", "perm")
    p = fb.scalar("int64", "p")
    tmp = fb.scalar("int64", "tmp")

    def one(b: list) -> Stmt:
        init = _range(0, m, lambda i: BufferStore(perm, i, (*b, i)), "i")

        def swap(j: Var) -> Stmt:
            return seq(p.set(int64(piv[(*b, j)]) - 1), if_then(
                tir.all(LE(i64(0), p.value), LT(p.value, int64(m)), NE(p.value, j)),
                seq(tmp.set(perm[(*b, j)]), BufferStore(perm, perm[(*b, p.value)], (*b, j)),
                    BufferStore(perm, tmp.value, (*b, p.value)))))

        return seq(init, _range(0, tir.Min(k, int64(m)), swap, "j"))

    return fb.finish(loop_nest(list(shape[:nb]), one, prefix="b"))


def geqrf_func(shape: Sequence[Any], dtype: str) -> PrimFunc:
    """``(QR, tau [..., min(m, n)])``: LAPACK ``geqrf`` of ``a`` ``[..., m, n]`` (``R`` on and
    above the diagonal, the reflectors' vectors below it)."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 2
    m, n = int64(shape[-2]), int64(shape[-1])
    k = tir.Min(m, n)
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    qr = fb.arg(shape, dtype, "qr")
    tau = fb.arg((*shape[:nb], k), dtype, "tau")
    acc = fb.scalar(dtype, "acc")
    beta = fb.scalar(dtype, "beta")
    zero = cast(0, dtype)

    def one(b: list) -> Stmt:
        def at(i: Any, j: Any) -> Any:
            return qr[(*b, i, j)]

        def put(i: Any, j: Any, v: Any) -> Stmt:
            return BufferStore(qr, v, (*b, i, j))

        copy = _range(0, m, lambda i: _range(0, n, lambda j: put(i, j, a[(*b, i, j)]), "c"), "r")

        def column(j: Var) -> Stmt:
            alpha = at(j, j)
            norm = seq(acc.set(zero), _range(j + 1, m, lambda i: acc.set(
                acc.value + at(i, j) * at(i, j)), "i"))
            reflect = seq(
                beta.set(zero - tir.op.copysign(tir.op.hypot(alpha, tir.sqrt(acc.value)), alpha)),
                BufferStore(tau, (beta.value - alpha) / beta.value, (*b, j)),
                acc.set(cast(1, dtype) / (alpha - beta.value)),
                _range(j + 1, m, lambda i: put(i, j, at(i, j) * acc.value), "i"),
                put(j, j, beta.value))
            householder = if_then(EQ(acc.value, zero), BufferStore(tau, zero, (*b, j)), reflect)
            t = tau[(*b, j)]

            def apply(c: Var) -> Stmt:  # column c -= tau v (v^T column c), v = [1, qr[j+1:, j]]
                return seq(
                    acc.set(at(j, c)),
                    _range(j + 1, m, lambda i: acc.set(acc.value + at(i, j) * at(i, c)), "i"),
                    put(j, c, at(j, c) - t * acc.value),
                    _range(j + 1, m, lambda i: put(i, c, at(i, c) - t * acc.value * at(i, j)),
                           "i"))

            return seq(norm, householder, _range(j + 1, n, apply, "c"))

        return seq(copy, _range(0, k, column, "j"))

    return fb.finish(_batched([shape], nb, one))


def householder_product_func(shape: Sequence[Any], tau_shape: Sequence[Any],
                             dtype: str) -> PrimFunc:
    """``Q [..., m, n]``: the first ``n`` columns of ``H_0 H_1 ... H_{k-1}`` (LAPACK
    ``orgqr``), ``H_i = I - tau_i v_i v_i^T`` with ``v_i = [0.., 1, a[i+1:, i]]``;
    ``a`` ``[..., m, n]`` (``n <= m``), ``tau`` ``[..., k]`` (``k <= n``)."""
    shape, tau_shape = fresh_shapes(shape, tau_shape)
    nb = len(shape) - 2
    m, n = int64(shape[-2]), int64(shape[-1])
    k = int64(tau_shape[-1])
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    tau = fb.arg(tau_shape, dtype, "tau")
    q = fb.arg(shape, dtype, "q")
    acc = fb.scalar(dtype, "acc")
    zero, one_ = cast(0, dtype), cast(1, dtype)

    def one(b: list) -> Stmt:
        def put(i: Any, j: Any, v: Any) -> Stmt:
            return BufferStore(q, v, (*b, i, j))

        init = _range(0, m, lambda i: _range(0, n, lambda j: put(
            i, j, Select(tir.all(EQ(i, j), LE(k, j)), one_, zero)), "c"), "r")

        def step(ii: Var) -> Stmt:
            i = k - 1 - ii
            t = tau[(*b, i)]

            def apply(c: Var) -> Stmt:
                return seq(
                    acc.set(q[(*b, i, c)]),
                    _range(i + 1, m, lambda r: acc.set(acc.value + a[(*b, r, i)] * q[(*b, r, c)]),
                           "r"),
                    put(i, c, q[(*b, i, c)] - t * acc.value),
                    _range(i + 1, m, lambda r: put(r, c, q[(*b, r, c)]
                                                   - t * acc.value * a[(*b, r, i)]), "r"))

            own = seq(_range(i + 1, m, lambda r: put(r, i, zero - t * a[(*b, r, i)]), "r"),
                      put(i, i, one_ - t))
            return seq(_range(i + 1, n, apply, "c"), own)

        return seq(init, _range(0, k, step, "i"))

    return fb.finish(_batched([shape], nb, one))


def matrix_exp_func(shape: Sequence[Any], dtype: str) -> PrimFunc:
    """``exp(a)`` of ``a`` ``[..., n, n]``: ``a / 2^s`` with 1-norm at most 1/2, its Taylor
    polynomial (degree 18: truncation below float64's epsilon), squared ``s`` times."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 2
    n = int64(shape[-1])
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    e = fb.arg(shape, dtype, "e")
    tmp = fb.local((n, n), dtype, "work")
    x = fb.local((n, n), dtype, "scaled")
    norm = fb.scalar(dtype, "norm")
    col = fb.scalar(dtype, "col")
    acc = fb.scalar(dtype, "acc")
    s = fb.scalar("int64", "s")
    zero, one_ = cast(0, dtype), cast(1, dtype)
    degree = 18

    def one(b: list) -> Stmt:
        def each(body: Callable[[Var, Var], Stmt]) -> Stmt:
            return _range(0, n, lambda i: _range(0, n, lambda j: body(i, j), "c"), "r")

        def col_sum(j: Var) -> Stmt:
            return seq(col.set(zero), _range(0, n, lambda i: col.set(
                col.value + tir.abs(a[(*b, i, j)])), "i"),
                norm.set(Select(Or(GT(col.value, norm.value), tir.isnan(col.value)),
                                col.value, norm.value)))

        scale = seq(
            norm.set(zero), _range(0, n, col_sum, "j"), s.set(i64(0)),
            while_loop(tir.all(GT(norm.value, cast(0.5, dtype)), LT(s.value, i64(1100))),
                       seq(norm.set(norm.value * cast(0.5, dtype)), s.set(s.value + 1))),
            acc.set(tir.op.power(cast(2.0, dtype), cast(0, dtype) - cast(s.value, dtype))),
            each(lambda i, j: BufferStore(x, a[(*b, i, j)] * acc.value, (i, j))))

        def eye(i: Any, j: Any) -> Any:
            return Select(EQ(i, j), one_, zero)

        def matmul(lhs: Callable, rhs: Callable, out_scale: Any, add_eye: bool) -> Stmt:
            def cell(i: Var, j: Var) -> Stmt:
                value = acc.value * out_scale + (eye(i, j) if add_eye else zero)
                return seq(acc.set(zero), _range(0, n, lambda t: acc.set(
                    acc.value + lhs(i, t) * rhs(t, j)), "t"), BufferStore(tmp, value, (i, j)))
            return seq(each(cell), each(lambda i, j: BufferStore(e, tmp[i, j], (*b, i, j))))

        taylor = seq(
            each(lambda i, j: BufferStore(e, eye(i, j), (*b, i, j))),
            _range(0, degree, lambda d: matmul(  # E = I + X E / (degree - d)
                lambda i, t: x[i, t], lambda t, j: e[(*b, t, j)],
                one_ / cast(degree - d, dtype), True), "d"))
        square = matmul(lambda i, t: e[(*b, i, t)], lambda t, j: e[(*b, t, j)], one_, False)
        squaring = while_loop(LT(i64(0), s.value), seq(square, s.set(s.value - 1)))
        return seq(scale, taylor, squaring)

    return fb.finish(_batched([shape], nb, one))


_BK_ALPHA = (1.0 + 17.0 ** 0.5) / 8.0  # Bunch-Kaufman's growth bound


def ldl_factor_func(shape: Sequence[Any], dtype: str) -> PrimFunc:
    """``(LD, pivots int32 [..., n], info int32 [...])``: LAPACK ``sytf2`` (lower) of the
    symmetric ``a`` ``[..., n, n]`` (its lower triangle is read): Bunch-Kaufman pivoting,
    1-based ``pivots`` positive for a 1x1 block, ``-p`` on both rows of a 2x2 block; the
    strict upper triangle of ``LD`` is zero."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 2
    n = int64(shape[-1])
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    ld = fb.arg(shape, dtype, "ld")
    piv = fb.arg((*shape[:nb], n), "int32", "pivots")
    info = fb.arg(tuple(shape[:nb]), "int32", "info")
    k, kstep, kp = (fb.scalar("int64", s) for s in ("k", "kstep", "kp"))
    imax, jmax = fb.scalar("int64", "imax"), fb.scalar("int64", "jmax")
    absakk, colmax, rowmax = (fb.scalar(dtype, s) for s in ("absakk", "colmax", "rowmax"))
    best, tmp = fb.scalar(dtype, "best"), fb.scalar(dtype, "tmp")
    d11, d21, d22, wk, wkp1 = (fb.scalar(dtype, s) for s in ("d11", "d21", "d22", "wk", "wkp1"))
    zero, one_, alpha = cast(0, dtype), cast(1, dtype), cast(_BK_ALPHA, dtype)
    zero_i = i64(0)

    def one(b: list) -> Stmt:
        def at(i: Any, j: Any) -> Any:
            return ld[(*b, i, j)]

        def put(i: Any, j: Any, v: Any) -> Stmt:
            return BufferStore(ld, v, (*b, i, j))

        def swap(i1: Any, j1: Any, i2: Any, j2: Any) -> Stmt:
            return seq(tmp.set(at(i1, j1)), put(i1, j1, at(i2, j2)), put(i2, j2, tmp.value))

        def argmax(idx: Any, lo: Any, hi: Any, get: Callable[[Var], Any]) -> Stmt:
            """``idx`` = the first position in ``[lo, hi)`` of the largest ``|get|``."""
            return seq(idx.set(lo), best.set(cast(-1, dtype)), _range(lo, hi, lambda i: if_then(
                GT(tir.abs(get(i)), best.value), seq(best.set(tir.abs(get(i))), idx.set(i))),
                "i"))

        kk_ = k.value
        col = seq(
            absakk.set(tir.abs(at(kk_, kk_))),
            if_then(LT(kk_, n - 1),
                    seq(argmax(imax, kk_ + 1, n, lambda i: at(i, kk_)),
                        colmax.set(tir.abs(at(imax.value, kk_)))),
                    seq(imax.set(kk_), colmax.set(zero))))
        im = imax.value
        choose = if_then(
            GE(absakk.value, alpha * colmax.value), kp.set(kk_), seq(
                argmax(jmax, kk_, im, lambda j: at(im, j)),
                rowmax.set(tir.abs(at(im, jmax.value))),
                if_then(LT(im, n - 1), seq(
                    argmax(jmax, im + 1, n, lambda i: at(i, im)),
                    rowmax.set(tir.Max(rowmax.value, tir.abs(at(jmax.value, im)))))),
                if_then(GE(absakk.value, alpha * colmax.value * (colmax.value / rowmax.value)),
                        kp.set(kk_),
                        if_then(GE(tir.abs(at(im, im)), alpha * rowmax.value), kp.set(im),
                                seq(kp.set(im), kstep.set(i64(2)))))))
        kk = kk_ + kstep.value - 1
        p = kp.value
        interchange = if_then(NE(p, kk), seq(
            _range(p + 1, n, lambda i: swap(i, kk, i, p), "i"),
            _range(kk + 1, p, lambda j: swap(j, kk, p, j), "j"),
            swap(kk, kk, p, p),
            if_then(EQ(kstep.value, 2), swap(kk_ + 1, kk_, p, kk_))))
        one_by_one = if_then(LT(kk_, n - 1), seq(
            d11.set(one_ / at(kk_, kk_)),
            _range(kk_ + 1, n, lambda j: _range(j, n, lambda i: put(
                i, j, at(i, j) + at(i, kk_) * ((zero - d11.value) * at(j, kk_))), "i"), "j"),
            _range(kk_ + 1, n, lambda i: put(i, kk_, at(i, kk_) * d11.value), "i")))

        def two_col(j: Var) -> Stmt:
            return seq(
                wk.set(d21.value * (d11.value * at(j, kk_) - at(j, kk_ + 1))),
                wkp1.set(d21.value * (d22.value * at(j, kk_ + 1) - at(j, kk_))),
                _range(j, n, lambda i: put(i, j, at(i, j) - (
                    at(i, kk_) * wk.value + at(i, kk_ + 1) * wkp1.value)), "i"),
                put(j, kk_, wk.value), put(j, kk_ + 1, wkp1.value))

        two_by_two = if_then(LT(kk_, n - 2), seq(
            d21.set(at(kk_ + 1, kk_)),
            d11.set(at(kk_ + 1, kk_ + 1) / d21.value),
            d22.set(at(kk_, kk_) / d21.value),
            tmp.set(one_ / (d11.value * d22.value - one_)),
            d21.set(tmp.value / d21.value),
            _range(kk_ + 2, n, two_col, "j")))
        singular = Or(EQ(tir.Max(absakk.value, colmax.value), zero), tir.isnan(absakk.value))
        fail = seq(kp.set(kk_), if_then(EQ(info[tuple(b)], 0), BufferStore(
            info, cast(kk_ + 1, "int32"), tuple(b))))
        factor = seq(choose, interchange,
                     if_then(EQ(kstep.value, 1), one_by_one, two_by_two))
        record = if_then(
            EQ(kstep.value, 1), BufferStore(piv, cast(p + 1, "int32"), (*b, kk_)),
            seq(BufferStore(piv, cast(zero_i - p - 1, "int32"), (*b, kk_)),
                BufferStore(piv, cast(zero_i - p - 1, "int32"), (*b, kk_ + 1))))
        step = seq(kstep.set(i64(1)), col, if_then(singular, fail, factor), record,
                   k.set(kk_ + kstep.value))
        copy = _range(0, n, lambda i: _range(0, n, lambda j: put(
            i, j, Select(LE(j, i), a[(*b, i, j)], zero)), "c"), "r")
        return seq(copy, BufferStore(info, cast(0, "int32"), tuple(b)), k.set(i64(0)),
                   while_loop(LT(k.value, n), step))

    return fb.finish(_batched([shape], nb, one))


def ldl_solve_func(ld_shape: Sequence[Any], b_shape: Sequence[Any], dtype: str) -> PrimFunc:
    """``X`` with ``A X = B`` from :func:`ldl_factor_func`'s ``(LD, pivots)`` (LAPACK
    ``sytrs``, lower); ``LD`` ``[..., n, n]``, ``B`` ``[..., n, k]``, same batch dims."""
    ld_shape, b_shape = fresh_shapes(ld_shape, b_shape)
    nb = len(ld_shape) - 2
    n, ncol = int64(b_shape[-2]), int64(b_shape[-1])
    fb = FuncBuilder()
    ld = fb.arg(ld_shape, dtype, "ld")
    piv = fb.arg((*ld_shape[:nb], n), "int32", "pivots")
    rhs = fb.arg(b_shape, dtype, "b")
    x = fb.arg(b_shape, dtype, "x")
    k, kp = fb.scalar("int64", "k"), fb.scalar("int64", "kp")
    tmp, acc, acc2 = fb.scalar(dtype, "tmp"), fb.scalar(dtype, "acc"), fb.scalar(dtype, "acc2")
    akm1k, akm1, ak, denom = (fb.scalar(dtype, s) for s in ("akm1k", "akm1", "ak", "denom"))
    one_, zero, zero_i = cast(1, dtype), cast(0, dtype), i64(0)

    def one(b: list) -> Stmt:
        def A(i: Any, j: Any) -> Any:  # noqa: N802
            return ld[(*b, i, j)]

        def X(i: Any, c: Any) -> Any:  # noqa: N802
            return x[(*b, i, c)]

        def put(i: Any, c: Any, v: Any) -> Stmt:
            return BufferStore(x, v, (*b, i, c))

        def swap_rows(r1: Any, r2: Any) -> Stmt:
            return if_then(NE(r1, r2), _range(0, ncol, lambda c: seq(
                tmp.set(X(r1, c)), put(r1, c, X(r2, c)), put(r2, c, tmp.value)), "c"))

        kk = k.value
        pv = int64(piv[(*b, kk)])
        # forward: L D y = P b
        fwd1 = seq(
            swap_rows(kk, pv - 1),
            _range(0, ncol, lambda c: seq(
                _range(kk + 1, n, lambda i: put(i, c, X(i, c) - A(i, kk) * X(kk, c)), "i"),
                put(kk, c, X(kk, c) / A(kk, kk))), "c"),
            k.set(kk + 1))
        fwd2 = seq(
            kp.set(zero_i - pv - 1),
            swap_rows(kk + 1, kp.value),
            _range(0, ncol, lambda c: _range(kk + 2, n, lambda i: put(
                i, c, X(i, c) - A(i, kk) * X(kk, c) - A(i, kk + 1) * X(kk + 1, c)), "i"), "c"),
            akm1k.set(A(kk + 1, kk)), akm1.set(A(kk, kk) / akm1k.value),
            ak.set(A(kk + 1, kk + 1) / akm1k.value),
            denom.set(akm1.value * ak.value - one_),
            _range(0, ncol, lambda c: seq(
                acc.set(X(kk, c) / akm1k.value), acc2.set(X(kk + 1, c) / akm1k.value),
                put(kk, c, (ak.value * acc.value - acc2.value) / denom.value),
                put(kk + 1, c, (akm1.value * acc2.value - acc.value) / denom.value)), "c"),
            k.set(kk + 2))
        forward = while_loop(LT(kk, n), if_then(LT(zero_i, pv), fwd1, fwd2))

        def dot_below(row: Any, col_of_l: Any) -> Stmt:  # x[row] -= L[k+1:, col]^T x[k+1:]
            return _range(0, ncol, lambda c: seq(
                acc.set(zero), _range(kk + 1, n, lambda i: acc.set(
                    acc.value + A(i, col_of_l) * X(i, c)), "i"),
                put(row, c, X(row, c) - acc.value)), "c")

        back1 = seq(dot_below(kk, kk), swap_rows(kk, pv - 1), k.set(kk - 1))
        back2 = seq(dot_below(kk, kk), dot_below(kk - 1, kk - 1),
                    swap_rows(kk, zero_i - pv - 1), k.set(kk - 2))
        backward = while_loop(LE(zero_i, kk), if_then(LT(zero_i, pv), back1, back2))
        copy = _range(0, n, lambda i: _range(0, ncol, lambda c: put(i, c, rhs[(*b, i, c)]),
                                             "c"), "r")
        return seq(copy, k.set(i64(0)), forward, k.set(n - 1), backward)

    return fb.finish(_batched([ld_shape], nb, one))


def svd_jacobi_func(shape: Sequence[Any], dtype: str) -> PrimFunc:
    """``(U [..., m, n], S [..., n], V [..., n, n])`` with ``A = U diag(S) V^T`` for ``a``
    ``[..., m, n]``, ``m >= n``: one-sided (Hestenes) Jacobi rotations until every column
    pair is orthogonal to working precision, ``S`` sorted in descending order.  A column
    whose singular value is zero is left zero in ``U``."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 2
    m, n = int64(shape[-2]), int64(shape[-1])
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    u = fb.arg(shape, dtype, "u")
    sv = fb.arg((*shape[:nb], n), dtype, "s")
    v = fb.arg((*shape[:nb], n, n), dtype, "v")
    al, be, ga = (fb.scalar(dtype, s) for s in ("alpha", "beta", "gamma"))
    zeta, t, c, sn, tmp = (fb.scalar(dtype, s) for s in ("zeta", "t", "c", "s", "tmp"))
    rotated, sweeps, best = fb.scalar("int64", "rotated"), fb.scalar("int64", "sweeps"), \
        fb.scalar("int64", "best")
    eps = cast(2.0 ** -23 if dtype == "float32" else 2.0 ** -52, dtype)
    zero, one_ = cast(0, dtype), cast(1, dtype)

    def one(b: list) -> Stmt:
        def U(i: Any, j: Any) -> Any:  # noqa: N802
            return u[(*b, i, j)]

        def V(i: Any, j: Any) -> Any:  # noqa: N802
            return v[(*b, i, j)]

        def rot(buf: Any, rows: Any, p: Any, q: Any) -> Stmt:
            def r(i: Var) -> Stmt:
                x, y = buf[(*b, i, p)], buf[(*b, i, q)]
                return seq(tmp.set(x), BufferStore(buf, c.value * x - sn.value * y, (*b, i, p)),
                           BufferStore(buf, sn.value * tmp.value + c.value * y, (*b, i, q)))
            return _range(0, rows, r, "i")

        def pair(p: Var, q: Var) -> Stmt:
            dots = seq(al.set(zero), be.set(zero), ga.set(zero), _range(0, m, lambda i: seq(
                al.set(al.value + U(i, p) * U(i, p)), be.set(be.value + U(i, q) * U(i, q)),
                ga.set(ga.value + U(i, p) * U(i, q))), "i"))
            rotate = seq(
                zeta.set((be.value - al.value) / (cast(2, dtype) * ga.value)),
                t.set(tir.op.copysign(one_, zeta.value)
                      / (tir.abs(zeta.value) + tir.sqrt(one_ + zeta.value * zeta.value))),
                c.set(one_ / tir.sqrt(one_ + t.value * t.value)), sn.set(c.value * t.value),
                rot(u, m, p, q), rot(v, n, p, q), rotated.set(rotated.value + 1))
            needed = GT(tir.abs(ga.value), eps * tir.sqrt(al.value * be.value))
            return seq(dots, if_then(tir.all(needed, NE(ga.value, zero)), rotate))

        sweep = seq(rotated.set(i64(0)), _range(0, n, lambda p: _range(
            p + 1, n, lambda q: pair(p, q), "q"), "p"), sweeps.set(sweeps.value + 1))
        init = seq(
            _range(0, m, lambda i: _range(0, n, lambda j: BufferStore(u, a[(*b, i, j)],
                                                                      (*b, i, j)), "c"), "r"),
            _range(0, n, lambda i: _range(0, n, lambda j: BufferStore(
                v, Select(EQ(i, j), one_, zero), (*b, i, j)), "c"), "r"))

        def norm(j: Var) -> Stmt:
            return seq(al.set(zero), _range(0, m, lambda i: al.set(al.value + U(i, j) * U(i, j)),
                                            "i"), BufferStore(sv, tir.sqrt(al.value), (*b, j)))

        def swap_cols(buf: Any, rows: Any, p: Any, q: Any) -> Stmt:
            return _range(0, rows, lambda i: seq(
                tmp.set(buf[(*b, i, p)]), BufferStore(buf, buf[(*b, i, q)], (*b, i, p)),
                BufferStore(buf, tmp.value, (*b, i, q))), "i")

        def select(j: Var) -> Stmt:  # selection sort, descending
            find = seq(best.set(j), _range(j + 1, n, lambda i: if_then(
                GT(sv[(*b, i)], sv[(*b, best.value)]), best.set(i)), "i"))
            bv = best.value
            swap = if_then(NE(bv, j), seq(
                tmp.set(sv[(*b, j)]), BufferStore(sv, sv[(*b, bv)], (*b, j)),
                BufferStore(sv, tmp.value, (*b, bv)), swap_cols(u, m, j, bv),
                swap_cols(v, n, j, bv)))
            return seq(find, swap)

        def normalize(j: Var) -> Stmt:
            s_j = sv[(*b, j)]
            return _range(0, m, lambda i: BufferStore(
                u, Select(GT(s_j, zero), U(i, j) / s_j, zero), (*b, i, j)), "i")

        return seq(init, sweeps.set(i64(0)), rotated.set(i64(1)),
                   while_loop(tir.all(LT(i64(0), rotated.value), LT(sweeps.value, i64(80))),
                              sweep),
                   _range(0, n, norm, "j"), _range(0, n, select, "j"),
                   _range(0, n, normalize, "j"))

    return fb.finish(_batched([shape], nb, one))


def eigh_jacobi_func(shape: Sequence[Any], dtype: str, upper: bool = False) -> PrimFunc:
    """``(w [..., n], V [..., n, n])``: eigenvalues (ascending) and eigenvectors (columns) of
    the symmetric ``a`` ``[..., n, n]`` whose lower (``upper``: upper) triangle is read;
    cyclic Jacobi rotations until the off-diagonal is zero to working precision."""
    (shape,) = fresh_shapes(shape)
    nb = len(shape) - 2
    n = int64(shape[-1])
    fb = FuncBuilder()
    a = fb.arg(shape, dtype, "a")
    w = fb.arg((*shape[:nb], n), dtype, "w")
    v = fb.arg(shape, dtype, "v")
    work = fb.local((n, n), dtype, "work")
    theta, t, c, sn, x, y = (fb.scalar(dtype, s) for s in ("theta", "t", "c", "s", "x", "y"))
    rotated, sweeps, best = (fb.scalar("int64", s) for s in ("rotated", "sweeps", "best"))
    eps = cast(2.0 ** -23 if dtype == "float32" else 2.0 ** -52, dtype)
    zero, one_ = cast(0, dtype), cast(1, dtype)

    def one(b: list) -> Stmt:
        def sym(i: Any, j: Any) -> Any:
            lo = a[(*b, j, i)] if upper else a[(*b, i, j)]
            hi = a[(*b, i, j)] if upper else a[(*b, j, i)]
            return Select(LE(j, i), lo, hi)

        def W(i: Any, j: Any) -> Any:  # noqa: N802
            return work[i, j]

        def pair(p: Var, q: Var) -> Stmt:
            def cols(k: Var) -> Stmt:
                return seq(x.set(W(k, p)), y.set(W(k, q)),
                           BufferStore(work, c.value * x.value - sn.value * y.value, (k, p)),
                           BufferStore(work, sn.value * x.value + c.value * y.value, (k, q)))

            def rows(k: Var) -> Stmt:
                return seq(x.set(W(p, k)), y.set(W(q, k)),
                           BufferStore(work, c.value * x.value - sn.value * y.value, (p, k)),
                           BufferStore(work, sn.value * x.value + c.value * y.value, (q, k)))

            def vecs(k: Var) -> Stmt:
                return seq(x.set(v[(*b, k, p)]), y.set(v[(*b, k, q)]),
                           BufferStore(v, c.value * x.value - sn.value * y.value, (*b, k, p)),
                           BufferStore(v, sn.value * x.value + c.value * y.value, (*b, k, q)))

            rotate = seq(
                theta.set((W(q, q) - W(p, p)) / (cast(2, dtype) * W(p, q))),
                t.set(tir.op.copysign(one_, theta.value)
                      / (tir.abs(theta.value) + tir.sqrt(one_ + theta.value * theta.value))),
                c.set(one_ / tir.sqrt(one_ + t.value * t.value)), sn.set(c.value * t.value),
                _range(0, n, cols, "k"), _range(0, n, rows, "k"), _range(0, n, vecs, "k"),
                BufferStore(work, zero, (p, q)), BufferStore(work, zero, (q, p)),
                rotated.set(rotated.value + 1))
            needed = GT(tir.abs(W(p, q)), eps * tir.sqrt(tir.abs(W(p, p)) * tir.abs(W(q, q))))
            return if_then(tir.all(needed, NE(W(p, q), zero)), rotate)

        sweep = seq(rotated.set(i64(0)), _range(0, n, lambda p: _range(
            p + 1, n, lambda q: pair(p, q), "q"), "p"), sweeps.set(sweeps.value + 1))
        init = _range(0, n, lambda i: _range(0, n, lambda j: seq(
            BufferStore(work, sym(i, j), (i, j)),
            BufferStore(v, Select(EQ(i, j), one_, zero), (*b, i, j))), "c"), "r")

        def select(j: Var) -> Stmt:  # selection sort, ascending
            find = seq(best.set(j), _range(j + 1, n, lambda i: if_then(
                LT(w[(*b, i)], w[(*b, best.value)]), best.set(i)), "i"))
            bv = best.value
            swap = if_then(NE(bv, j), seq(
                x.set(w[(*b, j)]), BufferStore(w, w[(*b, bv)], (*b, j)),
                BufferStore(w, x.value, (*b, bv)),
                _range(0, n, lambda i: seq(
                    x.set(v[(*b, i, j)]), BufferStore(v, v[(*b, i, bv)], (*b, i, j)),
                    BufferStore(v, x.value, (*b, i, bv))), "i")))
            return seq(find, swap)

        return seq(init, sweeps.set(i64(0)), rotated.set(i64(1)),
                   while_loop(tir.all(LT(i64(0), rotated.value), LT(sweeps.value, i64(80))),
                              sweep),
                   _range(0, n, lambda j: BufferStore(w, W(j, j), (*b, j)), "j"),
                   _range(0, n, select, "j"))

    return fb.finish(_batched([shape], nb, one))
