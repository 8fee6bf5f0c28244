"""Special-function ops (``relax.i0`` ... ``relax.legendre_polynomial_p``): StructInfo, the
numpy semantics against known values and identities, and the compiled kernels against the
numpy semantics (special values, broadcasting, float64, symbolic shapes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tvm.runtime
from tvm import relax, tir
from tvm.relax import op as _op
from tvm.relax.block_builder import BlockBuilder
from tvm.relax.expr import Var
from tvm.relax.op.special_bessel import POLYNOMIAL_OPS, SPECIAL_UNARY_OPS
from tvm.relax.struct_info import TensorStructInfo
from tvm.relax.topi.special_bessel import numpy_special
from vm_testing import requires_llvm

NAN, INF = math.nan, math.inf
X = np.array([NAN, -INF, -710.0, -30.0, -8.5, -5.0, -2.09, -1.0, -1e-6, -0.0, 0.0, 1e-7,
              0.3, 1.0, 2.0, 2.09, 4.9, 5.0, 5.1, 8.0, 8.1, 20.0, 88.0, 100.0, 104.0, 1e4,
              INF], "float32")


def _infer(call):
    return BlockBuilder().normalize(call).struct_info


def test_struct_info_and_dtype_checks():
    n = tir.Var("n", "int64")
    x = Var("x", TensorStructInfo([n, 3], "float32"))
    k = Var("k", TensorStructInfo([3], "float32"))
    assert _infer(_op.bessel_j0(x)).shape_values[0] is n
    out = _infer(_op.chebyshev_polynomial_t(x, k))
    assert out.dtype == "float32" and out.shape_values[0] is n
    with pytest.raises(relax.StructInfoError, match="floating-point"):
        _infer(_op.i0(Var("i", TensorStructInfo([3], "int32"))))


def _approx(got, want, rtol=1e-6):
    np.testing.assert_allclose(np.asarray(got, "float64"), want, rtol=rtol, atol=1e-12)


def test_numpy_semantics_known_values():
    x = np.array([0.0, 1.0, 2.5, 10.0])
    _approx(numpy_special("i0", x), [1.0, 1.2660658777520084, 3.2898391440501231,
                                     2815.716628466254])
    _approx(numpy_special("i1", -x), [0.0, -0.5651591039924851, -2.5167162452886984,
                                      -2670.988303701255])
    _approx(numpy_special("bessel_j0", x), [1.0, 0.7651976865579666, -0.04838377646819929,
                                            -0.2459357644513483])
    _approx(numpy_special("bessel_y1", x[1:]), [-0.7812128213002887, 0.1459181379667858,
                                                0.24901542420695388])
    _approx(numpy_special("modified_bessel_k0", x[1:]), [0.42102443824070834,
                                                         0.062347553200366, 1.778006231616918e-05])
    _approx(numpy_special("airy_ai", np.array([-3.0, 0.0, 1.0, 3.0])),
            [-0.3788142936776580, 0.3550280538878172, 0.1352924163128814,
             0.006591139357460719])
    _approx(numpy_special("spherical_bessel_j0", np.array([0.0, 0.1, 3.0])),
            [1.0, math.sin(0.1) / 0.1, math.sin(3.0) / 3.0])
    # y0/k0 at 0 and below, airy at infinity
    assert numpy_special("bessel_y0", np.array([0.0]))[0] == -INF
    assert np.isnan(numpy_special("bessel_y0", np.array([-1.0]))[0])
    assert numpy_special("scaled_modified_bessel_k1", np.array([0.0]))[0] == INF
    assert np.isnan(numpy_special("airy_ai", np.array([INF]))).all()


def test_polynomial_identities():
    theta = np.linspace(0.1, 3.0, 9)
    x = np.cos(theta)
    for n in (0, 1, 2, 5, 7, 12):
        deg = np.full_like(x, n)
        _approx(numpy_special("chebyshev_polynomial_t", x, deg), np.cos(n * theta), 1e-9)
        _approx(numpy_special("chebyshev_polynomial_u", x, deg),
                np.sin((n + 1) * theta) / np.sin(theta), 1e-9)
        _approx(numpy_special("shifted_chebyshev_polynomial_t", (x + 1) / 2, deg),
                np.cos(n * theta), 1e-8)
    x = np.array([-1.5, -0.5, 0.0, 0.25, 2.0])
    three = np.full_like(x, 3.0)
    _approx(numpy_special("hermite_polynomial_h", x, three), 8 * x**3 - 12 * x)
    _approx(numpy_special("hermite_polynomial_he", x, three), x**3 - 3 * x)
    _approx(numpy_special("legendre_polynomial_p", x, three), (5 * x**3 - 3 * x) / 2)
    _approx(numpy_special("laguerre_polynomial_l", x, three),
            (-x**3 + 9 * x**2 - 18 * x + 6) / 6)
    # degrees: truncated, negative / NaN / infinite give 0, Hermite beyond its limit is NaN
    deg = np.array([2.9, -1.0, NAN, INF, -0.5], "float32")
    got = numpy_special("legendre_polynomial_p", np.full(5, 0.5, "float32"), deg)
    _approx(got, [(3 * 0.25 - 1) / 2, 0.0, 0.0, 0.0, 1.0])
    assert np.isnan(numpy_special("hermite_polynomial_h", np.float32([0.5]),
                                  np.float32([129.0])))


def _run(fn, *arrays: np.ndarray, shapes=None) -> np.ndarray:
    bb = BlockBuilder()
    params = [Var(f"x{i}", TensorStructInfo(list(s if shapes else a.shape), str(a.dtype)))
              for i, (a, s) in enumerate(zip(arrays, shapes or [None] * len(arrays)))]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(fn(*params))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.runtime.cpu())
    return vm["main"](*[tvm.runtime.tensor(a) for a in arrays]).numpy()


def _same(got, want, rtol=1e-5):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30, equal_nan=True)


@requires_llvm
@pytest.mark.parametrize("name", list(SPECIAL_UNARY_OPS))
def test_kernels_match_numpy_semantics(name):
    _same(_run(getattr(_op, name), X), numpy_special(name, X))


@requires_llvm
def test_float64_and_symbolic_shape():
    x = np.linspace(-12, 12, 40).reshape(8, 5)
    sym = [tir.Var("n", "int64"), 5]
    _same(_run(_op.bessel_y1, x, shapes=[sym]), numpy_special("bessel_y1", x), 1e-12)
    _same(_run(_op.i1e, x, shapes=[sym]), numpy_special("i1e", x), 1e-12)


POLY_X = np.array([[NAN], [-2.0], [-1.0], [-0.6], [0.0], [1e-9], [0.3], [0.5], [1.0],
                   [1.7]], "float32")
POLY_N = np.array([-3.0, 0.0, 1.0, 2.0, 3.5, 6.0, 7.0, 9.0, 15.0, NAN, INF], "float32")


@requires_llvm
@pytest.mark.parametrize("name", list(POLYNOMIAL_OPS))
def test_polynomial_kernels_broadcast(name):
    fn = getattr(_op, name)
    _same(_run(fn, POLY_X, POLY_N), numpy_special(name, POLY_X, POLY_N), 1e-4)


@requires_llvm
@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=16))
def test_hypothesis_k1_and_j1(values):
    x = np.array(values, "float32")
    for name in ("modified_bessel_k1", "bessel_j1"):
        _same(_run(getattr(_op, name), x), numpy_special(name, x), 1e-4)
