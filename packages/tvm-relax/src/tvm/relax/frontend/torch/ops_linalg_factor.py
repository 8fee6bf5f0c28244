"""Converters for matrix factorizations and what is built on them: LU (``linalg_lu_factor_ex``,
``linalg_lu``, ``lu_unpack``, ``linalg_lu_solve``), determinants (``_linalg_det``,
``_linalg_slogdet``), solves and inverses (``_linalg_solve_ex``, ``linalg_inv_ex``,
triangular solves), Cholesky (``linalg_cholesky_ex``, ``cholesky``, ``cholesky_solve``,
``cholesky_inverse``), Householder QR (``geqrf``, ``linalg_householder_product``, ``ormqr``,
``linalg_qr``), LDL^T (``linalg_ldl_factor_ex``, ``linalg_ldl_solve``), ``_linalg_svd`` and
``linalg_pinv``, ``_linalg_eigh`` and ``linalg_matrix_exp``.

The per-matrix algorithms are TIR PrimFuncs (``topi.linalg_factor``) called with
``call_tir``; the rest is composed from Relax ops.  Pivots and reflectors follow LAPACK, so
the factors match torch's, not only their products; the SVD and the symmetric eigensolver
are Jacobi iterations, exact to working precision in the values and in every product of the
factors, but the signs of singular/eigen vectors follow no LAPACK convention.
"""

from __future__ import annotations

from typing import Any, Sequence

from tvm.tir.expr import IntImm

from ... import op as _op
from ...struct_info import TensorStructInfo
from ...topi import linalg_factor as _tf
from .common import NodeContext, converter

__all__: list[str] = []


# -- helpers ----------------------------------------------------------------------------------
def _float_input(ctx: NodeContext, i: int, name: str = "") -> Any:
    x = ctx.tensor(i, name)
    dtype = ctx.dtype(x)
    if dtype not in ("float32", "float64"):
        raise ctx.unsupported(f"dtype {dtype} (float32 and float64 are supported)")
    if ctx.ndim(x) < 2:
        raise ctx.error(f"expected a batch of matrices, got a {ctx.ndim(x)}-d tensor")
    return x


def _call(ctx: NodeContext, func: Any, name: str, args: Sequence[Any],
          outs: Sequence[tuple[Sequence[Any], str]]) -> list[Any]:
    """``call_tir`` of ``func`` on ``args``; one emitted value per ``(shape, dtype)``."""
    gv = ctx.bb.add_func(func, name)
    sinfos = [TensorStructInfo(list(shape), dtype) for shape, dtype in outs]
    out = ctx.emit(_op.call_tir(gv, list(args), sinfos if len(sinfos) > 1 else sinfos[0]))
    if len(sinfos) == 1:
        return [out]
    from ...expr import TupleGetItem

    return [ctx.emit(TupleGetItem(out, i)) for i in range(len(sinfos))]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    from tvm.ffi import structural_equal

    return structural_equal(a, b)


def _bcast(ctx: NodeContext, a: Sequence[Any], b: Sequence[Any]) -> list[Any]:
    """Broadcast of two batch shapes."""
    a, b = list(a), list(b)
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if _same(x, y) or _same(y, 1):
            out.append(x)
        elif _same(x, 1):
            out.append(y)
        else:
            raise ctx.error(f"batch dimensions {x} and {y} do not broadcast")
    return out


def _to_batch(ctx: NodeContext, x: Any, batch: Sequence[Any], tail: int = 2) -> Any:
    shape = ctx.shape(x)
    want = list(batch) + shape[len(shape) - tail:]
    if len(shape) == len(want) and all(_same(p, q) for p, q in zip(shape, want)):
        return x
    return ctx.emit(_op.broadcast_to(x, want))


def _mT(ctx: NodeContext, x: Any) -> Any:
    nd = ctx.ndim(x)
    return ctx.emit(_op.permute_dims(x, list(range(nd - 2)) + [nd - 1, nd - 2]))


def _eye_like(ctx: NodeContext, x: Any) -> Any:
    shape = ctx.shape(x)
    eye = _op.eye(shape[-1], dtype=ctx.dtype(x))
    return ctx.emit(_op.broadcast_to(eye, shape))


def _lu(ctx: NodeContext, a: Any) -> list[Any]:
    shape = ctx.shape(a)
    k = shape[-1] if _same(shape[-1], shape[-2]) else _min(shape[-2], shape[-1])
    func = _tf.lu_factor_func(shape, ctx.dtype(a))
    return _call(ctx, func, "lu_factor", [a], [(shape, ctx.dtype(a)),
                                               ((*shape[:-2], k), "int32"), (shape[:-2], "int32")])


