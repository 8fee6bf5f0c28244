"""Elementwise kernels over every scalar dtype, against numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from llvm_test_utils import binary_func, np_dtype, run, unary_func
from tvm import tir
from tvm.tir import Cast, Max, Min, Select

INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_TYPES = ["float16", "float32", "float64", "bfloat16"]


def _rand(dtype: str, n: int, rng: np.random.Generator, lo: float = -50, hi: float = 50):
    nd = np_dtype(dtype)
    if dtype.startswith("uint"):
        return rng.integers(0, hi, n).astype(nd)
    if dtype.startswith("int"):
        return rng.integers(lo, hi, n).astype(nd)
    return rng.uniform(lo, hi, n).astype(np.float32).astype(nd)


@pytest.mark.parametrize("dtype", INT_TYPES + FLOAT_TYPES)
def test_add_mul_sub(dtype):
    rng = np.random.default_rng(0)
    n = 37
    a, b = _rand(dtype, n, rng), _rand(dtype, n, rng)
    c = np.zeros(n, np_dtype(dtype))
    run(binary_func(f"fma_{dtype}", dtype, lambda x, y: x * y + x - y), a, b, c)
    if dtype == "bfloat16":
        # each operation rounds to bfloat16
        f = np.float32
        ref = ((a.astype(f) * b.astype(f)).astype(a.dtype).astype(f) + a.astype(f)).astype(
            a.dtype).astype(f)
        ref = (ref - b.astype(f)).astype(a.dtype)
        np.testing.assert_array_equal(c.astype(f), ref.astype(f))
    elif dtype.startswith("float"):
        ref = a * b + a - b
        tol = {"float16": 1e-2, "float32": 1e-6, "float64": 1e-12}[dtype]
        np.testing.assert_allclose(c.astype(np.float64), ref.astype(np.float64), rtol=tol,
                                   atol=tol * 50)
    else:
        np.testing.assert_array_equal(c, (a * b + a - b).astype(a.dtype))


@pytest.mark.parametrize("dtype", INT_TYPES + ["float32", "float64", "float16", "bfloat16"])
def test_min_max_select_compare(dtype):
    rng = np.random.default_rng(1)
    n = 40
    a, b = _rand(dtype, n, rng), _rand(dtype, n, rng)
    c = np.zeros(n, np_dtype(dtype))

    def body(x, y):
        return Select(x < y, Max(x, y) - Min(x, y), Min(x, y))

    run(binary_func(f"mm_{dtype}", dtype, body), a, b, c)
    if dtype == "bfloat16":
        f = np.float32
        af, bf = a.astype(f), b.astype(f)
        ref = np.where(af < bf, (np.maximum(af, bf) - np.minimum(af, bf)).astype(a.dtype).astype(f),
                       np.minimum(af, bf))
        np.testing.assert_array_equal(c.astype(f), ref)
    else:
        with np.errstate(over="ignore"):
            ref = np.where(a < b, np.maximum(a, b) - np.minimum(a, b), np.minimum(a, b))
        np.testing.assert_array_equal(c, ref.astype(a.dtype))


@pytest.mark.parametrize("src,dst", [
    ("float32", "int32"), ("int32", "float32"), ("float32", "float16"), ("float16", "float32"),
    ("float32", "bfloat16"), ("bfloat16", "float32"), ("float64", "bfloat16"),
    ("int8", "int64"), ("int64", "int8"), ("uint8", "int32"), ("int32", "uint8"),
    ("float32", "uint8"), ("uint16", "float64"), ("bfloat16", "float16"), ("float16", "int16"),
    ("int32", "bool"), ("float32", "bool"), ("bool", "float32"), ("bool", "int8"),
])
def test_casts(src, dst):
    rng = np.random.default_rng(2)
    n = 33
    if src == "bool":
        a = rng.integers(0, 2, n).astype(bool)
    elif dst in ("uint8",) or src.startswith("uint"):
        a = _rand(src, n, rng, 0, 200)
    else:
        a = _rand(src, n, rng, -100, 100)
    if src.startswith("float") or src == "bfloat16":
        a[:3] = np.array([0.0, -0.0, 1.5]).astype(a.dtype)
    out = np.zeros(n, np_dtype(dst))
    run(unary_func(f"cast_{src}_{dst}", src, dst, lambda x: Cast(dst, x)), a, out)
    if src.startswith(("float", "bfloat")) and dst.startswith(("int", "uint")):
        ref = a.astype(np.float64).astype(np_dtype(dst))  # C truncation toward zero
    elif src == "float64" and dst == "bfloat16":
        ref = a.astype(np.float32).astype(ml_dtypes.bfloat16)
    else:
        ref = a.astype(np_dtype(dst))
    np.testing.assert_array_equal(out, ref)


def test_bfloat16_rounding_is_nearest_even():
    # values exactly halfway between two bfloat16 numbers, plus inf/nan handling
    vals = np.array([1.00390625, 1.01171875, -1.00390625, 3.0e38, np.inf, -np.inf, np.nan,
                     1e-40, 65504.0], dtype=np.float32)
    out = np.zeros(len(vals), ml_dtypes.bfloat16)
    run(unary_func("to_bf16", "float32", "bfloat16", lambda x: Cast("bfloat16", x)), vals, out)
    ref = vals.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.view(np.uint16)[:6], ref.view(np.uint16)[:6])
    assert np.isnan(out[6].astype(np.float32))
    np.testing.assert_array_equal(out[7:].astype(np.float32), ref[7:].astype(np.float32))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_bitwise_ops(dtype):
    rng = np.random.default_rng(3)
    n = 29
    a, b = _rand(dtype, n, rng, 0, 100), _rand(dtype, n, rng, 0, 7)
    c = np.zeros(n, np_dtype(dtype))
    op = tir.op

    def body(x, y):
        return op.bitwise_xor(op.bitwise_or(op.shift_left(x, y), op.bitwise_and(x, y)),
                              op.shift_right(x, tir.const(1, dtype)))

    run(binary_func(f"bits_{dtype}", dtype, body), a, b, c)
    with np.errstate(over="ignore"):
        ref = ((a << b) | (a & b)) ^ (a >> np.array(1, a.dtype))
    np.testing.assert_array_equal(c, ref.astype(a.dtype))


def test_bool_buffers_and_logic():
    n = 16
    a = np.array([True, False] * 8)
    b = np.array([True, True, False, False] * 4)
    c = np.zeros(n, bool)
    run(binary_func("logic", "bool", lambda x, y: tir.Or(tir.And(x, tir.Not(y)),
                                                        tir.And(tir.Not(x), y))), a, b, c)
    np.testing.assert_array_equal(c, a ^ b)
