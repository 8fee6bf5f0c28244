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
    idx = Ramp(i * lanes, 1, lanes)
    op = tir.op.sigmoid if sigmoid else tir.op.exp
    body = For(i, 0, n // lanes, ForKind.SERIAL, BufferStore(B, op(A[idx]), (idx,)))
    return build(prim_func("vexp", [A, B], body))


@pytest.mark.parametrize("lanes", [4, 8, 16])
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


def test_vector_exp_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, 100.0, -87.5, -100.0,
                  -103.0, -110.0, 1e-30, -1e-30, 1.0, -1.0], "float32")
    y = np.zeros_like(x)
    _vector_exp(16, 16)["vexp"](x, y)
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