def _min(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    from tvm import tir

    return tir.Min(a if not isinstance(a, int) else IntImm("int64", a),
                   b if not isinstance(b, int) else IntImm("int64", b))


def _perm(ctx: NodeContext, pivots: Any, m: Any) -> Any:
    shape = ctx.shape(pivots)
    (perm,) = _call(ctx, _tf.lu_permutation_func(shape, m), "lu_permutation", [pivots],
                    [((*shape[:-1], m), "int64")])
    return perm


def _rows(ctx: NodeContext, b: Any, perm: Any) -> Any:
    """``b[..., perm[i], :]`` for each row ``i``."""
    index = ctx.emit(_op.broadcast_to(_op.expand_dims(perm, -1), ctx.shape(b)))
    return ctx.emit(_op.gather_elements(b, index, axis=ctx.ndim(b) - 2))


def _trsm(ctx: NodeContext, a: Any, b: Any, upper: bool, unit: bool = False) -> Any:
    """``X`` with ``A X = B`` (batch dimensions broadcast)."""
    batch = _bcast(ctx, ctx.shape(a)[:-2], ctx.shape(b)[:-2])
    a, b = _to_batch(ctx, a, batch), _to_batch(ctx, b, batch)
    func = _tf.trsm_func(ctx.shape(a), ctx.shape(b), ctx.dtype(b), upper, unit)
    (x,) = _call(ctx, func, "triangular_solve", [a, b], [(ctx.shape(b), ctx.dtype(b))])
    return x


def _lu_solve(ctx: NodeContext, lu: Any, perm: Any, b: Any, adjoint: bool = False) -> Any:
    """``X`` with ``A X = B`` (``A^T X = B`` when ``adjoint``), ``P^T A = L U``."""
    batch = _bcast(ctx, ctx.shape(lu)[:-2], ctx.shape(b)[:-2])
    b = _to_batch(ctx, b, batch)
    perm = _to_batch(ctx, perm, batch, tail=1)
    if not adjoint:
        y = _trsm(ctx, lu, _rows(ctx, b, perm), upper=False, unit=True)
        return _trsm(ctx, lu, y, upper=True)
    lut = _mT(ctx, lu)
    w = _trsm(ctx, lut, _trsm(ctx, lut, b, upper=False), upper=True, unit=True)
    inverse = ctx.emit(_op.argsort(perm, axis=-1, dtype="int64"))
    return _rows(ctx, w, inverse)


def _diag(ctx: NodeContext, x: Any) -> Any:
    shape = ctx.shape(x)
    mask = _op.astype(_op.eye(shape[-2], shape[-1], dtype="int32"), "bool")
    picked = _op.where(mask, x, ctx.const(0, ctx.dtype(x)))
    return ctx.emit(_op.sum(picked, axis=-1))


def _perm_sign(ctx: NodeContext, pivots: Any, dtype: str) -> Any:
    """``(-1) ** (number of row swaps)`` of 1-based ``pivots``."""
    k = ctx.shape(pivots)[-1]
    rows = _op.arange(1, k + 1, dtype="int32")
    swaps = _op.sum(_op.astype(_op.not_equal(pivots, rows), "int32"), axis=-1)
    odd = _op.equal(_op.floor_mod(swaps, ctx.const(2, "int32")), ctx.const(1, "int32"))
    return ctx.emit(_op.where(odd, ctx.const(-1, dtype), ctx.const(1, dtype)))


def _flag(ctx: NodeContext, i: int, name: str, default: bool) -> bool:
    value = ctx.arg(i, name, default)
    if not isinstance(value, (bool, int)):
        raise ctx.unsupported(f"a non-constant {name}")
    return bool(value)


# -- LU ---------------------------------------------------------------------------------------
@converter("aten.linalg_lu_factor_ex.default")
def _lu_factor_ex(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    if not _flag(ctx, 1, "pivot", True):
        raise ctx.unsupported("pivot=False (LU without pivoting)")
    return _lu(ctx, a)


def _unpack(ctx: NodeContext, lu: Any, pivots: Any) -> list[Any]:
    shape = ctx.shape(lu)
    m, n = shape[-2], shape[-1]
    k = ctx.shape(pivots)[-1]
    dtype = ctx.dtype(lu)
    perm = _perm(ctx, pivots, m)
    rows = _op.expand_dims(_op.arange(0, m, dtype="int64"), -1)
    p = ctx.emit(_op.astype(_op.equal(rows, _op.expand_dims(perm, -2)), dtype))
    low = _op.add(_op.tril(lu, -1), _op.eye(m, n, dtype=dtype))
    upper = _op.triu(lu)
    if not _same(k, n):
        low = _op.strided_slice(low, [len(shape) - 1], [0], [k])
    if not _same(k, m):
        upper = _op.strided_slice(upper, [len(shape) - 2], [0], [k])
    return [p, ctx.emit(low), ctx.emit(upper)]


@converter("aten.linalg_lu.default")
def _linalg_lu(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    if not _flag(ctx, 1, "pivot", True):
        raise ctx.unsupported("pivot=False (LU without pivoting)")
    lu, pivots, _ = _lu(ctx, a)
    return _unpack(ctx, lu, pivots)


@converter("aten.lu_unpack.default")
def _lu_unpack(ctx: NodeContext) -> Any:
    lu = _float_input(ctx, 0, "LU_data")
    pivots = ctx.tensor(1, "LU_pivots")
    p, low, upper = _unpack(ctx, lu, ctx.astype(pivots, "int32"))
    out = []
    for i, (value, keep) in enumerate(((p, _flag(ctx, 3, "unpack_pivots", True)),
                                       (low, _flag(ctx, 2, "unpack_data", True)),
                                       (upper, _flag(ctx, 2, "unpack_data", True)))):
        out.append(value if keep else _op.zeros(ctx.out_shape(i), ctx.dtype(lu)))
    return out


@converter("aten.linalg_lu_solve.default")
def _linalg_lu_solve(ctx: NodeContext) -> Any:
    lu = _float_input(ctx, 0, "LU")
    pivots = ctx.astype(ctx.tensor(1, "pivots"), "int32")
    b = _float_input(ctx, 2, "B")
    left = _flag(ctx, 3, "left", True)
    adjoint = _flag(ctx, 4, "adjoint", False)
    perm = _perm(ctx, pivots, ctx.shape(lu)[-2])
    if left:
        return _lu_solve(ctx, lu, perm, b, adjoint)
    # X A = B  <=>  A^T X^T = B^T (and X A^T = B <=> A X^T = B^T)
    return _mT(ctx, _lu_solve(ctx, lu, perm, _mT(ctx, b), not adjoint))


# -- determinants -----------------------------------------------------------------------------
def _square(ctx: NodeContext, a: Any) -> None:
    shape = ctx.shape(a)
    if isinstance(shape[-1], int) and isinstance(shape[-2], int) and shape[-1] != shape[-2]:
        raise ctx.error(f"expected square matrices, got {shape[-2]}x{shape[-1]}")


@converter("aten._linalg_det.default")
def _linalg_det(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    _square(ctx, a)
    lu, pivots, _ = _lu(ctx, a)
    det = _op.multiply(_op.prod(_diag(ctx, lu), axis=-1), _perm_sign(ctx, pivots, ctx.dtype(a)))
    return [ctx.emit(det), lu, pivots]


@converter("aten._linalg_slogdet.default")
def _linalg_slogdet(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    _square(ctx, a)
    lu, pivots, _ = _lu(ctx, a)
    diag = _diag(ctx, lu)
    sign = _op.multiply(_op.prod(_op.sign(diag), axis=-1),
                        _perm_sign(ctx, pivots, ctx.dtype(a)))
    logabs = _op.sum(_op.log(_op.abs(diag)), axis=-1)
    return [ctx.emit(sign), ctx.emit(logabs), lu, pivots]


# -- solves and inverses ----------------------------------------------------------------------
@converter("aten._linalg_solve_ex.default")
def _linalg_solve_ex(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    b = ctx.tensor(1, "B")
    left = _flag(ctx, 2, "left", True)
    _square(ctx, a)
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    vector = ctx.ndim(b) == 1 or (ctx.ndim(b) == ctx.ndim(a) - 1 and all(
        _same(p, q) for p, q in zip(b_shape, a_shape[:-1])))
    if vector:
        b = ctx.emit(_op.expand_dims(b, -1 if left else -2))
    batch = _bcast(ctx, a_shape[:-2], ctx.shape(b)[:-2])
    a = _to_batch(ctx, a, batch)
    lu, pivots, info = _lu(ctx, a)
    perm = _perm(ctx, pivots, a_shape[-1])
    if left:
        x = _lu_solve(ctx, lu, perm, b)
    else:
        x = _mT(ctx, _lu_solve(ctx, lu, perm, _mT(ctx, b), adjoint=True))
    if vector:
        x = ctx.emit(_op.squeeze(x, [ctx.ndim(x) - 1 if left else ctx.ndim(x) - 2]))
    return [x, lu, pivots, info]


@converter("aten.linalg_inv_ex.default")
def _linalg_inv_ex(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    _square(ctx, a)
    lu, pivots, info = _lu(ctx, a)
    perm = _perm(ctx, pivots, ctx.shape(a)[-1])
    return [_lu_solve(ctx, lu, perm, _eye_like(ctx, a)), info]


@converter("aten.linalg_solve_triangular.default")
def _linalg_solve_triangular(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    b = _float_input(ctx, 1, "B")
    upper = _flag(ctx, 2, "upper", False)
    left = _flag(ctx, 3, "left", True)
    unit = _flag(ctx, 4, "unitriangular", False)
    if left:
        return _trsm(ctx, a, b, upper, unit)
    return _mT(ctx, _trsm(ctx, _mT(ctx, a), _mT(ctx, b), not upper, unit))


@converter("aten.triangular_solve.default")
def _triangular_solve(ctx: NodeContext) -> Any:
    b = _float_input(ctx, 0, "self")
    a = _float_input(ctx, 1, "A")
    upper = _flag(ctx, 2, "upper", True)
    transpose = _flag(ctx, 3, "transpose", False)
    unit = _flag(ctx, 4, "unitriangular", False)
    coef = _mT(ctx, a) if transpose else a
    x = _trsm(ctx, coef, b, upper != transpose, unit)
    batch = _bcast(ctx, ctx.shape(a)[:-2], ctx.shape(b)[:-2])
    return [x, _to_batch(ctx, a, batch)]  # the coefficient, broadcast, as torch returns it


# -- Cholesky ---------------------------------------------------------------------------------
def _cholesky(ctx: NodeContext, a: Any, upper: bool) -> list[Any]:
    _square(ctx, a)
    src = _mT(ctx, a) if upper else a
    shape = ctx.shape(src)
    low, info = _call(ctx, _tf.cholesky_func(shape, ctx.dtype(a)), "cholesky", [src],
                      [(shape, ctx.dtype(a)), (shape[:-2], "int32")])
    return [_mT(ctx, low) if upper else low, info]


@converter("aten.linalg_cholesky_ex.default")
def _linalg_cholesky_ex(ctx: NodeContext) -> Any:
    return _cholesky(ctx, _float_input(ctx, 0, "A"), _flag(ctx, 1, "upper", False))


@converter("aten.cholesky.default")
def _cholesky_legacy(ctx: NodeContext) -> Any:
    return _cholesky(ctx, _float_input(ctx, 0, "self"), _flag(ctx, 1, "upper", False))[0]


def _cholesky_solve(ctx: NodeContext, b: Any, factor: Any, upper: bool) -> Any:
    """``A^-1 B`` with ``A = L L^T`` (``U^T U`` when ``upper``)."""
    low = _mT(ctx, factor) if upper else factor
    y = _trsm(ctx, low, b, upper=False)
    return _trsm(ctx, _mT(ctx, low), y, upper=True)


@converter("aten.cholesky_solve.default")
def _cholesky_solve_conv(ctx: NodeContext) -> Any:
    b = _float_input(ctx, 0, "self")
    factor = _float_input(ctx, 1, "input2")
    return _cholesky_solve(ctx, b, factor, _flag(ctx, 2, "upper", False))


@converter("aten.cholesky_inverse.default")
def _cholesky_inverse(ctx: NodeContext) -> Any:
    factor = _float_input(ctx, 0, "self")
    return _cholesky_solve(ctx, _eye_like(ctx, factor), factor, _flag(ctx, 1, "upper", False))


# -- Householder QR ---------------------------------------------------------------------------
def _geqrf(ctx: NodeContext, a: Any) -> list[Any]:
    shape = ctx.shape(a)
    k = _min(shape[-2], shape[-1])
    return _call(ctx, _tf.geqrf_func(shape, ctx.dtype(a)), "geqrf", [a],
                 [(shape, ctx.dtype(a)), ((*shape[:-2], k), ctx.dtype(a))])


def _householder(ctx: NodeContext, a: Any, tau: Any, ncols: Any = None) -> Any:
    """``Q``: the first ``ncols`` (default: ``a``'s) columns of the reflectors' product;
    extra columns come as zero reflectors (identity)."""
    shape = ctx.shape(a)
    if ncols is not None and not _same(ncols, shape[-1]):
        if isinstance(ncols, int) and isinstance(shape[-1], int) and ncols < shape[-1]:
            a = ctx.emit(_op.strided_slice(a, [len(shape) - 1], [0], [ncols]))
        else:
            pad = _op.zeros([*shape[:-1], ncols - shape[-1]], ctx.dtype(a))
            a = ctx.emit(_op.concat([a, pad], axis=len(shape) - 1))
        shape = ctx.shape(a)
    tau = _to_batch(ctx, tau, shape[:-2], tail=1)
    tshape = ctx.shape(tau)
    (q,) = _call(ctx, _tf.householder_product_func(shape, tshape, ctx.dtype(a)),
                 "householder_product", [a, tau], [(shape, ctx.dtype(a))])
    return q


@converter("aten.geqrf.default")
def _geqrf_conv(ctx: NodeContext) -> Any:
    return _geqrf(ctx, _float_input(ctx, 0, "self"))


@converter("aten.linalg_householder_product.default")
def _householder_product(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "input")
    tau = ctx.tensor(1, "tau")
    return _householder(ctx, a, tau)


@converter("aten.ormqr.default")
def _ormqr(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "self")
    tau = ctx.tensor(1, "input2")
    c = _float_input(ctx, 2, "input3")
    left = _flag(ctx, 3, "left", True)
    transpose = _flag(ctx, 4, "transpose", False)
    mn = ctx.shape(a)[-2]
    q = _householder(ctx, a, tau, mn)  # the full mn x mn Q
    if transpose:
        q = _mT(ctx, q)
    return _op.matmul(q, c) if left else _op.matmul(c, q)


@converter("aten.linalg_qr.default")
def _linalg_qr(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    mode = ctx.arg(1, "mode", "reduced")
    if mode not in ("reduced", "complete", "r"):
        raise ctx.unsupported(f"mode={mode!r}")
    shape = ctx.shape(a)
    m = shape[-2]
    qr, tau = _geqrf(ctx, a)
    k = ctx.shape(tau)[-1]
    r = _op.triu(qr)
    if mode != "complete" and not _same(k, m):
        r = _op.strided_slice(r, [len(shape) - 2], [0], [k])
    r = ctx.emit(r)
    if mode == "r":
        return [_op.zeros(ctx.out_shape(0), ctx.dtype(a)), r]
    return [_householder(ctx, qr, tau, m if mode == "complete" else k), r]


# -- matrix exponential -----------------------------------------------------------------------
@converter("aten.linalg_matrix_exp.default")
def _matrix_exp(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "self")
    _square(ctx, a)
    shape = ctx.shape(a)
    (e,) = _call(ctx, _tf.matrix_exp_func(shape, ctx.dtype(a)), "matrix_exp", [a],
                 [(shape, ctx.dtype(a))])
    return e


# -- LDL^T (Bunch-Kaufman) --------------------------------------------------------------------
@converter("aten.linalg_ldl_factor_ex.default")
def _ldl_factor_ex(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "self")
    _square(ctx, a)  # hermitian=True is the same factorization for real matrices
    shape = ctx.shape(a)
    return _call(ctx, _tf.ldl_factor_func(shape, ctx.dtype(a)), "ldl_factor", [a],
                 [(shape, ctx.dtype(a)), (shape[:-1], "int32"), (shape[:-2], "int32")])


@converter("aten.linalg_ldl_solve.default")
def _ldl_solve(ctx: NodeContext) -> Any:
    ld = _float_input(ctx, 0, "LD")
    pivots = ctx.astype(ctx.tensor(1, "pivots"), "int32")
    b = _float_input(ctx, 2, "B")
    batch = _bcast(ctx, ctx.shape(ld)[:-2], ctx.shape(b)[:-2])
    ld, b = _to_batch(ctx, ld, batch), _to_batch(ctx, b, batch)
    pivots = _to_batch(ctx, pivots, batch, tail=1)
    func = _tf.ldl_solve_func(ctx.shape(ld), ctx.shape(b), ctx.dtype(b))
    (x,) = _call(ctx, func, "ldl_solve", [ld, pivots, b], [(ctx.shape(b), ctx.dtype(b))])
    return x


# -- SVD (one-sided Jacobi) and the pseudo-inverse ---------------------------------------------
def _svd(ctx: NodeContext, a: Any) -> list[Any]:
    """``(U [..., m, k], S [..., k], V [..., n, k])``, ``A = U diag(S) V^T``, ``k = min(m, n)``."""
    shape = ctx.shape(a)
    m, n = shape[-2], shape[-1]
    if not (isinstance(m, int) and isinstance(n, int)):
        raise ctx.unsupported("an SVD of matrices of symbolic size")
    wide = m < n
    src = _mT(ctx, a) if wide else a
    sshape = ctx.shape(src)
    k = sshape[-1]
    u, s, v = _call(ctx, _tf.svd_jacobi_func(sshape, ctx.dtype(a)), "svd_jacobi", [src],
                    [(sshape, ctx.dtype(a)), ((*sshape[:-2], k), ctx.dtype(a)),
                     ((*sshape[:-2], k, k), ctx.dtype(a))])
    return [v, s, u] if wide else [u, s, v]


@converter("aten._linalg_svd.default")
def _linalg_svd(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    full = _flag(ctx, 1, "full_matrices", False)
    compute_uv = _flag(ctx, 2, "compute_uv", True)
    shape = ctx.shape(a)
    if compute_uv and full and not _same(shape[-2], shape[-1]):
        raise ctx.unsupported("full_matrices=True for non-square matrices")
    u, s, v = _svd(ctx, a)
    if not compute_uv:
        return [_op.zeros(ctx.out_shape(0), ctx.dtype(a)), s,
                _op.zeros(ctx.out_shape(2), ctx.dtype(a))]
    return [u, s, _mT(ctx, v)]


def _tolerance(ctx: NodeContext, value: Any, dtype: str) -> Any:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return ctx.const(float(value), dtype)
    return ctx.astype(value, dtype)


@converter("aten.linalg_pinv")
def _linalg_pinv(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "self")
    dtype = ctx.dtype(a)
    if ctx.op == "aten.linalg_pinv.default":  # pinv(self, rcond, hermitian)
        atol, rtol = None, _tolerance(ctx, ctx.arg(1, "rcond"), dtype)
        hermitian = _flag(ctx, 2, "hermitian", False)
    else:  # atol_rtol_tensor / atol_rtol_float
        atol = _tolerance(ctx, ctx.arg(1, "atol"), dtype)
        rtol = _tolerance(ctx, ctx.arg(2, "rtol"), dtype)
        hermitian = _flag(ctx, 3, "hermitian", False)
    shape = ctx.shape(a)
    nd = len(shape)
    if hermitian:  # torch reads the lower triangle only (eigh)
        a = ctx.emit(_op.add(_op.tril(a), _op.permute_dims(
            _op.tril(a, -1), list(range(nd - 2)) + [nd - 1, nd - 2])))
    u, s, v = _svd(ctx, a)
    eps = 2.0 ** -23 if dtype == "float32" else 2.0 ** -52
    default_rtol = ctx.const(eps * max(shape[-2], shape[-1]), dtype)
    zero = ctx.const(0.0, dtype)
    if rtol is None:
        rtol = default_rtol if atol is None else _op.where(
            _op.greater(atol, zero), zero, default_rtol)
    smax = _op.max(s, axis=[nd - 2], keepdims=True)
    thr = _op.multiply(rtol if ctx.ndim(ctx.emit(rtol)) == 0 else _op.expand_dims(rtol, -1),
                       smax)
    if atol is not None:
        thr = _op.maximum(_op.expand_dims(atol, -1) if ctx.ndim(atol) else atol, thr)
    keep = _op.greater(s, thr)
    sinv = ctx.emit(_op.where(keep, _op.divide(ctx.const(1.0, dtype), s), zero))
    scaled = _op.multiply(v, _op.expand_dims(sinv, -2))
    return _op.matmul(scaled, _mT(ctx, u))


@converter("aten._linalg_eigh.default")
def _linalg_eigh(ctx: NodeContext) -> Any:
    a = _float_input(ctx, 0, "A")
    _square(ctx, a)
    uplo = ctx.arg(1, "UPLO", "L")
    if uplo not in ("L", "U"):
        raise ctx.error(f"UPLO must be 'L' or 'U', got {uplo!r}")
    compute_v = _flag(ctx, 2, "compute_v", True)
    shape = ctx.shape(a)
    w, v = _call(ctx, _tf.eigh_jacobi_func(shape, ctx.dtype(a), uplo == "U"), "eigh_jacobi",
                 [a], [((*shape[:-1],), ctx.dtype(a)), (shape, ctx.dtype(a))])
    return [w, v if compute_v else _op.zeros(ctx.out_shape(1), ctx.dtype(a))]
