"""The inlined float32 vector exp (tvm.target.llvm.vector_math) against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from llvm_test_utils import prim_func
from tvm import tir
from tvm.target.llvm import build
from tvm.tir import For, ForKind, Ramp, Var, decl_buffer
from tvm.tir.stmt import BufferStore


def _vector_exp(n: int, lanes: int, sigmoid: bool = False):
    A = decl_buffer((n,), "float32", "A")
    B = decl_buffer((n,), "float32", "B")
    i = Var("i", "int32")
    idx = Ramp(i * lanes, 1, lanes) if lanes > 1 else i
    op = tir.op.sigmoid if sigmoid else tir.op.exp
    body = For(i, 0, n // lanes, ForKind.SERIAL, BufferStore(B, op(A[idx]), (idx,)))
    return build(prim_func("vexp", [A, B], body))


@pytest.mark.parametrize("lanes", [1, 4, 8, 16])
def test_vector_exp_is_within_two_ulp(lanes):
    rng = np.random.default_rng(lanes)
    n = 1 << 14
    x = np.concatenate([rng.uniform(-87, 88, n - 64), rng.uniform(-5, 5, 64)]).astype("float32")
    y = np.zeros(n, "float32")
    mod = _vector_exp(n, lanes)
    assert "expf" not in mod.get_source("ll-raw")
    mod["vexp"](x, y)
    ref = np.exp(x.astype(np.float64))
    ulp = np.abs(y - ref) / np.spacing(ref.astype(np.float32))
    assert ulp.max() <= 2.0


@pytest.mark.parametrize("lanes", [1, 16])
def test_vector_exp_special_values(lanes):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, 100.0, -87.5, -100.0,
                  -103.0, -110.0, 1e-30, -1e-30, 1.0, -1.0], "float32")
    y = np.zeros_like(x)
    _vector_exp(16, lanes)["vexp"](x, y)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.isnan(y[0])
    np.testing.assert_array_equal(np.isinf(y), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(y[finite], ref[finite], rtol=3e-7, atol=2e-45)


def test_vector_sigmoid_uses_the_vector_exp():
    x = np.linspace(-20, 20, 64).astype("float32")
    y = np.zeros_like(x)
    mod = _vector_exp(64, 8, sigmoid=True)
    assert "expf" not in mod.get_source("ll-raw")
    mod["vexp"](x, y)
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6)


def _erf_kernel(n: int, lanes: int):
    A = decl_buffer((n,), "float32", "A")
    B = decl_buffer((n,), "float32", "B")
    i = Var("i", "int32")
    idx = Ramp(i * lanes, 1, lanes) if lanes > 1 else i
    body = For(i, 0, n // lanes, ForKind.SERIAL, BufferStore(B, tir.op.erf(A[idx]), (idx,)))
    return build(prim_func("verf", [A, B], body))


def _erf_inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-45, 1e-8, -1e-8, 0.5, 1.0, -1.0,
               np.nextafter(np.float32(1), np.float32(0)), 3.9, 4.0, 4.5, -4.5, 10.0,
               -10.0, 1e30, -1e30, np.inf, -np.inf, np.nan]
    x = np.concatenate([special, rng.uniform(-5, 5, 20000), rng.uniform(0.9, 1.1, 2000),
                        rng.normal(0, 1, 2000), 10.0 ** rng.uniform(-20, 1, 2000)])
    x = x[: len(x) // 16 * 16]
    return x.astype("float32")


@pytest.mark.parametrize("lanes", [1, 8, 16])
def test_erf_matches_math_erf(lanes):
    import math

    x = _erf_inputs()
    y = np.zeros_like(x)
    mod = _erf_kernel(len(x), lanes)
    assert "erff" not in mod.get_source("ll-raw")
    mod["verf"](x, y)
    assert np.isnan(y[np.isnan(x)]).all()
    ok = ~np.isnan(x)
    ref = np.array([math.erf(float(v)) for v in x[ok]])
    err = np.abs(y[ok].astype(np.float64) - ref)
    assert err.max() <= 1.5e-7
    nonzero = np.abs(ref) > 1e-37  # results in the normal float32 range
    assert (err[nonzero] / np.abs(ref[nonzero])).max() <= 3 * 2.0 ** -24
    assert (np.abs(y[ok]) <= 1).all() and y[x == np.inf][0] == 1 and y[x == -np.inf][0] == -1
    np.testing.assert_array_equal(np.signbit(y[ok & (x == 0)]), np.signbit(x[ok & (x == 0)]))
