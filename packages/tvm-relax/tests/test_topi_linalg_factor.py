"""The factorization PrimFuncs of ``topi.linalg_factor`` built for llvm and run on the VM:
LU with LAPACK's pivots (first largest ``|a|``, zero pivots reported in ``info``), Cholesky
(``info`` at the first non-positive pivot), triangular solves, Householder QR against
LAPACK's ``geqrf`` (numpy's ``qr(mode="raw")``) and the matrix exponential."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax
from tvm.relax import TensorStructInfo, op
from tvm.relax.topi import linalg_factor as tf
from vm_testing import requires_llvm

import tvm.runtime


def _run(func, inputs, outs):
    """``call_tir`` of ``func`` on ``inputs``; ``outs``: (shape, dtype) of each output."""
    params = [relax.Var(f"a{k}", TensorStructInfo(v.shape, str(v.dtype)))
              for k, v in enumerate(inputs)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.add_func(func, "kernel")
            sinfo = [TensorStructInfo(s, d) for s, d in outs]
            out = bb.emit_output(op.call_tir(gv, params, sinfo if len(sinfo) > 1 else sinfo[0]))
        bb.emit_func_output(out)
    ex = relax.build(bb.get(), target="llvm")
    res = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](*inputs)
    return [r.numpy() for r in res] if isinstance(res, (list, tuple)) else [res.numpy()]


def _getf2(a):
    """Reference unblocked LU with partial pivoting (numpy, one matrix)."""
    a = a.astype(np.float64).copy()
    m, n = a.shape
    piv, info = [], 0
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv.append(p + 1)
        if a[p, j] != 0:
            a[[j, p]] = a[[p, j]]
            a[j + 1:, j] /= a[j, j]
        elif info == 0:
            info = j + 1
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, np.array(piv), info


@requires_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 3), (3, 2, 4)])
def test_lu_factor_matches_partial_pivoting(shape, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    k = min(shape[-2:])
    lu, piv, info = _run(tf.lu_factor_func(shape, dtype), [a],
                         [(shape, dtype), ((*shape[:-2], k), "int32"), (shape[:-2], "int32")])
    flat = a.reshape(-1, *shape[-2:])
    for b, mat in enumerate(flat):
        want, wpiv, winfo = _getf2(mat)
        idx = np.unravel_index(b, shape[:-2]) if len(shape) > 2 else ()
        np.testing.assert_allclose(lu[idx], want, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(piv[idx], wpiv)
        assert int(info[idx]) == winfo


@requires_llvm
def test_lu_factor_singular_ties_and_nan():
    a = np.array([[[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, -3.0, 5.0]],  # zero column
                  [[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0], [1.0, 5.0, 2.0]],  # |a| ties
                  [[np.nan, 1.0, 0.0], [1.0, 2.0, 3.0], [4.0, 5.0, 7.0]]])
    lu, piv, info = _run(tf.lu_factor_func(a.shape, "float64"), [a],
                         [(a.shape, "float64"), ((3, 3), "int32"), ((3,), "int32")])
    assert info.tolist()[:2] == [1, 0]
    assert piv[1].tolist()[0] == 1  # the first of the tied rows
    for b in range(2):
        want, wpiv, _ = _getf2(a[b])
        np.testing.assert_allclose(lu[b], want)
        np.testing.assert_array_equal(piv[b], wpiv)


@requires_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky_and_info(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 5))
    a = (x @ x.transpose(0, 2, 1) + 5 * np.eye(5)).astype(dtype)
    a[2, 3, 3] = -100.0  # not positive definite at column 3
    low, info = _run(tf.cholesky_func(a.shape, dtype), [a],
                     [(a.shape, dtype), ((3,), "int32")])
    for b in range(2):
        np.testing.assert_allclose(low[b], np.linalg.cholesky(a[b].astype(np.float64)),
                                   rtol=1e-4, atol=1e-5)
    assert info.tolist() == [0, 0, 4]


@requires_llvm
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve(upper, unit):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3))
    (x,) = _run(tf.trsm_func(a.shape, b.shape, "float64", upper, unit), [a, b],
                [(b.shape, "float64")])
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri = tri.copy()
        tri[:, np.arange(4), np.arange(4)] = 1.0
    np.testing.assert_allclose(tri @ x, b, rtol=1e-10, atol=1e-10)


@requires_llvm
def test_lu_permutation():
    piv = np.array([[3, 3, 3], [1, 2, 3]], "int32")
    (perm,) = _run(tf.lu_permutation_func(piv.shape, 4), [piv], [((2, 4), "int64")])
    assert perm.tolist() == [[2, 0, 1, 3], [0, 1, 2, 3]]


@requires_llvm
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_geqrf_matches_lapack_and_q(shape):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, *shape))
    a[1, :, 0] = 0.0  # a zero column: tau = 0
    k = min(shape)
    qr, tau = _run(tf.geqrf_func(a.shape, "float64"), [a],
                   [(a.shape, "float64"), ((2, k), "float64")])
    for b in range(2):
        h, wtau = np.linalg.qr(a[b], mode="raw")
        np.testing.assert_allclose(qr[b], h.T, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(tau[b], wtau, rtol=1e-10, atol=1e-12)
    m = shape[0]
    q_in = qr[..., :k] if shape[1] > m else qr
    (q,) = _run(tf.householder_product_func(q_in.shape, tau.shape, "float64"),
                [np.ascontiguousarray(q_in), tau], [(q_in.shape, "float64")])
    for b in range(2):
        want, _ = np.linalg.qr(a[b])
        np.testing.assert_allclose(q[b][:, :k], want, rtol=1e-10, atol=1e-12)


@requires_llvm
@pytest.mark.parametrize("scale", [0.0, 0.1, 3.0, 40.0])
def test_matrix_exp(scale):
    def expm(m):  # through the eigendecomposition: independent of the kernel's Taylor series
        w, v = np.linalg.eig(m)
        return (v @ np.diag(np.exp(w)) @ np.linalg.inv(v)).real

    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 4, 4)) * scale
    (e,) = _run(tf.matrix_exp_func(a.shape, "float64"), [a], [(a.shape, "float64")])
    for b in range(2):
        np.testing.assert_allclose(e[b], expm(a[b]), rtol=1e-8, atol=1e-10)


@requires_llvm
def test_ldl_factor_and_solve():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 5, 5))
    a = x + x.transpose(0, 2, 1)
    a[1] *= 1e-3
    a[1][np.arange(5), np.arange(5)] *= 1e-3
    b = rng.standard_normal((2, 5, 2))
    ld, piv, info = _run(tf.ldl_factor_func(a.shape, "float64"), [a],
                         [(a.shape, "float64"), ((2, 5), "int32"), ((2,), "int32")])
    assert info.tolist() == [0, 0] and (piv[1] < 0).any()  # a 2x2 pivot block was taken
    (x_,) = _run(tf.ldl_solve_func(a.shape, b.shape, "float64"), [ld, piv, b],
                 [(b.shape, "float64")])
    np.testing.assert_allclose(a @ x_, b, rtol=1e-8, atol=1e-10)


@requires_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_svd_and_eigh_jacobi(dtype):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 5, 3)).astype(dtype)
    a[1, :, 2] = 0.0  # a zero singular value
    u, s, v = _run(tf.svd_jacobi_func(a.shape, dtype), [a],
                   [(a.shape, dtype), ((2, 3), dtype), ((2, 3, 3), dtype)])
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(u * s[:, None, :] @ v.transpose(0, 2, 1), a, atol=tol)
    sym = a[:, :3, :3] + a[:, :3, :3].transpose(0, 2, 1)
    w, vec = _run(tf.eigh_jacobi_func(sym.shape, dtype), [np.ascontiguousarray(sym)],
                  [((2, 3), dtype), (sym.shape, dtype)])
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym.astype(np.float64)), rtol=tol,
                               atol=tol)
    np.testing.assert_allclose(vec @ (w[:, :, None] * vec.transpose(0, 2, 1)), sym, atol=tol)
